"""google-adk's efficiency metrics (``tool_call_count_v1``, ``inference_call_count_v1``,
``token_usage_v1``, ``invocation_duration_v1``): informational. A value per invocation (turn),
averaged over the turns that have one (``token_usage_v1``: over every turn, as google-adk);
reported, never passing or failing (ADK's INFORMATIONAL), and no part of the case's score. A session with no value at all (no model call reported token
counts) reports it skipped, n/a."""

from __future__ import annotations

from typing import Any, ClassVar

from ..models.evalset import CriterionConfig, EvalCase
from ..models.results import CriterionResult
from ..trajectory import Trajectory, Turn
from .base import Criterion, JudgeClient, Skip


class EfficiencyMetric(Criterion):
    """ADK's efficiency metric: :meth:`value` per turn, averaged over the turns that have one
    (ADK averages per invocation; ``None`` is n/a and left out)."""

    informational = True
    adk = "informational"
    default_threshold = 0.0  # it takes none: google-adk refuses one too
    unit: ClassVar[str]
    missing: ClassVar[str] = ""
    """Why no turn may have a value, added to the skip reason."""
    over_every_turn: ClassVar[bool] = False
    """Average over every turn once one has a value (a turn without one counts 0), not over the
    turns that have one."""

    def value(self, turn: Turn) -> float | dict[str, float] | None:
        """The turn's value: a number, a dict with ``total_tokens`` and its parts, or None (n/a)."""
        raise NotImplementedError

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase | None,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        per_turn: list[dict[str, Any]] = []
        values: list[float] = []
        for turn in trajectory.turns:
            value = self.value(turn)
            entry: dict[str, Any] = {"turn": turn.index}
            if isinstance(value, dict):
                entry.update(value)
                value = value["total_tokens"]
            entry["value"] = value
            per_turn.append(entry)
            if value is not None:
                values.append(float(value))
        if not values:
            raise Skip(f"{self.kind}: n/a, no turn of the session reported it{self.missing}")
        average = sum(values) / (len(per_turn) if self.over_every_turn else len(values))
        return average, {
            "informational": True,
            "measure": self.unit,
            "per_turn": per_turn,
            "reason": "informational: reported, never passes or fails",
        }

    def decide(self, name: str, cfg: CriterionConfig, score: float, details: dict[str, Any]) -> CriterionResult:
        """Reported, never failing: a value, not a verdict."""
        return CriterionResult(
            criterion=name, score=round(score, 6), passed=True, threshold=cfg.threshold, details=details
        )


class ToolCallCount(EfficiencyMetric):
    """google-adk's ``tool_call_count_v1``: how many tools the agent called per turn, as ``adk eval``
    counts them (reported, not judged)."""

    kind = "tool_call_count_v1"
    description = "google-adk's tool calls per turn, averaged (informational: never passes or fails)"
    unit = "tool calls per turn"

    def value(self, turn: Turn) -> float | dict[str, float] | None:
        """The calls ``adk eval`` counts in an invocation: every call but those made inside another
        tool call (an AgentTool's agent runs in a session of its own), as ``tool_trajectory_avg_score``."""
        return float(sum(1 for c in turn.calls if not c.inside_call))


class InferenceCallCount(EfficiencyMetric):
    """google-adk's ``inference_call_count_v1``: model calls per turn, the cost driver a change of
    prompt or tools moves."""

    kind = "inference_call_count_v1"
    description = "google-adk's model calls per turn, averaged (informational: never passes or fails)"
    unit = "model calls per turn"

    def value(self, turn: Turn) -> float | dict[str, float] | None:
        """The model calls ADK's invocation has events of: each call once (a legacy ``call_llm``
        span and the ``generate_content`` span inside it are one), none made inside a tool call
        (an ``AgentTool``'s agent runs in a session of its own), as ``tool_call_count_v1``."""
        return float(turn.llm_calls - turn.llm_calls_inside_calls)


class TokenUsage(EfficiencyMetric):
    """google-adk's ``token_usage_v1``: tokens per turn (with input and output apart), averaged as ADK
    averages them."""

    kind = "token_usage_v1"
    description = "google-adk's tokens per turn (input, output, total), averaged (informational: never passes or fails)"
    unit = "tokens per turn"
    missing = " (no model call carried token counts)"
    # As google-adk's token_usage_v1 averages: a backend leaves a count out of a call that spent
    # none, so a turn without counts is 0 tokens once another turn reported some.
    over_every_turn = True

    def value(self, turn: Turn) -> float | dict[str, float] | None:
        """The tokens of the model calls ``inference_call_count_v1`` counts, each call's once."""
        input_tokens = turn.input_tokens - turn.input_tokens_inside_calls
        output_tokens = turn.output_tokens - turn.output_tokens_inside_calls
        if not (input_tokens or output_tokens):
            return None  # no model call reported a count: n/a, not zero
        return {
            "total_tokens": float(input_tokens + output_tokens),
            "input_tokens": float(input_tokens),
            "output_tokens": float(output_tokens),
        }


class InvocationDuration(EfficiencyMetric):
    """google-adk's ``invocation_duration_v1``: a turn's wall time, from its root span's start to its
    end."""

    kind = "invocation_duration_v1"
    description = "google-adk's seconds per turn, averaged (informational: never passes or fails)"
    unit = "seconds per turn"

    def value(self, turn: Turn) -> float | dict[str, float] | None:
        if turn.start_ns and turn.end_ns and turn.end_ns >= turn.start_ns:
            return (turn.end_ns - turn.start_ns) / 1e9
        return None
