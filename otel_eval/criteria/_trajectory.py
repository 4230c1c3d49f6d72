"""What the trajectory criteria share: their options, which calls count, and scoring one measure
of the turn's alignment (:func:`otel_eval.metrics.alignment.align`) per invocation.

Each trajectory criterion is a module of its own (``trajectory_match``, ``trajectory_f1``, ...)
naming the measure its score is, stored as ``details['measure']``. ``adk_match_avg``: per
invocation 1.0 when the match type holds, else 0.0, averaged (ADK's ``tool_trajectory_avg_score``).
Partial credit comes only from the criteria named for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from ..metrics.alignment import Alignment, align
from ..models.arguments import ArgumentPolicy
from ..models.evalset import CriterionConfig, EvalCase, ExpectedToolCall, Invocation
from ..trajectory import ActualToolCall, Trajectory, Turn
from ._invocations import per_invocation
from .base import Criterion, CriterionOptions, Expectation, JudgeClient


class TrajectoryOptions(CriterionOptions):
    """The options every trajectory criterion takes: which calls count, how retries and arguments are
    compared."""

    max_depth: int | Literal["auto"] | None = "auto"
    """Which calls are the agent's: "auto" (the top-level agent's, unless the expectation names a
    tool only a sub-agent used), a depth, or None for every call."""
    collapse_retries: bool = True
    """Set a failed attempt the agent retried aside (neither expected nor extra)."""
    first_call_only: bool = False
    """Compare only the first expected call with the agent's first call (Big Sky's matchToolCall)."""
    graded: bool | None = None
    """Refused: partial credit is a criterion of its own (trajectory_in_order_score, ...)."""
    args_mode: Literal["exact", "subset", "ignore"] = "exact"
    keys: list[str] | None = None
    fold_case: bool = False
    fold_whitespace: bool = False
    comparators: dict[str, str] = {}
    tools: dict[str, dict[str, Any]] = {}
    """Per-tool argument settings: ``{mode, keys, fold_case, fold_whitespace, comparators}``."""


ARGUMENT_OPTIONS = ("args_mode", "keys", "fold_case", "fold_whitespace", "comparators", "tools")
"""The options :meth:`ArgumentPolicy.from_options` reads."""
_DEFAULT_POLICY = ArgumentPolicy.from_options({})


def _expects_calls(inv: Invocation) -> bool:
    """None: the golden does not say, so tool use is not checked; [] says "no tool". A Big Sky
    example (first call only) is always checked, as Big Sky's matchToolCall checks every example."""
    return inv.expected_tool_trajectory is not None or inv.first_call_only


EXPECTS_CALLS = Expectation(
    "expected_tool_trajectory",
    _expects_calls,
    "the case does not say which tools to call (no expected_tool_trajectory) in any turn",
)


def calls_for(
    turn: Turn, expected_names: Callable[[], set[str]], max_depth: int | str | None
) -> tuple[list[ActualToolCall], int | None]:
    """The calls compared with the expectation. "auto": the top-level agent's calls, unless the
    expectation names a tool only a nested (sub-agent) call used — then every call.
    ``expected_names()`` is asked only then: most turns have no nested call."""
    if max_depth is None:
        return list(turn.calls), None
    if max_depth == "auto":
        top: list[ActualToolCall] = []
        nested_names: set[str] = set()
        for c in turn.calls:
            if c.depth == 0:
                top.append(c)
            elif c.depth > 0:
                nested_names.add(c.name)
        if nested_names and (expected_names() - {c.name for c in top}) & nested_names:
            return list(turn.calls), None
        return top, 0
    return [c for c in turn.calls if c.depth <= int(max_depth)], int(max_depth)


