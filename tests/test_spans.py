"""SpanRecord from SDK spans, OTLP protobuf and Noveum dataset.json."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_eval.errors import InputError
from otel_eval.spans import (
    MAX_TIME_NS,
    from_dict,
    from_noveum,
    from_otlp,
    from_sdk_span,
    read_noveum_file,
    span_problem,
    to_json,
)
from tests.paths import FIXTURES

NOVEUM = str(FIXTURES / "noveum" / "dataset.json")


def test_from_sdk_span_keeps_ids_parent_status_events_and_resource():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "service.version": "2.1"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("scope-x")
    with tracer.start_as_current_span("root"):
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.set_attribute("tags", ["a", "b"])
            child.add_event("session.end", {"why": "done"})
            child.set_status(Status(StatusCode.ERROR, "boom"))
    spans = {s.name: from_sdk_span(s) for s in exporter.get_finished_spans()}
    root_rec, child_rec = spans["root"], spans["child"]
    assert len(root_rec.trace_id) == 32 and len(root_rec.span_id) == 16
    assert root_rec.parent_span_id is None and root_rec.is_root
    assert child_rec.parent_span_id == root_rec.span_id
    assert (child_rec.kind, child_rec.status, child_rec.status_message) == ("client", "error", "boom")
    assert child_rec.attributes["tags"] == ["a", "b"]
    assert child_rec.events[0].name == "session.end" and child_rec.events[0].attributes == {"why": "done"}
    assert child_rec.resource["service.version"] == "2.1" and child_rec.scope == "scope-x"
    assert from_dict(json.loads(to_json(child_rec))) == child_rec


def test_from_otlp_rejects_invalid_ids_and_keeps_the_rest():
    request = ExportTraceServiceRequest()
    scope_spans = request.resource_spans.add().scope_spans.add()
    good = scope_spans.spans.add(name="good", trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    good.attributes.add(
        key="input", value={"kvlist_value": {"values": [{"key": "q", "value": {"string_value": "hi"}}]}}
    )
    scope_spans.spans.add(name="short", trace_id=b"\x01" * 15, span_id=b"\x02" * 8)
    scope_spans.spans.add(name="zero", trace_id=b"\x01" * 16, span_id=b"\x00" * 8)
    result = from_otlp(request.resource_spans)
    assert [s.name for s in result.spans] == ["good"]
    assert result.rejected == 2
    assert "trace_id has 15 bytes" in result.error_message and "span_id is all zeros" in result.error_message
    assert result.spans[0].attributes["input"] == {"q": "hi"} and result.spans[0].attributes["input.q"] == "hi"


_IDS = st.sampled_from(
    [b"", b"\x00" * 8, b"\x00" * 16, b"\x01" * 7, b"\x02" * 8, b"\x03" * 15, b"\x04" * 16, b"\x00" * 15 + b"\x01"]
)
_TIMES = st.sampled_from([0, 1, MAX_TIME_NS, MAX_TIME_NS + 1, 2**64 - 1])


@settings(max_examples=300, deadline=None)
@given(trace_id=_IDS, span_id=_IDS, parent=_IDS, start=_TIMES, end=_TIMES, event_times=st.lists(_TIMES, max_size=2))
def test_from_otlp_keeps_a_span_exactly_when_span_problem_finds_nothing(
    trace_id, span_id, parent, start, end, event_times
):
    # from_otlp checks the values it has already read; span_problem is the definition and says why.
    request = ExportTraceServiceRequest()
    span = (
        request.resource_spans.add()
        .scope_spans.add()
        .spans.add(
            name="s",
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            start_time_unix_nano=start,
            end_time_unix_nano=end,
        )
    )
    for at in event_times:
        span.events.add(name="e", time_unix_nano=at)
    problem = span_problem(span)
    result = from_otlp(request.resource_spans)
    if problem:
        assert (result.spans, result.rejected, result.errors) == ([], 1, [f"span 's': {problem}"])
    else:
        assert result.rejected == 0 and len(result.spans) == 1
        kept = result.spans[0]
        assert (kept.trace_id, kept.span_id) == (trace_id.hex(), span_id.hex())
        assert kept.parent_span_id == (parent.hex() if any(parent) else None)
        assert (kept.start_ns, kept.end_ns) == (start, end or start)
        assert [e.time_ns for e in kept.events] == event_times


def test_noveum_span_ids_nested_attributes_and_parents():
    spans = read_noveum_file(NOVEUM)
    assert len(spans) == 62
    root = next(s for s in spans if s.name == "chain_start.unknown")
    assert root.parent_span_id is None  # "" in the file
    assert root.trace_id.count("-") == 4  # UUIDs kept as given
    assert root.attributes["chain.inputs.input"] == root.attributes["chain.inputs"]["input"]
    assert root.events[0].name == "agent_action"
    assert root.start_ns == 1757578449681000000
    null_parent = dict(json.load(open(NOVEUM))[0], parent_span_id=None)
    assert from_noveum(null_parent).parent_span_id is None


def test_noveum_bad_span_names_the_index_and_field(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"trace_id": "t", "span_id": "s"}, {"trace_id": "t"}]))
    with pytest.raises(InputError) as info:
        read_noveum_file(str(path))
    assert (info.value.location, info.value.reason) == ("$[1].span_id", "missing or empty span_id")
    path.write_text("{}")
    with pytest.raises(InputError, match="expected a JSON array of spans"):
        read_noveum_file(str(path))


def test_integers_past_64_bits_read_back_exactly():
    """orjson reads an integer it could not have written as a float, silently losing digits: a
    stored span must give back the very integer it was given, alone in its text or not."""
    from otel_eval.spans import SpanRecord, from_json

    for big in (2**100 + 1, -(2**63) - 1, 2**64):
        span = SpanRecord(
            "ab" * 16, "cd" * 8, None, "tool", 1, 2, attributes={"n": big, "list": [1, big]}, resource={"r": big}
        )
        back = from_json(to_json(span))
        assert (back.attributes, back.resource) == (span.attributes, span.resource)
        assert type(back.attributes["n"]) is int and back.attributes["n"] == big
    in_range = SpanRecord("ab" * 16, "cd" * 8, None, "tool", 1, 2, attributes={"n": 2**64 - 1, "m": -(2**63)})
    assert from_json(to_json(in_range)).attributes == {"n": 2**64 - 1, "m": -(2**63)}


def test_stored_span_text_round_trips_what_the_fast_encoder_refuses(tmp_path):
    """A span carrying a 100-bit integer or a lone surrogate is still stored and read back whole
    (the standard library takes over from orjson), NaN is stored as JSON null (SQLite's json
    functions can read every stored row), and a row an earlier version wrote with a bare NaN
    token still reads."""
    import sqlite3

    from otel_eval.spans import SpanRecord, from_json

    odd = SpanRecord(
        "ab" * 16,
        "cd" * 8,
        None,
        "tool",
        1,
        2,
        attributes={"big": 2**100, "broken": "half \ud83d", "nan": float("nan")},
    )
    text = to_json(odd)
    back = from_json(text)
    assert back.attributes["big"] == 2**100 and back.attributes["broken"] == "half \ud83d"

    plain = SpanRecord("ab" * 16, "cd" * 8, None, "tool", 1, 2, attributes={"x": float("nan"), "n": 3})
    stored = to_json(plain)
    conn = sqlite3.connect(":memory:")
    assert conn.execute(
        "SELECT json_extract(?, '$.attributes.n'), json_extract(?, '$.attributes.x')", (stored, stored)
    ).fetchone() == (3, None)
    assert from_json(stored).attributes == {"x": None, "n": 3}

    legacy = json.dumps(plain.to_dict(), ensure_ascii=False)  # how rows were written before
    assert "NaN" in legacy
    value = from_json(legacy).attributes["x"]
    assert value != value  # NaN, as it was written


def test_keys_that_are_not_strings_are_written_as_json_writes_them():
    from otel_eval import json_text

    value = {1: "a", 2.5: "b", False: "c", None: "d", "s": {3: [1, {None: 0}]}}
    assert json.loads(json_text.dumps(value)) == json.loads(json.dumps(value))
    assert json_text.dumps({"plain": [1, "x"]}) == '{"plain":[1,"x"]}'


def test_sdk_span_attributes_convert_as_the_mapping_gives_them():
    # SDK attribute tuples become lists (JSON round trips stay equal); every value type kept.
    from opentelemetry.attributes import BoundedAttributes

    values = {"s": "text", "i": 2**40, "f": 0.5, "b": True, "seq": ("a", "b"), "ints": [1, 2], "empty": ""}
    bounded = BoundedAttributes(attributes=values, immutable=True)
    through_mapping = {k: list(v) if isinstance(v, tuple) else v for k, v in dict(bounded).items()}
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("t").start_span("x", attributes=values).end()
    (finished,) = exporter.get_finished_spans()
    assert (
        from_sdk_span(finished).attributes
        == through_mapping
        == {"s": "text", "i": 2**40, "f": 0.5, "b": True, "seq": ["a", "b"], "ints": [1, 2], "empty": ""}
    )


def test_a_readable_span_built_by_hand_converts_too():
    # Exporters' tests and bridges build ReadableSpan directly, with a plain dict of attributes.
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, TraceFlags

    context = SpanContext(trace_id=7, span_id=9, is_remote=False, trace_flags=TraceFlags(1))
    record = from_sdk_span(
        ReadableSpan(name="hand", context=context, attributes={"k": ("a", "b"), "n": 3}, start_time=1, end_time=2)
    )
    assert record.attributes == {"k": ["a", "b"], "n": 3}
    assert (record.trace_id, record.span_id, record.end_ns) == (f"{7:032x}", f"{9:016x}", 2)
