"""An ended SDK span as the writer's row, in two steps: :func:`ended_parts` on the agent's
thread, :func:`row_of_parts` wherever spans are converted (the processor's converter thread, or
its converter process).

``EvalSpanProcessor.on_end`` takes the span's values out of the SDK's ``ReadableSpan`` at once
(~1.5 µs): ints, strings and the span's own attribute dict, frozen since the span ended. The
``ReadableSpan`` then goes with the agent's reference, instead of waiting in the processor's
buffer as ~11 objects the cyclic GC tracks, which every collection the agent's thread runs walked
(benchmarks/README.md, "Issue 34.1"). The parts are plain values, so they also cross a pipe to
a converter process as they are.

The row is the one :func:`otel_eval.span_rows.span_row` gives for
:func:`otel_eval.spans.from_sdk_span` of the same span (``tests/test_sdk_rows.py`` compares
them); a span of another class than the SDK's ``ReadableSpan`` keeps that path.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from .span_rows import SpanRow, span_row
from .spans import _STATUS_NAMES, STATUS_UNSET, SpanEvent, SpanRecord, sdk_resource

SpanParts = tuple
"""``(trace_id: int, span_id: int, parent_span_id: int (0: none), name, start_ns, end_ns, kind,
status, status_message, attributes, events, resource, scope)``: ``kind`` and ``status`` as
:class:`SpanRecord` names them, ``attributes`` the SDK's dict itself (values as the SDK keeps
them: sequences as tuples), ``events`` ``((name, time_ns, attributes), ...)``, ``resource`` the
resource's attributes (one dict for every span of a provider), ``scope`` the scope's name."""

_FIELDS = attrgetter(
    "_context",
    "_parent",
    "_name",
    "_start_time",
    "_end_time",
    "_kind",
    "_status",
    "_attributes",
    "_events",
    "_resource",
    "_instrumentation_scope",
)
_KIND_NAMES: dict[Any, str] = {}
"""SDK ``SpanKind`` → the record's kind name (``kind.name.lower()``), filled as kinds are met."""


class Resources:
    """Each SDK ``Resource``'s attributes, converted once: the spans of a ``TracerProvider``
    share its one immutable resource, so their parts share one dict (which pickle also sends
    once a batch)."""

    def __init__(self) -> None:
        self._last: tuple[Any, dict[str, Any]] = (None, {})
        """The last resource met and its attributes, as one value: threads that end spans of
        different providers at once each read a consistent pair."""

    def of(self, resource: Any) -> dict[str, Any]:
        """The resource's attributes as stored, read once per resource object (a provider keeps one)."""
        last = self._last
        if resource is not last[0]:
            last = self._last = (resource, sdk_resource(resource))
        return last[1]


def ended_parts(span: Any, resources: Resources) -> SpanParts | Any:
    """The parts of an ended SDK ``ReadableSpan``; any other span object is returned as it is
    (the processor converts it the general way: :func:`otel_eval.spans.from_sdk_span`)."""
    if type(span) is not ReadableSpan:
        return span
    ctx, parent, name, start, end, kind, status, attributes, events, resource, scope = _FIELDS(span)
    kind_name = _KIND_NAMES.get(kind)
    if kind_name is None:
        kind_name = _KIND_NAMES[kind] = kind.name.lower() if kind is not None else "internal"
    if status is None:
        status_name, message = STATUS_UNSET, ""
    else:
        status_name, message = _STATUS_NAMES.get(status.status_code.value, STATUS_UNSET), status.description or ""
    inner = getattr(attributes, "_dict", None)  # BoundedAttributes: its plain dict, frozen since the span ended
    if type(inner) is not dict:
        inner = dict(attributes) if attributes else {}  # another mapping (a dict given to ReadableSpan)
    return (
        ctx.trace_id,
        ctx.span_id,
        parent.span_id if parent is not None else 0,
        name,
        start or 0,
        end or start or 0,
        kind_name,
        status_name,
        message,
        inner,
        tuple((e.name, e.timestamp or 0, dict(e.attributes or {})) for e in events) if events else (),
        resources.of(resource),
        scope.name if scope is not None else "",
    )


_NO_TUPLES = frozenset({str, int, float, bool, type(None), list})
"""Value types ``_plain`` keeps as they are."""


def _plain(attrs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """As ``spans._plain``: SDK attribute sequences are tuples, lists keep JSON round trips
    equal. A dict without one (most spans of most dialects) is kept as it is, not copied: the SDK
    froze it when the span ended, and the types are checked in C, where the copy ran a Python loop."""
    if not attrs:
        return {}
    if type(attrs) is dict and _NO_TUPLES.issuperset(map(type, attrs.values())):
        return attrs
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()}


def record_of_parts(parts: SpanParts) -> SpanRecord:
    """The record :func:`otel_eval.spans.from_sdk_span` builds of the same span."""
    trace_id, span_id, parent_id, name, start, end, kind, status, message, attributes, events, resource, scope = parts
    return SpanRecord(
        format(trace_id, "032x"),
        format(span_id, "016x"),
        format(parent_id, "016x") if parent_id else None,
        name,
        start,
        end,
        kind,
        status,
        message,
        _plain(attributes),
        tuple(SpanEvent(e_name, e_time, _plain(e_attributes)) for e_name, e_time, e_attributes in events)
        if events
        else (),
        resource,
        scope,
    )


def row_of_parts(parts: SpanParts) -> SpanRow:
    """The row the writer stores for an ended span's parts (in the converter process, or here when it is gone)."""
    return span_row(record_of_parts(parts))
