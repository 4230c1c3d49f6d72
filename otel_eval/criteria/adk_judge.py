"""What google-adk's LLM-judge metrics share (``final_response_match_v2``, the ``rubric_based_*``
metrics, ``hallucinations_v1``; one module each): ADK's options, when they are skipped, how a
session and its golden case become the ADK invocations ADK's prompts read, the judge pool's
request, and judging in line when a judge is given.

The metric itself (ADK's prompts, its parsing of the judge's answers, its aggregation over
``num_samples`` and over invocations, its threshold rule) is :mod:`otel_eval.judging.adk`; the
judge is the user's OpenAI-compatible endpoint (a Gemini ``judge_model`` maps to one of its
models through ``judge_models``). Without a judge endpoint the metric is skipped with the reason,
never an error; a judge that is down is *not evaluated*, never a FAIL.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from ..judging.adk import from_trajectory as adk_invocations
from ..judging.adk import protocol
from ..judging.adk.trace_view import CONTEXT_KEY
from ..judging.jobs import public_options
from ..judging.pool import ENV_JUDGE_MODELS
from ..judging.selection import judges_unmatched, option_problems
from ..metrics.judge import ENV_MODEL, Judge, JudgeError
from ..models.evalset import CriterionConfig, EvalCase, Invocation
from ..models.results import CriterionResult
from ..trajectory import Trajectory, Turn
from ._invocations import turn_at
from .base import CriterionOptions, JudgeClient, JudgeContext, JudgeFailed, Skip
from .judge_base import JudgeCriterion, endpoint_configured

_NO_JUDGE_REASON = (
    "{name} needs an LLM judge: no judge endpoint configured (set OTEL_EVAL_JUDGE_BASE_URL to an "
    "OpenAI-compatible endpoint)"
)


class AdkJudgeOptions(CriterionOptions):
    """What an ADK judge metric carries from ADK's criterion besides ``threshold``, ``judge_model``
    and ``rubrics`` (CriterionConfig fields), in snake_case."""

    num_samples: int | None = None
    """judge_model_options.num_samples: judge samples per invocation (google-adk's default: 5)."""
    parallelism_limit: int | None = None
    """Accepted; the judge pool's concurrency bounds the calls instead."""
    judge_model_config: dict[str, Any] | None = None
    """genai's GenerateContentConfig: temperature, top_p, max_output_tokens, seed, stop_sequences,
    presence/frequency_penalty and system_instruction reach the endpoint."""
    rubric_types: dict[str, str] | None = None
    """The criterion rubrics' ``type``, by rubric id."""
    include_intermediate_responses_in_final: bool | None = None
    evaluate_intermediate_nl_responses: bool | None = None
    base_url: str | None = None


class AdkJudgeMetricOptions(AdkJudgeOptions):
    """ADK's options, and the judge pool's, as ``llm_judge`` takes them."""

    judge_models: dict[str, str] | None = None
    """judge_model name → the endpoint's model, for this criterion."""
    model: str | None = None
    """The endpoint's model when ``judge_model`` is not mapped (else OTEL_EVAL_JUDGE_MODEL)."""
    api_key: str | None = None
    api_key_env: str | None = None
    timeout: float = 30.0
    max_retries: int = 3
    backoff: float = 0.5
    sample_rate: float = 1.0
    when: dict[str, Any] | None = None
    max_calls_per_hour: int | None = None
    max_calls_per_day: int | None = None
    max_tokens_per_hour: int | None = None
    max_tokens_per_day: int | None = None


def _map_problems(options: dict[str, Any]) -> list[str]:
    value = options.get("judge_models")
    if value is None:
        return []
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
    ):
        return [f"options.judge_models must map judge model names to endpoint models (got {value!r})"]
    return []


def _run_in_line(request: dict[str, Any], judge: JudgeClient) -> tuple[Any, list[str]]:
    """The protocol with ``judge`` answering each call (its retries; ``JudgeError`` when it fails),
    on a thread of its own: the caller may be inside an event loop."""

    async def ask(messages: list[dict[str, str]]) -> str:
        return await asyncio.to_thread(judge.complete, messages)

    with ThreadPoolExecutor(max_workers=1) as runner:
        return runner.submit(asyncio.run, protocol.run(request, ask)).result()


