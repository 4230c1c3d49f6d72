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
- ``{"op": "adk_eval_set", "text": str}`` → google-adk's EvalSet model and ``adk eval``'s loaders
   on that file text (see :func:`adk_eval_set`).
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


def adk_eval_set(request: dict[str, Any]) -> dict[str, Any]:
    """``{"op": "adk_eval_set", "text": str}`` → what google-adk makes of an eval set file:
    ``model_errors`` from ``EvalSet.model_validate_json`` (``[{loc, msg, type}]``), ``loader_errors``
    from both ways ``adk eval`` reads one (a file path: ``load_eval_set_from_file`` into an
    ``InMemoryEvalSetsManager``, as cli_tools_click.cli_eval does; an eval set id:
    ``LocalEvalSetsManager.get_eval_set`` on ``<agents_dir>/<app>/<id>.evalset.json``), and
    ``cases``: per case, per invocation, the user text, ``get_all_tool_calls`` as ``[{name, args,
    id}]`` and the final response text, read by ADK's own code."""
    import os
    import tempfile

    from google.adk.evaluation.eval_case import get_all_tool_calls
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager, load_eval_set_from_file
    from pydantic import ValidationError

    text = request["text"]
    model_errors: list[dict[str, Any]] = []
    try:
        EvalSet.model_validate_json(text)
    except ValidationError as exc:
        model_errors = [{"loc": ".".join(map(str, e["loc"])), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
    loader_errors: list[str] = []
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as agents_dir:
        path = os.path.join(agents_dir, "exported.evalset.json")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        loaded = None
        try:
            loaded = load_eval_set_from_file(path, path)
            manager = InMemoryEvalSetsManager()
            manager.create_eval_set(app_name="app", eval_set_id=loaded.eval_set_id)
            for case in loaded.eval_cases:
                manager.add_eval_case(app_name="app", eval_set_id=loaded.eval_set_id, eval_case=case)
        except Exception as exc:
            loader_errors.append(f"adk eval FILE: {type(exc).__name__}: {exc}")
        if loaded is not None:
            os.makedirs(os.path.join(agents_dir, "app"))
            with open(os.path.join(agents_dir, "app", f"{loaded.eval_set_id}.evalset.json"), "w", encoding="utf-8") as fh:
                fh.write(text)
            try:
                by_id = LocalEvalSetsManager(agents_dir=agents_dir).get_eval_set("app", loaded.eval_set_id)
                if by_id is None:
                    loader_errors.append("adk eval EVAL_SET_ID: not found")
            except Exception as exc:
                loader_errors.append(f"adk eval EVAL_SET_ID: {type(exc).__name__}: {exc}")

            def text_of(content: Any) -> Any:
                if content is None:
                    return None
                return "".join(p.text or "" for p in content.parts or [])

            for case in loaded.eval_cases:
                cases.append({"eval_id": case.eval_id, "invocations": [
                    {"user": text_of(inv.user_content), "final_response": text_of(inv.final_response),
                     "tool_calls": [{"name": c.name, "args": c.args, "id": c.id}
                                    for c in get_all_tool_calls(inv.intermediate_data)]}
                    for inv in case.conversation or []]})
    return {"model_errors": model_errors, "loader_errors": loader_errors, "cases": cases}


OPS["adk_eval_set"] = adk_eval_set


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
