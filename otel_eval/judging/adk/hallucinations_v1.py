"""``hallucinations_v1``: google-adk's ``HallucinationsV1Evaluator`` (``evaluation/hallucinations_v1.py``),
as pure functions.

Two judge calls per natural-language response, in sequence: the *segmenter* splits the response
into ``<sentence>``s; the *validator* labels each sentence against a context (the developer
instructions, the user prompt, the tool definitions, and the tool calls and outputs before the
response) as supported, unsupported, contradictory, disputed or not_applicable. A response's score
is the share of its sentences labelled supported or not_applicable. The responses judged are the
invocation's final response and, with ``evaluate_intermediate_nl_responses``, every text the
agents wrote before it (each against the events before it). An invocation's score is the mean of
its responses' scores; the metric's the mean of its invocations'. ADK takes one sample of each
call: ``num_samples`` does not apply to this metric.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import prompts
from .invocation import (
    NO_GROUNDING,
    AdkInvocation,
    AppDetails,
    InvocationEvent,
    developer_instructions,
    text_of,
    tool_declarations_json,
)
from .results import NOT_EVALUATED, Evaluation, PerInvocation, eval_status

POSITIVE_LABELS = frozenset({"supported", "not_applicable"})
NEGATIVE_LABELS = frozenset({"unsupported", "contradictory", "disputed"})

_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
_VALIDATION = re.compile(
    r"sentence:(.*?)\nlabel:(.*?)\nrationale:(.*?)\nsupporting_excerpt:(.*?)\ncontradicting_excerpt:(.*?)(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)


@dataclass(frozen=True)
class Step:
    """A natural-language response to judge and the context it is judged against."""

    nl_response: str
    context: str

    def to_json(self) -> dict[str, str]:
        """The step as it is stored in the judge request, so a resumed job judges the same text."""
        return {"nl_response": self.nl_response, "context": self.context}


def context(app_details: AppDetails | None, invocation: AdkInvocation, events: Sequence[InvocationEvent]) -> str:
    """``_create_context_for_step``: the header (instructions, user prompt, tool definitions,
    grounding metadata), then each earlier event's text, tool calls and tool outputs."""
    instructions, declarations = "", "Agent has no tools."
    if app_details is not None:
        found = []
        for name in app_details.agent_details:
            text = developer_instructions(app_details, name)
            if text:
                found.append(name + ":\n" + text)
        instructions = "\n\n".join(found)
        declarations = tool_declarations_json(app_details)
    parts = [
        f"Developer instructions:\n{instructions}\n",
        f"User prompt:\n{text_of(invocation.user_content)}\n",
        "Tool definitions:",
        f"{declarations}\n",
        "Grounding metadata:",
        f"{NO_GROUNDING}\n",
    ]
    for event in events:
        if not event.content or not event.content.parts:
            continue
        calls = [p.function_call for p in event.content.parts if p.function_call]
        responses = [p.function_response for p in event.content.parts if p.function_response]
        texts = [p.text for p in event.content.parts if p.text]
        if texts:
            parts.append("\n".join(texts) + "\n")
        if calls:
            parts.append("tool_calls:")
            parts.append(json.dumps([c.model_dump(exclude_none=True) for c in calls], indent=2) + "\n")
        if responses:
            parts.append("tool_outputs:")
            parts.append(json.dumps([r.model_dump(exclude_none=True) for r in responses], indent=2) + "\n")
    return "\n".join(parts)


def steps(actual: AdkInvocation, evaluate_intermediate: bool = False) -> list[Step]:
    """``_get_steps_to_evaluate``: the responses to judge, each with its context."""
    out: list[Step] = []
    before: list[InvocationEvent] = []
    events = actual.events
    if evaluate_intermediate:
        for event in events:
            texts = [p.text for p in event.content.parts if p.text] if event.content and event.content.parts else []
            if texts:
                step_context = context(actual.app_details, actual, before)
                out.extend(Step(text, step_context) for text in texts)
            before.append(event)
    else:
        before = list(events)
    final = text_of(actual.final_response)
    if final:
        out.append(Step(final, context(actual.app_details, actual, before)))
    return out


def segmenter_prompt(nl_response: str) -> str:
    """ADK's segmenter prompt for one response: the first of the two calls, which splits it into sentences."""
    return prompts.HALLUCINATIONS_V1_SEGMENTER.format(response=nl_response)


def parse_sentences(answer: str) -> list[str]:
    """The ``<sentence>`` elements of the segmenter's answer, in order: what the validator labels."""
    return _SENTENCE.findall(answer)


def validator_prompt(step_context: str, sentences: Sequence[str]) -> str:
    """ADK's validator prompt: the sentences, each in ``<sentence>`` tags as ADK writes them, to be
    labelled against the step's context."""
    listed = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
    return prompts.HALLUCINATIONS_V1_VALIDATOR.format(context=step_context, sentences=listed)


def parse_validation(answer: str) -> list[dict[str, str | None]]:
    """``_parse_validation_results``: one entry per ``sentence:`` / ``label:`` / ``rationale:`` /
    ``supporting_excerpt:`` / ``contradicting_excerpt:`` block."""
    out = []
    for match in _VALIDATION.finditer(answer.strip()):
        sentence, label, rationale, supporting, contradicting = match.groups()
        out.append(
            {
                "sentence": sentence.strip(),
                "label": label.strip(),
                "rationale": rationale.strip(),
                "supporting_excerpt": supporting.strip() if supporting.strip().lower() != "null" else None,
                "contradicting_excerpt": contradicting.strip() if contradicting.strip().lower() != "null" else None,
            }
        )
    return out


def accuracy(results: Sequence[dict[str, Any]]) -> float | None:
    """The share of sentences labelled supported or not_applicable; other labels are not counted."""
    scores = []
    for result in results:
        label = result.get("label")
        if label is None:
            continue
        label = label.strip().lower()
        if label in POSITIVE_LABELS:
            scores.append(1)
        elif label in NEGATIVE_LABELS:
            scores.append(0)
    return statistics.mean(scores) if scores else None


def invocation_result(
    turn: int,
    invocation_id: str | None,
    step_scores: Sequence[float | None],
    threshold: float,
    details: dict[str, Any],
) -> PerInvocation:
    """An invocation from its responses' scores: their mean (responses without one left out);
    no response to judge, or none scored, is NOT_EVALUATED."""
    scored = [s for s in step_scores if s is not None]
    score = statistics.mean(scored) if scored else None
    return PerInvocation(turn, invocation_id, score, eval_status(score, threshold), details)


def overall(per_invocation: list[PerInvocation], threshold: float) -> Evaluation:
    """``_aggregate_invocation_results``: the mean of the invocations that have a score."""
    scores = [r.score for r in per_invocation if r.score is not None]
    if not scores:
        return Evaluation(None, NOT_EVALUATED, per_invocation)
    score = statistics.mean(scores)
    return Evaluation(score, eval_status(score, threshold), per_invocation)
