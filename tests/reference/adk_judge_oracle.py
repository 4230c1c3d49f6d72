"""google-adk's own judge metrics on given invocations with a scripted judge, for the differential
tests of ``otel_eval.judging.adk`` (tests/test_adk_judge_metrics.py).

Runs under ``.venv-reference``. With ``--templates``: google-adk's prompt templates by otel-eval's
names. With ``--adk-run``: real ADK runs and ADK's judges on ADK's own invocations of them (see
:func:`adk_runs`). Otherwise reads one JSON list of cases on stdin; writes one JSON list of
answers on stdout.

A case: ``{"metric": name, "criterion": {...the metric's criterion as test_config.json writes
it...}, "actual": [Invocation JSON], "expected": [Invocation JSON] | null, "script": [[needle,
[answers]], ...]}``. The invocations are validated with google-adk's ``Invocation`` (tool
declarations become genai ``Tool`` objects, as in a real run), the metric's evaluator comes from
``DEFAULT_METRIC_EVALUATOR_REGISTRY`` with the criterion read by ``get_eval_metrics_from_config``
(as ``adk eval`` builds it), and its judge model is a ``BaseLlm`` registered in ADK's
``LLMRegistry`` for ``gemini-.*`` that answers each request by ``tests.judge_server.scripted_answer``
(an answer ``"__RAISE__"`` raises instead: the judge is down).

An answer: ``{"score", "status", "per_invocation": [{"score", "status", "rubric_scores"}],
"rubric_scores", "prompts": [the text of each request the judge model received, in order],
"configs": [each request's GenerateContentConfig, as JSON]}``, or ``{"error": str}`` when the
evaluator raised (``adk eval`` then records the metric NOT_EVALUATED).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.judge_server import scripted_answer
from tests.reference.adk_config_oracle import _import_registry

STATE: dict[str, Any] = {"script": [], "counts": {}, "prompts": [], "configs": []}


def _register_scripted_judge() -> None:
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.models.registry import LLMRegistry
    from google.genai import types

    class ScriptedJudge(BaseLlm):
        @classmethod
        def supported_models(cls) -> list[str]:
            return [r"gemini-.*"]

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            prompt = "".join(p.text or "" for p in llm_request.contents[-1].parts)
            STATE["prompts"].append(prompt)
            STATE["configs"].append(
                llm_request.config.model_dump(mode="json", exclude_none=True) if llm_request.config else None
            )
            answer = scripted_answer(STATE["script"], STATE["counts"], prompt)
            if answer == "__RAISE__":
                raise ConnectionError("the scripted judge is down")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]))

    LLMRegistry.register(ScriptedJudge)  # replaces Gemini for gemini-.* (same key, same place)


def _invocation(data: dict[str, Any]) -> Any:
    from google.adk.evaluation.eval_case import Invocation
    from google.genai import types

    invocation = Invocation.model_validate(data)
    if invocation.app_details:
        for details in invocation.app_details.agent_details.values():
            details.tool_declarations = [
                types.Tool.model_validate(t) if isinstance(t, dict) else t for t in details.tool_declarations
            ]
    return invocation


def _rubric_scores(scores: Any) -> Any:
    if scores is None:
        return None
    return [{"rubric_id": s.rubric_id, "score": s.score} for s in scores]


def evaluate(case: dict[str, Any]) -> dict[str, Any]:
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

    STATE.update(script=case.get("script") or [], counts={}, prompts=[], configs=[])
    try:
        config = EvalConfig.model_validate({"criteria": {case["metric"]: case["criterion"]}})
        metric = [m for m in get_eval_metrics_from_config(config) if m.metric_name == case["metric"]][0]
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
        actual = [_invocation(i) for i in case["actual"]]
        expected = [_invocation(i) for i in case["expected"]] if case.get("expected") is not None else None
        result = asyncio.run(evaluator.evaluate_invocations(actual_invocations=actual, expected_invocations=expected))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "prompts": STATE["prompts"]}
    return {
        "score": result.overall_score,
        "status": result.overall_eval_status.name,
        "per_invocation": [
            {"score": r.score, "status": r.eval_status.name, "rubric_scores": _rubric_scores(r.rubric_scores)}
            for r in result.per_invocation_results
        ],
        "rubric_scores": _rubric_scores(result.overall_rubric_scores),
        "prompts": STATE["prompts"],
        "configs": STATE["configs"],
    }


def adk_runs(request: dict[str, Any]) -> dict[str, Any]:
    """Scenarios of captures/python/adk_multiagent/run.py (``request["scenarios"]``) run as
    ``adk eval`` runs them (its scripted agent model, ADK's GenAI telemetry with message content):
    per scenario, the run's spans as OTLP/JSON, ADK's invocations
    (``convert_events_to_eval_invocations``, with their app details) as JSON, and each metric of
    ``request["metrics"]`` evaluated on those invocations (as ``expected`` too) with the scripted
    judge (``request["script"]``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "adk_multiagent_run", Path(__file__).resolve().parents[2] / "captures" / "python" / "adk_multiagent" / "run.py"
    )
    run = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(run)
    run._register_model()
    out = {}
    for scenario in request["scenarios"]:
        run._scenario = scenario
        run._cursor.clear()
        exporter = run._capture_spans()
        invocations, _ = asyncio.run(run._invocations(scenario))
        as_json = [i.model_dump(mode="json", exclude_none=True) for i in invocations]
        results = {
            name: evaluate(
                {
                    "metric": name,
                    "criterion": criterion,
                    "actual": as_json,
                    "expected": as_json,
                    "script": request.get("script") or [],
                }
            )
            for name, criterion in (request.get("metrics") or {}).items()
        }
        out[scenario] = {
            "otlp": run.otlp_json(list(exporter.get_finished_spans())),
            "invocations": as_json,
            "results": results,
        }
    return out


def templates() -> dict[str, str]:
    from google.adk.evaluation import final_response_match_v2, hallucinations_v1
    from google.adk.evaluation import rubric_based_final_response_quality_v1 as final_quality
    from google.adk.evaluation import rubric_based_multi_turn_trajectory_evaluator as multi_turn
    from google.adk.evaluation import rubric_based_tool_use_quality_v1 as tool_use

    return {
        "FINAL_RESPONSE_MATCH_V2": final_response_match_v2._FINAL_RESPONSE_MATCH_V2_PROMPT,
        "RUBRIC_BASED_FINAL_RESPONSE_QUALITY_V1": final_quality._RUBRIC_BASED_FINAL_RESPONSE_QUALITY_V1_PROMPT,
        "RUBRIC_BASED_TOOL_USE_QUALITY_V1": tool_use._RUBRIC_BASED_TOOL_USE_QUALITY_V1_PROMPT,
        "RUBRIC_BASED_MULTI_TURN_TRAJECTORY_QUALITY_V1": multi_turn._RUBRIC_BASED_MULTI_TURN_TRAJECTORY_QUALITY_V1_PROMPT,
        "HALLUCINATIONS_V1_SEGMENTER": hallucinations_v1._HALLUCINATIONS_V1_SEGMENTER_PROMPT,
        "HALLUCINATIONS_V1_VALIDATOR": hallucinations_v1._HALLUCINATIONS_V1_VALIDATOR_PROMPT,
    }


def main() -> None:
    import logging
    import warnings

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    if sys.argv[1:] == ["--templates"]:
        json.dump(templates(), sys.stdout)
        return
    _import_registry()
    _register_scripted_judge()
    if sys.argv[1:] == ["--adk-run"]:
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
        json.dump(adk_runs(json.load(sys.stdin)), sys.stdout)
        return
    cases = json.load(sys.stdin)
    json.dump([evaluate(case) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
