"""``tool_selection``: was the agent's first choice of tool the expected one?"""

from __future__ import annotations

from typing import Any

from ..models.evalset import CriterionConfig, EvalCase, Invocation
from ..trajectory import ActualToolCall, Trajectory, Turn
from ._invocations import PerInvocationCriterion
from .base import Expectation, JudgeClient


def first_call(turn: Turn) -> ActualToolCall | None:
    """The agent's first choice: the first call of the shallowest agent level."""
    if not turn.calls:
        return None
    depth = min(c.depth for c in turn.calls)
    return next(c for c in turn.calls if c.depth == depth)


class ToolSelection(PerInvocationCriterion):
    """Whether each turn's first call is the expected tool: the routing decision, checked apart from the
    rest of the trajectory."""

    kind = "tool_selection"
    description = "1 when the turn's first call (shallowest agent level) is expected_tool_selection, else 0"
    default_threshold = 1.0
    expectation = Expectation(
        "expected_tool_selection",
        lambda inv: inv.expected_tool_selection is not None,
        "the case sets no expected tool selection",
    )

    def score_turn(self, inv: Invocation, turn: Turn, cfg: CriterionConfig) -> tuple[float, dict[str, Any]]:
        first = first_call(turn)
        actual = first.name if first else None
        return float(actual == inv.expected_tool_selection), {
            "expected_tool": inv.expected_tool_selection,
            "actual_tool": actual,
            "calls": [c.name for c in turn.calls],
        }

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        score, details = super().score(trajectory, case, cfg)
        return score, {"measure": "first_tool_match", **details}
