"""Semantic Kernel (Python) ``ChatCompletionAgent`` with Semantic Kernel's own telemetry.

Each scenario of :mod:`captures.scenarios` runs a ``ChatCompletionAgent`` whose service is
``OpenAIChatCompletion(ai_model_id="gpt-4o-mini", async_client=AsyncOpenAI(base_url=...))`` and
whose tools are one kernel plugin (``Tools``, the four functions as ``@kernel_function``s). An agent
with plugins gets ``FunctionChoiceBehavior.Auto()``: SK calls the functions the model asks for and
sends their results back until the model answers in text. A function that raises is reported
back to the model as an error result, SK's normal handling. One ``agent.get_response(...)`` per
user turn; both turns of S3 share one ``ChatHistoryAgentThread`` (SK's conversation state).

Telemetry as SK's observability docs set it up for Python: env
``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true`` and ``..._SENSITIVE=true`` (set
below before SK is imported, unless the caller set them), a global ``TracerProvider`` with an
OTLP/HTTP (protobuf) span exporter, and a global ``LoggerProvider`` with an OTLP/HTTP log exporter
fed by a ``LoggingHandler`` on the root logger filtered to ``semantic_kernel`` at INFO: SK writes
the chat messages and choices of each model call as Python log records (``event.name`` =
``gen_ai.user.message`` / ``gen_ai.choice`` ...) inside the model span, which the handler turns
into OTLP log records carrying that span's ids.

Session and user: SK has no session or user id of its own on its telemetry (the thread id never
reaches a span or log), so this script puts ``session.id`` / ``user.id`` in OpenTelemetry baggage
and ``opentelemetry-processor-baggage``'s ``BaggageSpanProcessor`` copies them onto every span.
The thread is also given the session name as its id.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from typing import Annotated, Any

os.environ.setdefault("SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS", "true")
os.environ.setdefault("SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE", "true")

from openai import AsyncOpenAI
from opentelemetry import baggage, context
from opentelemetry._logs import set_logger_provider
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import set_tracer_provider
from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.functions import kernel_function

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "semantic_kernel")
INSTRUCTIONS = "You are a helpful assistant. Use the tools to answer."


class Tools:
    """The scenario tools as one kernel plugin."""

    @kernel_function(name="get_weather", description=TOOLS["get_weather"]["description"])
    def get_weather(self, city: Annotated[str, "The city."]) -> str:
        return run_tool("get_weather", {"city": city})

    @kernel_function(name="get_forecast", description=TOOLS["get_forecast"]["description"])
    def get_forecast(self, city: Annotated[str, "The city."], days: Annotated[int, "How many days ahead."]) -> str:
        return run_tool("get_forecast", {"city": city, "days": days})

    @kernel_function(name="call_db_agent", description=TOOLS["call_db_agent"]["description"])
    def call_db_agent(self, question: Annotated[str, "The question about the data."]) -> dict[str, Any]:
        return run_tool("call_db_agent", {"question": question})

    @kernel_function(name="search_docs", description=TOOLS["search_docs"]["description"])
    def search_docs(self, query: Annotated[str, "What to look for."]) -> list[dict[str, Any]]:
        return run_tool("search_docs", {"query": query})


def set_up_telemetry() -> tuple[TracerProvider, LoggerProvider]:
    resource = Resource.create()  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    set_tracer_provider(tracer_provider)

    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    set_logger_provider(logger_provider)
    with warnings.catch_warnings():  # the SDK's handler, as SK's docs use it, is deprecated in favour of
        warnings.simplefilter("ignore", DeprecationWarning)  # opentelemetry-instrumentation-logging's
        handler = LoggingHandler()
    handler.addFilter(logging.Filter("semantic_kernel"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return tracer_provider, logger_provider


async def play() -> None:
    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    service = OpenAIChatCompletion(ai_model_id="gpt-4o-mini", async_client=client)
    for scenario in SCENARIOS:
        session = f"{CAPTURE}-{scenario.session}"
        ctx = baggage.set_baggage("session.id", session)
        ctx = baggage.set_baggage("user.id", scenario.user, ctx)
        token = context.attach(ctx)
        try:
            agent = ChatCompletionAgent(service=service, name="assistant", instructions=INSTRUCTIONS, plugins=[Tools()])
            thread = ChatHistoryAgentThread(thread_id=session)
            for turn in scenario.turns:
                # Positional: SK's invoke_agent tracing reads the input from args[1] only, so the
                # keyword form (messages=turn) would leave gen_ai.input.messages at "[]".
                response = await agent.get_response(turn, thread=thread)
                thread = response.thread
                print(f"{scenario.id}: {turn!r} -> {str(response.message.content)!r}", flush=True)
        finally:
            context.detach(token)
    await client.close()


def main() -> None:
    tracer_provider, logger_provider = set_up_telemetry()
    try:
        asyncio.run(play())
    finally:
        tracer_provider.force_flush()
        logger_provider.force_flush()
        tracer_provider.shutdown()
        logger_provider.shutdown()


if __name__ == "__main__":
    main()
