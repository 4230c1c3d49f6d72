"""The in-process fast path (otel_eval.sdk_rows): the row of an SDK span taken apart on the agent's
thread is the row the general path (spans.from_sdk_span → span_rows.span_row) gives, whatever the
span holds; and the parts cross a pipe (pickle) unchanged."""

import math
import pickle

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from otel_eval.sdk_rows import Resources, ended_parts, row_of_parts
from otel_eval.span_rows import span_row
from otel_eval.spans import from_sdk_span


class Keep(SpanExporter):
    def __init__(self):
        self.spans = []

    def export(self, spans):
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def varied_spans():
    """Ended SDK spans of every shape the fast path reads differently: kinds, statuses, parents,
    events, sequence and odd values, session keys of several dialects, an explicit session end."""
    kept = Keep()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "service.version": "2.1"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("scope.one")
    other = provider.get_tracer("pydantic-ai")
    root = tracer.start_span(
        "invoke_agent weather",
        kind=SpanKind.SERVER,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "c-1"},
    )
    inside = set_span_in_context(root)
    llm = tracer.start_span(
        "chat gpt-4o",
        context=inside,
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.response.finish_reasons": ("stop", "length"),
            "gen_ai.usage.input_tokens": 2**62,
            "temperature": math.nan,
            "top_p": math.inf,
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "héllo \\ud83d"}]}]',
            "flags": (True, False),
            "weights": (0.5, 1.5),
        },
    )
    llm.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "ids": (1, 2)}, timestamp=123)
    llm.add_event("no attributes")
    llm.set_status(Status(StatusCode.ERROR, "rate limited"))
    llm.end()
    tool = other.start_span(
        "running tool",
        context=inside,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "session.id": '"quoted-s"',
            "otel_eval.session.end": "true",
            "lone": "\udc80 surrogate",
        },
    )
    tool.set_status(Status(StatusCode.OK))
    tool.end()
    tracer.start_span(
        "bare", attributes={"ai.operationId": "ai.generateText", "ai.telemetry.metadata.sessionId": "v-1"}
    ).end()
    tracer.start_span("no attributes at all", kind=SpanKind.PRODUCER).end()
    root.end()
    provider.shutdown()
    # A ReadableSpan built by hand (a plain dict of attributes, no scope, no status) and a subclass.
    hand = ReadableSpan(
        name="by hand",
        context=kept.spans[0].context,
        attributes={"session.id": "h", "k": (1,)},
        start_time=10,
        end_time=None,
        status=None,
        kind=None,
    )

    class Mine(ReadableSpan):
        pass

    mine = Mine(
        name="subclass",
        context=kept.spans[0].context,
        parent=kept.spans[0].context,
        attributes={"a": "b"},
        start_time=5,
        end_time=6,
    )
    return kept.spans + [hand, mine]


def test_the_fast_path_row_is_the_general_paths_row_for_every_kind_of_span():
    resources = Resources()
    spans = varied_spans()
    for span in spans:
        parts = ended_parts(span, resources)
        if type(span) is not ReadableSpan:
            assert parts is span  # not the SDK's class: converted the general way
            continue
        expected = span_row(from_sdk_span(span))
        assert row_of_parts(parts) == expected, span.name
        # ... and after crossing the pipe to the converter process.
        assert row_of_parts(pickle.loads(pickle.dumps(parts, pickle.HIGHEST_PROTOCOL))) == expected, span.name
    rows = {row[3]: row for row in (span_row(from_sdk_span(s)) for s in spans)}
    # What the comparison covered: a session ended explicitly, an error status, a parent, an event.
    assert rows["running tool"][12] is True and rows["running tool"][11] == "quoted-s"
    assert rows["chat gpt-4o"][5] == "error" and rows["chat gpt-4o"][2] == rows["running tool"][2]


def test_spans_of_two_providers_keep_their_own_resource():
    resources = Resources()
    spans = []
    for name in ("first", "second", "first"):
        kept = Keep()
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        provider.add_span_processor(SimpleSpanProcessor(kept))
        provider.get_tracer("t").start_span("step").end()
        spans.extend(kept.spans)
    services = [row_of_parts(ended_parts(span, resources))[10] for span in spans]
    assert [(f'"service.name":"{name}"') in raw for name, raw in zip(("first", "second", "first"), services)] == [
        True,
        True,
        True,
    ]
