"""google-adk's judge metrics as a judge-pool protocol: the request a criterion stores with its
pending evaluation (plain JSON, so a restart resumes it), how the pool runs it (one call per
sample, or hallucinations_v1's two calls in sequence), and the criterion result it becomes.

Request (one criterion of a :class:`~otel_eval.judging.jobs.JudgeJob`)::

    {"criterion": name, "protocol": "<ADK metric>", "threshold": t, "judge_model": "gemini-2.5-flash",
     "rubrics": [], "options": {num_samples, judge_model_config, judge_models, ...no secrets},
     "turns": [{"turn": i, "invocation": id, "prompt": "...", "rubrics": [{"rubric_id", "text"}]}
               | {"turn": i, "invocation": id, "steps": [{"nl_response", "context"}]}],
     "unjudged": [{"turn": i, "invocation": id}]}

The prompts are rendered when the session is scored (the request is what the judge will read);
only hallucinations_v1's validator prompt waits for the segmenter's answer.

A judge answer ADK cannot read (no label, no verdict block, no sentence) counts as ADK counts it:
that sample has no score. Only when nothing in the case got a score is the criterion *not
evaluated*, with the reason naming the first 200 characters of an unreadable answer, never a FAIL.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ...models.results import CriterionResult
from .. import jobs as J
from . import final_response_match_v2 as frm
from . import hallucinations_v1 as hal
from . import rubric_based_final_response_quality_v1 as rfrq
from . import rubric_based_multi_turn_trajectory_quality_v1 as rmtt
from . import rubric_based_tool_use_quality_v1 as rtuq
from . import rubrics as R
from .invocation import AdkInvocation, JudgeRubric, RubricContent
from .results import NOT_EVALUATED, Evaluation, PerInvocation

log = logging.getLogger("otel_eval.judge")

FINAL_RESPONSE_MATCH_V2 = "final_response_match_v2"
RUBRIC_FINAL_RESPONSE = "rubric_based_final_response_quality_v1"
RUBRIC_TOOL_USE = "rubric_based_tool_use_quality_v1"
RUBRIC_MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
HALLUCINATIONS = "hallucinations_v1"
METRICS = (FINAL_RESPONSE_MATCH_V2, RUBRIC_FINAL_RESPONSE, RUBRIC_TOOL_USE, RUBRIC_MULTI_TURN, HALLUCINATIONS)
"""google-adk 2.13's LLM-judge metrics that run on the user's OpenAI-compatible judge."""

EVALUATORS = {
    FINAL_RESPONSE_MATCH_V2: "FinalResponseMatchV2Evaluator",
    RUBRIC_FINAL_RESPONSE: "RubricBasedFinalResponseQualityV1Evaluator",
    RUBRIC_TOOL_USE: "RubricBasedToolUseV1Evaluator",
    RUBRIC_MULTI_TURN: "RubricBasedMultiTurnTrajectoryEvaluator",
    HALLUCINATIONS: "HallucinationsV1Evaluator",
}
RUBRIC_TYPES = {
    RUBRIC_FINAL_RESPONSE: rfrq.RUBRIC_TYPE,
    RUBRIC_TOOL_USE: rtuq.RUBRIC_TYPE,
    RUBRIC_MULTI_TURN: rmtt.RUBRIC_TYPE,
}

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"
DEFAULT_NUM_SAMPLES = 5
"""google-adk's ``JudgeModelOptions`` defaults."""

SNIPPET = 200

GENERATION_KEYS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_output_tokens": "max_tokens",
    "seed": "seed",
    "stop_sequences": "stop",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
"""``judge_model_config`` (genai's ``GenerateContentConfig``) keys sent to the chat-completions
endpoint, under the names it knows; ``system_instruction`` becomes a system message. The others
(safety settings, thinking config, ...) are Gemini's and are not sent."""


def num_samples(options: Mapping[str, Any]) -> int:
    """How many times each turn is judged (``options.num_samples``, ADK's default when unset; at least
    one): the samples are voted on, so one judge answer does not decide alone."""
    return max(1, int(options.get("num_samples") or DEFAULT_NUM_SAMPLES))


# --- building the request --------------------------------------------------------------------------


