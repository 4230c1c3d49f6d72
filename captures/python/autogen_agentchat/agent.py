"""AutoGen AgentChat with AutoGen's own OpenTelemetry spans (autogen-core's GenAI tracing).

Each scenario of :mod:`captures.scenarios` runs an ``AssistantAgent`` with an
``OpenAIChatCompletionClient`` against the scripted model; one ``agent.run(task=...)`` per user
turn, the same agent instance for both turns of S3 (the agent keeps the history in its model
context). ``max_tool_iterations=5`` lets the agent loop model → tools → model until the model
answers in text; ``reflect_on_tool_use=True`` makes sure a turn always ends with a model answer.
A tool that raises is reported back to the model as an error result (``is_error=True``), AutoGen's
normal handling; parallel tool calls run concurrently.

Telemetry, as AutoGen's tracing guide (AgentChat user guide, "Tracing and Observability") sets it
up: a global OpenTelemetry SDK ``TracerProvider`` with an OTLP/HTTP (protobuf) exporter, and
``OpenAIInstrumentor().instrument()`` from ``opentelemetry-instrumentation-openai`` (OpenLLMetry),
which the guide installs for the model calls. autogen-core / autogen-agentchat themselves make the
``create_agent`` / ``invoke_agent`` / ``execute_tool`` spans (scope ``autogen-core``) with the
global provider; they carry no message content, no tool arguments or results, and there is no
LLM span of AutoGen's own: the ``openai.chat`` spans (scope
``opentelemetry.instrumentation.openai.v1``) come from the instrumentor, with prompts and
completions (``TRACELOOP_TRACE_CONTENT`` defaults to on).

Session and user: AutoGen has no session or user concept that reaches its telemetry, so this
script puts ``session.id`` / ``user.id`` in OpenTelemetry baggage and
``opentelemetry-processor-baggage``'s ``BaggageSpanProcessor`` copies them onto every span.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient
from opentelemetry import baggage, context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, run_tool

# The scripted model answers as "gpt-4o-mini", AutoGen expects the dated name: a harmless warning.
warnings.filterwarnings("ignore", message="Resolved model mismatch")

CAPTURE = os.environ.get("CAPTURE_NAME", "autogen_agentchat")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."


async def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return run_tool("get_weather", {"city": city})


async def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead."""
    return run_tool("get_forecast", {"city": city, "days": days})


async def call_db_agent(question: str) -> dict[str, Any]:
    """Answer a question about the sales database with SQL."""
    return run_tool("call_db_agent", {"question": question})


async def search_docs(query: str) -> list[dict[str, Any]]:
    """Search the policy documents."""
    return run_tool("search_docs", {"query": query})


async def play() -> None:
    model_client = OpenAIChatCompletionClient(
        model="gpt-4o-mini",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
    )
    try:
        await play_scenarios(model_client)
    finally:
        await model_client.close()


async def play_scenarios(model_client: OpenAIChatCompletionClient) -> None:
    for scenario in SCENARIOS:
        ctx = baggage.set_baggage("session.id", f"{CAPTURE}-{scenario.session}")
        ctx = baggage.set_baggage("user.id", scenario.user, ctx)
        token = context.attach(ctx)
        try:
            agent = AssistantAgent(
                name="assistant",
                model_client=model_client,
                system_message=SYSTEM_PROMPT,
                tools=[get_weather, get_forecast, call_db_agent, search_docs],
                reflect_on_tool_use=True,
                max_tool_iterations=5,
            )
            for turn in scenario.turns:
                result = await agent.run(task=turn)
                final = result.messages[-1]
                text = final.content if isinstance(final, TextMessage) else final.to_text()
                print(f"{scenario.id}: {turn!r} -> {text!r}", flush=True)
        finally:
            context.detach(token)


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()

    try:
        asyncio.run(play())
    finally:
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