class TrajectoryCriterion(Criterion):
    """A measure of the alignment of each turn's calls with the invocation's expected calls,
    averaged over the invocations that state an expected trajectory."""

    measure: ClassVar[str]
    Options = TrajectoryOptions
    expectation: ClassVar[Expectation | None] = EXPECTS_CALLS
    refused = frozenset({"graded"})
    arguments: ClassVar[str] = "by meaning"
    """How arguments compare when ``check_args`` is on (``details['arguments']``)."""
    reference: ClassVar[str | None] = None
    """The other tool whose number this is (``details['reference']``)."""

    def known_skip(self, case: EvalCase, cfg: CriterionConfig, judge: JudgeClient | None) -> str | None:
        return None  # its options are checked first: a bad one is an error, also when nothing is expected

    # Hooks a trajectory criterion may change:

    def refuse_options(self, options: dict[str, Any]) -> None:
        """Raise ValueError for an option this criterion knows but will not take."""
        if options.get("graded"):
            raise ValueError(
                "options.graded: partial credit is a criterion of its own; use trajectory_in_order_score "
                "(or trajectory_f1 / trajectory_recall / trajectory_precision) with its own threshold"
            )

    def argument_policy(self, options: dict[str, Any]) -> ArgumentPolicy | None:
        """How arguments compare (the options' policy, or the default one); None: the criterion compares
        them its own way."""
        if any(key in options for key in ARGUMENT_OPTIONS):
            return ArgumentPolicy.from_options(options)
        return _DEFAULT_POLICY  # no argument option: the default policy (frozen, never changed), built once

    def tool_name(self, options: dict[str, Any]) -> str | None:
        """The one tool the criterion is about, if it is about one."""
        return None

    def calls(
        self, turn: Turn, expected_names: Callable[[], set[str]], max_depth: int | str | None
    ) -> tuple[list[ActualToolCall], int | str | None]:
        """The turn's calls compared with the expectation, and the depth they were taken to
        (``options.max_depth``: "auto", a depth, None for every call; see :func:`calls_for`)."""
        return calls_for(turn, expected_names, max_depth)

    def align(
        self,
        expected: list[ExpectedToolCall],
        calls: list[ActualToolCall],
        cfg: CriterionConfig,
        policy: ArgumentPolicy | None,
        first_call_only: bool,
    ) -> tuple[Alignment, bool]:
        """The turn's alignment and whether the match type holds."""
        alignment = align(
            expected,
            calls,
            check_args=cfg.check_args,
            arg_options=policy,
            collapse_retries=bool(cfg.options.get("collapse_retries", True)),
            first_call_only=first_call_only,
        )
        return alignment, alignment.satisfies(cfg.match_type)

    def turn_score(self, alignment: Alignment, satisfied: bool, tool_name: str | None) -> float:
        """The turn's score from its alignment: the :attr:`measure` property, or 1/0 for whether the
        match type holds."""
        if self.measure == "adk_match_avg":
            return float(satisfied)
        return float(getattr(alignment, self.measure))  # precision, recall, f1, in_order_f1: the alignment's properties

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        options = cfg.options
        self.refuse_options(options)
        policy = self.argument_policy(options)
        tool_name = self.tool_name(options)
        max_depth = options.get("max_depth", "auto")
        measure = self.measure
        arguments = self.arguments if cfg.check_args else "ignored"

        def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
            expected = inv.expected_tool_trajectory or []
            first_call_only = inv.first_call_only or bool(options.get("first_call_only"))

            def names() -> set[str]:
                return {c.name for c in expected} | ({tool_name} if tool_name is not None else set())

            calls, depth = self.calls(turn, names, max_depth)
            alignment, satisfied = self.align(expected, calls, cfg, policy, first_call_only)
            score = self.turn_score(alignment, satisfied, tool_name)
            details: dict[str, Any] = {"measure": measure}
            if measure == "adk_match_avg":
                details.update(match_type=cfg.match_type.value, satisfied=satisfied)
            if tool_name is not None:
                details["tool_name"] = tool_name
            details["max_depth"] = depth
            details["first_call_only"] = first_call_only
            details.update(alignment.summary())  # not as keywords: that would copy the summary once more
            return score, details

        applies = self.expectation.applies if self.expectation is not None else (lambda inv: True)
        score, details = per_invocation(trajectory, case, applies, one, EXPECTS_CALLS.nothing_expected)
        head: dict[str, Any] = {"measure": measure, "arguments": arguments}
        if measure == "adk_match_avg":
            head["match_type"] = cfg.match_type.value
        if self.reference is not None:
            head["reference"] = self.reference
        return score, {**head, **details}
