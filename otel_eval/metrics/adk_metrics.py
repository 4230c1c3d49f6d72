"""Every metric google-adk registers, under ADK's name (``metric_evaluator_registry.py``), for the
ones otel-eval does not compute as a deterministic criterion of its own:

* **informational** (``tool_call_count_v1``, ``inference_call_count_v1``, ``token_usage_v1``,
  ``invocation_duration_v1``): ADK's efficiency metrics. A value per invocation (turn), averaged
  over the invocations that have one; reported, never passing or failing (ADK's INFORMATIONAL).
  A session with no value at all (no model call reported token counts) reports it skipped, n/a.
* **LLM-judge** (``final_response_match_v2``, the ``rubric_based_*`` metrics, ``hallucinations_v1``):
  accepted by name with ADK's options; without a judge endpoint skipped with the reason, never an
  error. ADK's judge prompts are not run yet: with an endpoint they are skipped too, saying so.
* **Vertex-only** (``safety_v1``, ``response_evaluation_score``, ``multi_turn_*``) and
  ``per_turn_user_simulator_quality_v1``: not evaluated, with the reason; never a pass.
* a **custom metric** of ``test_config.json``'s ``custom_metrics``: not evaluated (otel-eval does
  not import the agent's code).

Each criterion here has the scorer's signature ``(trajectory, case, cfg, *, judge, name)`` and
returns ``(score, details)`` or raises :class:`NotRun` (the scorer's skip, with its reason).
``tool_trajectory_avg_score`` and ``response_match_score`` are the scorer's own criteria.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from ..models.evalset import CriterionConfig, EvalCase
from ..models.results import CriterionResult
from ..trajectory import Trajectory, Turn


class NotRun(Exception):
    """The metric is not evaluated for this session; the message is the reason."""


DETERMINISTIC = ("tool_trajectory_avg_score", "response_match_score")
"""ADK metrics otel-eval computes with ADK's own semantics (the scorer's criteria of those names)."""

INFORMATIONAL = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
"""ADK's efficiency metrics, in ADK's order (``_DEFAULT_EFFICIENCY_METRICS``): reported for every
case, never pass or fail, and take no threshold."""

JUDGE = ("final_response_match_v2", "rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1",
         "rubric_based_multi_turn_trajectory_quality_v1", "hallucinations_v1")
"""ADK metrics an LLM judge answers (on otel-eval's OpenAI-compatible judge endpoint)."""

VERTEX = ("safety_v1", "response_evaluation_score", "multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
          "multi_turn_tool_use_quality_v1")
"""ADK metrics google-adk delegates to the Vertex AI Gen AI evaluation service."""

USER_SIMULATOR = ("per_turn_user_simulator_quality_v1",)
"""ADK metrics that judge ADK's user simulator, which otel-eval does not run."""

ADK_METRICS = (*DETERMINISTIC, *VERTEX, *JUDGE, *USER_SIMULATOR, *INFORMATIONAL)
"""Every metric name google-adk 2.13 registers."""

CUSTOM = "adk_custom_metric"
"""The kind of a ``custom_metrics`` entry of a test_config.json (``options.function`` names it)."""

JUDGE_OPTIONS = frozenset({"kind", "num_samples", "parallelism_limit", "judge_model_config", "rubric_types",
                           "include_intermediate_responses_in_final", "evaluate_intermediate_nl_responses",
                           "base_url"})
"""What an ADK judge metric carries from ADK's criterion besides ``threshold``, ``judge_model``
and ``rubrics`` (CriterionConfig fields): ``judge_model_options.num_samples`` /
``parallelism_limit`` / ``judge_model_config`` (snake_case keys), the rubrics' ``type`` by
rubric id, and the intermediate-response switches."""

_VERTEX_REASON = ("google-adk computes {name} with the Vertex AI Gen AI evaluation service (a Google Cloud "
                  "project); otel-eval does not call Vertex AI, so it is not evaluated")
_SIMULATOR_REASON = ("{name} judges google-adk's user simulator (a conversation_scenario run by `adk eval`); "
                     "otel-eval scores the conversations your agent actually had and runs no user simulator, "
                     "so it is not evaluated")
_NO_JUDGE_REASON = ("{name} needs an LLM judge: no judge endpoint configured (set OTEL_EVAL_JUDGE_BASE_URL to an "
                    "OpenAI-compatible endpoint)")
_JUDGE_PENDING_REASON = ("otel-eval does not run google-adk's {name} judge prompt yet, so it is not evaluated "
                         "(the judge endpoint is configured)")
_CUSTOM_REASON = ("custom metric {name} ({function}): google-adk imports that Python function from your agent's "
                  "code; otel-eval does not, so it is not evaluated")


def _judge_endpoint(cfg: CriterionConfig, judge: Any) -> bool:
    if judge is not None and getattr(judge, "configured", True):
        return True
    base_url = cfg.options.get("base_url") or os.environ.get("OTEL_EVAL_JUDGE_BASE_URL")
    return bool(base_url and str(base_url).rstrip("/"))


def _not_run(reason: str) -> Callable[..., tuple[float, dict]]:
    def criterion(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, name: str = "", **_: Any):
        raise NotRun(reason.format(name=name, function=cfg.options.get("function", "?")))

    return criterion


def _judge_metric(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, judge: Any = None,
                  name: str = "", **_: Any) -> tuple[float, dict]:
    if not _judge_endpoint(cfg, judge):
        raise NotRun(_NO_JUDGE_REASON.format(name=name))
    raise NotRun(_JUDGE_PENDING_REASON.format(name=name))


# --- informational ------------------------------------------------------------------------------

def _counted_calls(turn: Turn) -> int:
    """The calls ``adk eval`` counts in an invocation: every call but those made inside another
    tool call (an AgentTool's agent runs in a session of its own), as ``tool_trajectory_avg_score``."""
    return sum(1 for c in turn.calls if not c.inside_call)


def _tokens(turn: Turn) -> Optional[dict[str, float]]:
    if not (turn.input_tokens or turn.output_tokens):
        return None  # no model call reported a count: n/a, not zero
    return {"total_tokens": float(turn.input_tokens + turn.output_tokens),
            "input_tokens": float(turn.input_tokens), "output_tokens": float(turn.output_tokens)}


def _seconds(turn: Turn) -> Optional[float]:
    if turn.start_ns and turn.end_ns and turn.end_ns >= turn.start_ns:
        return (turn.end_ns - turn.start_ns) / 1e9
    return None


_MEASURES: dict[str, tuple[str, Callable[[Turn], Any]]] = {
    "tool_call_count_v1": ("tool calls per turn", lambda t: float(_counted_calls(t))),
    "inference_call_count_v1": ("model calls per turn", lambda t: float(t.llm_calls)),
    "token_usage_v1": ("tokens per turn", _tokens),
    "invocation_duration_v1": ("seconds per turn", _seconds),
}


def _informational(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, name: str = "",
                   **_: Any) -> tuple[float, dict]:
    if name not in _MEASURES:  # a criterion of another name, kind = "token_usage_v1"
        name = str(cfg.options.get("kind", name))
    """ADK's efficiency metric ``name``: a value per turn of the session, averaged over the turns
    that have one (ADK averages per invocation; ``None`` is n/a and left out)."""
    unit, measure = _MEASURES[name]
    per_turn: list[dict[str, Any]] = []
    values: list[float] = []
    for turn in trajectory.turns:
        value = measure(turn)
        entry: dict[str, Any] = {"turn": turn.index}
        if isinstance(value, dict):
            entry.update(value)
            value = value["total_tokens"]
        entry["value"] = value
        per_turn.append(entry)
        if value is not None:
            values.append(float(value))
    if not values:
        raise NotRun(f"{name}: n/a, no turn of the session reported it"
                     + (" (no model call carried token counts)" if name == "token_usage_v1" else ""))
    return sum(values) / len(values), {"informational": True, "measure": unit, "per_turn": per_turn,
                                       "reason": "informational: reported, never passes or fails"}


def is_informational_details(details: dict[str, Any]) -> bool:
    return details.get("informational") is True


def is_informational(result: CriterionResult) -> bool:
    """A result that only reports a value (it counts neither as a check nor in the case's score)."""
    return is_informational_details(result.details or {})


def informational_result(name: str, cfg: CriterionConfig, score: float, details: dict[str, Any]) -> CriterionResult:
    return CriterionResult(criterion=name, score=round(float(score), 6), passed=True, threshold=cfg.threshold,
                           details=details)


CRITERIA: dict[str, Callable[..., tuple[float, dict]]] = {
    **{name: _not_run(_VERTEX_REASON) for name in VERTEX},
    **{name: _not_run(_SIMULATOR_REASON) for name in USER_SIMULATOR},
    **{name: _judge_metric for name in JUDGE},
    **{name: _informational for name in INFORMATIONAL},
    CUSTOM: _not_run(_CUSTOM_REASON),
}
"""Criterion kind → criterion, for the scorer's table (``scoring.CRITERIA``)."""

OPTIONS: dict[str, frozenset[str]] = {
    **{name: frozenset({"kind"}) for name in (*VERTEX, *INFORMATIONAL)},
    **{name: JUDGE_OPTIONS for name in JUDGE},
    **{name: JUDGE_OPTIONS | {"stop_signal"} for name in USER_SIMULATOR},
    CUSTOM: frozenset({"kind", "function"}),
}
"""Criterion kind → the options it reads (``scoring.CRITERION_OPTIONS``)."""
