"""A hand-written OpenAI tool loop traced by opentelemetry-instrumentation-openai-v2, latest GenAI conventions.

Each scenario of :mod:`captures.scenarios` runs a plain Chat Completions tool loop (openai SDK,
``client.chat.completions.create(..., tools=...)``) against the scripted model: the model asks for
tools, the loop runs them (:func:`captures.scenarios.run_tool`) and sends the results back as
``role: "tool"`` messages with their ``tool_call_id`` until the model answers in text. A tool that
raises is reported back to the model as an ``Error: ...`` tool message, so the model can retry.
One ``chat_turn(...)`` per user turn; both turns of S3 share one message history.

Telemetry: only the official OpenTelemetry contrib instrumentation
(``OpenAIInstrumentor().instrument(tracer_provider=...)``, 2.4b0, and its ``TelemetryHandler`` from
opentelemetry-util-genai 1.1b0, the newest it can import) over an SDK TracerProvider with a
``BatchSpanProcessor(OTLPSpanExporter())`` (OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``).
There is NO application span: the loop and the tools are not traced, so each Chat Completions
call is one ``chat gpt-4o-mini`` span in a trace of its own.

Content mode: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (util-genai 1.x takes
the latest-conventions path whatever it says; the v1.30.0 events path is ``openai_v2_events``) and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only`` (read by
``opentelemetry.util.genai.utils.get_content_capturing_mode`` as ``ContentCapturingMode[value.upper()]``
when the handler is built; ``true`` is not a mode there and would mean no content): the content is
on the span as JSON attributes, ``gen_ai.system_instructions``, ``gen_ai.input.messages`` (the
whole history sent, parts ``text`` / ``tool_call`` / ``tool_call_response``) and
``gen_ai.output.messages``, and no events are emitted, so no LoggerProvider is set up.

Session and user: the instrumentation has no session or user concept, so this script puts
``session.id`` (``<CAPTURE_NAME>-<scenario.session>``) and ``user.id`` in OpenTelemetry baggage and
``opentelemetry-processor-baggage``'s ``BaggageSpanProcessor`` copies them onto every span.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")

from openai import OpenAI
from opentelemetry import baggage, context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.chat_loop import SYSTEM_PROMPT, TOOL_SPECS, chat_turn
from captures.scenarios import SCENARIOS

CAPTURE = os.environ.get("CAPTURE_NAME", "openai_v2_latest")
MODEL = "gpt-4o-mini"


def ask(client: OpenAI, messages: list[dict[str, Any]]) -> Any:
    """One Chat Completions request; the response's message (:func:`captures.chat_loop.chat_turn`)."""
    return client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SPECS).choices[0].message


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    OpenAIInstrumentor().instrument(tracer_provider=provider)
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
        provider.shutdown()


if __name__ == "__main__":
    main()
