"""OpenAI Agents SDK (``Agent`` + ``Runner.run_sync`` + ``@function_tool``) traced by
openinference-instrumentation-openai-agents.

Plays every scenario of :mod:`captures.scenarios` against the scripted model at
``OPENAI_BASE_URL`` (``OpenAIChatCompletionsModel`` over an ``AsyncOpenAI`` client, Chat
Completions) and exports the spans over OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``.
One ``Runner.run_sync`` per user turn; S3's second turn passes ``result.to_input_list()`` plus the
new user message, the SDK's documented way to carry a conversation by hand.

Telemetry: ``OpenAIAgentsInstrumentor`` registers an OpenInference trace processor with the SDK
in its default exclusive mode, which replaces the SDK's own processor that exports to OpenAI's
tracing endpoint, so nothing leaves 127.0.0.1. The SDK's tracing stays ON (the instrumentor is
a processor of it: ``set_tracing_disabled(True)`` would silence it too).

Session and user: OpenInference's ``using_session`` / ``using_user`` context (which OITracer
copies onto every span) and, also, the SDK's own ``RunConfig(group_id=…, trace_metadata=…)``.
A failing tool goes through the SDK's default ``failure_error_function``, which gives the model
"An error occurred while running the tool. Please try again." and marks the function span as an
error.
"""

from __future__ import annotations

import json
import os

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "openai_agents_openinference")
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
            group_id=session,
            trace_metadata={"session_id": session, "user_id": scenario.user, "scenario": scenario.id},
        )
        history: list = []
        with using_session(session), using_user(scenario.user):
            for turn in scenario.turns:
                result = Runner.run_sync(
                    agent, history + [{"role": "user", "content": turn}] if history else turn, run_config=config
                )
                history = result.to_input_list()
                print(f"{scenario.id}: {turn!r} -> {result.final_output!r}", flush=True)


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    try:
        play()
    finally:
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
