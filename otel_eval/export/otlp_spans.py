"""Stored spans back to OTLP: an ``ExportTraceServiceRequest`` from :class:`SpanRecord` s.

What verdict-driven forwarding sends (``--forward-when``): the spans were stored as received
(one record a span, the resource and scope name with it), so a session's request is rebuilt from
its rows. Attributes keep their values; a nested value (Noveum's dicts, flattened on ingest
alongside the original) goes as an OTLP ``kvlist``. A span whose ids are not hex (Noveum UUIDs
kept as given) cannot be an OTLP span and is left out, counted by the caller.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from ..spans import STATUS_ERROR, STATUS_OK, SpanRecord

_KINDS = {
    "internal": Span.SPAN_KIND_INTERNAL,
    "server": Span.SPAN_KIND_SERVER,
    "client": Span.SPAN_KIND_CLIENT,
    "producer": Span.SPAN_KIND_PRODUCER,
    "consumer": Span.SPAN_KIND_CONSUMER,
}
_STATUS = {STATUS_OK: Status.STATUS_CODE_OK, STATUS_ERROR: Status.STATUS_CODE_ERROR}


def _id(text: str, length: int) -> bytes:
    """Hex id → bytes; ValueError when it is not ``length`` bytes of hex."""
    value = bytes.fromhex(text)
    if len(value) != length:
        raise ValueError(f"expected {length} bytes, got {len(value)}")
    return value


def to_any_value(value: Any) -> AnyValue:
    """A Python value as an OTLP ``AnyValue`` (the reverse of :func:`otel_eval.spans.any_value`)."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, (list, tuple)):
        out = AnyValue()
        out.array_value.values.extend(to_any_value(v) for v in value)
        return out
    if isinstance(value, Mapping):
        out = AnyValue()
        out.kvlist_value.values.extend(to_key_values(value))
        return out
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    return AnyValue(string_value=json.dumps(value, default=str))


def to_key_values(attributes: Mapping[str, Any]) -> list[KeyValue]:
    """Attributes as OTLP ``KeyValue``s, None values left out (the reverse of :func:`otel_eval.spans.key_values`)."""
    return [KeyValue(key=str(k), value=to_any_value(v)) for k, v in attributes.items() if v is not None]


def trace_request(records: Iterable[SpanRecord]) -> tuple[ExportTraceServiceRequest, int]:
    """(the request, spans left out because their ids are not OTLP ids)."""
    request = ExportTraceServiceRequest()
    resources: dict[str, Any] = {}
    scopes: dict[tuple[str, str], Any] = {}
    left_out = 0
    for r in records:
        try:
            trace_id, span_id = _id(r.trace_id, 16), _id(r.span_id, 8)
            parent = _id(r.parent_span_id, 8) if r.parent_span_id else b""
        except ValueError:
            left_out += 1
            continue
        resource_key = json.dumps(dict(r.resource), sort_keys=True, default=str)
        if resource_key not in resources:
            rs = request.resource_spans.add()
            rs.resource.attributes.extend(to_key_values(r.resource))
            resources[resource_key] = rs
        scope_key = (resource_key, r.scope)
        if scope_key not in scopes:
            ss = resources[resource_key].scope_spans.add()
            ss.scope.name = r.scope
            scopes[scope_key] = ss
        span = scopes[scope_key].spans.add(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=r.name,
            kind=_KINDS.get(r.kind, Span.SPAN_KIND_INTERNAL),
            start_time_unix_nano=r.start_ns,
            end_time_unix_nano=r.end_ns,
        )
        span.attributes.extend(to_key_values(r.attributes))
        for e in r.events:
            event = span.events.add(name=e.name, time_unix_nano=e.time_ns)
            event.attributes.extend(to_key_values(e.attributes))
        if r.status in _STATUS:
            span.status.code = _STATUS[r.status]
            span.status.message = r.status_message or ""
    return request, left_out