def criterion_rubrics(rubrics: Sequence[Any], types: Mapping[str, str] | None = None) -> list[JudgeRubric]:
    """A criterion's rubrics (otel-eval's ``Rubric``: ``name`` is ADK's rubric_id, ``description``
    its ``text_property``) as ADK's, with their ``type`` from ``options.rubric_types``."""
    types = types or {}
    return [
        JudgeRubric(rubric_id=r.name, rubric_content=RubricContent(text_property=r.description), type=types.get(r.name))
        for r in rubrics
    ]


def _rubric_entries(rubrics: Sequence[JudgeRubric]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", exclude_none=True) for r in rubrics]


def build(
    metric: str,
    *,
    name: str,
    threshold: float,
    judge_model: str,
    options: Mapping[str, Any],
    rubrics: Sequence[JudgeRubric],
    actual: Sequence[AdkInvocation],
    expected: Sequence[AdkInvocation | None],
    turns: Sequence[int],
) -> dict[str, Any]:
    """The request of criterion ``name`` computing ADK's ``metric`` on the case's invocations
    (``actual[i]`` is turn ``turns[i]``, ``expected[i]`` its golden invocation or None). Raises
    ValueError where google-adk's evaluator raises (no rubrics, a rubric id twice, no reference
    for final_response_match_v2): the criterion is then not evaluated, with that reason."""
    if metric not in METRICS:
        raise ValueError(f"{metric} is not a google-adk judge metric ({', '.join(METRICS)})")
    if not actual:
        raise ValueError("the case has no invocations to judge")
    include = bool(options.get("include_intermediate_responses_in_final"))
    entries: list[dict[str, Any]] = []
    unjudged: list[dict[str, Any]] = []
    ids = [inv.invocation_id or None for inv in actual]
    if metric == FINAL_RESPONSE_MATCH_V2:
        for turn, inv_id, act, exp in zip(turns, ids, actual, expected):
            if exp is None:
                raise ValueError("expected_invocation is required for this metric.")
            entries.append({"turn": turn, "invocation": inv_id, "prompt": frm.prompt(act, exp, include)})
    elif metric == HALLUCINATIONS:
        evaluate_intermediate = bool(options.get("evaluate_intermediate_nl_responses"))
        for turn, inv_id, act in zip(turns, ids, actual):
            entries.append(
                {
                    "turn": turn,
                    "invocation": inv_id,
                    "steps": [s.to_json() for s in hal.steps(act, evaluate_intermediate)],
                }
            )
        if not any(e["steps"] for e in entries):
            raise ValueError("no invocation has a natural-language response to judge")
    elif metric == RUBRIC_MULTI_TURN:
        effective = R.effective_rubrics(rubrics, actual[-1].rubrics, RUBRIC_TYPES[metric])
        unjudged = [{"turn": t, "invocation": i} for t, i in zip(turns[:-1], ids[:-1])]
        entries.append(
            {
                "turn": turns[-1],
                "invocation": ids[-1],
                "prompt": rmtt.prompt(actual, effective),
                "rubrics": _rubric_entries(effective),
            }
        )
    else:
        for turn, inv_id, act in zip(turns, ids, actual):
            effective = R.effective_rubrics(rubrics, act.rubrics, RUBRIC_TYPES[metric])
            text = (
                rfrq.prompt(act, effective, include) if metric == RUBRIC_FINAL_RESPONSE else rtuq.prompt(act, effective)
            )
            entries.append({"turn": turn, "invocation": inv_id, "prompt": text, "rubrics": _rubric_entries(effective)})
    request: dict[str, Any] = {
        "criterion": name,
        "protocol": metric,
        "threshold": float(threshold),
        "judge_model": judge_model or DEFAULT_JUDGE_MODEL,
        "rubrics": [],
        "options": dict(options),
        "turns": entries,
    }
    if unjudged:
        request["unjudged"] = unjudged
    request["calls"] = calls_needed(request)
    return request


def calls_needed(criterion: Mapping[str, Any]) -> int:
    """Judge calls the request makes at most (hallucinations_v1: two per response judged)."""
    if criterion.get("protocol") == HALLUCINATIONS:
        return sum(2 * len(t.get("steps") or ()) for t in criterion["turns"])
    return len(criterion["turns"]) * num_samples(criterion.get("options") or {})


# --- which model answers --------------------------------------------------------------------------

_told: set[tuple[str, str]] = set()
_told_lock = threading.Lock()


def endpoint_model(
    judge_model: str, options: Mapping[str, Any], mapping: Mapping[str, str], configured: str | None
) -> str:
    """The endpoint's model for ADK's ``judge_model`` (a Gemini name, usually): the criterion's
    ``judge_models`` map, then the run's (``mapping``: the collector's ``judge_models`` and
    ``OTEL_EVAL_JUDGE_MODELS``); unmapped, the configured judge model (``options.model`` or
    ``OTEL_EVAL_JUDGE_MODEL``), else the name as given. Unmapped names are logged once."""
    own = options.get("judge_models") or {}
    if judge_model in own:
        return str(own[judge_model])
    if judge_model in mapping:
        return str(mapping[judge_model])
    chosen = configured or judge_model
    with _told_lock:
        first = (judge_model, chosen) not in _told
        _told.add((judge_model, chosen))
    if first:
        log.info("judge_model %s is not mapped (judge_models); the judge endpoint is asked for %s", judge_model, chosen)
    return chosen


def parse_model_map(text: str) -> dict[str, str]:
    """``OTEL_EVAL_JUDGE_MODELS``: ``name=model`` pairs separated by commas."""
    out = {}
    for item in text.split(","):
        if "=" in item:
            key, _, value = item.partition("=")
            if key.strip() and value.strip():
                out[key.strip()] = value.strip()
    return out


def messages(prompt: str, config: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """ADK sends one user content with the prompt; a ``system_instruction`` comes first."""
    out = []
    system = (config or {}).get("system_instruction")
    if isinstance(system, dict):  # a genai Content
        system = "\n".join(p.get("text") or "" for p in system.get("parts") or [] if isinstance(p, dict))
    if isinstance(system, str) and system:
        out.append({"role": "system", "content": system})
    out.append({"role": "user", "content": prompt})
    return out


def generation(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The chat-completions parameters ``judge_model_config`` sets (see :data:`GENERATION_KEYS`)."""
    found = config or {}
    return {ours: found[key] for key, ours in GENERATION_KEYS.items() if found.get(key) is not None}


# --- running it -----------------------------------------------------------------------------------

Ask = Callable[[list[dict[str, str]]], Awaitable[str]]
"""One judge call: messages → the answer's text. Raises when the judge is unavailable; the
protocol does not catch it (the pool decides what an outage means)."""


async def _gather(calls: Sequence[Awaitable[Any]]) -> list[Any]:
    """Every call at once; the first failure is raised once all are done (none left running)."""
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes


def _snippet(text: str) -> str:
    return repr(text[:SNIPPET])


async def run(criterion: Mapping[str, Any], ask: Ask) -> tuple[Evaluation, list[str]]:
    """The metric on the stored request: ADK's evaluation, and the reasons of answers it could
    not read (each naming the answer's first 200 characters)."""
    metric = criterion["protocol"]
    threshold = float(criterion["threshold"])
    options = criterion.get("options") or {}
    config = options.get("judge_model_config")
    if metric == HALLUCINATIONS:
        return await _hallucinations(criterion, ask, config, threshold)
    samples = num_samples(options)
    turns = criterion["turns"]
    answers = await _gather([ask(messages(t["prompt"], config)) for t in turns for _ in range(samples)])
    per_turn = [answers[i * samples : (i + 1) * samples] for i in range(len(turns))]
    unreadable: list[str] = []
    if metric == FINAL_RESPONSE_MATCH_V2:
        for texts in per_turn:
            unreadable += [
                f"no is_the_agent_response_valid label in the judge's answer {_snippet(t)}"
                for t in texts
                if frm.sample_score(t) is None
            ]
        evaluation = frm.evaluation_from_answers(
            [(t["turn"], t.get("invocation"), texts) for t, texts in zip(turns, per_turn)], threshold
        )
        return evaluation, unreadable
    results = [
        PerInvocation(u["turn"], u.get("invocation"), None, NOT_EVALUATED) for u in criterion.get("unjudged") or ()
    ]
    # google-adk 2.13 reads every invocation's answers against the rubrics of the *last*
    # invocation: its evaluator keeps one effective rubric list, reset as each prompt is formatted,
    # and formats every prompt before the first answer is read. An invocation rubric of an earlier
    # turn is asked about, but its verdicts are dropped. Kept, so the scores are ADK's.
    rubrics = [JudgeRubric.model_validate(r) for r in turns[-1]["rubrics"]]
    for turn, texts in zip(turns, per_turn):
        for text in texts:
            if not R.sample_scores(text, rubrics)[1]:
                unreadable.append(
                    "no Property/Rationale/Verdict block for the rubrics asked about in the judge's "
                    f"answer {_snippet(text)}"
                )
        results.append(R.evaluate_invocation(turn["turn"], turn.get("invocation"), texts, rubrics, threshold))
    return R.summarize(results, threshold), unreadable


async def _hallucinations(
    criterion: Mapping[str, Any], ask: Ask, config: Any, threshold: float
) -> tuple[Evaluation, list[str]]:
    unreadable: list[str] = []

    async def judge(step: Mapping[str, str]) -> tuple[float | None, dict[str, Any]]:
        nl_response = step["nl_response"]
        shown = nl_response if len(nl_response) <= SNIPPET else nl_response[:SNIPPET] + "…"
        segmented = await ask(messages(hal.segmenter_prompt(nl_response), config))
        sentences = hal.parse_sentences(segmented)
        if not sentences:
            reason = f"No sentences produced by segmenter: {_snippet(segmented)}"
            unreadable.append(reason)
            return None, {"nl_response": shown, "score": None, "error": reason}
        validated = await ask(messages(hal.validator_prompt(step["context"], sentences), config))
        results = hal.parse_validation(validated)
        score = hal.accuracy(results)
        details: dict[str, Any] = {
            "nl_response": shown,
            "score": score,
            "sentences": [{"sentence": r["sentence"], "label": r["label"]} for r in results],
        }
        if score is None:
            details["error"] = f"no sentence labelled in the validator's answer {_snippet(validated)}"
            unreadable.append(details["error"])
        return score, details

    turns = criterion["turns"]
    flat = [(i, step) for i, t in enumerate(turns) for step in t.get("steps") or ()]
    outcomes = await _gather([judge(step) for _, step in flat])
    per_invocation = []
    for i, turn in enumerate(turns):
        mine = [outcome for (j, _), outcome in zip(flat, outcomes) if j == i]
        details: dict[str, Any] = {"responses": [d for _, d in mine]}
        if not mine:
            details["reason"] = "no natural-language response to judge"
        per_invocation.append(
            hal.invocation_result(turn["turn"], turn.get("invocation"), [s for s, _ in mine], threshold, details)
        )
    return hal.overall(per_invocation, threshold), unreadable


def result(
    criterion: Mapping[str, Any], evaluation: Evaluation, unreadable: Sequence[str], model: str
) -> CriterionResult:
    """The criterion's result: ADK's score and verdict, or *not evaluated* with the reason."""
    metric = criterion["protocol"]
    threshold = float(criterion["threshold"])
    details: dict[str, Any] = {
        "metric": metric,
        "reference": f"google-adk {EVALUATORS[metric]}",
        "model": model,
        "judge_model": criterion.get("judge_model"),
        "per_invocation": [p.to_json() for p in evaluation.per_invocation],
        **evaluation.details,
    }
    if metric != HALLUCINATIONS:
        details["num_samples"] = num_samples(criterion.get("options") or {})
    if unreadable:
        details["unreadable_answers"] = list(unreadable[:10])
    if evaluation.score is None:
        why = unreadable[0] if unreadable else "no verdict in the judge's answers had a score"
        out = J.not_evaluated(
            criterion, J.INVALID, f"{metric}: nothing the judge answered could be scored: {why}", error=True
        )
        out.details.update(details)
        return out
    return CriterionResult(
        criterion=criterion["criterion"],
        score=float(evaluation.score),
        passed=evaluation.score >= threshold,
        threshold=threshold,
        details={"judge": J.ANSWERED, **details},
    )
