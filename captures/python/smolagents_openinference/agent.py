"""smolagents ``ToolCallingAgent`` traced by openinference-instrumentation-smolagents.

Plays every scenario of :mod:`captures.scenarios` against the scripted model at
``OPENAI_BASE_URL`` (``OpenAIServerModel``, Chat Completions) and exports the spans over OTLP/HTTP
protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``. One ``agent.run`` per user turn; S3's second turn
uses ``reset=False`` so the agent keeps its memory of the first. Session and user come from
OpenInference's ``using_session`` / ``using_user`` context.

A ToolCallingAgent must end a run with a ``final_answer`` tool call (it sends
``tool_choice="required"`` and fails on a plain-text answer) and writes earlier tool calls and
observations into the history as text. So the model client sends the header
``x-scripted-final-answer-tool: final_answer``, which switches on that option of
``captures/scripted_model.py`` (off by default; the env ``SCRIPTED_FINAL_ANSWER_TOOL`` does the
same). A header only the scripted server reads: it changes no span.
"""

from __future__ import annotations

import json
import os

from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from captures.scenarios import SCENARIOS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "smolagents_openinference")


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city to get the weather for.
    """
    return run_tool("get_weather", {"city": city})


@tool
def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead.

    Args:
        city: The city to get the forecast for.
        days: How many days ahead.
    """
    return run_tool("get_forecast", {"city": city, "days": days})


@tool
def call_db_agent(question: str) -> str:
    """Answer a question about the sales database with SQL.

    Args:
        question: The question about the sales data.
    """
    return json.dumps(run_tool("call_db_agent", {"question": question}))


@tool
def search_docs(query: str) -> str:
    """Search the policy documents.

    Args:
        query: What to search for.
    """
    return json.dumps(run_tool("search_docs", {"query": query}))


def make_agent() -> ToolCallingAgent:
    model = OpenAIServerModel(
        model_id="gpt-4o-mini",
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        temperature=0.0,
        client_kwargs={"default_headers": {"x-scripted-final-answer-tool": "final_answer"}},
    )
    return ToolCallingAgent(
        tools=[get_weather, get_forecast, call_db_agent, search_docs],
        model=model,
        name="weather_agent",
        max_steps=6,
        verbosity_level=0,
    )


def play() -> None:
    for scenario in SCENARIOS:
        agent = make_agent()  # one agent per session: its memory is the conversation
        with using_session(f"{CAPTURE_NAME}-{scenario.session}"), using_user(scenario.user):
            for i, turn in enumerate(scenario.turns):
                answer = agent.run(turn, reset=(i == 0))
                print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    SmolagentsInstrumentor().instrument(tracer_provider=provider)
    try:
        play()
    finally:
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
