"""google-adk metrics otel-eval accepts under ADK's names but does not evaluate, each with its
reason, never a pass: the Vertex-only ones (google-adk delegates them to the Vertex AI Gen AI
evaluation service), ``per_turn_user_simulator_quality_v1`` (it judges ADK's user simulator) and
a ``test_config.json``'s custom metrics (ADK imports the agent's own Python function)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..models.evalset import CriterionConfig, EvalCase
from ..trajectory import Trajectory
from .adk_judge import AdkJudgeOptions
from .base import Criterion, CriterionOptions, JudgeClient, Skip

_VERTEX_REASON = (
    "google-adk computes {name} with the Vertex AI Gen AI evaluation service (a Google Cloud "
    "project); otel-eval does not call Vertex AI, so it is not evaluated"
)
_SIMULATOR_REASON = (
    "{name} judges google-adk's user simulator (a conversation_scenario run by `adk eval`); "
    "otel-eval scores the conversations your agent actually had and runs no user simulator, "
    "so it is not evaluated"
)
_CUSTOM_REASON = (
    "custom metric {name} ({function}): google-adk imports that Python function from your agent's "
    "code; otel-eval does not, so it is not evaluated"
)


class NotRun(Criterion):
    """Always skipped, with :attr:`reason` (``{name}``: the criterion's name, ``{function}``: options.function)."""

    reason: ClassVar[str]

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase | None,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        raise Skip(self.reason.format(name=name, function=cfg.options.get("function", "?")))


class VertexMetric(NotRun):
    """A google-adk metric that only Vertex AI's evaluation service computes: accepted by name, so an
    ADK config loads, and reported not evaluated."""

    adk = "vertex"
    reason = _VERTEX_REASON


def _vertex_metric(class_name: str, kind: str, measures: str) -> type[VertexMetric]:
    description = f"google-adk's Vertex AI {measures} (not evaluated: otel-eval does not call Vertex AI)"
    doc = f"google-adk's ``{kind}``, its {measures}: accepted by name, reported not evaluated (Vertex AI computes it)."
    return type(
        class_name,
        (VertexMetric,),
        {"kind": kind, "description": description, "__module__": __name__, "__doc__": doc},
    )


Safety = _vertex_metric("Safety", "safety_v1", "safety metric")
ResponseEvaluationScore = _vertex_metric(
    "ResponseEvaluationScore", "response_evaluation_score", "response coherence metric"
)
MultiTurnTaskSuccess = _vertex_metric("MultiTurnTaskSuccess", "multi_turn_task_success_v1", "multi-turn task success")
MultiTurnTrajectoryQuality = _vertex_metric(
    "MultiTurnTrajectoryQuality", "multi_turn_trajectory_quality_v1", "multi-turn trajectory quality"
)
MultiTurnToolUseQuality = _vertex_metric(
    "MultiTurnToolUseQuality", "multi_turn_tool_use_quality_v1", "multi-turn tool use quality"
)


class UserSimulatorOptions(AdkJudgeOptions):
    """ADK's judge options, and the user simulator's stop signal, taken so ADK's config loads unchanged."""

    stop_signal: str | None = None


class PerTurnUserSimulatorQuality(NotRun):
    """google-adk's judge of its own user simulator: accepted by name and reported not evaluated, since
    there is no simulator here."""

    kind = "per_turn_user_simulator_quality_v1"
    description = "google-adk's judge of its user simulator (not evaluated: otel-eval runs no user simulator)"
    Options = UserSimulatorOptions
    adk = "user_simulator"
    reason = _SIMULATOR_REASON


class CustomMetricOptions(CriterionOptions):
    """A ``test_config.json`` custom metric's reference to the agent's function, kept for the reason
    shown."""

    function: str | None = None
    """The Python function google-adk would import (``custom_metrics.<name>.code_config.name``)."""


class CustomMetric(NotRun):
    """A ``test_config.json`` custom metric: google-adk runs the agent's own Python function, which
    otel-eval does not import, so it is reported not evaluated."""

    kind = "adk_custom_metric"
    description = "a test_config.json's custom metric (not evaluated: otel-eval does not import the agent's code)"
    Options = CustomMetricOptions
    adk = "custom"
    reason = _CUSTOM_REASON
