"""Microsoft Agent Framework (Python, ``agent-framework-core`` 1.23) with the framework's own telemetry.

Each scenario of :mod:`captures.scenarios` runs an ``Agent`` (1.x's name for the former
``ChatAgent``) over ``OpenAIChatCompletionClient(model="gpt-4o-mini", base_url=OPENAI_BASE_URL,
api_key=...)`` from ``agent-framework-openai``: in 1.x ``OpenAIChatClient`` is the Responses API
client and the Chat Completions client got this name. The four tools are ``@tool`` functions
(``FunctionTool``) that call :func:`run_tool`. The client's function-invocation layer calls the
tools the model asks for (parallel calls concurrently) and loops until the model answers in text;
a tool that raises becomes the result ``"Error: Function failed."`` for the model (the default,
``include_detailed_errors=False``) and an ``execute_tool`` span with status ERROR. One
``agent.run(turn, session=...)`` per user turn; both turns of S3 share one ``AgentSession``
(``agent.create_session()``, the framework's documented multi-turn state: the session's in-memory
history provider replays turn 1 to the model in turn 2).

Telemetry as the framework's observability guide sets it up: ``configure_otel_providers()`` with
``ENABLE_SENSITIVE_DATA=true`` (set below unless the caller set it). It builds the global
``TracerProvider``, ``LoggerProvider`` and ``MeterProvider`` with OTLP exporters from
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (http/protobuf here). Defaults
kept: ``OTEL_SEMCONV_STABILITY_OPT_IN`` unset means the latest GenAI conventions
(``invoke_agent`` / ``chat`` / ``execute_tool`` spans with ``gen_ai.input.messages`` /
``gen_ai.output.messages`` JSON, ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``), and
``ENABLE_MESSAGE_EVENTS`` unset means the chat spans' messages are also emitted as v1.36 event log
records (``gen_ai.system.message`` / ``gen_ai.user.message`` / ``gen_ai.assistant.message`` /
``gen_ai.tool.message`` / ``gen_ai.choice``, structured bodies) on the span's trace. The
``agent_framework`` Python logger's warnings (the failed tool) go out as log records too.

Session and user: the framework writes ``gen_ai.conversation.id`` only from a service-managed
session id (``session.service_session_id``, e.g. a Responses ``previous_response_id``); a local
session over Chat Completions has none, so no span carries it. So this script puts
``session.id`` / ``user.id`` in OpenTelemetry baggage and ``opentelemetry-processor-baggage``'s
``BaggageSpanProcessor`` (added to the provider ``configure_otel_providers()`` made) copies them
onto every span. The session is also given the session name as its (local) ``session_id``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Annotated

os.environ.setdefault("ENABLE_SENSITIVE_DATA", "true")

from agent_framework import Agent, tool
from agent_framework.observability import configure_otel_providers
from agent_framework.openai import OpenAIChatCompletionClient
from opentelemetry import _logs, baggage, context, metrics, trace
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "ms_agent_framework")
INSTRUCTIONS = "You are a helpful assistant. Use the tools to answer."


@tool(name="get_weather", description=TOOLS["get_weather"]["description"])
def get_weather(city: Annotated[str, "The city."]) -> str:
    return run_tool("get_weather", {"city": city})


@tool(name="get_forecast", description=TOOLS["get_forecast"]["description"])
def get_forecast(city: Annotated[str, "The city."], days: Annotated[int, "How many days ahead."]) -> str:
    return run_tool("get_forecast", {"city": city, "days": days})


@tool(name="call_db_agent", description=TOOLS["call_db_agent"]["description"])
def call_db_agent(question: Annotated[str, "The question about the data."]) -> str:
    return json.dumps(run_tool("call_db_agent", {"question": question}))


@tool(name="search_docs", description=TOOLS["search_docs"]["description"])
def search_docs(query: Annotated[str, "What to look for."]) -> str:
    return json.dumps(run_tool("search_docs", {"query": query}))


async def play() -> None:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
    )
    agent = Agent(
        client=client,
        name="assistant",
        instructions=INSTRUCTIONS,
        tools=[get_weather, get_forecast, call_db_agent, search_docs],
    )
    for scenario in SCENARIOS:
        session_name = f"{CAPTURE}-{scenario.session}"
        ctx = baggage.set_baggage("session.id", session_name)
        ctx = baggage.set_baggage("user.id", scenario.user, ctx)
        token = context.attach(ctx)
        try:
            session = agent.create_session(session_id=session_name)
            for turn in scenario.turns:
                response = await agent.run(turn, session=session)
                print(f"{scenario.id}: {turn!r} -> {response.text!r}", flush=True)
        finally:
            context.detach(token)


def main() -> None:
    configure_otel_providers()  # OTEL_EXPORTER_OTLP_*, ENABLE_SENSITIVE_DATA, OTEL_SERVICE_NAME, ...
    tracer_provider = trace.get_tracer_provider()
    tracer_provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))  # type: ignore[attr-defined]
    try:
        asyncio.run(play())
    finally:
        for provider in (tracer_provider, _logs.get_logger_provider(), metrics.get_meter_provider()):
            provider.force_flush()  # type: ignore[attr-defined]
            provider.shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
