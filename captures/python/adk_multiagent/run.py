"""Multi-agent google-adk runs with a scripted model: ADK's spans and ADK's own invocations.

Runs under the reference environment (``.venv-reference``: google-adk 2.13 and the
OpenTelemetry SDK it pins), never under otel-eval's. Nothing is mocked but the model: a
``BaseLlm`` registered in ADK's ``LLMRegistry`` (``scripted/<agent>``) answers each agent from
:data:`SCRIPTS`. Each scenario is run the way ``adk eval`` runs an eval case
(``EvaluationGenerator._generate_inferences_from_root_agent`` with a ``StaticUserSimulator``: its
runner, its plugins, its ``convert_events_to_eval_invocations``), with message content on the
spans (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``), and ADK's
``TrajectoryEvaluator`` scores ADK's invocations against a matching and a non-matching
expectation.

    .venv-reference/bin/python captures/python/adk_multiagent/run.py --out DIR [SCENARIO ...]

writes, per scenario, ``DIR/<scenario>/0.traces.json`` (the run's spans as one OTLP/JSON
``ExportTraceServiceRequest``, a sink folder :mod:`captures.pack` turns into
``adk_multiagent_<scenario>.traces.pb``) and ``DIR/<scenario>.adk.json`` (ADK's side, see
:func:`run`). ``--json`` prints ``{scenario: run(...)}`` with the OTLP/JSON inline instead (the
differential test asks for it). ``captures/python/adk_multiagent/build.py`` does both steps.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

Step = str | list[tuple[str, dict[str, Any]]]
"""One model response: a final text, or the function calls of one response (several: parallel)."""

#: Scenario → {agent name → its model's responses, in order}. An agent asked once more than its
#: script says answers "Done.".
SCRIPTS: dict[str, dict[str, list[Step]]] = {
    # A chat sub-agent reached by transfer_to_agent; the next turn starts at the sub-agent.
    "transfer": {
        "coordinator": [[("get_time", {})], [("transfer_to_agent", {"agent_name": "weather_agent"})]],
        "weather_agent": [
            [("get_weather", {"city": "Paris"})],
            "Sunny in Paris.",
            [("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Oslo"})],
            "Sunny in Rome, rain in Oslo.",
        ],
    },
    # An AgentTool: the call of the tool counts, the calls its agent makes (its own session) do not.
    "agent_tool": {
        "coordinator": [[("math_agent", {"request": "2+3"})], "2+3 is 5."],
        "math_agent": [[("add", {"a": 2, "b": 3})], "5"],
    },
    # A SequentialAgent: each sub-agent's calls, in turn.
    "sequential": {
        "researcher": [[("search", {"topic": "otters"})], "Otters hold hands."],
        "writer": [[("format_text", {"text": "Otters hold hands."})], "OTTERS HOLD HANDS."],
    },
    # A ParallelAgent then a summarizer: both branches' calls (in their event order), then its own.
    "parallel": {
        "paris_agent": [[("get_weather", {"city": "Paris"})], "Sunny in Paris."],
        "rome_agent": [[("get_weather", {"city": "Rome"})], "Sunny in Rome."],
        "summarizer": [[("format_text", {"text": "Paris and Rome are sunny."})], "Both sunny."],
    },
    # A LoopAgent whose checker ends the loop with exit_loop on the second round.
    "loop": {
        "drafter": [[("draft", {"version": 1})], "Draft 1.", [("draft", {"version": 2})], "Draft 2."],
        "checker": [[("check", {"version": 1})], "Not yet.", [("check", {"version": 2})], [("exit_loop", {})]],
    },
    # A Workflow: an agent node, a tool node (no function call event: ADK lists nothing for it),
    # a second agent node.
    "workflow": {
        "planner": [[("search", {"topic": "tides"})], "Tides follow the moon."],
        "reporter": [[("format_text", {"text": "Tides follow the moon."})], "TIDES FOLLOW THE MOON."],
    },
    # A single_turn sub-agent: the parent calls it as a tool; it runs in the parent's invocation.
    "single_turn": {
        "coordinator": [[("summarizer", {"request": "Summarize the news."})], "Here is the summary."],
        "summarizer": [[("search", {"topic": "news"})], "Nothing happened."],
    },
    # A task sub-agent: delegated by the parent's call (a call with no tool span of its own), it
    # books and ends with finish_task; the parent answers.
    "task": {
        "coordinator": [[("booker", {"request": "Book a table for two on Friday."})], "Your table is booked."],
        "booker": [
            [("book_table", {"day": "Friday", "people": 2})],
            [("finish_task", {"result": "Booked for Friday."})],
        ],
    },
    # The same task agent asking the user first: the user's answer resumes the invocation the task
    # started in, so ADK lists one invocation for the two user messages.
    "task_asks_user": {
        "coordinator": [[("booker", {"request": "Book a table for two."})], "Your table is booked."],
        "booker": [
            "For which day?",
            [("book_table", {"day": "Friday", "people": 2})],
            [("finish_task", {"result": "Booked for Friday."})],
        ],
    },
}

#: Scenario → the user's messages, one per invocation.
QUERIES: dict[str, list[str]] = {
    "transfer": ["What time is it, and the weather in Paris?", "And in Rome and Oslo?"],
    "agent_tool": ["What is 2+3?"],
    "sequential": ["Write about otters."],
    "parallel": ["Weather in Paris and Rome?"],
    "loop": ["Draft until it passes."],
    "workflow": ["Report on the tides."],
    "single_turn": ["What is in the news?"],
    "task": ["Book me a table for two on Friday."],
    "task_asks_user": ["Book me a table.", "Friday, for two."],
}

SCENARIOS = list(SCRIPTS)
MODEL_PREFIX = "scripted/"
_cursor: dict[str, int] = {}
"""Agent → how many responses its model gave in the current scenario (reset per scenario)."""


def _register_model() -> None:
    """``scripted/<agent>`` names a model that plays ``<agent>``'s script of the current scenario."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.models.registry import LLMRegistry
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        @classmethod
        def supported_models(cls) -> list[str]:
            return [r"scripted/.*"]

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            agent = self.model[len(MODEL_PREFIX) :]
            script = SCRIPTS[_scenario][agent]
            at = _cursor.get(agent, 0)
            _cursor[agent] = at + 1
            step = script[at] if at < len(script) else "Done."
            parts = (
                [types.Part(text=step)]
                if isinstance(step, str)
                else [types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in step]
            )
            yield LlmResponse(
                content=types.Content(role="model", parts=parts),
                model_version=self.model,
                usage_metadata=types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=10, candidates_token_count=5, total_token_count=15
                ),
            )

    LLMRegistry.register(ScriptedLlm)


