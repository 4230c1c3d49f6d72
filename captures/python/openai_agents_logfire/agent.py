"""OpenAI Agents SDK (``Agent`` + ``Runner.run_sync`` + ``@function_tool``) traced by Pydantic
Logfire's ``logfire.instrument_openai_agents()``.

Plays every scenario of :mod:`captures.scenarios` against the scripted model at
``OPENAI_BASE_URL`` (``OpenAIChatCompletionsModel`` over an ``AsyncOpenAI`` client, Chat
Completions). One ``Runner.run_sync`` per user turn; S3's second turn passes
``result.to_input_list()`` plus the new user message.

Telemetry: ``logfire.configure(send_to_logfire=False, …)`` builds the OTel providers; Logfire
itself adds an OTLP/HTTP protobuf span exporter when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(resource from ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``), and metrics are off.
``instrument_openai_agents()`` wraps the SDK's trace provider, so the SDK's tracing must stay on;
``set_trace_processors([])`` removes the SDK's own processor that would export to OpenAI's
tracing endpoint. ``logfire.instrument_openai()`` is not used: it adds nothing here, as Logfire's OpenAI
instrumentation skips a Chat Completions call made inside the Agents SDK's generation span, which
already carries the messages.

Session and user: Logfire has no session concept. The SDK's ``RunConfig(group_id=…,
trace_metadata=…)`` lands as ``group_id`` / ``metadata`` on the root "OpenAI Agents trace" span
only, so the session and user also go in as OTel baggage with ``logfire.set_baggage`` (Logfire
copies baggage onto every span as attributes: ``session.id``, ``user.id``). Logfire's default
scrubbing would redact any attribute whose key matches ``session``, so a scrubbing callback keeps
``session.id`` (the documented way to allow a value through).
A failing tool goes through the SDK's default ``failure_error_function``.
"""

from __future__ import annotations

import json
import os

import logfire
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "openai_agents_logfire")
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
            trace_metadata={"user_id": scenario.user, "scenario": scenario.id},
        )
        history: list = []
        with logfire.set_baggage(**{"session.id": session, "user.id": scenario.user}):
            for turn in scenario.turns:
                result = Runner.run_sync(
                    agent, history + [{"role": "user", "content": turn}] if history else turn, run_config=config
                )
                history = result.to_input_list()
                print(f"{scenario.id}: {turn!r} -> {result.final_output!r}", flush=True)


def keep_ids(match: logfire.ScrubMatch) -> object:
    """Let the session id through Logfire's scrubbing, whose default 'session' pattern would
    replace it with "[Scrubbed due to 'session']"."""
    if match.path == ("attributes", "session.id"):
        return match.value
    return None


def main() -> None:
    logfire.configure(
        send_to_logfire=False,
        console=False,
        metrics=False,
        inspect_arguments=False,
        scrubbing=logfire.ScrubbingOptions(callback=keep_ids),
    )
    set_trace_processors([])  # no export to OpenAI's tracing endpoint; Logfire wraps the provider
    logfire.instrument_openai_agents()
    try:
        play()
    finally:
        logfire.force_flush()
        logfire.shutdown()


if __name__ == "__main__":
    main()
