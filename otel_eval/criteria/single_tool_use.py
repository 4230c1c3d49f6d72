"""``single_tool_use``: did each turn call ``options.tool_name`` (any arguments, failed or not)?
Needs no golden trajectory: every turn is checked."""

from __future__ import annotations

from typing import Any

from ..metrics.alignment import Alignment
from ._trajectory import TrajectoryCriterion, TrajectoryOptions


class SingleToolUseOptions(TrajectoryOptions):
    """The tool every turn must call."""

    tool_name: str | None = None
    """The tool that must be used (required)."""


class SingleToolUse(TrajectoryCriterion):
    """Whether each turn called one given tool, needing no golden trajectory: for agents whose job is to
    always use a tool (a search, a lookup)."""

    kind = "single_tool_use"
    description = "per turn 1 when the turn called options.tool_name (any arguments), else 0; averaged"
    measure = "single_tool_use"
    Options = SingleToolUseOptions
    expectation = None  # needs no golden trajectory: every turn is checked

    def tool_name(self, options: dict[str, Any]) -> str | None:
        tool_name = options.get("tool_name")
        if not isinstance(tool_name, str):
            raise ValueError("options.tool_name: single_tool_use needs the name of the tool that must be used")
        return tool_name

    def turn_score(self, alignment: Alignment, satisfied: bool, tool_name: str | None) -> float:
        return float(alignment.single_tool_use(tool_name or ""))
