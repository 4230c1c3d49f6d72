"""LlamaIndex ``FunctionAgent`` (AgentWorkflow) traced by openinference-instrumentation-llama-index.

Plays every scenario of :mod:`captures.scenarios` against the scripted model at
``OPENAI_BASE_URL`` and exports the spans over OTLP/HTTP protobuf to
``OTEL_EXPORTER_OTLP_ENDPOINT``. One ``agent.run`` per user turn; S3's two turns share one
``Memory`` (``agent.run(..., memory=memory)``, the documented way to keep a FunctionAgent's chat
history between runs). A shared ``Context`` alone does NOT keep it with these releases:
llama-index-workflows 2.26 round-trips a reused Context through ``to_dict`` and drops the default
``ChatMemoryBuffer`` as a "known unserializable key", so turn 2 would start without turn 1.
Session and user come from OpenInference's ``using_session`` / ``using_user`` context.
"""

from __future__ import annotations

import asyncio
import json
import os

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "llamaindex_openinference")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return run_tool("get_weather", {"city": city})


def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead."""
    return run_tool("get_forecast", {"city": city, "days": days})


def call_db_agent(question: str) -> str:
    """Answer a question about the sales database with SQL."""
    return json.dumps(run_tool("call_db_agent", {"question": question}))


def search_docs(query: str) -> str:
    """Search the policy documents."""
    return json.dumps(run_tool("search_docs", {"query": query}))


def make_agent() -> FunctionAgent:
    tools = [
        FunctionTool.from_defaults(fn=fn, name=fn.__name__, description=TOOLS[fn.__name__]["description"])
        for fn in (get_weather, get_forecast, call_db_agent, search_docs)
    ]
    llm = OpenAI(
        model="gpt-4o-mini",
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        temperature=0.0,
        # FunctionAgent streams; without this OpenAI sends no usage on a stream, so the
        # LLM spans would carry no token counts (llama-index-llms-openai drops it when
        # not streaming).
        additional_kwargs={"stream_options": {"include_usage": True}},
    )
    return FunctionAgent(
        name="weather_agent",
        description="Answers questions with tools.",
        tools=tools,
        llm=llm,
        system_prompt=SYSTEM_PROMPT,
    )


async def play() -> None:
    agent = make_agent()
    for scenario in SCENARIOS:
        session_id = f"{CAPTURE_NAME}-{scenario.session}"
        memory = Memory.from_defaults(session_id=session_id, token_limit=40000)  # the session's history
        with using_session(session_id), using_user(scenario.user):
            for turn in scenario.turns:
                response = await agent.run(user_msg=turn, memory=memory)
                print(f"{scenario.id}: {turn!r} -> {str(response)!r}", flush=True)


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    try:
        asyncio.run(play())
    finally:
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
