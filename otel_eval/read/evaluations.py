"""Stored evaluations: each session's current one with its criteria, and what views ask of them.

A session's *current* evaluation is its latest revision (``superseded = 0``); earlier ones stay
for history. Rows come back typed (:class:`StoredEvaluation`, :class:`StoredCriterion`,
:class:`Revision`, :class:`MatchEvidence`); each ``to_dict()`` is the ``--json`` shape built
from it (``report``, ``compare``, the dashboard's API), documented in README and stable.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..models.results import FAILED, NOT_EVALUATED, PASSED
from .database import DbPath, missing_schema, named_rows, open_database

#: What became of a session, as ``export --result`` names it: a matched session's verdict,
#: else unmatched (no golden case) or unscored (no evaluation yet).
UNMATCHED, UNSCORED = "unmatched", "unscored"
OUTCOMES = (PASSED, FAILED, NOT_EVALUATED, UNMATCHED, UNSCORED)


def outcome(case_id: str | None, verdict: str | None) -> str:
    """The stored verdict (passed, failed, not_evaluated) of a matched session, else unmatched or
    unscored (``verdict`` None: no evaluation)."""
    if verdict is None:
        return UNSCORED
    if not case_id:
        return UNMATCHED
    return verdict


def parse_json_text(text: str | None) -> object:
    """A stored JSON column: ``{}`` when empty; text that is not JSON is kept, not raised."""
    if not text:
        return {}
    try:
        parsed: object = json.loads(text)
    except ValueError:
        return {"unparsed": text}
    return parsed


def parse_details(text: str | None) -> dict[str, Any]:
    """A stored ``details`` column (always a JSON object when otel-eval wrote it): ``{}`` when
    empty; anything else than an object is kept as ``{"unparsed": text}``, not raised."""
    parsed = parse_json_text(text)
    return parsed if isinstance(parsed, dict) else {"unparsed": text}


@dataclass(frozen=True)
class StoredCriterion:
    """One ``criterion_results`` row as the views show it."""

    criterion: str
    score: float | None
    passed: bool
    threshold: float | None
    skipped: bool
    error: str | None
    details: dict[str, Any]
    """The criterion's stored details (JSON object): ``per_turn``, ``judge``, ``informational``..."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredCriterion:
        """From a ``criterion_results`` row read by column name."""
        return cls(
            criterion=row["criterion"],
            score=row["score"],
            passed=bool(row["passed"]),
            threshold=row["threshold"],
            skipped=bool(row["skipped"]),
            error=row["error"],
            details=parse_details(row["details"]),
        )

    @property
    def informational(self) -> bool:
        """A value reported for information, not a check (``details.informational``)."""
        return self.details.get("informational") is True

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape: ``{criterion, score, passed, threshold, skipped, error, details}``."""
        return {
            "criterion": self.criterion,
            "score": self.score,
            "passed": self.passed,
            "threshold": self.threshold,
            "skipped": self.skipped,
            "error": self.error,
            "details": self.details,
        }


JUDGE_STATES = {"pending": "judge pending", "not_sampled": "not sampled"}
"""``details.judge`` of a judge criterion → how the views mark its session (see otel_eval.judging)."""


def judge_state(criteria: Sequence[StoredCriterion]) -> str | None:
    """ "judge pending" while a judge answer is awaited (the verdict is the deterministic one so
    far), "not sampled" when the judge left the session out by sampling, else None."""
    states = {c.details.get("judge") for c in criteria}
    for state in ("pending", "not_sampled"):
        if state in states:
            return JUDGE_STATES[state]
    return None


def failing_criteria(criteria: Sequence[StoredCriterion]) -> list[str]:
    """The criteria that ran and did not pass, health left out (it has its own column)."""
    return [c.criterion for c in criteria if not c.skipped and not c.passed and c.criterion != "health"]


@dataclass(frozen=True)
class MatchEvidence:
    """How a session was matched to its golden case, and why not (``details.match`` of its
    evaluation, as :mod:`otel_eval.golden.matcher` left it)."""

    method: str | None
    """exact, fuzzy, embedding, case_id, ambiguous, unmatched..."""
    score: float | None
    evidence: dict[str, Any]
    """The matcher's evidence: ``reason``, ``candidates``, ``query``..."""

    @property
    def reason(self) -> str | None:
        """The matcher's one-line reason, when it gave one."""
        reason = self.evidence.get("reason")
        return str(reason) if reason else None

    @property
    def note(self) -> str | None:
        """What the reader should know about how the session was cut, when anything (a trace
        without a session id that is one step of a tool loop)."""
        note = self.evidence.get("note")
        return str(note) if note else None

    def to_dict(self) -> dict[str, Any]:
        """The stored ``details.match`` object."""
        return {"method": self.method, "score": self.score, "evidence": self.evidence}


