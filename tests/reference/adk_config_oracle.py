"""google-adk's own reading of ``test_config.json`` texts, for the differential tests of
``otel_eval.adk_config`` (tests/test_adk_config.py).

Runs under ``.venv-reference``. With ``--registered``: the metric names google-adk registers.
Otherwise reads one JSON list of file texts on stdin; writes one JSON list of
answers on stdout, one per text:

- ``{"accepted": false, "stage": "parse" | "metric", "metric": name | null, "error": str}`` when
  google-adk refuses it: ``EvalConfig.model_validate_json`` (what ``adk eval`` runs on the file)
  fails, or a metric cannot be built the way ``adk eval`` builds it — not in
  ``DEFAULT_METRIC_EVALUATOR_REGISTRY`` (nor in ``custom_metrics``), an informational metric
  given a threshold, or a criterion its evaluator's ``criterion_type`` refuses (ADK logs these
  and marks the metric NOT_EVALUATED; otel-eval refuses the file);
- ``{"accepted": true, "metrics": [...]}`` otherwise: each metric of
  ``get_eval_metrics_from_config`` (the informational ones ADK appends included) with what its
  evaluator reads of the criterion.

The judge model is not resolved (``LLMRegistry``): otel-eval maps judge model names to its own
endpoint, so an unknown model name is not a refusal.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _informational() -> set[str]:
    from google.adk.evaluation.eval_config import _DEFAULT_EFFICIENCY_METRICS

    return set(_DEFAULT_EFFICIENCY_METRICS)


def _evaluator_class(metric: Any, registry: Any) -> Any:
    entry = registry._registry.get(metric.metric_name)  # pylint: disable=protected-access
    return entry[0] if entry else None


def read(text: str) -> dict[str, Any]:
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.eval_metrics import BaseCriterion, ToolTrajectoryCriterion
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
        register_custom_metrics_from_config,
    )

    try:
        config = EvalConfig.model_validate_json(text)
        metrics = get_eval_metrics_from_config(config)
    except Exception as exc:
        return {"accepted": False, "stage": "parse", "metric": None, "error": str(exc)}
    registry = register_custom_metrics_from_config(config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork())
    out = []
    for metric in metrics:
        cls = _evaluator_class(metric, registry)
        name = metric.metric_name
        if cls is None:
            return {"accepted": False, "stage": "metric", "metric": name, "error": f"{name} not found in registry."}
        answer: dict[str, Any] = {"name": name, "informational": name in _informational()}
        if answer["informational"]:
            if metric.threshold is not None or metric.criterion is not None:
                return {"accepted": False, "stage": "metric", "metric": name, "error": "does not support a threshold"}
            out.append(answer)
            continue
        if config.custom_metrics and name in config.custom_metrics:
            answer.update(threshold=metric.criterion.threshold, custom=config.custom_metrics[name].code_config.name)
            out.append(answer)
            continue
        criterion_type = getattr(cls, "criterion_type", BaseCriterion)
        try:
            criterion = criterion_type.model_validate(metric.criterion.model_dump())
        except Exception as exc:
            return {"accepted": False, "stage": "metric", "metric": name, "error": str(exc)}
        answer["threshold"] = criterion.threshold
        answer["include_intermediate_responses_in_final"] = criterion.include_intermediate_responses_in_final
        if isinstance(criterion, ToolTrajectoryCriterion):
            answer.update(match_type=criterion.match_type.name, ignore_args=criterion.ignore_args)
        options = getattr(criterion, "judge_model_options", None)
        if options is not None:
            answer.update(
                judge_model=options.judge_model,
                num_samples=options.num_samples,
                judge_model_config=(
                    options.judge_model_config.model_dump(exclude_none=True) if options.judge_model_config else None
                ),
            )
        if hasattr(criterion, "rubrics"):
            answer["rubrics"] = [
                {
                    "rubric_id": r.rubric_id,
                    "text": r.rubric_content.text_property,
                    "type": r.type,
                    "description": r.description,
                }
                for r in criterion.rubrics
            ]
        if hasattr(criterion, "evaluate_intermediate_nl_responses"):
            answer["evaluate_intermediate_nl_responses"] = criterion.evaluate_intermediate_nl_responses
        if hasattr(criterion, "stop_signal"):
            answer["stop_signal"] = criterion.stop_signal
        out.append(answer)
    return {"accepted": True, "metrics": out}


class _Absent:
    """Stands in for anything of a module google-adk's ``[eval]`` extra would provide."""

    def __getattr__(self, name: str) -> _Absent:
        return _Absent()

    def __call__(self, *args: Any, **kwargs: Any) -> _Absent:
        return _Absent()


def _import_registry() -> None:
    """``metric_evaluator_registry`` imports the Vertex AI facade, which imports pandas and
    agentplatform at module level (google-adk's ``[eval]`` extra, not in the reference
    environment). Nothing here evaluates with Vertex AI, so each missing top-level module gets
    an empty stand-in until the import succeeds."""
    import importlib
    import types

    for _ in range(20):
        try:
            importlib.import_module("google.adk.evaluation.metric_evaluator_registry")
            return
        except ModuleNotFoundError as exc:
            name = (exc.name or "").split(".")[0]
            if not name or name == "google" or name in sys.modules:
                raise
            module = types.ModuleType(name)
            module.__getattr__ = lambda attr: _Absent()  # type: ignore[method-assign]
            sys.modules[name] = module
    raise RuntimeError("google.adk.evaluation.metric_evaluator_registry would not import")


def main() -> None:
    import logging

    _import_registry()
    if sys.argv[1:] == ["--registered"]:  # the metric names google-adk registers
        from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

        json.dump([m.metric_name for m in DEFAULT_METRIC_EVALUATOR_REGISTRY.get_registered_metrics()], sys.stdout)
        return

    logging.disable(logging.CRITICAL)
    texts = json.load(sys.stdin)
    json.dump([read(text) for text in texts], sys.stdout)


if __name__ == "__main__":
    main()
