"""``llm_judge``: weighted rubrics scored 1–5 by an LLM judge behind any OpenAI-compatible
endpoint (:mod:`otel_eval.metrics.judge`).

In the engine the judge pool answers it, off the score workers (:meth:`LlmJudge.judge_request`
builds the pool's request); :func:`otel_eval.scoring.score_session` given a ``judge`` judges in line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..judging import context as judge_context
from ..judging.jobs import public_options
from ..judging.selection import judges_unmatched, option_problems
from ..metrics.judge import DEFAULT_RUBRICS, ENV_BASE_URL, Judge
from ..models.evalset import CriterionConfig, EvalCase, Invocation
from ..trajectory import Trajectory, Turn
from ._invocations import per_invocation, turn_at
from .base import CriterionOptions, JudgeClient, JudgeContext, JudgeFailed, Skip
from .judge_base import NO_JUDGE, JudgeCriterion


class LlmJudgeOptions(CriterionOptions):
    """Where the judge is and how it is called (endpoint, model, key, retries, sampling, budgets): per
    criterion, so two judges may differ."""

    base_url: str | None = None
    """The OpenAI-compatible endpoint (else OTEL_EVAL_JUDGE_BASE_URL)."""
    model: str | None = None
    """The judge model (else OTEL_EVAL_JUDGE_MODEL, else judge_model)."""
    api_key: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the API key."""
    timeout: float = 30.0
    max_retries: int = 3
    backoff: float = 0.5
    json_mode: bool = False
    sample_rate: float = 1.0
    """The share of sessions judged (by a hash of the criterion name and session id)."""
    when: dict[str, Any] | None = None
    """Which sessions are judged: case_ids, agent_versions, verdict, tool_errors, unmatched."""
    num_samples: int = 1
    temperature: float | None = None
    max_calls_per_hour: int | None = None
    max_calls_per_day: int | None = None
    max_tokens_per_hour: int | None = None
    max_tokens_per_day: int | None = None
    max_context_chars: int = judge_context.DEFAULT_MAX_CONTEXT_CHARS


def _no_endpoint(options: dict[str, Any]) -> bool:
    """Would ``Judge.from_config`` build an unconfigured judge (and not raise)? Most sessions run
    ``llm_judge`` without an endpoint: this answers without building the judge."""
    if options and not options.keys().isdisjoint(("timeout", "max_retries", "backoff")):
        return False  # let from_config refuse a bad number as it always has
    base_url = options.get("base_url") or os.environ.get(ENV_BASE_URL)
    return not (base_url and base_url.rstrip("/"))


class LlmJudge(JudgeCriterion):
    """An LLM judge grading each turn's answer on weighted 1-5 rubrics: for answers whose quality no
    string comparison captures."""

    kind = "llm_judge"
    description = "an LLM judge's weighted rubric scores (1-5), normalised to 0-1, averaged over the turns"
    Options = LlmJudgeOptions
    default_threshold = 0.7

    def option_value_problems(self, options: dict[str, Any]) -> list[str]:
        return option_problems(options)

    def known_skip(self, case: EvalCase, cfg: CriterionConfig, judge: JudgeClient | None) -> str | None:
        return NO_JUDGE if judge is None and _no_endpoint(cfg.options) else None

    def judges_unmatched(self, cfg: CriterionConfig) -> bool:
        options = cfg.options
        return (
            judges_unmatched(options.get("when"))
            and not self.unknown_options(options)
            and not option_problems(options)
            and not _no_endpoint(options)
        )

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "llm_judge",
    ) -> tuple[float, dict[str, Any]]:
        if judge is None and _no_endpoint(cfg.options):
            raise Skip(NO_JUDGE)
        judge = judge if judge is not None else Judge.from_config(cfg)
        if not getattr(judge, "configured", True):
            raise Skip(NO_JUDGE)
        errors: list[str] = []

        def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
            result = judge.evaluate(
                question=turn.user_input or inv.user_content.get_text(),
                response=turn.final_response,
                reference=inv.expected_final_response.get_text() if inv.expected_final_response else None,
                rubrics=cfg.rubrics,
                threshold=cfg.threshold,
                criterion=name,
                calls=turn.calls,
            )
            if result.skipped:
                raise Skip(result.details.get("reason", "judge skipped"))
            if result.error:
                errors.append(f"turn {turn.index}: {result.error}")
            return result.score, {"error": result.error, **result.details}

        score, details = per_invocation(trajectory, case, lambda inv: True, one, "the case has no turns to judge")
        if errors:
            raise JudgeFailed("; ".join(errors), details)
        return score, details

    def judge_request(
        self,
        name: str,
        cfg: CriterionConfig,
        trajectory: Trajectory,
        case: EvalCase | None,
        context: Callable[[], JudgeContext] | None,
    ) -> dict[str, Any]:
        """Each turn's messages for the judge: the question, the answer, the reference (when the
        case has one), the turn's tool calls and, when the spans recorded them, the system
        instructions and tool definitions."""
        options = cfg.options
        rubrics = list(cfg.rubrics) or DEFAULT_RUBRICS
        max_chars = int(options.get("max_context_chars", judge_context.DEFAULT_MAX_CONTEXT_CHARS))
        turns = []
        seen = context() if context is not None else {}  # built only for a session the judge will see
        pairs = (
            [(i, turn_at(trajectory, i), inv) for i, inv in enumerate(case.conversation)]
            if case is not None
            else [(i, turn, None) for i, turn in enumerate(trajectory.turns)]
        )
        for i, turn, inv in pairs:
            system, tools = seen.get(turn.trace_id, (None, None))
            question = turn.user_input or (inv.user_content.get_text() if inv is not None else None)
            reference = (
                inv.expected_final_response.get_text() if inv is not None and inv.expected_final_response else None
            )
            messages = judge_context.build_messages(
                question,
                turn.final_response,
                reference,
                rubrics,
                calls=turn.calls,
                system=system,
                tools=tools,
                max_chars=max_chars,
            )
            turns.append(
                {"turn": i, "invocation": inv.invocation_id if inv is not None else None, "messages": messages}
            )
        if not turns:
            raise Skip("the case has no turns to judge")
        return {
            "criterion": name,
            "threshold": cfg.threshold,
            "judge_model": cfg.judge_model,
            "rubrics": [r.model_dump() for r in rubrics],
            "options": public_options(options),
            "turns": turns,
        }
