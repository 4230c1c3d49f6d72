"""What an ADK judge metric yields: google-adk's ``PerInvocationResult`` and ``EvaluationResult``
(``evaluation/evaluator.py``) as plain data, and its pass rule (``get_eval_status``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASSED, FAILED, NOT_EVALUATED = "passed", "failed", "not_evaluated"


def eval_status(score: float | None, threshold: float) -> str:
    """``llm_as_judge_utils.get_eval_status``: no score is NOT_EVALUATED; else ``score >=
    threshold`` exactly (no tolerance)."""
    if score is None:
        return NOT_EVALUATED
    return PASSED if score >= threshold else FAILED


@dataclass
class PerInvocation:
    """One invocation (turn) of the case: its score, ADK's status, and what the judge said."""

    turn: int
    invocation: str | None
    score: float | None
    status: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The invocation as it is stored in the criterion's details (``per_invocation``)."""
        return {
            "turn": self.turn,
            "invocation": self.invocation,
            "score": self.score,
            "status": self.status,
            **self.details,
        }


@dataclass
class Evaluation:
    """The metric over the case: ``score`` None is ADK's NOT_EVALUATED."""

    score: float | None
    status: str
    per_invocation: list[PerInvocation]
    details: dict[str, Any] = field(default_factory=dict)
