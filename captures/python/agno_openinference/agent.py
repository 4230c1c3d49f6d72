"""Agno ``Agent`` + ``OpenAIChat`` traced by openinference-instrumentation-agno.

Each scenario turn is one ``agent.run(text, session_id=..., user_id=...)``: Agno's own session and
user arguments, which the instrumentor records as ``session.id`` / ``user.id`` on the agent span.
S3's two turns share a session id; history comes from Agno's in-memory db with
``add_history_to_context=True``. The tools are plain functions (structured results returned as
JSON text); a tool that raises is reported back to the model by Agno
(``FunctionExecutionResult(status="failure")``), so S5 retries.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("AGNO_TELEMETRY", "false")  # Agno's own usage ping: there is no network

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.models.openai import OpenAIChat
from openinference.instrumentation.agno import AgnoInstrumentor
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, run_tool

NAME = os.environ["CAPTURE_NAME"]

provider = TracerProvider(resource=Resource.create())  # service name/attributes from OTEL_* env
# OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT (/v1/traces appended by the exporter)
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
AgnoInstrumentor().instrument(tracer_provider=provider)


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city.
    """
    return run_tool("get_weather", {"city": city})


def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead.

    Args:
        city: The city.
        days: How many days ahead.
    """
    return run_tool("get_forecast", {"city": city, "days": days})


def call_db_agent(question: str) -> str:
    """Answer a question about the sales database with SQL.

    Args:
        question: The question about the data.
    """
    return json.dumps(run_tool("call_db_agent", {"question": question}))


def search_docs(query: str) -> str:
    """Search the policy documents.

    Args:
        query: What to look for.
    """
    return json.dumps(run_tool("search_docs", {"query": query}))


def make_agent() -> Agent:
    return Agent(
        name="assistant",
        model=OpenAIChat(
            id="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
        ),
        instructions="You are a helpful assistant. Use the tools to answer.",
        tools=[get_weather, get_forecast, call_db_agent, search_docs],
        db=InMemoryDb(),
        add_history_to_context=True,
        telemetry=False,
    )


def main() -> None:
    for scenario in SCENARIOS:
        agent = make_agent()  # one agent (and in-memory db) per scenario/session
        session = f"{NAME}-{scenario.session}"
        for text in scenario.turns:
            result = agent.run(text, session_id=session, user_id=scenario.user)
            print(f"[{scenario.id}] {text!r} -> {result.content!r}", flush=True)
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    main()
