"""Stored evaluations: each session's current one with its criteria, and what views ask of them.

A session's *current* evaluation is its latest revision (``superseded = 0``); earlier ones stay
for history. Criteria come back as ``{criterion, score, passed, threshold, skipped, error,
details}`` dicts, ``details`` parsed. The ``--json`` shapes built from these rows (``report``,
``compare``) are documented in README and stable.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
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


def parse_details(text: str | None) -> Any:
    """A stored ``details`` column: ``{}`` when empty; text that is not JSON is kept, not raised."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text}


def criterion_dict(row: sqlite3.Row) -> dict[str, Any]:
    """One ``criterion_results`` row as the views show it."""
    return {
        "criterion": row["criterion"],
        "score": row["score"],
        "passed": bool(row["passed"]),
        "threshold": row["threshold"],
        "skipped": bool(row["skipped"]),
        "error": row["error"],
        "details": parse_details(row["details"]),
    }


JUDGE_STATES = {"pending": "judge pending", "not_sampled": "not sampled"}
"""``details.judge`` of a judge criterion → how the views mark its session (see otel_eval.judging)."""


def judge_state(criteria: Sequence[dict[str, Any]]) -> str | None:
    """ "judge pending" while a judge answer is awaited (the verdict is the deterministic one so
    far), "not sampled" when the judge left the session out by sampling, else None."""
    states = {(c.get("details") or {}).get("judge") for c in criteria if isinstance(c.get("details"), dict)}
    for state in ("pending", "not_sampled"):
        if state in states:
            return JUDGE_STATES[state]
    return None


def failing_criteria(row: dict[str, Any]) -> list[str]:
    """The criteria that ran and did not pass, health left out (it has its own column)."""
    return [
        c["criterion"] for c in row["criteria"] if not c["skipped"] and not c["passed"] and c["criterion"] != "health"
    ]


def current_evaluations(db_paths: Sequence[DbPath]) -> list[dict[str, Any]]:
    """The latest revision of every session's evaluation, with its criteria, across databases,
    oldest first."""
    rows: list[dict[str, Any]] = []
    for path in db_paths:
        with closing(open_database(path)) as conn:
            evaluations = conn.execute(
                "SELECT e.*, s.user_id, s.service_name, s.end_reason FROM evaluations e"
                " LEFT JOIN sessions s ON s.session_id = e.session_id"
                " WHERE e.superseded = 0 ORDER BY e.created_at, e.id"
            ).fetchall()
            criteria: dict[int, list[dict[str, Any]]] = {}
            for c in conn.execute(
                "SELECT c.* FROM criterion_results c JOIN evaluations e ON e.id = c.evaluation_id"
                " WHERE e.superseded = 0 ORDER BY c.id"
            ):
                criteria.setdefault(c["evaluation_id"], []).append(criterion_dict(c))
            for e in evaluations:
                rows.append(
                    {
                        "db": str(path),
                        "session_id": e["session_id"],
                        "revision": e["revision"],
                        "case_id": e["case_id"],
                        "eval_set_id": e["eval_set_id"],
                        "matched_by": e["matched_by"],
                        "match_score": e["match_score"],
                        "passed": bool(e["passed"]),
                        "verdict": e["verdict"],
                        "score": e["score"],
                        "agent_version": e["agent_version"],
                        "query": e["query"],
                        "created_at": e["created_at"],
                        "error": e["error"],
                        "user_id": e["user_id"],
                        "end_reason": e["end_reason"],
                        "tool_path": e["tool_path"],
                        "criteria": criteria.get(e["id"], []),
                    }
                )
    return rows


def criteria_of(conn: sqlite3.Connection, evaluation_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """The criteria of these evaluations, in the order they were stored."""
    out: dict[int, list[dict[str, Any]]] = {}
    if not evaluation_ids:
        return out
    marks = ",".join("?" * len(evaluation_ids))
    for c in named_rows(
        conn, f"SELECT * FROM criterion_results WHERE evaluation_id IN ({marks}) ORDER BY id", list(evaluation_ids)
    ):
        out.setdefault(c["evaluation_id"], []).append(criterion_dict(c))
    return out


def match_evidence(conn: sqlite3.Connection, evaluation_id: int) -> dict[str, Any]:
    """How the evaluation's session was matched to its case (``details.match``), or ``{}``."""
    row = conn.execute("SELECT details FROM evaluations WHERE id = ?", (evaluation_id,)).fetchone()
    details = parse_details(row[0]) if row else {}
    return details.get("match") or {} if isinstance(details, dict) else {}


def revisions(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """Every evaluation of a session, newest revision first."""
    return [
        dict(r)
        for r in named_rows(
            conn,
            "SELECT revision, case_id, passed, verdict, score, created_at, superseded FROM evaluations"
            " WHERE session_id = ? ORDER BY revision DESC",
            (session_id,),
        )
    ]


class LatestEvaluation(NamedTuple):
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
