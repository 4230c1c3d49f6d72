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
- ``{"op": "adk_sample_eval_set"}`` → an ADK eval set built with google-adk's own models, every field of
   its eval models set: ``{"plain": <model_dump_json()>, "manager": <as its eval set managers write
   it: exclude_unset/defaults/none>, "camel": <by_alias=True>}`` (JSON texts).
- ``{"op": "adk_model_keys"}`` → ``{model name: [field names and their aliases]}`` for every model
   an ADK eval set file holds, genai's Content/Part/FunctionCall/FunctionResponse included.
- ``{"op": "adk_multi_agent_run", "schema": 2|1, "content": bool}`` → a multi-agent google-adk
   app run with a scripted model (``adk_app.py``): the spans ADK's telemetry emitted (in that
   telemetry schema version; with message content or, as ADK's default, without), as OTLP/JSON,
   and each invocation's tool calls and final response as ``adk eval`` takes them.
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
    evaluator = TrajectoryEvaluator(
        eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
    )
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
            with open(
                os.path.join(agents_dir, "app", f"{loaded.eval_set_id}.evalset.json"), "w", encoding="utf-8"
            ) as fh:
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
                cases.append(
                    {
                        "eval_id": case.eval_id,
                        "invocations": [
                            {
                                "user": text_of(inv.user_content),
                                "final_response": text_of(inv.final_response),
                                "tool_calls": [
                                    {"name": c.name, "args": c.args, "id": c.id}
                                    for c in get_all_tool_calls(inv.intermediate_data)
                                ],
                            }
                            for inv in case.conversation or []
                        ],
                    }
                )
    return {"model_errors": model_errors, "loader_errors": loader_errors, "cases": cases}


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
    results = [
        EvalMetricResult(metric_name=f"m{i}", eval_status=EvalStatus[name])
        for i, name in enumerate(request["statuses"])
    ]
    return {"status": namespace["_generate_final_eval_status"](None, results).name}


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


def _adk_sample_eval_set() -> Any:
    """Turn 1: tool uses, responses, intermediate responses; turn 2: ``tool_uses=[]`` (no tool);
    turn 3: no intermediate data (not checked); turn 4: invocation events. Case 2: a scenario."""
    from google.adk.evaluation.app_details import AgentDetails, AppDetails
    from google.adk.evaluation.conversation_scenarios import ConversationScenario
    from google.adk.evaluation.eval_case import (
        EvalCase,
        IntermediateData,
        Invocation,
        InvocationEvent,
        InvocationEvents,
        SessionInput,
    )
    from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
    from google.adk.evaluation.eval_set import EvalSet
    from google.genai import types

    def rubric(n: int) -> Any:
        return Rubric(
            rubric_id=f"r{n}",
            rubric_content=RubricContent(text_property="answers the question"),
            description="the answer is on topic",
            type="FINAL_RESPONSE_QUALITY",
        )

    call = types.FunctionCall(id="fc-1", name="get_weather", args={"city": "Paris"})
    response = types.FunctionResponse(id="fc-1", name="get_weather", response={"temp": 21})
    turn1 = Invocation(
        invocation_id="t1",
        user_content=_content("user", "Weather in Paris?"),
        final_response=_content("model", "It is 21 degrees in Paris."),
        intermediate_data=IntermediateData(
            tool_uses=[call],
            tool_responses=[response],
            intermediate_responses=[("helper", [types.Part(text="Looking it up")])],
        ),
        creation_timestamp=1700000000.5,
        duration=1.5,
        model_duration=1.0,
        tool_duration=0.25,
        rubrics=[rubric(1)],
        app_details=AppDetails(
            agent_details={
                "weather_agent": AgentDetails(
                    name="weather_agent", instructions="Answer weather questions.", tool_declarations=[]
                )
            }
        ),
    )
    turn2 = Invocation(
        invocation_id="t2",
        user_content=_content("user", "Thanks!"),
        final_response=_content("model", "You're welcome."),
        intermediate_data=IntermediateData(tool_uses=[]),
    )
    turn3 = Invocation(
        invocation_id="t3", user_content=_content("user", "Anything else?"), final_response=_content("model", "No.")
    )
    turn4 = Invocation(
        invocation_id="t4",
        user_content=_content("user", "And in Rome?"),
        final_response=_content("model", "25 degrees in Rome."),
        intermediate_data=InvocationEvents(
            invocation_events=[
                InvocationEvent(
                    author="weather_agent",
                    model_version="gemini-2.0-flash",
                    content=types.Content(
                        role="model",
                        parts=[
                            types.Part(
                                function_call=types.FunctionCall(id="fc-2", name="get_weather", args={"city": "Rome"})
                            )
                        ],
                    ),
                    usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=10),
                ),
                InvocationEvent(
                    author="weather_agent",
                    content=types.Content(
                        role="user",
                        parts=[
                            types.Part(
                                function_response=types.FunctionResponse(
                                    id="fc-2", name="get_weather", response={"temp": 25}
                                )
                            )
                        ],
                    ),
                ),
            ]
        ),
    )
    conversation_case = EvalCase(
        eval_id="weather",
        conversation=[turn1, turn2, turn3, turn4],
        session_input=SessionInput(app_name="weather_app", user_id="u1", session_id="s1", state={"units": "C"}),
        creation_timestamp=1700000000.0,
        rubrics=[rubric(2)],
        final_session_state={"units": "C"},
    )
    scenario_case = EvalCase(
        eval_id="simulated",
        conversation_scenario=ConversationScenario(
            starting_prompt="I need the weather.", conversation_plan="Ask for Paris, then thank the agent."
        ),
    )
    return EvalSet(
        eval_set_id="weather_set",
        name="Weather",
        description="built by google-adk",
        eval_cases=[conversation_case, scenario_case],
        creation_timestamp=1700000000.0,
    )


