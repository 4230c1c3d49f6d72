"""Golden coverage: which golden cases live traffic exercises, by day and agent version, which it
never does, and how much of it no case describes (the unmatched share).

Read from the current evaluations (``superseded = 0``) and the stored golden cases, with one
aggregate query per database: it stays cheap on a database of millions of sessions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from .database import DbPath, missing_schema, open_database
from .feed import EvaluationRow

UNKNOWN_VERSION = "unknown"


@dataclass
class CaseCoverage:
    """How often live traffic matched one golden case, by day and agent version."""

    eval_set_id: str
    eval_id: str
    name: str | None = None
    query: str | None = None
    sessions: int = 0
    by_day: dict[str, int] = field(default_factory=dict)
    """UTC date (YYYY-MM-DD) → sessions matched that day."""
    by_version: dict[str, int] = field(default_factory=dict)
    last_seen: str | None = None
    in_golden_set: bool = True
    """False: sessions matched it, but no loaded golden set has it any more."""

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape (``report``'s ``coverage.cases``), days and versions sorted."""
        return {
            "eval_set_id": self.eval_set_id,
            "eval_id": self.eval_id,
            "name": self.name,
            "query": self.query,
            "sessions": self.sessions,
            "by_day": dict(sorted(self.by_day.items())),
            "by_version": dict(sorted(self.by_version.items())),
            "last_seen": self.last_seen,
            "in_golden_set": self.in_golden_set,
        }


@dataclass
class Coverage:
    """Golden coverage of a window (:func:`coverage`): sessions, unmatched ones, every case."""

    since: str | None
    sessions: int = 0
    """Sessions with a current evaluation in the window, matched or not."""
    unmatched: int = 0
    cases: list[CaseCoverage] = field(default_factory=list)
    """Every golden case, most exercised first; never-exercised ones last."""

    @property
    def matched(self) -> int:
        """Sessions matched to a golden case."""
        return self.sessions - self.unmatched

    @property
    def unmatched_share(self) -> float | None:
        """The share of sessions no case describes; None when there are none."""
        return self.unmatched / self.sessions if self.sessions else None

    @property
    def never_exercised(self) -> list[CaseCoverage]:
        """Golden cases no session matched in the window."""
        return [c for c in self.cases if not c.sessions and c.in_golden_set]

    @property
    def exercised(self) -> list[CaseCoverage]:
        """Cases some session matched (one no golden set has any more too)."""
        return [c for c in self.cases if c.sessions]

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape (``report``'s ``coverage``)."""
        golden = [c for c in self.cases if c.in_golden_set]
        return {
            "since": self.since,
            "sessions": self.sessions,
            "matched": self.matched,
            "unmatched": self.unmatched,
            "unmatched_share": None if self.unmatched_share is None else round(self.unmatched_share, 6),
            "golden_cases": len(golden),
            "exercised": sum(1 for c in golden if c.sessions),
            "never_exercised": [
                {"eval_set_id": c.eval_set_id, "eval_id": c.eval_id, "name": c.name} for c in self.never_exercised
            ],
            "cases": [c.to_dict() for c in self.cases],
        }


def coverage(db_paths: Sequence[DbPath], since: str | None = None) -> Coverage:
    """Coverage over every database's current evaluations created at or after ``since`` (the
    store's ISO ``created_at`` format, :func:`otel_eval.read.times.iso_utc`; None: all)."""
    out = Coverage(since=since)
    cases: dict[tuple[str, str], CaseCoverage] = {}
    for path in db_paths:
        with closing(open_database(path)) as conn:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'golden_cases'").fetchone():
                for set_id, eval_id, name, query in conn.execute(
                    "SELECT eval_set_id, eval_id, name, query FROM golden_cases ORDER BY eval_set_id, eval_id"
                ):
                    cases.setdefault((set_id or "", eval_id), CaseCoverage(set_id or "", eval_id, name, query))
            for set_id, case_id, day, version, n, last in conn.execute(
                "SELECT eval_set_id, case_id, substr(created_at, 1, 10), agent_version, count(*), max(created_at)"
                " FROM evaluations WHERE superseded = 0 AND created_at >= ?"
                " GROUP BY eval_set_id, case_id, substr(created_at, 1, 10), agent_version",
                (since or "",),
            ):
                out.sessions += n
                if not case_id:
                    out.unmatched += n
                    continue
                case = cases.get((set_id or "", case_id))
                if case is None:
                    case = cases[(set_id or "", case_id)] = CaseCoverage(set_id or "", case_id, in_golden_set=False)
                case.sessions += n
                case.by_day[day] = case.by_day.get(day, 0) + n
                version = version or UNKNOWN_VERSION
                case.by_version[version] = case.by_version.get(version, 0) + n
                case.last_seen = max(filter(None, (case.last_seen, last)), default=None)
    out.cases = sorted(cases.values(), key=lambda c: (-c.sessions, c.eval_set_id, c.eval_id))
    return out


def golden_case_keys(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """``(eval_set_id, eval_id)`` of the golden cases one database stores, in order; none in a
    database that has no otel-eval tables yet."""
    try:
        rows = conn.execute("SELECT eval_set_id, eval_id FROM golden_cases ORDER BY eval_set_id, eval_id").fetchall()
    except sqlite3.OperationalError as exc:
        if not missing_schema(exc):
            raise
        return []
    return [(set_id or "", eval_id) for set_id, eval_id in rows]


def window_coverage(rows: Sequence[EvaluationRow], golden: Sequence[tuple[str, str]], since: str) -> Coverage:
    """Golden coverage over the window's evaluations (pure): the refresh reads no more than the
    window it already holds and the golden cases, where ``report``'s coverage scans every
    evaluation. A window row names its case by ``eval_id`` only; two sets sharing an id count
    once, under the first."""
    cov = Coverage(since=since)
    cases = {key: CaseCoverage(*key) for key in golden}
    by_id: dict[str, CaseCoverage] = {}
    for known in cases.values():
        by_id.setdefault(known.eval_id, known)
    for r in rows:
        cov.sessions += 1
        if not r.case_id:
            cov.unmatched += 1
            continue
        case = by_id.get(r.case_id)
        if case is None:  # matched a case no stored golden set has any more
            case = by_id[r.case_id] = cases[("", r.case_id)] = CaseCoverage("", r.case_id, in_golden_set=False)
        case.sessions += 1
        version = r.agent_version or UNKNOWN_VERSION
        case.by_version[version] = case.by_version.get(version, 0) + 1
        day = r.created_at[:10]
        case.by_day[day] = case.by_day.get(day, 0) + 1
    cov.cases = sorted(cases.values(), key=lambda c: (-c.sessions, c.eval_set_id, c.eval_id))
    return cov


def retired_cases(cov: Coverage) -> int:
    """Exercised cases that no stored golden set has any more (not part of "n of N cases")."""
    return sum(1 for c in cov.exercised if not c.in_golden_set)