def match_to_dict(match: MatchEvidence | None) -> dict[str, Any]:
    """``match`` in a ``--json`` shape: ``{}`` when the evaluation stored none."""
    return match.to_dict() if match is not None else {}


@dataclass(frozen=True)
class StoredEvaluation:
    """A session's current evaluation with its criteria (:func:`current_evaluations`)."""

    db: str
    """The database it was read from."""
    session_id: str
    revision: int
    case_id: str | None
    """The golden case it matched; None: unmatched."""
    eval_set_id: str | None
    matched_by: str | None
    match_score: float | None
    passed: bool
    verdict: str
    """passed, failed or not_evaluated (of an unmatched session too: see :func:`outcome`)."""
    score: float | None
    agent_version: str | None
    query: str | None
    created_at: str
    error: str | None
    user_id: str | None
    end_reason: str | None
    tool_path: str | None
    criteria: tuple[StoredCriterion, ...]

    @property
    def failing_criteria(self) -> list[str]:
        """:func:`failing_criteria` of its criteria."""
        return failing_criteria(self.criteria)

    @property
    def judge(self) -> str | None:
        """:func:`judge_state` of its criteria."""
        return judge_state(self.criteria)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape of a session row (``report --json``'s ``sessions``)."""
        return {
            "db": self.db,
            "session_id": self.session_id,
            "revision": self.revision,
            "case_id": self.case_id,
            "eval_set_id": self.eval_set_id,
            "matched_by": self.matched_by,
            "match_score": self.match_score,
            "passed": self.passed,
            "verdict": self.verdict,
            "score": self.score,
            "agent_version": self.agent_version,
            "query": self.query,
            "created_at": self.created_at,
            "error": self.error,
            "user_id": self.user_id,
            "end_reason": self.end_reason,
            "tool_path": self.tool_path,
            "criteria": [c.to_dict() for c in self.criteria],
        }


def current_evaluations(db_paths: Sequence[DbPath]) -> list[StoredEvaluation]:
    """The latest revision of every session's evaluation, with its criteria, across databases,
    oldest first."""
    rows: list[StoredEvaluation] = []
    for path in db_paths:
        with closing(open_database(path)) as conn:
            evaluations = conn.execute(
                "SELECT e.*, s.user_id, s.service_name, s.end_reason FROM evaluations e"
                " LEFT JOIN sessions s ON s.session_id = e.session_id"
                " WHERE e.superseded = 0 ORDER BY e.created_at, e.id"
            ).fetchall()
            criteria: dict[int, list[StoredCriterion]] = {}
            for c in conn.execute(
                "SELECT c.* FROM criterion_results c JOIN evaluations e ON e.id = c.evaluation_id"
                " WHERE e.superseded = 0 ORDER BY c.id"
            ):
                criteria.setdefault(c["evaluation_id"], []).append(StoredCriterion.from_row(c))
            for e in evaluations:
                rows.append(
                    StoredEvaluation(
                        db=str(path),
                        session_id=e["session_id"],
                        revision=e["revision"],
                        case_id=e["case_id"],
                        eval_set_id=e["eval_set_id"],
                        matched_by=e["matched_by"],
                        match_score=e["match_score"],
                        passed=bool(e["passed"]),
                        verdict=e["verdict"],
                        score=e["score"],
                        agent_version=e["agent_version"],
                        query=e["query"],
                        created_at=e["created_at"],
                        error=e["error"],
                        user_id=e["user_id"],
                        end_reason=e["end_reason"],
                        tool_path=e["tool_path"],
                        criteria=tuple(criteria.get(e["id"], [])),
                    )
                )
    return rows


def criteria_of(conn: sqlite3.Connection, evaluation_ids: Sequence[int]) -> dict[int, list[StoredCriterion]]:
    """The criteria of these evaluations, in the order they were stored."""
    out: dict[int, list[StoredCriterion]] = {}
    if not evaluation_ids:
        return out
    marks = ",".join("?" * len(evaluation_ids))
    for c in named_rows(
        conn, f"SELECT * FROM criterion_results WHERE evaluation_id IN ({marks}) ORDER BY id", list(evaluation_ids)
    ):
        out.setdefault(c["evaluation_id"], []).append(StoredCriterion.from_row(c))
    return out


def match_evidence(conn: sqlite3.Connection, evaluation_id: int) -> MatchEvidence | None:
    """How the evaluation's session was matched to its case (``details.match``), or None."""
    row = conn.execute("SELECT details FROM evaluations WHERE id = ?", (evaluation_id,)).fetchone()
    match = parse_details(row[0]).get("match") if row else None
    if not isinstance(match, dict) or not match:
        return None
    evidence = match.get("evidence")
    return MatchEvidence(match.get("method"), match.get("score"), evidence if isinstance(evidence, dict) else {})


@dataclass(frozen=True)
class Revision:
    """One evaluation of a session, current or superseded (:func:`revisions`)."""

    revision: int
    case_id: str | None
    passed: bool
    verdict: str
    score: float | None
    created_at: str
    superseded: bool

    def to_dict(self) -> dict[str, Any]:
        """The dashboard API's shape; ``passed`` and ``superseded`` as the 0/1 it has always given."""
        return {
            "revision": self.revision,
            "case_id": self.case_id,
            "passed": int(self.passed),
            "verdict": self.verdict,
            "score": self.score,
            "created_at": self.created_at,
            "superseded": int(self.superseded),
        }


def revisions(conn: sqlite3.Connection, session_id: str) -> list[Revision]:
    """Every evaluation of a session, newest revision first."""
    return [
        Revision(revision, case_id, bool(passed), verdict, score, created_at, bool(superseded))
        for revision, case_id, passed, verdict, score, created_at, superseded in conn.execute(
            "SELECT revision, case_id, passed, verdict, score, created_at, superseded FROM evaluations"
            " WHERE session_id = ? ORDER BY revision DESC",
            (session_id,),
        )
    ]


class LatestEvaluation(NamedTuple):
    """A session's latest revision as ``rescore`` compares it with the new one."""

    revision: int
    case_id: str | None
    verdict: str
    score: float | None
    matched_by: str | None


def latest_evaluation(conn: sqlite3.Connection, session_id: str) -> LatestEvaluation | None:
    """The session's latest revision (what a rescore replaces), or None when it has none."""
    row = conn.execute(
        "SELECT revision, case_id, verdict, score, matched_by FROM evaluations"
        " WHERE session_id = ? ORDER BY revision DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return LatestEvaluation(*row) if row else None


def current_outcome(conn: sqlite3.Connection, session_id: str) -> str:
    """:func:`outcome` of the session's current evaluation (unscored when it has none)."""
    row = conn.execute(
        "SELECT case_id, verdict FROM evaluations WHERE session_id = ? AND superseded = 0", (session_id,)
    ).fetchone()
    return outcome(row[0], row[1]) if row else UNSCORED


def recent_sessions(db_paths: Sequence[DbPath], limit: int = 5) -> list[str]:
    """The most recently scored sessions across the databases, newest first: what to suggest when
    a session id is not found."""
    found: list[tuple[str, int, str]] = []
    for path in db_paths:
        with closing(open_database(path)) as conn:
            try:
                found += [
                    (r[0], r[1], r[2])
                    for r in conn.execute(
                        "SELECT created_at, id, session_id FROM evaluations WHERE superseded = 0 ORDER BY id DESC LIMIT ?",
                        (limit,),
                    )
                ]
            except sqlite3.OperationalError as exc:
                if not missing_schema(exc):
                    raise
    return [sid for _, _, sid in sorted(found, reverse=True)[:limit]]


def pass_rate_points(conn: sqlite3.Connection, case_id: str | None = None) -> dict[str, list[tuple[str, str, bool]]]:
    """Per case: ``(created_at, agent_version, passed)`` of every current evaluation that checked
    something, oldest first (a not_evaluated session is no point of a pass rate)."""
    sql = (
        "SELECT case_id, created_at, COALESCE(agent_version, 'unknown'), passed FROM evaluations"
        " WHERE superseded = 0 AND case_id IS NOT NULL AND verdict != 'not_evaluated'"
    )
    params: list[Any] = []
    if case_id:
        sql += " AND case_id = ?"
        params.append(case_id)
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for case, created_at, version, passed in conn.execute(sql + " ORDER BY created_at, id", params):
        out.setdefault(case, []).append((created_at, version, bool(passed)))
    return dict(sorted(out.items()))
