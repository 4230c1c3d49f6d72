"""OpenAI Agents SDK (``Agent`` + ``Runner.run_sync`` + ``@function_tool``) traced by the official
OpenTelemetry contrib instrumentation, opentelemetry-instrumentation-openai-agents-v2.

Plays every scenario of :mod:`captures.scenarios` against the scripted model at
``OPENAI_BASE_URL`` (``OpenAIChatCompletionsModel`` over an ``AsyncOpenAI`` client, Chat
Completions) and exports the spans over OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``.
One ``Runner.run_sync`` per user turn; S3's second turn passes ``result.to_input_list()`` plus the
new user message, the SDK's documented way to carry a conversation by hand.

Telemetry: ``OpenAIAgentsInstrumentor`` adds a ``GenAISemanticProcessor`` to the SDK's trace
processors (it keeps the ones already registered, so this script first clears the SDK's default
processor, which exports to OpenAI's tracing endpoint: nothing leaves 127.0.0.1). Each SDK trace
becomes a root ``invoke_agent`` span named after the workflow, each agent span an
``invoke_agent <agent>`` span (``gen_ai.input.messages`` / ``gen_ai.output.messages`` aggregated
from its model calls), each generation a ``chat <model>`` span (``gen_ai.input.messages`` /
``gen_ai.output.messages``, JSON in the GenAI semantic conventions' parts format) and each tool call
an ``execute_tool <tool>`` span (``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``).
Content is captured with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only`` (the
variable it reads, or ``OTEL_INSTRUMENTATION_OPENAI_AGENTS_CAPTURE_CONTENT``; unset means
``span_and_event``); version 0.1.0 never emits content events or log records, whatever the mode,
and does not read ``OTEL_SEMCONV_STABILITY_OPT_IN``.

Session and user: the instrumentation gives an application no way to name them. It writes
``gen_ai.conversation.id`` only from an agent span's ``conversation_id``, which openai-agents'
``AgentSpanData`` does not have, and drops the trace's ``group_id`` and ``metadata`` (the
``RunConfig(group_id=…, trace_metadata=…)`` passed below never reaches a span). So this script puts
``session.id`` / ``user.id`` in OpenTelemetry baggage and ``opentelemetry-processor-baggage``'s
``BaggageSpanProcessor`` copies them onto every span. A failing tool goes through the SDK's default
``failure_error_function``, which gives the model "An error occurred while running the tool. Please
try again." and marks the function span as an error.
"""

from __future__ import annotations

import json
import os

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI
from opentelemetry import baggage, context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "openai_agents_otel")
INSTRUCTIONS = "You are a helpful assistant. Use the tools to answer questions about weather, sales data and policies."


@function_tool(description_override=TOOLS["get_weather"]["description"])
def get_weather(city: str) -> str:
    return run_tool("get_weather", {"city": city})


@function_tool(description_override=TOOLS["get_forecast"]["description"])
def get_forecast(city: str, days: int) -> str:
    return run_tool("get_forecast", {"city": city, "days": days})


@function_tool(description_override=TOOLS["call_db_agent"]["description"])
def call_db_agent(question: str) -> str:
    return json.dumps(run_tool("call_db_agent", {"question": question}))


@function_tool(description_override=TOOLS["search_docs"]["description"])
def search_docs(query: str) -> str:
    return json.dumps(run_tool("search_docs", {"query": query}))


def make_agent() -> Agent:
    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    return Agent(
        name="weather_agent",
        instructions=INSTRUCTIONS,
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
        tools=[get_weather, get_forecast, call_db_agent, search_docs],
    )


def play() -> None:
    agent = make_agent()
    for scenario in SCENARIOS:
        session = f"{CAPTURE_NAME}-{scenario.session}"
        config = RunConfig(
            workflow_name="weather_agent workflow",
            group_id=session,  # kept by the SDK's trace, dropped by the instrumentation
            trace_metadata={"session_id": session, "user_id": scenario.user, "scenario": scenario.id},
        )
        ctx = baggage.set_baggage("session.id", session)
        ctx = baggage.set_baggage("user.id", scenario.user, ctx)
        token = context.attach(ctx)
        try:
            history: list = []
            for turn in scenario.turns:
                result = Runner.run_sync(
                    agent, history + [{"role": "user", "content": turn}] if history else turn, run_config=config
                )
                history = result.to_input_list()
                print(f"{scenario.id}: {turn!r} -> {result.final_output!r}", flush=True)
        finally:
            context.detach(token)


def main() -> None:
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    set_trace_processors([])  # no export to OpenAI's tracing endpoint; the instrumentor adds its own
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    try:
        play()
    finally:
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
