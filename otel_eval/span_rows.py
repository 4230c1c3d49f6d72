"""A span as the writer stores it: the values of its ``spans`` row, read from the record before
the record reaches the writer's queue.

Reading them (the raw JSON, the convention and span type detected once at ingest, the session id
the span names, whether it ends its session) is pure, so it runs on the thread that hands spans
in: a receiver's in the collector, the converter thread in-process. The writer only decides
sessions and executes.

A row is a plain tuple of strings, numbers, booleans and None, on purpose. CPython's cyclic GC
stops tracking such a tuple the first time a collection meets it, so spans waiting for the writer
(thousands, when an agent ends spans faster than they can be stored) never count towards a full
collection. As ``SpanRecord`` objects they did (one tracked object each, two when an attribute
holds a list): in ``benchmarks.inprocess`` a ~45 ms full pass over the agent's whole heap, on the
agent's thread, every ~7,000 waiting spans.
"""

from __future__ import annotations

from typing import Final

from .mapping import convention_name, ends_session, ingest_span_type, session_id_of
from .spans import SpanRecord, to_json

SpanRow = tuple[str, str, str | None, str, str, str, int, int, str, str | None, str, str | None, bool]
"""``(trace_id, span_id, parent_span_id, name, kind, status, start_ns, end_ns, convention,
span_type, raw_json, named_session_id, ends_session)``; the positions below name them."""

# Final literals, so that a type checker reads row[TRACE_ID] as the tuple's str, not the union of its items
TRACE_ID: Final = 0
SPAN_ID: Final = 1
PARENT_SPAN_ID: Final = 2
NAME: Final = 3
KIND: Final = 4
STATUS: Final = 5
START_NS: Final = 6
END_NS: Final = 7
CONVENTION: Final = 8
SPAN_TYPE: Final = 9
RAW_JSON: Final = 10
NAMED_SESSION_ID: Final = 11
ENDS_SESSION: Final = 12


def span_row(span: SpanRecord) -> SpanRow:
    """The row of ``span``. ``span_type`` is None unless the convention tells it without reading
    the span (scoring fills it in then); ``named_session_id`` is None when the span names no
    session (its trace is then a session of its own, unless another span of it names one)."""
    convention = convention_name(span)
    return (
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.kind,
        span.status,
        span.start_ns,
        span.end_ns,
        convention,
        ingest_span_type(span, convention),
        to_json(span),
        session_id_of(span, convention=convention),
        ends_session(span),
    )