_scenario = ""


# --- the tools -------------------------------------------------------------------------------------


def get_time() -> dict:
    """The time now."""
    return {"time": "10:00"}


def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "weather": "sunny"}


def add(a: int, b: int) -> dict:
    """a + b."""
    return {"sum": a + b}


def search(topic: str) -> dict:
    """Facts about a topic."""
    return {"topic": topic, "facts": [f"a fact about {topic}"]}


def format_text(text: str) -> str:
    """The text, formatted."""
    return text.upper()


def draft(version: int) -> dict:
    """Write a draft."""
    return {"draft": version}


def check(version: int) -> dict:
    """Check a draft."""
    return {"version": version, "ok": version >= 2}


def book_table(day: str, people: int) -> dict:
    """Book a table."""
    return {"booked": True, "day": day, "people": people}


def lookup_almanac(topic: str) -> dict:
    """Run as a Workflow tool node, not by a model."""
    return {"topic": topic, "almanac": "high tide at noon"}


# --- the apps --------------------------------------------------------------------------------------


def _agent(name: str, **kwargs: Any) -> Any:
    from google.adk.agents import LlmAgent

    return LlmAgent(
        name=name, model=MODEL_PREFIX + name, instruction=f"You are {name}.", description=f"The {name}.", **kwargs
    )


