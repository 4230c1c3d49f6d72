"""pydantic-ai with its own OpenTelemetry instrumentation (default data format), no Logfire.

One pydantic-ai ``Agent`` with ``OpenAIChatModel("gpt-4o-mini")`` (Chat Completions) and an
``OpenAIProvider`` pointed at the scripted model plays every scenario of :mod:`captures.scenarios`:
one ``agent.run_sync(...)`` per user turn; S3's second turn passes
``message_history=result.all_messages()`` of the first, pydantic-ai's documented way to continue a
conversation. Tools are ``@agent.tool_plain`` functions; ``get_weather`` turns the ``ValueError`` of
an unknown city into ``ModelRetry("Unknown city: Berln")``, pydantic-ai's documented way to send
a tool's failure back to the model so it can retry (a plain exception would end the run).

Telemetry, as pydantic-ai's "Debugging and Monitoring" guide does it without Logfire: an
OpenTelemetry SDK ``TracerProvider`` with a ``BatchSpanProcessor`` and the OTLP/HTTP (protobuf)
``OTLPSpanExporter`` (``OTEL_EXPORTER_OTLP_ENDPOINT``), and
``Agent.instrument_all(InstrumentationSettings(tracer_provider=..., include_content=True))``:
the default data format (``version`` left at its default, 5), message content included.

Session and user: the session is pydantic-ai's own conversation id, ``run_sync(...,
conversation_id=<session>)``, which it writes as ``gen_ai.conversation.id`` (on the run span, and
via its baggage on the model and tool spans). pydantic-ai has no user id; the user goes in the
run's ``metadata`` (``{"user_id": ..., "session_id": ...}``), which pydantic-ai records as the
``metadata`` JSON attribute of the run span. No baggage span processor is added.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "pydantic_ai_native")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."

PROVIDER = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
PROVIDER.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
Agent.instrument_all(InstrumentationSettings(tracer_provider=PROVIDER, include_content=True))

model = OpenAIChatModel(
    "gpt-4o-mini",
    provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]),
)
agent = Agent(model, name="assistant", instructions=SYSTEM_PROMPT)


@agent.tool_plain(description=TOOLS["get_weather"]["description"])
def get_weather(city: str) -> str:
    try:
        return run_tool("get_weather", {"city": city})
    except ValueError as exc:
        raise ModelRetry(str(exc)) from exc  # "Unknown city: Berln": the model may try again


@agent.tool_plain(description=TOOLS["get_forecast"]["description"])
def get_forecast(city: str, days: int) -> str:
    return run_tool("get_forecast", {"city": city, "days": days})


@agent.tool_plain(description=TOOLS["call_db_agent"]["description"])
def call_db_agent(question: str) -> dict[str, Any]:
    return run_tool("call_db_agent", {"question": question})


@agent.tool_plain(description=TOOLS["search_docs"]["description"])
def search_docs(query: str) -> list[dict[str, Any]]:
    return run_tool("search_docs", {"query": query})


def main() -> None:
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE}-{scenario.session}"
            history = None
            for turn in scenario.turns:
                result = agent.run_sync(
                    turn,
                    message_history=history,
                    conversation_id=session,
                    metadata={"session_id": session, "user_id": scenario.user},
                )
                history = result.all_messages()
                print(f"{scenario.id}: {turn!r} -> {result.output!r}", flush=True)
    finally:
        PROVIDER.force_flush()
        PROVIDER.shutdown()


if __name__ == "__main__":
    main()
