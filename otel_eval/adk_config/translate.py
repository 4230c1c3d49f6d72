"""google-adk's criteria as otel-eval's: what a test_config.json names becomes the
:class:`~otel_eval.models.evalset.CriterionConfig` otel-eval scores with.

Validation is done before (:mod:`.reading`): these take criteria already read as the type ADK's
evaluator reads them with.
"""

from __future__ import annotations

import json
from typing import Any

from ..criteria.adk_not_run import CustomMetric
from ..models.evalset import CriterionConfig, MatchType, Rubric
from .models import BaseCriterion, ToolTrajectoryCriterion


def adk_criterion_config(name: str, typed: BaseCriterion) -> CriterionConfig:
    """An ADK metric's criterion: a trajectory's match type and argument check, a response match's
    threshold, a judge's model, rubrics and options."""
    if isinstance(typed, ToolTrajectoryCriterion):
        return CriterionConfig(
            threshold=typed.threshold, match_type=MatchType(typed.match_type.name), check_args=not typed.ignore_args
        )
    if name == "response_match_score":
        return CriterionConfig(threshold=typed.threshold)
    fields, options = _judge_options(typed)
    return CriterionConfig(threshold=typed.threshold, options=options, **fields)


def custom_metric_config(threshold: float, function: str) -> CriterionConfig:
    """A ``custom_metrics`` entry: reported as not run (:class:`CustomMetric`), naming the function
    google-adk would import."""
    return CriterionConfig(threshold=threshold, options={"kind": CustomMetric.kind, "function": function})


def own_criterion_config(value: Any) -> CriterionConfig:
    """An otel-eval criterion named in a test_config.json (an extension: ``adk eval`` knows only its own)."""
    if isinstance(value, dict):
        return CriterionConfig.model_validate(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            f"expected a number (the threshold) or an object of otel-eval settings, got {json.dumps(value)}"
        )
    return CriterionConfig(threshold=float(value))


def _judge_options(criterion: BaseCriterion) -> tuple[dict[str, Any], dict[str, Any]]:
    """(CriterionConfig fields, options) of an ADK judge criterion."""
    fields: dict[str, Any] = {}
    options: dict[str, Any] = {}
    judge = getattr(criterion, "judge_model_options", None)
    if judge is not None:
        fields["judge_model"] = judge.judge_model
        options["num_samples"] = judge.num_samples
        if judge.parallelism_limit != 1:
            options["parallelism_limit"] = judge.parallelism_limit
        if judge.judge_model_config is not None:
            options["judge_model_config"] = judge.judge_model_config.model_dump(exclude_none=True)
    rubrics = getattr(criterion, "rubrics", None) or []
    if rubrics:
        fields["rubrics"] = [
            Rubric(name=r.rubric_id, description=r.rubric_content.text_property or r.description or "") for r in rubrics
        ]
        types = {r.rubric_id: r.type for r in rubrics if r.type}
        if types:
            options["rubric_types"] = types
    if criterion.include_intermediate_responses_in_final:
        options["include_intermediate_responses_in_final"] = True
    if getattr(criterion, "evaluate_intermediate_nl_responses", False):
        options["evaluate_intermediate_nl_responses"] = True
    stop = getattr(criterion, "stop_signal", None)
    if stop is not None and stop != "</finished>":
        options["stop_signal"] = stop
    return fields, options
