"""A hand-written OpenAI tool loop traced by opentelemetry-instrumentation-openai-v2, content as events.

Each scenario of :mod:`captures.scenarios` runs a plain Chat Completions tool loop (openai SDK,
``client.chat.completions.create(..., tools=...)``) against the scripted model: the model asks for
tools, the loop runs them (:func:`captures.scenarios.run_tool`) and sends the results back as
``role: "tool"`` messages with their ``tool_call_id`` until the model answers in text. A tool that
raises is reported back to the model as an ``Error: ...`` tool message, so the model can retry.
One ``chat_turn(...)`` per user turn; both turns of S3 share one message history.

Telemetry: only the official OpenTelemetry contrib instrumentation
(``OpenAIInstrumentor().instrument(tracer_provider=..., logger_provider=...)``, 2.4b0) over an SDK
TracerProvider (``BatchSpanProcessor(OTLPSpanExporter())``) and LoggerProvider
(``BatchLogRecordProcessor(OTLPLogExporter())``), both OTLP/HTTP protobuf to
``OTEL_EXPORTER_OTLP_ENDPOINT``. There is NO application span: the loop and the tools are not
traced, so each Chat Completions call is one ``chat gpt-4o-mini`` span in a trace of its own.

Content mode: the instrumentation's default (semantic conventions v1.30.0, no
``OTEL_SEMCONV_STABILITY_OPT_IN``) with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``,
which 2.4b0 reads at ``instrument()`` time (``utils.is_content_enabled``). Content then leaves as
GenAI events, log records with an ``event_name`` emitted through the OTel Logs API while the chat
span is current (so they carry its trace and span ids): one ``gen_ai.{system,user,assistant,tool}.message``
per request message (body ``{"content": ...}``; an assistant message with calls has body
``{"tool_calls": [{id, type, function: {name, arguments}}]}``; a tool message has ``{"content", "id"}``)
and one ``gen_ai.choice`` per response choice (body ``{index, finish_reason, message: {role,
content | tool_calls}}``). The spans carry no content. The instrumentation takes that legacy path only
when ``opentelemetry.util.genai.utils.is_experimental_mode()`` reads the opt-in variable: from
opentelemetry-util-genai 1.0b0 on it always returns True (the events path is unreachable, and
``...CAPTURE_MESSAGE_CONTENT=true`` is then not a valid mode), so util-genai is pinned to 0.4b0, the
last release that still honours the default, which 2.4b0's ``opentelemetry-util-genai>=0.4b0.dev``
allows. No event logger provider is needed: 2.4b0 calls ``Logger.emit(LogRecord(event_name=...))``.

Session and user: the instrumentation has no session or user concept, so this script puts
``session.id`` (``<CAPTURE_NAME>-<scenario.session>``) and ``user.id`` in OpenTelemetry baggage and
``opentelemetry-processor-baggage``'s ``BaggageSpanProcessor`` copies them onto every span; the log
records carry no baggage, only the trace and span ids of the chat span they belong to.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)  # the default (v1.30.0) conventions: events

from openai import OpenAI
from opentelemetry import baggage, context
from opentelemetry._logs import set_logger_provider
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.chat_loop import SYSTEM_PROMPT, TOOL_SPECS, chat_turn
from captures.scenarios import SCENARIOS

CAPTURE = os.environ.get("CAPTURE_NAME", "openai_v2_events")
MODEL = "gpt-4o-mini"


def ask(client: OpenAI, messages: list[dict[str, Any]]) -> Any:
    """One Chat Completions request; the response's message (:func:`captures.chat_loop.chat_turn`)."""
    return client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SPECS).choices[0].message


def main() -> None:
    resource = Resource.create()  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    set_logger_provider(logger_provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logger_provider)
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    try:
        for scenario in SCENARIOS:
            ctx = baggage.set_baggage("session.id", f"{CAPTURE}-{scenario.session}")
            ctx = baggage.set_baggage("user.id", scenario.user, ctx)
            token = context.attach(ctx)
            try:
                messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
                for turn in scenario.turns:
                    answer = chat_turn(partial(ask, client), messages, turn)
                    print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
            finally:
                context.detach(token)
    finally:
        client.close()
        provider.force_flush()
        logger_provider.force_flush()
        provider.shutdown()
        logger_provider.shutdown()


if __name__ == "__main__":
    main()
