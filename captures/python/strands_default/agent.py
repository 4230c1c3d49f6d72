"""Strands Agents with its own telemetry (StrandsTelemetry + OTLP/HTTP exporter), default settings.

Each scenario of :mod:`captures.scenarios` runs a Strands ``Agent`` with the OpenAI model provider
against the scripted model; one ``agent(...)`` call per user turn, the same ``Agent`` for both turns
of S3 (Strands keeps the history in ``agent.messages``). Session and user go in the agent's
``trace_attributes`` (``session.id``, ``user.id``), Strands' documented mechanism, which it copies
onto every span it makes. Tools raise as they like: Strands turns the exception into an error
tool result for the model. Strands runs parallel tool calls concurrently (its default executor).

``strands_latest`` runs this file with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``.
"""

from __future__ import annotations

import os

from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.telemetry import StrandsTelemetry

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "strands_default")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."


@tool(description=TOOLS["get_weather"]["description"])
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city.
    """
    return run_tool("get_weather", {"city": city})


@tool(description=TOOLS["get_forecast"]["description"])
def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead.

    Args:
        city: The city.
        days: How many days ahead.
    """
    return run_tool("get_forecast", {"city": city, "days": days})


@tool(description=TOOLS["call_db_agent"]["description"])
def call_db_agent(question: str) -> dict:
    """Answer a question about the sales database with SQL.

    Args:
        question: The question about the data.
    """
    return run_tool("call_db_agent", {"question": question})


@tool(description=TOOLS["search_docs"]["description"])
def search_docs(query: str) -> list:
    """Search the policy documents.

    Args:
        query: What to look for.
    """
    return run_tool("search_docs", {"query": query})


def main() -> None:
    # Strands' documented setup: a global TracerProvider with an OTLP/HTTP (protobuf) exporter,
    # configured from OTEL_EXPORTER_OTLP_ENDPOINT.
    telemetry = StrandsTelemetry()
    telemetry.setup_otlp_exporter()

    model = OpenAIModel(
        client_args={"base_url": os.environ["OPENAI_BASE_URL"], "api_key": os.environ["OPENAI_API_KEY"]},
        model_id="gpt-4o-mini",
    )
    try:
        for scenario in SCENARIOS:
            agent = Agent(
                name="assistant",
                model=model,
                system_prompt=SYSTEM_PROMPT,
                tools=[get_weather, get_forecast, call_db_agent, search_docs],
                trace_attributes={"session.id": f"{CAPTURE}-{scenario.session}", "user.id": scenario.user},
                callback_handler=None,
            )
            for turn in scenario.turns:
                result = agent(turn)
                print(f"{scenario.id}: {turn!r} -> {str(result).strip()!r}", flush=True)
    finally:
        telemetry.tracer_provider.force_flush()
        telemetry.tracer_provider.shutdown()


if __name__ == "__main__":
    main()
