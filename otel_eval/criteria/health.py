"""``health``: reference-free numbers of every session (tool errors, loops, steps, latency,
tokens, a final answer; :mod:`otel_eval.metrics.health`), failing only on limits the user set."""

from __future__ import annotations

from typing import Any

from pydantic import create_model

from ..metrics.health import FLAG_LIMITS, LIMITS, health
from ..models.evalset import CriterionConfig, EvalCase
from ..models.results import CriterionResult
from ..trajectory import Trajectory
from .base import Criterion, CriterionOptions, JudgeClient

HealthOptions = create_model(
    "HealthOptions",
    __base__=CriterionOptions,
    # pydantic's create_model stubs take fields only as named keywords, not a ** mapping
    **{limit: (float | None, None) for limit in LIMITS},  # type: ignore[call-overload]
    **{flag: (bool, False) for flag in FLAG_LIMITS},
    __doc__="health's options: a limit a metric (None: not limited) and the boolean limits.",
)
"""A limit a metric: the session fails when the metric exceeds it."""


class Health(Criterion):
    """Reference-free limits on what any session can get wrong (tool errors, repeated calls,
    steps, latency, tokens): runs on every session, matched or not, and fails only on a configured limit."""

    kind = "health"
    description = "reference-free, every session: 1 - violated limits / configured limits (1.0 with no limits)"
    Options = HealthOptions
    default_threshold = 1.0
    reference_free = True

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase | None,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        limits = {k: v for k, v in cfg.options.items() if k != "kind"}
        report = health(trajectory, limits)
        checked = len(limits)
        return (1.0 - len(report["violations"]) / checked if checked else 1.0), report

    def result(self, name: str, cfg: CriterionConfig, score: float, details: dict[str, Any]) -> CriterionResult:
        """Passed when no limit is exceeded, whatever the threshold."""
        return CriterionResult(
            criterion=name, score=round(score, 6), passed=details["passed"], threshold=cfg.threshold, details=details
        )