def _apps() -> dict[str, Callable[[], Any]]:
    from google.adk.agents import LoopAgent, ParallelAgent, SequentialAgent
    from google.adk.tools import exit_loop
    from google.adk.tools.agent_tool import AgentTool
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.workflow import Workflow

    return {
        "transfer": lambda: _agent(
            "coordinator", tools=[get_time], sub_agents=[_agent("weather_agent", tools=[get_weather])]
        ),
        "agent_tool": lambda: _agent("coordinator", tools=[AgentTool(agent=_agent("math_agent", tools=[add]))]),
        "sequential": lambda: SequentialAgent(
            name="pipeline", sub_agents=[_agent("researcher", tools=[search]), _agent("writer", tools=[format_text])]
        ),
        "parallel": lambda: SequentialAgent(
            name="pipeline",
            sub_agents=[
                ParallelAgent(
                    name="fan_out",
                    sub_agents=[_agent("paris_agent", tools=[get_weather]), _agent("rome_agent", tools=[get_weather])],
                ),
                _agent("summarizer", tools=[format_text]),
            ],
        ),
        "loop": lambda: LoopAgent(
            name="refine",
            max_iterations=3,
            sub_agents=[_agent("drafter", tools=[draft]), _agent("checker", tools=[check, exit_loop])],
        ),
        "workflow": lambda: Workflow(
            name="tides",
            edges=[
                (
                    "START",
                    _agent("planner", tools=[search]),
                    FunctionTool(lookup_almanac),
                    _agent("reporter", tools=[format_text]),
                )
            ],
        ),
        "single_turn": lambda: _agent(
            "coordinator", sub_agents=[_agent("summarizer", mode="single_turn", tools=[search])]
        ),
        "task": lambda: _agent("coordinator", sub_agents=[_agent("booker", mode="task", tools=[book_table])]),
        "task_asks_user": lambda: _agent("coordinator", sub_agents=[_agent("booker", mode="task", tools=[book_table])]),
    }


# --- running -----------------------------------------------------------------------------------------

_exporter: Any = None


def _capture_spans() -> Any:
    """One in-memory exporter behind the global tracer provider (settable once per process)."""
    global _exporter
    if _exporter is None:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "adk_multiagent"}))
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    return _exporter


