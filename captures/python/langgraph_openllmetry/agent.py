"""LangChain v1 ``create_agent`` (a LangGraph ReAct graph) traced by OpenLLMetry's LangChain
instrumentation (``opentelemetry-instrumentation-langchain``), without the Traceloop SDK.

One agent built by ``langchain.agents.create_agent`` (LangChain v1's successor of
``langgraph.prebuilt.create_react_agent``) with ``ChatOpenAI(model="gpt-4o-mini")`` pointed at the
scripted model (Chat Completions), the four tools as ``@tool`` functions, and an ``InMemorySaver``
checkpointer plays every scenario of :mod:`captures.scenarios`: one ``agent.invoke(...)`` per user
turn, keyed by ``thread_id`` = the session, so S3's second turn continues the first from the
checkpoint (only the new user message is passed in).
A tool that raises is turned into an error ``ToolMessage`` (``status="error"``) for the model by
LangChain's ``ToolErrorMiddleware`` (LangChain v1's documented tool-error handling; without it the
ToolNode re-raises and the run fails), so the model retries S5 with "Berlin".

Telemetry: a plain OpenTelemetry SDK ``TracerProvider`` with a ``BatchSpanProcessor`` and the
OTLP/HTTP (protobuf) ``OTLPSpanExporter`` (``OTEL_EXPORTER_OTLP_ENDPOINT``), and
``LangchainInstrumentor().instrument(tracer_provider=...)``, as the package README shows. Content
capture: ``TRACELOOP_TRACE_CONTENT=true`` (also the default). The README recommends no OpenAI
instrumentation beside it (and the LangChain instrumentation suppresses the OpenAI one's spans
inside its LLM runs anyway), so none is installed.

Session and user: LangChain's run config, ``configurable.thread_id`` = the session (the
checkpointer key) and ``metadata = {"session_id": ..., "user_id": ...}``. The instrumentation
writes every metadata key of a run as ``traceloop.association.properties.<key>`` on the spans
of that run.
"""

from __future__ import annotations

import os
from typing import Any

os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
os.environ.setdefault("LANGSMITH_TRACING", "false")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

# Instrument before LangChain is imported, so that the names imported below are the wrapped ones
# (the instrumentation wraps ``langchain.agents.create_agent`` in place).
PROVIDER = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
PROVIDER.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
LangchainInstrumentor().instrument(tracer_provider=PROVIDER)

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ToolErrorMiddleware  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from captures.scenarios import SCENARIOS, run_tool  # noqa: E402

CAPTURE = os.environ.get("CAPTURE_NAME", "langgraph_openllmetry")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return run_tool("get_weather", {"city": city})


@tool
def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead."""
    return run_tool("get_forecast", {"city": city, "days": days})


@tool
def call_db_agent(question: str) -> dict[str, Any]:
    """Answer a question about the sales database with SQL."""
    return run_tool("call_db_agent", {"question": question})


@tool
def search_docs(query: str) -> list[dict[str, Any]]:
    """Search the policy documents."""
    return run_tool("search_docs", {"query": query})


def on_tool_error(exc: Exception, request: Any) -> str | None:
    """Report a tool's ValueError to the model; anything else propagates."""
    if isinstance(exc, ValueError):
        return f"Error: {exc}"
    return None


def main() -> None:
    model = ChatOpenAI(
        model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], temperature=0
    )
    try:
        # One agent and one checkpointer for every session: the thread_id keeps them apart.
        agent = create_agent(
            model,
            tools=[get_weather, get_forecast, call_db_agent, search_docs],
            system_prompt=SYSTEM_PROMPT,
            middleware=[ToolErrorMiddleware(on_tool_error)],
            checkpointer=InMemorySaver(),
        )
        for scenario in SCENARIOS:
            session = f"{CAPTURE}-{scenario.session}"
            config = {
                "configurable": {"thread_id": session},
                "metadata": {"session_id": session, "user_id": scenario.user},
            }
            for turn in scenario.turns:
                state = agent.invoke({"messages": [{"role": "user", "content": turn}]}, config=config)
                print(f"{scenario.id}: {turn!r} -> {state['messages'][-1].content!r}", flush=True)
    finally:
        PROVIDER.force_flush()
        PROVIDER.shutdown()


if __name__ == "__main__":
    main()
