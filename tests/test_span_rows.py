"""A span as the writer stores it: read once, on the thread that hands it in, into plain values."""

from __future__ import annotations

import gc
import json

from otel_eval.mapping import SESSION_END_ATTRIBUTE, SESSION_END_EVENT
from otel_eval.span_rows import (
    CONVENTION,
    ENDS_SESSION,
    NAMED_SESSION_ID,
    PARENT_SPAN_ID,
    RAW_JSON,
    SPAN_ID,
    SPAN_TYPE,
    TRACE_ID,
    span_row,
)
from otel_eval.spans import SpanEvent, SpanRecord, from_json


def test_a_row_holds_what_storing_the_span_needs():
    tool = SpanRecord(
        "ab" * 16,
        "00000000000000b2",
        "00000000000000b1",
        "get_weather",
        2,
        3,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "session.id": "s-1",
            "input.value": '{"city": "Tokyo"}',
            "tags": ["a", "b"],
        },
    )
    row = span_row(tool)
    assert (row[TRACE_ID], row[SPAN_ID], row[PARENT_SPAN_ID]) == ("ab" * 16, "00000000000000b2", "00000000000000b1")
    assert (row[CONVENTION], row[SPAN_TYPE], row[NAMED_SESSION_ID], row[ENDS_SESSION]) == (
        "openinference",
        "tool",
        "s-1",
        False,
    )
    assert from_json(row[RAW_JSON]) == tool  # the raw JSON reads back as the same span
    assert json.loads(row[RAW_JSON])["attributes"]["tags"] == ["a", "b"]


def test_a_span_that_ends_its_session_says_so_by_attribute_or_event():
    by_attribute = SpanRecord(
        "cd" * 16, "00000000000000c1", None, "agent", 1, 2, attributes={SESSION_END_ATTRIBUTE: True}
    )
    by_event = SpanRecord("cd" * 16, "00000000000000c2", None, "agent", 1, 2, events=(SpanEvent(SESSION_END_EVENT, 2),))
    neither = SpanRecord("cd" * 16, "00000000000000c3", None, "agent", 1, 2)
    assert [span_row(s)[ENDS_SESSION] for s in (by_attribute, by_event, neither)] == [True, True, False]
    assert span_row(neither)[NAMED_SESSION_ID] is None  # its trace is a session of its own


def test_rows_waiting_for_the_writer_are_not_tracked_by_the_garbage_collector():
    # In-process, thousands of spans wait for the writer while the agent runs: as rows of plain
    # values they never reach the GC's oldest generation, whose full passes the agent's thread pays.
    span = SpanRecord(
        "ef" * 16,
        "00000000000000d1",
        None,
        "chat",
        1,
        2,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["stop"]},
        events=(SpanEvent("gen_ai.choice", 2, {"index": 0}),),
    )
    rows = [span_row(span) for _ in range(3)]
    gc.collect()
    assert not any(gc.is_tracked(row) for row in rows)
