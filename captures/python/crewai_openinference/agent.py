"""CrewAI (one Agent, a Task and a Crew per user turn), traced by OpenInference.

CrewAI 1.x sends ``openai/...`` models through its native OpenAI provider (the ``openai`` SDK, no
LiteLLM), so the model calls are traced by openinference-instrumentation-openai beside the
CrewAI instrumentor (which makes the crew, task, agent and tool spans but no LLM spans in its
default wrapper mode). The session and user are OpenInference's ``using_session`` /
``using_user`` context around each ``crew.kickoff``. S3's second turn gets the first turn as
context through the task's ``{history}`` input: CrewAI's own ``memory=True`` adds LLM calls that
want structured output (``response_model=MemoryAnalysis`` ...) plus embeddings and LanceDB, which
the scripted model cannot play and which would add side LLM spans. CrewAI's anonymous telemetry
and its hosted tracing are turned off with their own variables; our OpenTelemetry provider is
unaffected.
"""

from __future__ import annotations

import json
import os

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # crewAI's anonymous usage telemetry: no network
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"  # crewAI's hosted trace upload

from crewai import LLM, Agent, Crew, Process, Task
from crewai.tools import tool
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.crewai import CrewAIInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
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
CrewAIInstrumentor().instrument(tracer_provider=provider)
OpenAIInstrumentor().instrument(tracer_provider=provider)


@tool("get_weather")
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return run_tool("get_weather", {"city": city})


@tool("get_forecast")
def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead."""
    return run_tool("get_forecast", {"city": city, "days": days})


@tool("call_db_agent")
def call_db_agent(question: str) -> str:
    """Answer a question about the sales database with SQL."""
    return json.dumps(run_tool("call_db_agent", {"question": question}))


@tool("search_docs")
def search_docs(query: str) -> str:
    """Search the policy documents."""
    return json.dumps(run_tool("search_docs", {"query": query}))


def make_agent() -> Agent:
    """A fresh agent (and LLM) per crew, so CrewAI's per-run token usage is that run's only."""
    llm = LLM(model="openai/gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    return Agent(
        role="Assistant",
        goal="Answer the user's question, using the tools when they help.",
        backstory="You are a helpful assistant with weather, database and document tools.",
        llm=llm,
        tools=[get_weather, get_forecast, call_db_agent, search_docs],
        allow_delegation=False,
        verbose=False,
    )


def run_turn(history: str, question: str) -> str:
    assistant = make_agent()
    task = Task(
        name="answer",
        description="{history}User: {question}",
        expected_output="A short answer to the user's question.",
        agent=assistant,
    )
    crew = Crew(name="assistant_crew", agents=[assistant], tasks=[task], process=Process.sequential, verbose=False)
    return crew.kickoff(inputs={"history": history, "question": question}).raw


def main() -> None:
    for scenario in SCENARIOS:
        session = f"{NAME}-{scenario.session}"
        earlier: list[str] = []
        for text in scenario.turns:
            history = "Earlier in this conversation:\n" + "".join(earlier) + "\n" if earlier else ""
            with using_session(session), using_user(scenario.user):
                answer = run_turn(history, text)
            print(f"[{scenario.id}] {text!r} -> {answer!r}", flush=True)
            earlier.append(f"User: {text}\nAssistant: {answer}\n")
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    main()
