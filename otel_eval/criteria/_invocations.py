"""Invocation *i* of the case against turn *i* of the session: the alignment every per-turn
criterion shares. Turns the session is missing count as empty turns (no calls, no answer); turns
beyond the case are not scored. Both gaps are reported in ``details['turns']``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ..models.evalset import CriterionConfig, EvalCase, Invocation
from ..trajectory import Trajectory, Turn
from .base import Criterion, Expectation, JudgeClient, Skip


def turn_at(trajectory: Trajectory, index: int) -> Turn:
    """Turn ``index`` of the session, or an empty turn when the session has fewer."""
    return trajectory.turns[index] if index < len(trajectory.turns) else Turn(index=index, trace_id="")


def turn_gap(trajectory: Trajectory, case: EvalCase) -> dict[str, Any]:
    """How the session's turns line up with the case's invocations: turns missing, and extra turns left
    unscored."""
    expected, actual = len(case.conversation), len(trajectory.turns)
    return {
        "expected": expected,
        "actual": actual,
        "missing_turns": list(range(actual, expected)),
        "unscored_extra_turns": list(range(expected, actual)),
    }


def per_invocation(
    trajectory: Trajectory,
    case: EvalCase,
    applies: Callable[[Invocation], bool],
    score_one: Callable[[Invocation, Turn], tuple[float, dict[str, Any]]],
    nothing_expected: str,
) -> tuple[float, dict[str, Any]]:
    """Mean over the invocations that carry the expectation; each detail entry names its turn.
    :class:`Skip` with ``nothing_expected`` when no invocation does."""
    scores: list[float] = []
    per_turn: list[dict[str, Any]] = []
    for i, invocation in enumerate(case.conversation):
        if not applies(invocation):
            continue
        turn = turn_at(trajectory, i)
        score, details = score_one(invocation, turn)
        scores.append(score)
        per_turn.append(
            {
                "invocation": invocation.invocation_id,
                "turn": i,
                "turn_present": i < len(trajectory.turns),
                "score": round(score, 6),
                **details,
            }
        )
    if not scores:
        raise Skip(nothing_expected)
    return sum(scores) / len(scores), {"per_turn": per_turn, "turns": turn_gap(trajectory, case)}


class PerInvocationCriterion(Criterion):
    """A criterion that scores each invocation stating its :attr:`expectation` against the
    session's turn of the same index (:meth:`score_turn`), and is the mean of those scores."""

    expectation: ClassVar[Expectation]

    def score_turn(self, inv: Invocation, turn: Turn, cfg: CriterionConfig) -> tuple[float, dict[str, Any]]:
        """(score 0-1, details) of one turn against its invocation; only invocations with the
        expectation are asked."""
        raise NotImplementedError

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        return per_invocation(
            trajectory,
            case,
            self.expectation.applies,
            lambda inv, turn: self.score_turn(inv, turn, cfg),
            self.expectation.nothing_expected,
        )
