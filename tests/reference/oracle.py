"""Reference oracle: answers scoring questions with the reference tools' own code.

Runs under the reference virtualenv (``.venv-reference``, built by ``make reference``), never
under the project's: google-adk pins an older opentelemetry than otel-eval tests against, so the
two cannot share one environment. Reads one JSON request a line on stdin and writes one JSON
answer a line on stdout, so a test session starts it once and asks it thousands of questions.

Requests (``op`` picks the tool):
- ``{"op": "adk_trajectory", "match_type": "EXACT"|"IN_ORDER"|"ANY_ORDER", "ignore_args": bool,
   "threshold": float, "invocations": [{"actual": [{"name", "args"}], "expected": [...]}]}``
   → google-adk's ``TrajectoryEvaluator`` (``tool_trajectory_avg_score``).
- ``{"op": "adk_response_match", "threshold": float, "invocations": [{"actual": str,
   "expected": str}]}`` → google-adk's ``RougeEvaluator`` (``response_match_score``).
- ``{"op": "rouge1", "target": str, "prediction": str, "use_stemmer": bool}`` → rouge-score's
   ``RougeScorer(["rouge1"])``.
Answers: ``{"score": float, "per_invocation": [float], "status": str}`` or ``{"error": str}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _content(role: str, text: str) -> Any:
    from google.genai import types

    return types.Content(role=role, parts=[types.Part(text=text)])


def _invocation(index: int, calls: list[dict[str, Any]] | None = None, response: str | None = None) -> Any:
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.genai import types

    return Invocation(
        invocation_id=f"inv-{index}",
        user_content=_content("user", "question"),
        final_response=_content("model", response) if response is not None else None,
        intermediate_data=IntermediateData(
            tool_uses=[types.FunctionCall(name=c["name"], args=c.get("args", {})) for c in calls or []]
        ),
    )


def _result(result: Any) -> dict[str, Any]:
    return {
        "score": result.overall_score,
        "per_invocation": [r.score for r in result.per_invocation_results],
        "status": result.overall_eval_status.name,
    }


def adk_trajectory(request: dict[str, Any]) -> dict[str, Any]:
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    criterion = ToolTrajectoryCriterion(
        threshold=request.get("threshold", 1.0),
        match_type=ToolTrajectoryCriterion.MatchType[request.get("match_type", "EXACT")],
        ignore_args=request.get("ignore_args", False),
    )
    evaluator = TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion))
    invocations = request["invocations"]
    actual = [_invocation(i, calls=inv["actual"]) for i, inv in enumerate(invocations)]
    expected = [_invocation(i, calls=inv["expected"]) for i, inv in enumerate(invocations)]
    return _result(evaluator.evaluate_invocations(actual, expected))


def adk_response_match(request: dict[str, Any]) -> dict[str, Any]:
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator

    evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=request.get("threshold", 0.8)))
    invocations = request["invocations"]
    actual = [_invocation(i, response=inv["actual"]) for i, inv in enumerate(invocations)]
    expected = [_invocation(i, response=inv["expected"]) for i, inv in enumerate(invocations)]
    return _result(evaluator.evaluate_invocations(actual, expected))


def rouge1(request: dict[str, Any]) -> dict[str, Any]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=bool(request.get("use_stemmer", False)))
    score = scorer.score(request["target"], request["prediction"])["rouge1"]
    return {"score": score.fmeasure, "precision": score.precision, "recall": score.recall}


OPS = {"adk_trajectory": adk_trajectory, "adk_response_match": adk_response_match, "rouge1": rouge1}


def adk_final_status(request: dict[str, Any]) -> dict[str, Any]:
    """``{"op": "adk_final_status", "statuses": ["PASSED"|"FAILED"|"NOT_EVALUATED"|"INFORMATIONAL", ...]}``
    → the case status google-adk's LocalEvalService gives a case whose metrics ended so."""
    import ast
    import importlib.util

    from google.adk.evaluation.eval_metrics import EvalMetricResult, EvalStatus

    # local_eval_service imports optional Vertex dependencies the reference environment lacks,
    # so the method's own source is compiled from the installed file and run as it is.
    path = importlib.util.find_spec("google.adk.evaluation").submodule_search_locations[0] + "/local_eval_service.py"
    tree = ast.parse(open(path, encoding="utf-8").read())
    service = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LocalEvalService")
    method = next(n for n in service.body if isinstance(n, ast.FunctionDef) and n.name == "_generate_final_eval_status")
    namespace: dict[str, Any] = {"EvalStatus": EvalStatus, "EvalMetricResult": EvalMetricResult}
    exec(compile(ast.Module(body=[method], type_ignores=[]), path, "exec"), namespace)
    results = [EvalMetricResult(metric_name=f"m{i}", eval_status=EvalStatus[name])
               for i, name in enumerate(request["statuses"])]
    return {"status": namespace["_generate_final_eval_status"](None, results).name}


OPS["adk_final_status"] = adk_final_status


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            answer = OPS[request["op"]](request)
        except Exception as exc:  # the test shows the reference tool's own complaint
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
