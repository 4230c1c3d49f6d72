"""``tool_trajectory_avg_score``: google-adk's ``TrajectoryEvaluator``, exactly (tested against
google-adk's own code): per invocation 1 when ADK's rule for the match type holds, else 0,
averaged. Names and Python ``==`` on the arguments (``check_args = false`` is ADK's
``ignore_args``); every call counts, failed attempts included, in the order recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..metrics.alignment import Alignment, adk_match, align
from ..models.arguments import ArgumentPolicy
from ..models.evalset import CriterionConfig, ExpectedToolCall
from ..trajectory import ActualToolCall, Turn
from ._trajectory import TrajectoryCriterion, TrajectoryOptions, calls_for


class ToolTrajectoryAvgScore(TrajectoryCriterion):
    """google-adk's ``tool_trajectory_avg_score``, computed as ADK's TrajectoryEvaluator computes it
    (its calls, its match types, Python == on arguments), so the number equals ``adk eval``'s."""

    kind = "tool_trajectory_avg_score"
    description = "google-adk's tool_trajectory_avg_score: its TrajectoryEvaluator's number, exactly"
    measure = "adk_match_avg"
    decides_as_adk = True
    adk = "deterministic"
    arguments = "python =="
    reference = "google-adk TrajectoryEvaluator"
    refused = frozenset(TrajectoryOptions.model_fields) - {"kind", "max_depth"}
    """It takes only max_depth: anything else would stop it being ADK's number."""

    def refuse_options(self, options: dict[str, Any]) -> None:
        super().refuse_options(options)
        refused = sorted(self.refused.intersection(options))
        if refused:
            raise ValueError(
                f"options.{refused[0]}: tool_trajectory_avg_score computes "
                "google-adk's number (names, Python == on arguments, check_args = not ignore_args); "
                "use trajectory_match for argument options"
            )

    def argument_policy(self, options: dict[str, Any]) -> ArgumentPolicy | None:
        return None  # Python == on the argument dicts, as ADK compares them

    def calls(
        self, turn: Turn, expected_names: Callable[[], set[str]], max_depth: int | str | None
    ) -> tuple[list[ActualToolCall], int | str | None]:
        """ "auto" is what ``adk eval`` counts: every call but those made inside another tool call
        (an ``AgentTool``'s agent runs in a session of its own), so a sub-agent's calls after a
        transfer count and an agent-as-tool's never do."""
        if max_depth == "auto":
            return [c for c in turn.calls if not c.inside_call], "auto"
        return calls_for(turn, expected_names, max_depth)

    def align(
        self,
        expected: list[ExpectedToolCall],
        calls: list[ActualToolCall],
        cfg: CriterionConfig,
        policy: ArgumentPolicy | None,
        first_call_only: bool,
    ) -> tuple[Alignment, bool]:
        # ADK's rules: every call in recorded order, no groups, failed attempts count
        alignment = align(
            expected,
            calls,
            check_args=cfg.check_args,
            collapse_retries=False,
            first_call_only=first_call_only,
            parallel_groups=False,
            compare=lambda e, a: a.args == e.args,
        )
        return alignment, adk_match(expected, alignment.actual, cfg.match_type, ignore_args=not cfg.check_args)
