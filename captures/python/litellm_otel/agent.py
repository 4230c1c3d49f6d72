"""A hand-written tool loop through the LiteLLM SDK, traced by LiteLLM's own OpenTelemetry callback.

Each scenario of :mod:`captures.scenarios` runs a plain tool loop through
``litellm.completion(model="openai/gpt-4o-mini", api_base=OPENAI_BASE_URL, api_key=...,
messages=..., tools=...)`` against the scripted model: the model asks for tools, the loop runs them
(:func:`captures.scenarios.run_tool`) and sends the results back as ``role: "tool"`` messages with
their ``tool_call_id`` until the model answers in text. A tool that raises is reported back to the
model as an ``Error: ...`` tool message, so the model can retry. One ``chat_turn(...)`` per user
turn; both turns of S3 share one message history.

Telemetry: only LiteLLM's own integration, ``litellm.callbacks = ["otel"]``: the legacy
``litellm.integrations.opentelemetry.OpenTelemetry`` logger, the default (the typed "V2" adapter in
``litellm/integrations/otel/`` runs only with ``LITELLM_OTEL_V2`` set). It writes one
``litellm_request`` span per completion (and a ``raw_gen_ai_request`` child holding the provider's
raw request and response as ``llm.openai.*``), after the call, from LiteLLM's logging thread pool,
each in a trace of its own: there is NO application span.

Content: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` (read by
``OpenTelemetry._compute_capture_mode_from_init_state``; unset, the logger follows its
``message_logging`` flag, on by default, i.e. SPAN_AND_EVENT; ``litellm.turn_off_message_logging``
stays off). The span then carries ``gen_ai.input.messages`` (the whole history sent, GenAI
``parts``), ``gen_ai.output.messages``, ``gen_ai.completion.<i>.function_call.*`` (the tool calls
asked for) and ``llm.request.functions.<i>.*`` (the tools offered).

Session and user: LiteLLM's SDK ways of naming them are passed on every call: ``user=`` (written as
``llm.user``), ``litellm_session_id=`` and ``metadata={"session_id": ..., "user_id": ...}``. But the
legacy OTel logger writes only the standard-logging metadata keys (``metadata.user_api_key_*`` and
such; ``metadata.requester_metadata`` stays empty) and never the session, so its spans carry no
session id. This script therefore also puts ``session.id`` (``<CAPTURE_NAME>-<scenario.session>``)
and ``user.id`` in OpenTelemetry baggage, and ``opentelemetry-processor-baggage``'s
``BaggageSpanProcessor`` copies them onto every span (LiteLLM starts its spans in a copy of the
caller's context, so the baggage is there). For that processor to be on LiteLLM's tracer provider
the script sets the global SDK ``TracerProvider`` first (``BaggageSpanProcessor`` +
``BatchSpanProcessor(OTLPSpanExporter())``, OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``):
LiteLLM's logger uses an SDK provider already set globally instead of building its own
(``OpenTelemetry._get_or_create_provider``; its own would read the same ``OTEL_EXPORTER_OTLP_*``).

``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps LiteLLM from fetching its model price map at import.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from opentelemetry import baggage, context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.chat_loop import SYSTEM_PROMPT, TOOL_SPECS, chat_turn
from captures.scenarios import SCENARIOS

CAPTURE = os.environ.get("CAPTURE_NAME", "litellm_otel")
MODEL = "openai/gpt-4o-mini"


def ask(messages: list[dict[str, Any]], session: str, user: str) -> Any:
    """One request through LiteLLM, naming the session and user every way LiteLLM takes them;
    the response's message (:func:`captures.chat_loop.chat_turn`)."""
    response = litellm.completion(
        model=MODEL,
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        messages=messages,
        tools=TOOL_SPECS,
        user=user,
        litellm_session_id=session,
        metadata={"session_id": session, "user_id": user},
    )
    return response.choices[0].message


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    trace.set_tracer_provider(provider)
    litellm.callbacks = ["otel"]
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE}-{scenario.session}"
            ctx = baggage.set_baggage("session.id", session)
            ctx = baggage.set_baggage("user.id", scenario.user, ctx)
            token = context.attach(ctx)
            try:
                messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
                for turn in scenario.turns:
                    answer = chat_turn(partial(ask, session=session, user=scenario.user), messages, turn)
                    print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
            finally:
                context.detach(token)
    finally:
        # LiteLLM's success callbacks (which write the spans) run on its logging thread pool
        litellm.utils.executor.shutdown(wait=True)
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