async def _invocations(scenario: str) -> tuple[list[Any], list[list[Any]]]:
    """The scenario run as ``adk eval`` runs an eval case: ADK's invocations, and the function
    calls of the events each user message's run yielded (what ``convert_events_to_eval_invocations``
    reads: every function call part of an event not authored by the user)."""
    from google.adk.evaluation.eval_case import Invocation, SessionInput
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.simulation.static_user_simulator import StaticUserSimulator
    from google.genai import types

    per_message: list[list[Any]] = []
    generate = EvaluationGenerator._generate_inferences_for_single_user_invocation

    async def recording(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        calls: list[Any] = []
        per_message.append(calls)
        async for event in generate(*args, **kwargs):
            if (event.author or "").lower() != "user" and event.content and event.content.parts:
                calls.extend(p.function_call for p in event.content.parts if p.function_call)
            yield event

    conversation = [
        Invocation(
            invocation_id=f"{scenario}-{i}", user_content=types.Content(role="user", parts=[types.Part(text=query)])
        )
        for i, query in enumerate(QUERIES[scenario])
    ]
    EvaluationGenerator._generate_inferences_for_single_user_invocation = staticmethod(recording)  # watches only
    try:
        invocations = await EvaluationGenerator._generate_inferences_from_root_agent(
            _apps()[scenario](),
            user_simulator=StaticUserSimulator(static_conversation=conversation),
            initial_session=SessionInput(
                app_name="adk_multiagent", user_id="user", session_id=f"adk_multiagent-{scenario}"
            ),
        )
    finally:
        EvaluationGenerator._generate_inferences_for_single_user_invocation = staticmethod(generate)
    return invocations, per_message


def _text(content: Any) -> str:
    return "".join(part.text or "" for part in (content.parts or [])) if content is not None else ""


def _non_matching(invocations: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """An expectation the run does not meet in its first invocation only (the last call's
    arguments changed), so a run of several invocations scores between 0 and 1."""
    expected = [inv["calls"] for inv in invocations]
    first = expected[0]
    last = first[-1]
    expected[0] = [*first[:-1], {"name": last["name"], "args": {**last["args"], "unexpected": True}}]
    return expected


def _adk_scores(invocations: list[dict[str, Any]], expected: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """google-adk's ``TrajectoryEvaluator`` (EXACT, threshold 1.0) on ADK's calls vs ``expected``."""
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
    from google.genai import types

    def invocation(i: int, calls: list[dict[str, Any]]) -> Any:
        return Invocation(
            invocation_id=f"inv-{i}",
            user_content=types.Content(role="user", parts=[types.Part(text="q")]),
            intermediate_data=IntermediateData(
                tool_uses=[types.FunctionCall(name=c["name"], args=c["args"]) for c in calls]
            ),
        )

    evaluator = TrajectoryEvaluator(
        eval_metric=EvalMetric(
            metric_name="tool_trajectory_avg_score",
            criterion=ToolTrajectoryCriterion(threshold=1.0, match_type=ToolTrajectoryCriterion.MatchType.EXACT),
        )
    )
    result = evaluator.evaluate_invocations(
        [invocation(i, inv["calls"]) for i, inv in enumerate(invocations)],
        [invocation(i, calls) for i, calls in enumerate(expected)],
    )
    return {
        "expected": expected,
        "score": result.overall_score,
        "status": result.overall_eval_status.name,
        "per_invocation": [r.score for r in result.per_invocation_results],
    }


#: google-adk's efficiency metrics whose values the spans can show (``invocation_duration_v1`` is
#: measured while ADK runs the agent and is noise, not an outcome: not recorded).
EFFICIENCY_METRICS = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")


def _adk_efficiency(adk_invocations: list[Any]) -> dict[str, Any]:
    """google-adk's efficiency evaluators (the classes its metric registry registers for these names;
    the registry module itself needs pandas, for Vertex AI, which the reference environment does not
    have) on ADK's own invocations: per metric ``{"score": overall, "per_invocation": [value]}``,
    and for ``token_usage_v1`` also ``"per_invocation_tokens"``: each invocation's
    ``{"input_tokens", "output_tokens", "total_tokens"}``."""
    from google.adk.evaluation import _efficiency_evaluators as efficiency

    evaluators = {
        "tool_call_count_v1": efficiency._ToolCallCountV1Evaluator,
        "inference_call_count_v1": efficiency._InferenceCallCountV1Evaluator,
        "token_usage_v1": efficiency._TokenUsageV1Evaluator,
    }
    out: dict[str, Any] = {}
    for metric in EFFICIENCY_METRICS:
        evaluator = evaluators[metric]()
        result = evaluator.evaluate_invocations(adk_invocations)
        assert result.overall_eval_status.name == "INFORMATIONAL", (metric, result.overall_eval_status)
        out[metric] = {
            "score": result.overall_score,
            "per_invocation": [r.score for r in result.per_invocation_results],
        }
        if metric == "token_usage_v1":
            out[metric]["per_invocation_tokens"] = [
                {key: getattr(r.token_usage_details, key) for key in ("input_tokens", "output_tokens", "total_tokens")}
                for r in result.per_invocation_results
            ]
    return out


def run(scenario: str, schema: int = 2) -> dict[str, Any]:
    """One scenario, with ADK's telemetry in schema ``schema`` (2: GenAI semantic conventions,
    ADK's default; 1: the legacy ``invocation`` / ``call_llm`` spans): ``{"scenario",
    "telemetry_schema", "user_messages", "otlp": OTLP/JSON of the run's spans, "invocations":
    [{"query", "calls": [{"name", "args"}], "final_response"}] (each ADK invocation, its calls as
    ``get_all_tool_calls`` lists them), "calls_per_user_message": [[{"name", "args"}]] (the
    calls of the events each user message's run yielded), "adk_scores": {"matching",
    "non_matching"}: TrajectoryEvaluator's {expected, score, status, per_invocation}}, "adk_efficiency":
    ADK's efficiency metrics on its invocations (:func:`_adk_efficiency`)}``."""
    import logging

    from google.adk.evaluation.eval_case import get_all_tool_calls

    global _scenario
    logging.getLogger("google_adk").setLevel(logging.ERROR)  # the scripted model is not Gemini
    _scenario = scenario
    _cursor.clear()
    exporter = _capture_spans()
    previous = os.environ.get("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN")
    os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = str(schema)  # read by ADK at every span
    try:
        adk_invocations, per_message = asyncio.run(_invocations(scenario))
    finally:
        if previous is None:
            del os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"]
        else:
            os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = previous
    spans = list(exporter.get_finished_spans())

    def listed(calls: list[Any]) -> list[dict[str, Any]]:
        return [{"name": c.name, "args": c.args or {}} for c in calls]

    invocations = [
        {
            "query": _text(inv.user_content),
            "calls": listed(get_all_tool_calls(inv.intermediate_data)),
            "final_response": _text(inv.final_response),
        }
        for inv in adk_invocations
    ]
    return {
        "scenario": scenario,
        "adk_version": _adk_version(),
        "telemetry_schema": schema,
        "user_messages": QUERIES[scenario],
        "otlp": otlp_json(spans),
        "invocations": invocations,
        "calls_per_user_message": [listed(calls) for calls in per_message],
        "adk_scores": {
            "matching": _adk_scores(invocations, [inv["calls"] for inv in invocations]),
            "non_matching": _adk_scores(invocations, _non_matching(invocations)),
        },
        "adk_efficiency": _adk_efficiency(adk_invocations),
    }


def _adk_version() -> str:
    from google.adk import version

    return version.__version__


# --- OTLP/JSON ---------------------------------------------------------------------------------------


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    if isinstance(value, bytes):
        import base64

        return {"bytesValue": base64.b64encode(value).decode()}
    return {"stringValue": str(value)}


def _attributes(attributes: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_value(v)} for k, v in (attributes or {}).items()]


def otlp_json(spans: list[Any]) -> dict[str, Any]:
    """The SDK's finished spans as one OTLP/JSON ``ExportTraceServiceRequest``, grouped by resource
    and instrumentation scope as the OTLP exporter groups them."""
    status_codes = {"UNSET": 0, "OK": 1, "ERROR": 2}
    resources: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        scope = span.instrumentation_scope
        key = (scope.name if scope else "", (scope.version or "") if scope else "")
        _, scopes = resources.setdefault(id(span.resource), (span.resource, {}))
        scopes.setdefault(key, []).append(
            {
                "traceId": format(span.context.trace_id, "032x"),
                "spanId": format(span.context.span_id, "016x"),
                **({"parentSpanId": format(span.parent.span_id, "016x")} if span.parent else {}),
                "name": span.name,
                "kind": span.kind.value + 1,
                "startTimeUnixNano": str(span.start_time),
                "endTimeUnixNano": str(span.end_time),
                "attributes": _attributes(span.attributes),
                "events": [
                    {"name": e.name, "timeUnixNano": str(e.timestamp), "attributes": _attributes(e.attributes)}
                    for e in span.events
                ],
                "status": {
                    "code": status_codes[span.status.status_code.name],
                    **({"message": span.status.description} if span.status.description else {}),
                },
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource.attributes)},
                "scopeSpans": [
                    {"scope": {"name": name, **({"version": version} if version else {})}, "spans": out}
                    for (name, version), out in scopes.items()
                ],
            }
            for resource, scopes in resources.values()
        ]
    }