class AdkJudgeMetric(JudgeCriterion):
    """A google-adk judge metric (:attr:`kind` is ADK's metric name)."""

    Options = AdkJudgeMetricOptions
    adk = "judge"
    decides_as_adk = True
    needs_reference: ClassVar[bool] = False
    """It compares with the golden invocation (``final_response_match_v2``): a session no case
    matched is never judged."""

    def option_value_problems(self, options: dict[str, Any]) -> list[str]:
        return option_problems(options) + _map_problems(options)

    def known_skip(self, case: EvalCase, cfg: CriterionConfig, judge: JudgeClient | None) -> str | None:
        if judge is None and not endpoint_configured(cfg.options):
            return _NO_JUDGE_REASON.format(name=self.kind)
        return None

    def judges_unmatched(self, cfg: CriterionConfig) -> bool:
        options = cfg.options
        return (
            not self.needs_reference
            and judges_unmatched(options.get("when"))
            and not self.unknown_options(options)
            and not self.option_value_problems(options)
            and endpoint_configured(options)
        )

    # --- the request ------------------------------------------------------------------------

    def judge_request(
        self,
        name: str,
        cfg: CriterionConfig,
        trajectory: Trajectory,
        case: EvalCase | None,
        context: Callable[[], JudgeContext] | None,
    ) -> dict[str, Any]:
        """The case's invocations as ADK's (from the turns, the golden case, and what the spans
        recorded of the agents: ``context()``), rendered into ADK's prompts. Where google-adk's
        evaluator raises (no rubrics, no reference), the metric is skipped with that reason:
        ``adk eval`` records it NOT_EVALUATED."""
        seen = context() if context is not None else {}
        pairs: list[tuple[int, Turn, Invocation | None]]
        if case is not None:
            pairs = [(i, turn_at(trajectory, i), inv) for i, inv in enumerate(case.conversation)]
        else:
            pairs = [(i, turn, None) for i, turn in enumerate(trajectory.turns)]
        if not pairs:
            raise Skip("the case has no turns to judge")
        actual, expected = [], []
        try:
            for i, turn, inv in pairs:
                system, tools = seen.get(turn.trace_id, (None, None))
                actual.append(
                    adk_invocations.actual_invocation(
                        turn,
                        invocation_id=inv.invocation_id if inv is not None else "",
                        user_text=inv.user_content.get_text() if inv is not None else None,
                        system=system,
                        tools=tools,
                        view=seen.get((CONTEXT_KEY, turn.trace_id)),
                        rubrics=adk_invocations.invocation_rubrics(case, i),
                    )
                )
                expected.append(adk_invocations.expected_invocation(inv) if inv is not None else None)
            return protocol.build(
                self.kind,
                name=name,
                threshold=cfg.threshold,
                judge_model=cfg.judge_model,
                options=public_options(cfg.options),
                rubrics=protocol.criterion_rubrics(cfg.rubrics, cfg.options.get("rubric_types")),
                actual=actual,
                expected=expected,
                turns=[i for i, _, _ in pairs],
            )
        except ValueError as exc:
            raise Skip(f"{self.kind}: {exc} (google-adk's evaluator refuses it too: NOT_EVALUATED)") from None

    # --- in line ----------------------------------------------------------------------------

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        """Judged in line (``score_session`` given a ``judge``, or without the judge pool): the
        same request, each call through ``judge.complete`` (the judge's own model and retries;
        without one, a judge built from the options, its model mapped as the pool maps it)."""
        name = name or self.kind
        options = cfg.options
        if judge is None:
            if not endpoint_configured(options):
                raise Skip(_NO_JUDGE_REASON.format(name=name))
            model = protocol.endpoint_model(
                cfg.judge_model,
                options,
                protocol.parse_model_map(os.environ.get(ENV_JUDGE_MODELS, "")),
                options.get("model") or os.environ.get(ENV_MODEL),
            )
            judge = Judge.from_config(cfg.model_copy(update={"options": {**options, "model": model}}))
        if not getattr(judge, "configured", True):
            raise Skip(_NO_JUDGE_REASON.format(name=name))
        request = self.judge_request(name, cfg, trajectory, case, None)
        model = getattr(judge, "model", None) or cfg.judge_model
        try:
            evaluation, unreadable = _run_in_line(request, judge)
        except JudgeError as exc:
            raise JudgeFailed(str(exc), {"metric": self.kind, "model": model}) from None
        result = protocol.result(request, evaluation, unreadable, model)
        return result.score, {**result.details, "_result": result}

    def result(self, name: str, cfg: CriterionConfig, score: float, details: dict[str, Any]) -> CriterionResult:
        made = details.pop("_result", None)
        if isinstance(made, CriterionResult):
            return made
        return super().result(name, cfg, score, details)
