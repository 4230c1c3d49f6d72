"""``final_response_match_v2``: google-adk's ``FinalResponseMatchV2Evaluator``
(``evaluation/final_response_match_v2.py``), as pure functions.

Per invocation the judge says whether the agent's final response is *valid* against the reference
(score 1) or *invalid* (0); an answer without a recognisable label scores nothing. Samples of one
invocation: majority vote over the samples that have a label, a tie counting as invalid. The
metric: the fraction of evaluated invocations that are valid; none evaluated → NOT_EVALUATED.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from . import prompts
from .invocation import AdkInvocation, response_text, text_of
from .results import NOT_EVALUATED, Evaluation, PerInvocation, eval_status

VALID, INVALID, NOT_FOUND = "valid", "invalid", "label field not found"
"""The labels ``_parse_critique`` tells apart (ADK's ``Label.VALID``, ``INVALID``, ``NOT_FOUND``)."""

_INVALID_WORDS = ("invalid", "almost", "false", "partially_valid", "partially valid", "partially")
_VALID_WORDS = ("valid", "true")

_VALID_FIELD = re.compile(r'"is_the_agent_response_valid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')
_INVALID_FIELD = re.compile(r'"is_the_agent_response_invalid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')


def prompt(actual: AdkInvocation, expected: AdkInvocation, include_intermediate: bool = False) -> str:
    """``format_auto_rater_prompt``: the user prompt is the *expected* invocation's."""
    reference = response_text(expected, include_intermediate)
    response = response_text(actual, include_intermediate)
    return prompts.FINAL_RESPONSE_MATCH_V2.format(
        prompt=text_of(expected.user_content), response=response or "", golden_response=reference or ""
    )


def parse_label(answer: str) -> str:
    """``_parse_critique``: the ``is_the_agent_response_valid`` field's label (or an
    ``..._invalid`` field read the other way round)."""
    found = _VALID_FIELD.search(answer)
    if found:
        label = found.group(1).strip().rstrip(",}")
        if label in _INVALID_WORDS:
            return INVALID
        return VALID if label in _VALID_WORDS else NOT_FOUND
    found = _INVALID_FIELD.search(answer)
    if found:
        label = found.group(1).strip().rstrip(",}")
        return INVALID if label in ("true", "invalid") else VALID
    return NOT_FOUND


def sample_score(answer: str | None) -> float | None:
    """``convert_auto_rater_response_to_score``: 1.0 valid, 0.0 invalid, None otherwise."""
    if answer is None:
        return None
    label = parse_label(answer)
    return 1.0 if label == VALID else 0.0 if label == INVALID else None


def label_majority(scores: Sequence[float | None]) -> float | None:
    """``aggregate_per_invocation_samples``: more valid than invalid samples → valid; a tie →
    invalid; no sample with a label → no score."""
    positive = sum(1 for s in scores if s == 1.0)
    negative = sum(1 for s in scores if s == 0.0)
    if not positive and not negative:
        return scores[0] if scores else None
    return 1.0 if positive > negative else 0.0


def evaluation_from_answers(
    answers: Sequence[tuple[int, str | None, Sequence[str | None]]], threshold: float
) -> Evaluation:
    """The metric from the judge's answers: per invocation (turn, invocation id, its samples'
    answer texts), as ADK aggregates them."""
    per_invocation = []
    for turn, invocation_id, texts in answers:
        scores = [sample_score(t) for t in texts]
        score = label_majority(scores)
        labels = [parse_label(t) if t is not None else NOT_FOUND for t in texts]
        spread = Counter(labels)
        per_invocation.append(
            PerInvocation(
                turn,
                invocation_id,
                score,
                eval_status(score, threshold),
                {
                    "label": VALID if score == 1.0 else INVALID if score == 0.0 else NOT_FOUND,
                    "samples": labels,
                    "spread": {VALID: spread[VALID], INVALID: spread[INVALID], "not_found": spread[NOT_FOUND]},
                },
            )
        )
    return _overall(per_invocation, threshold)


def _overall(per_invocation: list[PerInvocation], threshold: float) -> Evaluation:
    """``aggregate_invocation_results``: valid invocations over evaluated invocations."""
    valid: float = 0
    evaluated = 0
    for result in per_invocation:
        if result.score is None or result.status == NOT_EVALUATED:
            continue
        evaluated += 1
        valid += result.score
    if evaluated == 0:
        return Evaluation(None, NOT_EVALUATED, per_invocation)
    score = valid / evaluated
    return Evaluation(score, eval_status(score, threshold), per_invocation)
