"""Sessions as pre-encoded OTLP ExportTraceServiceRequests (the raw client's requests): encoded
once, their trace and session ids renewed in place for every request."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .agent_spans import RESOURCE_ATTRIBUTES, SCOPES
from .sessions import SESSION_MARK, SessionSpec

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
#: The method path TraceServiceStub.Export calls; the raw client uses it with pre-encoded bytes.
TRACE_EXPORT_METHOD = f"/{TRACE_SERVICE}/Export"
#: Bytes 8-11 of every trace id in a template, where each request writes its epoch.
TRACE_EPOCH_PLACEHOLDER = b"\xfe\xed\xfa\xce"


def _any_value(target: Any, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, (list, tuple)):
        for item in value:
            _any_value(target.array_value.values.add(), item)
    else:
        target.string_value = str(value)


def _set_attributes(repeated: Any, attributes: dict) -> None:
    for key, value in attributes.items():
        kv = repeated.add()
        kv.key = key
        _any_value(kv.value, value)


@dataclass
class RawTemplate:
    """One encoded ExportTraceServiceRequest whose trace ids and session ids can be renewed in place.

    Renewing rewrites fixed-width fields at offsets found once, so a request costs the client a
    copy and a few hundred slice writes instead of a protobuf encode: the client stays cheap and
    the server's work is what gets measured.
    """

    data: bytes
    trace_offsets: list[int]
    session_offsets: list[int]
    spans: int
    sessions: int
    _traces: list[list[int]] | None = field(default=None, repr=False)
    _sessions: list[list[int]] | None = field(default=None, repr=False)

    def render(self, epoch: int, random_ids: bool = False) -> bytes:
        """The request with fresh ids: the epoch in every trace and session id (ids that grow
        from request to request) or, with ``random_ids``, random ones: each trace id random but
        for its last 8 bytes, as W3C trace ids are, and each session's id random hex."""
        buf = bytearray(self.data)
        trace_epoch = epoch.to_bytes(4, "big")
        session_epoch = b"%08x" % epoch
        for at in self.trace_offsets:
            buf[at : at + 4] = trace_epoch
        for at in self.session_offsets:
            buf[at : at + 8] = session_epoch
        if random_ids:
            for offsets in self._trace_groups():
                prefix = os.urandom(8)
                for at in offsets:  # the template's 8 magic bytes, before the epoch
                    buf[at - 8 : at] = prefix
            for offsets in self._session_groups():
                text = b"%08x" % random.getrandbits(32)
                for at in offsets:
                    buf[at : at + 8] = text
        return bytes(buf)

    def _trace_groups(self) -> list[list[int]]:
        """The trace id offsets of each trace (keyed by the session index and trace number that
        follow the epoch)."""
        if self._traces is None:
            groups: dict[bytes, list[int]] = {}
            for at in self.trace_offsets:
                groups.setdefault(self.data[at + 4 : at + 8], []).append(at)
            self._traces = list(groups.values())
        return self._traces

    def _session_groups(self) -> list[list[int]]:
        """The session id offsets of each session (keyed by the hex index after the epoch)."""
        if self._sessions is None:
            groups: dict[bytes, list[int]] = {}
            for at in self.session_offsets:
                match = _SESSION_INDEX.match(self.data, at + 8)
                groups.setdefault(match.group(0) if match else b"", []).append(at)
            self._sessions = list(groups.values())
        return self._sessions


_SESSION_INDEX = re.compile(rb"-[0-9a-f]+")


def encode_template(sessions: Sequence[SessionSpec], now_ns: int) -> RawTemplate:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    if len({s.index for s in sessions}) != len(sessions) or max(s.index for s in sessions) > 0xFFFF:
        raise ValueError("sessions in one template need distinct indexes below 65536")
    magic = os.urandom(8)
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    _set_attributes(resource_spans.resource.attributes, RESOURCE_ATTRIBUTES)
    scopes = {}
    for convention, (name, version) in SCOPES.items():
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name, scope_spans.scope.version = name, version
        scopes[convention] = scope_spans
    kinds = {"internal": 1, "client": 3}
    count = 0
    for session in sessions:
        begin = now_ns - session.duration
        for spec in session.spans:
            span = scopes[session.convention].spans.add()
            span.trace_id = (
                magic + TRACE_EPOCH_PLACEHOLDER + session.index.to_bytes(2, "big") + spec.trace_no.to_bytes(2, "big")
            )
            span.span_id = _span_id(session.index, spec.trace_no, spec.span_no)
            if spec.parent_no:
                span.parent_span_id = _span_id(session.index, spec.trace_no, spec.parent_no)
            span.name = spec.name
            span.kind = kinds[spec.kind]
            span.start_time_unix_nano, span.end_time_unix_nano = begin + spec.start, begin + spec.end
            _set_attributes(span.attributes, spec.attributes)
            for name, at, attrs in spec.events:
                event = span.events.add()
                event.name, event.time_unix_nano = name, begin + spec.start + at
                _set_attributes(event.attributes, attrs)
            if spec.error:
                span.status.code, span.status.message = 2, spec.error
            count += 1
    return template_of(request, magic, count, len(sessions))


def template_of(request: Any, magic: bytes, spans: int, sessions: int) -> RawTemplate:
    """``request`` encoded, with the offsets ``render`` rewrites: each trace id's epoch (after the
    request's ``magic`` 8 bytes and the placeholder) and each session id's (after ``bench-``)."""
    data = request.SerializeToString()
    return RawTemplate(
        data,
        [at + 8 for at in _find_all(data, magic + TRACE_EPOCH_PLACEHOLDER)],
        [at + len(b"bench-") for at in _find_all(data, SESSION_MARK)],
        spans,
        sessions,
    )


def _span_id(session_index: int, trace_no: int, span_no: int) -> bytes:
    return (session_index << 16 | trace_no << 8 | span_no).to_bytes(8, "big")


def _find_all(data: bytes, needle: bytes) -> list[int]:
    found, at = [], data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found
