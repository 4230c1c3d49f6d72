"""A multi-agent google-adk app run for real, with a scripted model, under the reference
environment: what ADK's own evaluation counts as each invocation's tool calls, and the spans
ADK's own telemetry emitted for the same run.

The app: a ``coordinator`` with a function tool, an ``AgentTool`` (``math_agent``, which calls a
tool of its own) and a sub-agent it transfers to (``weather_agent``, which calls one tool, then
two in one model response). Nothing is mocked but the model: ADK's runner, session service,
events, telemetry and ``EvaluationGenerator`` run as they do in ``adk eval``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

#: The turns, each a user message; the model's script below decides what each agent does.
QUERIES = ["What time is it, and what is 2+3?", "What is the weather in Paris?", "And in Rome and Oslo?"]

Step = str | list[tuple[str, dict[str, Any]]]
"""A model response: a final text, or the function calls of one response."""

SCRIPTS: dict[str, list[Step]] = {
    "coordinator": [
        [("get_time", {})],
        [("math_agent", {"request": "2+3"})],
        "It is 10:00, and 2+3 is 5.",
        [("transfer_to_agent", {"agent_name": "weather_agent"})],
    ],
    "math_agent": [[("add", {"a": 2, "b": 3})], "5"],
    "weather_agent": [
        [("get_weather", {"city": "Paris"})],
        "Sunny in Paris.",
        [("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Oslo"})],
        "Sunny in Rome, rain in Oslo.",
    ],
}

_exporter: Any = None


def _capture_spans() -> Any:
    """One in-memory exporter behind the global tracer provider (which can be set only once per
    process; the oracle answers many requests)."""
    global _exporter
    if _exporter is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    return _exporter


def _app() -> Any:
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types
    from pydantic import PrivateAttr

    class Scripted(BaseLlm):
        script: list[Any]
        _at: int = PrivateAttr(default=0)

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            step = self.script[self._at] if self._at < len(self.script) else "Done."
            self._at += 1
            parts = (
                [types.Part(text=step)]
                if isinstance(step, str)
                else [types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in step]
            )
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    def get_time() -> dict:
        return {"time": "10:00"}

    def get_weather(city: str) -> dict:
        return {"city": city, "weather": "sunny"}

    def add(a: int, b: int) -> dict:
        return {"sum": a + b}

    def model(agent: str) -> Any:
        return Scripted(model="scripted", script=SCRIPTS[agent])

    math_agent = LlmAgent(
        name="math_agent",
        model=model("math_agent"),
        instruction="Do the sum.",
        description="Adds numbers.",
        tools=[add],
    )
    weather_agent = LlmAgent(
        name="weather_agent",
        model=model("weather_agent"),
        instruction="Tell the weather.",
        description="Knows the weather.",
        tools=[get_weather],
    )
    return LlmAgent(
        name="coordinator",
        model=model("coordinator"),
        instruction="Help the user.",
        tools=[get_time, AgentTool(agent=math_agent)],
        sub_agents=[weather_agent],
    )


async def _run(content: bool) -> tuple[list[Any], list[Any]]:
    from google.adk.agents.run_config import RunConfig
    from google.adk.runners import InMemoryRunner
    from google.adk.telemetry.context import ContentCapturingMode, TelemetryConfig
    from google.genai import types

    exporter = _capture_spans()
    runner = InMemoryRunner(agent=_app(), app_name="multi_agent")
    session = await runner.session_service.create_session(app_name="multi_agent", user_id="user")
    # Content on the spans (the query, arguments, results), as a deployment that evaluates turns it
    # on; without, ADK's default: no content on its GenAI spans.
    run_config = RunConfig(
        telemetry=TelemetryConfig(
            capture_message_content=ContentCapturingMode.SPAN_ONLY if content else ContentCapturingMode.NO_CONTENT
        )
    )
    for query in QUERIES:
        message = types.Content(role="user", parts=[types.Part(text=query)])
        async for _ in runner.run_async(
            user_id="user", session_id=session.id, new_message=message, run_config=run_config
        ):
            pass
    session = await runner.session_service.get_session(app_name="multi_agent", user_id="user", session_id=session.id)
    return session.events, list(exporter.get_finished_spans())


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _otlp_json(spans: list[Any]) -> dict[str, Any]:
    """The SDK's finished spans as an OTLP/JSON ``ExportTraceServiceRequest``."""
    status_codes = {"UNSET": 0, "OK": 1, "ERROR": 2}
    out = []
    for span in spans:
        out.append(
            {
                "traceId": format(span.context.trace_id, "032x"),
                "spanId": format(span.context.span_id, "016x"),
                **({"parentSpanId": format(span.parent.span_id, "016x")} if span.parent else {}),
                "name": span.name,
                "kind": span.kind.value + 1,
                "startTimeUnixNano": str(span.start_time),
                "endTimeUnixNano": str(span.end_time),
                "attributes": [{"key": k, "value": _any_value(v)} for k, v in span.attributes.items()],
                "status": {
                    "code": status_codes[span.status.status_code.name],
                    **({"message": span.status.description} if span.status.description else {}),
                },
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "multi_agent"}}]},
                "scopeSpans": [{"scope": {"name": "gcp.vertex.agent"}, "spans": out}],
            }
        ]
    }


def _text(content: Any) -> str:
    return "".join(part.text or "" for part in (content.parts or [])) if content is not None else ""


def run(schema: int = 2, content: bool = True) -> dict[str, Any]:
    """``{"otlp": OTLP/JSON of the run's spans, "invocations": [{"query", "calls": [{"name", "args"}],
    "final_response"}]}``: each invocation as ``adk eval`` takes it (``EvaluationGenerator`` over
    the session's events; the calls by ``get_all_tool_calls``, in order). ``schema``: ADK's telemetry schema version (2, the GenAI
    semantic conventions, its default; 1, the legacy ``agent_run``/``call_llm`` spans); ``content``:
    message content on the spans (``SPAN_ONLY``), else ADK's default (none)."""
    import logging
    import os

    from google.adk.evaluation.eval_case import get_all_tool_calls
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator

    logging.getLogger("google_adk").setLevel(logging.ERROR)  # a scripted model reports no token usage
    previous = os.environ.get("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN")
    os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = str(schema)  # read by ADK at every span
    try:
        events, spans = asyncio.run(_run(content))
    finally:
        if previous is None:
            del os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"]
        else:
            os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = previous
    invocations = EvaluationGenerator.convert_events_to_eval_invocations(events)
    return {
        "otlp": _otlp_json(spans),
        "invocations": [
            {
                "query": _text(inv.user_content),
                "calls": [{"name": c.name, "args": c.args or {}} for c in get_all_tool_calls(inv.intermediate_data)],
                "final_response": _text(inv.final_response),
            }
            for inv in invocations
        ],
    }