def adk_sample_eval_set(request: dict[str, Any]) -> dict[str, Any]:
    eval_set = _adk_sample_eval_set()
    return {
        "plain": eval_set.model_dump_json(indent=2),
        "manager": eval_set.model_dump_json(indent=2, exclude_unset=True, exclude_defaults=True, exclude_none=True),
        "camel": eval_set.model_dump_json(indent=2, by_alias=True),
    }


def adk_model_keys(request: dict[str, Any]) -> dict[str, Any]:
    from google.adk.evaluation import app_details, conversation_scenarios, eval_case, eval_rubrics, eval_set
    from google.genai import types

    models = [
        eval_set.EvalSet,
        eval_case.EvalCase,
        eval_case.Invocation,
        eval_case.IntermediateData,
        eval_case.InvocationEvents,
        eval_case.InvocationEvent,
        eval_case.SessionInput,
        conversation_scenarios.ConversationScenario,
        eval_rubrics.Rubric,
        eval_rubrics.RubricContent,
        app_details.AppDetails,
        app_details.AgentDetails,
        types.Content,
        types.Part,
        types.FunctionCall,
        types.FunctionResponse,
    ]
    return {
        model.__name__: sorted(
            {name for field_name, info in model.model_fields.items() for name in (field_name, info.alias) if name}
        )
        for model in models
    }


def adk_multi_agent_run(request: dict[str, Any]) -> dict[str, Any]:
    import adk_app  # beside this file: the script's folder is on sys.path

    return adk_app.run(request.get("schema", 2), request.get("content", True))


OPS = {
    "adk_trajectory": adk_trajectory,
    "adk_multi_agent_run": adk_multi_agent_run,
    "adk_response_match": adk_response_match,
    "rouge1": rouge1,
    "adk_eval_set": adk_eval_set,
    "adk_final_status": adk_final_status,
    "adk_sample_eval_set": adk_sample_eval_set,
    "adk_model_keys": adk_model_keys,
}


if __name__ == "__main__":
    main()
