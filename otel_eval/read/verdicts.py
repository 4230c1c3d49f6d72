"""Verdict counts per agent version and golden case: what the release gate decides from.

One aggregate query per database over the current evaluations (``superseded = 0``), so a gate
asked on every Prometheus scrape reads counts, not every session's criteria.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field

from ..models.results import FAILED, PASSED
from .database import DbPath, open_database

CaseKey = tuple[str, str]
"""(eval set id, case id); the eval set id is "" when the evaluation names none."""


@dataclass
class VerdictCounts:
    """Verdict counts per agent version and golden case (:func:`verdict_counts`)."""

    decided: dict[str, dict[CaseKey, list[int]]] = field(default_factory=dict)
    """agent version → case → [passed, passed + failed]: matched sessions with a verdict."""
    sessions: dict[str, int] = field(default_factory=dict)
    """agent version → sessions with a current evaluation (matched or not, any verdict)."""

    def add(self, version: str, case: CaseKey, verdict: str, count: int = 1) -> None:
        """Count ``count`` sessions of ``version`` and ``case`` with ``verdict`` (only passed and
        failed count: a not_evaluated session decides nothing)."""
        if verdict not in (PASSED, FAILED) or count <= 0:
            return
        tally = self.decided.setdefault(version, {}).setdefault(case, [0, 0])
        tally[0] += count if verdict == PASSED else 0
        tally[1] += count


UNKNOWN_VERSION = "unknown"


def verdict_counts(db_paths: Sequence[DbPath]) -> VerdictCounts:
    """Counts over every database's current evaluations; versions missing are ``unknown``."""
    counts = VerdictCounts()
    for path in db_paths:
        with closing(open_database(path)) as conn:
            for version, set_id, case_id, verdict, n in conn.execute(
                "SELECT agent_version, eval_set_id, case_id, verdict, count(*) FROM evaluations"
                " WHERE superseded = 0 GROUP BY agent_version, eval_set_id, case_id, verdict"
            ):
                version = version or UNKNOWN_VERSION
                counts.sessions[version] = counts.sessions.get(version, 0) + n
                if case_id:
                    counts.add(version, (set_id or "", case_id), verdict, n)
    counts.sessions = dict(sorted(counts.sessions.items()))
    return counts
