"""``response_match``: the turn's final answer against the expected final response, by ROUGE-1
(Google's rouge-score), ADK's ROUGE-1, exact, contains or a regex.

Under google-adk's name, ``response_match_score``, it is always ADK's measure (``adk_rouge1``),
never another method.
"""

from __future__ import annotations

from typing import Any, Literal

from ..metrics.response import adk_rouge1, contains, exact_match, regex_match, rouge1
from ..models.evalset import CriterionConfig, EvalCase, Invocation
from ..trajectory import Trajectory, Turn
from ._invocations import per_invocation
from .base import Criterion, CriterionOptions, Expectation, JudgeClient

METHODS = ("rouge1", "adk_rouge1", "exact", "contains", "regex")
ADK_RESPONSE_MATCH = "response_match_score"
"""google-adk's name: always its own measure (``adk_rouge1``), never another method."""


class ResponseMatchOptions(CriterionOptions):
    """How the final answer is compared with the expected one (ROUGE-1 by default)."""

    method: Literal["rouge1", "adk_rouge1", "exact", "contains", "regex"] = "rouge1"
    use_stemmer: bool = False
    """rouge1: Porter-stem tokens longer than 3 characters, as rouge-score does."""
    fold_case: bool | None = None
    """exact: ignore case (default false); contains: ignore case (default true)."""
    pattern: str | None = None
    """regex: the pattern searched for in the session's final answer."""
    ignore_case: bool = False
    """regex: match case-insensitively."""


class ResponseMatch(Criterion):
    """Compares each turn's final answer with the golden answer: ROUGE-1 (rouge-score's, or ADK's
    as ``response_match_score`` computes it), exact, contains or a regex."""

    kind = "response_match"
    description = "ROUGE-1 F of the final answer vs expected_final_response (or ADK's ROUGE-1, exact, contains, regex)"
    Options = ResponseMatchOptions
    default_threshold = 0.7
    expectation = Expectation(
        "expected_final_response",
        lambda inv: inv.expected_final_response is not None,
        "the case has no expected final response",
    )

    def known_skip(self, case: EvalCase, cfg: CriterionConfig, judge: JudgeClient | None) -> str | None:
        return None  # a regex needs no expected response; the method is known only while scoring

    def decides_exactly(self, name: str) -> bool:
        return name == ADK_RESPONSE_MATCH  # ADK's ROUGE-1, decided as ADK decides

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "response_match",
    ) -> tuple[float, dict[str, Any]]:
        options = cfg.options
        if name == ADK_RESPONSE_MATCH:
            if options.get("method", "adk_rouge1") != "adk_rouge1" or "use_stemmer" in options:
                raise ValueError(
                    f"{ADK_RESPONSE_MATCH} is google-adk's ROUGE-1 (method adk_rouge1, always stemmed); "
                    "for another method or stemming choice name the criterion differently, "
                    "with options.kind = \"response_match\""
                )
            method = "adk_rouge1"
        else:
            method = options.get("method", "rouge1")
        if method not in METHODS:
            raise ValueError(
                f"options.method: unknown response method {method!r}; expected one of {', '.join(METHODS)}"
            )
        fold_case = options.get("fold_case")
        if method == "regex":
            pattern = options.get("pattern")
            response = trajectory.final_response
            matched = regex_match(pattern, response, ignore_case=bool(options.get("ignore_case", False)))
            return float(matched), {"method": method, "pattern": pattern, "response": response}

        def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
            reference = inv.expected_final_response.get_text() if inv.expected_final_response else ""
            candidate = turn.final_response or ""
            details: dict[str, Any] = {"expected": reference, "actual": turn.final_response}
            if method == "exact":
                score = float(exact_match(reference, candidate, fold_case=bool(fold_case)))
            elif method == "contains":
                score = float(contains(reference, candidate, fold_case=True if fold_case is None else bool(fold_case)))
            elif method == "adk_rouge1":
                r = adk_rouge1(reference, candidate)
                score = r.fmeasure
                details.update(precision=round(r.precision, 6), recall=round(r.recall, 6))
            else:
                r = rouge1(reference, candidate, use_stemmer=bool(options.get("use_stemmer", False)))
                score = r.fmeasure
                details.update(precision=round(r.precision, 6), recall=round(r.recall, 6))
            return score, details

        score, details = per_invocation(
            trajectory, case, self.expectation.applies, one, self.expectation.nothing_expected
        )
        return score, {"method": method, **details}
