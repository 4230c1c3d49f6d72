"""Evaluation results, as in the evalset seed's result models."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, Field, model_validator

PASSED: Final = "passed"
FAILED: Final = "failed"
NOT_EVALUATED: Final = "not_evaluated"
VERDICTS = (PASSED, FAILED, NOT_EVALUATED)
Verdict = Literal["passed", "failed", "not_evaluated"]
"""A session's verdict. ``not_evaluated`` is ADK's NOT_EVALUATED: nothing was checked (every
criterion skipped, or only health measured without limits), so the session neither passed nor
failed and stays out of pass rates."""


class CriterionResult(BaseModel):
    """One criterion's outcome for one session: its score against the threshold, or why it was skipped
    or failed to run."""

    criterion: str
    score: float
    passed: bool
    threshold: float
    details: dict[str, Any] = Field(default_factory=dict)
    skipped: bool = False
    """The criterion did not apply or could not run; ``details['reason']`` says why. Never fails a case."""
    error: str | None = None
    """The criterion tried to run and failed (an LLM judge timeout, say): the case fails, with this reason."""


def is_check(c: CriterionResult) -> bool:
    """Whether a criterion that ran judged something. Health without limits only measures (it
    cannot fail), so it is no check; it is recognised by its details' shape, which is all a
    stored row has: a ``violations`` list and an empty ``limits`` mapping."""
    details = c.details or {}
    if details.get("informational") is True:  # ADK's efficiency metrics: a value, never a verdict
        return False
    return not (isinstance(details.get("violations"), list) and details.get("limits") == {})


def verdict_of(criteria: Iterable[CriterionResult]) -> Verdict:
    """ADK's rule over the criteria that ran: any failure (or error) fails the session; else any
    check that passed passes it; else nothing was checked and the session is not evaluated."""
    checked = False
    for c in criteria:
        if c.skipped:
            continue
        if not c.passed or c.error:
            return FAILED
        checked = checked or is_check(c)
    return PASSED if checked else NOT_EVALUATED


class EvalCaseResult(BaseModel):
    """One session scored against its golden case: the verdict, the mean score and each criterion's
    result."""

    eval_id: str
    name: str | None = None
    passed: bool
    """``verdict == "passed"``."""
    verdict: Verdict = FAILED
    """passed, failed or not_evaluated; when only ``passed`` is given, passed or failed."""
    criterion_results: list[CriterionResult] = Field(default_factory=list)
    error: str | None = None
    duration_seconds: float = 0.0
    session_id: str | None = None
    score: float = 0.0
    """Mean score of the criteria that ran (skipped ones excluded); 0.0, and meaningless, when
    the verdict is not_evaluated (shown as ``-``)."""

    @model_validator(mode="before")
    @classmethod
    def _verdict_from_passed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "verdict" not in data and "passed" in data:
            data = {**data, "verdict": PASSED if data["passed"] else FAILED}
        return data

    @model_validator(mode="after")
    def _passed_from_verdict(self) -> EvalCaseResult:
        self.passed = self.verdict == PASSED
        return self

    @property
    def evaluated(self) -> bool:
        """Something was checked: the verdict is passed or failed."""
        return self.verdict != NOT_EVALUATED


class CriterionStats(BaseModel):
    """One criterion over a report's sessions: how often it ran, passed and was skipped, its pass rate
    and mean score."""

    evaluated: int = 0
    passed: int = 0
    skipped: int = 0
    pass_rate: float = 0.0
    avg_score: float = 0.0


class EvalSummary(BaseModel):
    """A report's totals: sessions passed, failed and not evaluated, the pass rate and the per-criterion
    figures."""

    total_cases: int
    passed_cases: int
    failed_cases: int
    pass_rate: float
    """passed / (passed + failed): not_evaluated cases are not in the denominator."""
    avg_score: float
    criterion_stats: dict[str, CriterionStats] = Field(default_factory=dict)
    not_evaluated_cases: int = 0
    """Cases whose verdict is not_evaluated (counted in ``total_cases``, neither passed nor failed)."""


class EvalReport(BaseModel):
    """The results of a run (``otel-eval evaluate``, a report over stored sessions) with their summary
    and the config used, secrets redacted."""

    report_id: str
    eval_set_id: str
    eval_set_name: str | None = None
    results: list[EvalCaseResult] = Field(default_factory=list)
    summary: EvalSummary
    config_used: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    duration_seconds: float = 0.0
