"""The report's numbers: totals, per-criterion, per-case and per-version aggregates over current
evaluations (the ``--json`` shape documented in README)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..models.results import FAILED, NOT_EVALUATED, PASSED
from ..read.evaluations import StoredEvaluation


def _rate(passed: int, evaluated: int) -> float | None:
    return round(passed / evaluated, 4) if evaluated else None


def _tally(into: dict[str, Any], row: StoredEvaluation) -> None:
    """Count one session by verdict; only evaluated (passed or failed) ones carry a score."""
    into["sessions"] += 1
    into["passed"] += int(row.verdict == PASSED)
    into["failed"] += int(row.verdict == FAILED)
    into["not_evaluated"] += int(row.verdict == NOT_EVALUATED)
    if row.verdict != NOT_EVALUATED:
        into["score_sum"] += row.score or 0.0


def _finish(tally: dict[str, Any]) -> dict[str, Any]:
    """pass_rate and avg_score over the evaluated sessions: not_evaluated ones are in neither."""
    total = tally.pop("score_sum")
    evaluated = tally["passed"] + tally["failed"]
    tally.update(
        pass_rate=_rate(tally["passed"], evaluated), avg_score=round(total / evaluated, 4) if evaluated else None
    )
    return tally


def summarize_sessions(rows: Iterable[StoredEvaluation]) -> dict[str, Any]:
    """Totals, per-criterion and per-case aggregates over current evaluations.

    Sessions matched to a case are passed, failed or not_evaluated (nothing checked); the pass
    rate is passed / (passed + failed), so not_evaluated sessions are counted apart, not as
    failures and never as passes. Unmatched sessions are counted apart too."""
    rows = list(rows)
    matched = [r for r in rows if r.case_id]
    criteria: dict[str, dict[str, Any]] = {}
    for r in matched:
        for c in r.criteria:
            stat = criteria.setdefault(
                c.criterion, {"evaluated": 0, "passed": 0, "skipped": 0, "errors": 0, "score_sum": 0.0}
            )
            if c.skipped:
                stat["skipped"] += 1
                continue
            if c.informational:  # ADK's efficiency metrics: a value only
                stat["informational"] = True
            stat["evaluated"] += 1
            stat["passed"] += int(c.passed)
            stat["errors"] += int(bool(c.error))
            stat["score_sum"] += c.score
    for stat in criteria.values():
        n = stat.pop("evaluated")
        total = stat.pop("score_sum")
        stat.update(
            evaluated=n,
            pass_rate=round(stat["passed"] / n, 4) if n and not stat.get("informational") else None,
            avg_score=round(total / n, 4) if n else None,
        )

    def empty() -> dict[str, Any]:
        return {"sessions": 0, "passed": 0, "failed": 0, "not_evaluated": 0, "score_sum": 0.0}

    cases: dict[str, dict[str, Any]] = {}
    versions: dict[str, dict[str, Any]] = {}
    overall = empty()
    for r in matched:
        case_id = r.case_id or ""  # matched: never empty
        _tally(cases.setdefault(case_id, {"case_id": case_id, "eval_set_id": r.eval_set_id, **empty()}), r)
        _tally(versions.setdefault(r.agent_version or "unknown", empty()), r)
        _tally(overall, r)
    overall = _finish(overall)
    return {
        "sessions": len(rows),
        "matched": len(matched),
        "unmatched": len(rows) - len(matched),
        "passed": overall["passed"],
        "failed": overall["failed"],
        "not_evaluated": overall["not_evaluated"],
        "pass_rate": overall["pass_rate"],
        "avg_score": overall["avg_score"],
        "criteria": criteria,
        "cases": [_finish(c) for c in sorted(cases.values(), key=lambda c: c["case_id"])],
        "versions": {v: _finish(t) for v, t in versions.items()},
    }
