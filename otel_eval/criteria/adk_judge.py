"""google-adk's LLM-judge metrics (``final_response_match_v2``, the ``rubric_based_*`` metrics,
``hallucinations_v1``), accepted under ADK's names with ADK's options. Without a judge endpoint
each is skipped with the reason, never an error. ADK's judge prompts are not run yet: with an
endpoint they are skipped too, saying so. (A judge metric that is run defines
:meth:`~otel_eval.criteria.base.Criterion.judge_request`, as ``llm_judge`` does.)"""

from __future__ import annotations

from typing import Any, Optional

from ..models.evalset import CriterionConfig, EvalCase
from ..trajectory import Trajectory
from .judge_base import JudgeCriterion, endpoint_configured
from .base import CriterionOptions, Skip

_NO_JUDGE_REASON = ("{name} needs an LLM judge: no judge endpoint configured (set OTEL_EVAL_JUDGE_BASE_URL to an "
                    "OpenAI-compatible endpoint)")
_JUDGE_PENDING_REASON = ("otel-eval does not run google-adk's {name} judge prompt yet, so it is not evaluated "
                         "(the judge endpoint is configured)")


class AdkJudgeOptions(CriterionOptions):
    """What an ADK judge metric carries from ADK's criterion besides ``threshold``, ``judge_model``
    and ``rubrics`` (CriterionConfig fields), in snake_case."""

    num_samples: Optional[int] = None
    """judge_model_options.num_samples: judge samples per invocation."""
    parallelism_limit: Optional[int] = None
    judge_model_config: Optional[dict[str, Any]] = None
    rubric_types: Optional[dict[str, str]] = None
    """The rubrics' ``type``, by rubric id."""
    include_intermediate_responses_in_final: Optional[bool] = None
    evaluate_intermediate_nl_responses: Optional[bool] = None
    base_url: Optional[str] = None


class AdkJudgeMetric(JudgeCriterion):
    """An ADK judge metric whose judge prompt otel-eval does not run yet: not evaluated, with the reason."""

    Options = AdkJudgeOptions
    adk = "judge"

    def score(self, trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, judge: Any = None,
              name: str = "") -> tuple[float, dict[str, Any]]:
        if not (judge is not None and getattr(judge, "configured", True)) and not endpoint_configured(cfg.options):
            raise Skip(_NO_JUDGE_REASON.format(name=name))
        raise Skip(_JUDGE_PENDING_REASON.format(name=name))


def _adk_judge_metric(class_name: str, kind: str, judges: str) -> type[AdkJudgeMetric]:
    description = f"google-adk's judge of {judges} (not run yet: skipped, with the reason)"
    return type(class_name, (AdkJudgeMetric,), {"kind": kind, "description": description, "__module__": __name__})


FinalResponseMatchV2 = _adk_judge_metric("FinalResponseMatchV2", "final_response_match_v2",
                                         "the final answer against the expected one")
RubricBasedFinalResponseQuality = _adk_judge_metric("RubricBasedFinalResponseQuality",
                                                    "rubric_based_final_response_quality_v1",
                                                    "the final answer against rubrics")
RubricBasedToolUseQuality = _adk_judge_metric("RubricBasedToolUseQuality", "rubric_based_tool_use_quality_v1",
                                              "the tool use against rubrics")
RubricBasedMultiTurnTrajectoryQuality = _adk_judge_metric("RubricBasedMultiTurnTrajectoryQuality",
                                                          "rubric_based_multi_turn_trajectory_quality_v1",
                                                          "the multi-turn trajectory against rubrics")
Hallucinations = _adk_judge_metric("Hallucinations", "hallucinations_v1", "unsupported claims in the answers")