def capture_name(scenario: str, schema: int) -> str:
    """``transfer`` (ADK's default telemetry) or ``transfer-legacy`` (schema 1)."""
    return scenario if schema == 2 else f"{scenario}-legacy"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", default=SCENARIOS, help=f"default: all of {', '.join(SCENARIOS)}")
    parser.add_argument(
        "--schema",
        type=int,
        action="append",
        choices=[1, 2],
        help="ADK telemetry schema version(s) to run (default: 2 and 1)",
    )
    parser.add_argument("--out", type=Path, help="write DIR/<capture>/0.traces.json and DIR/<capture>.adk.json")
    parser.add_argument("--json", action="store_true", help="print {capture: run} as JSON on stdout")
    args = parser.parse_args()
    unknown = sorted(set(args.scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r}; known: {', '.join(SCENARIOS)}")
    # Message content on the spans, as a deployment that evaluates turns sets it (ADK's default
    # leaves the query, arguments and results off its GenAI spans).
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    _register_model()
    runs = {
        capture_name(name, schema): run(name, schema) for schema in (args.schema or [2, 1]) for name in args.scenarios
    }
    if args.json:
        json.dump(runs, sys.stdout)
        sys.stdout.write("\n")
    if args.out:
        for name, result in runs.items():
            folder = args.out / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "0.traces.json").write_text(json.dumps(result["otlp"]))
            side = {k: v for k, v in result.items() if k != "otlp"}
            (args.out / f"{name}.adk.json").write_text(json.dumps(side, indent=1) + "\n")


if __name__ == "__main__":
    main()
