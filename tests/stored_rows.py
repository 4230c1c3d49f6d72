"""Stored-evaluation rows built by hand, for tests of the pure views over them (``compare_rows``,
the demo's judgement): the fields a test leaves out are those of an unremarkable row."""

from __future__ import annotations

from typing import Any

from otel_eval.read.evaluations import StoredCriterion, StoredEvaluation


def stored_criterion(criterion: str, passed: bool, score: float | None = None, **fields: Any) -> StoredCriterion:
    """One criterion result: ``skipped`` False, no error, no details unless given."""
    values: dict[str, Any] = {"threshold": None, "skipped": False, "error": None, "details": {}, **fields}
    return StoredCriterion(criterion=criterion, score=score, passed=passed, **values)


def stored_evaluation(
    session_id: str = "s", *, criteria: tuple[StoredCriterion, ...] = (), **fields: Any
) -> StoredEvaluation:
    """A current evaluation; ``verdict`` follows ``passed`` unless given."""
    values: dict[str, Any] = {
        "db": "test.db",
        "revision": 1,
        "case_id": None,
        "eval_set_id": None,
        "matched_by": None,
        "match_score": None,
        "passed": False,
        "score": None,
        "agent_version": None,
        "query": None,
        "created_at": "2026-01-01T00:00:00.000Z",
        "error": None,
        "user_id": None,
        "end_reason": None,
        "tool_path": None,
        **fields,
    }
    values.setdefault("verdict", "passed" if values["passed"] else "failed")
    return StoredEvaluation(session_id=session_id, criteria=criteria, **values)
