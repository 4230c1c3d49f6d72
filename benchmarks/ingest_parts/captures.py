"""A workload replayed from real frameworks' captures (tests/data/captures/*.traces.pb): each
captured session (all the traces of one of the six scripted conversations) re-encoded with
fresh trace ids, session ids and times, so many copies of it can be sent as distinct sessions;
and the golden set they match (the one tests/test_captures.py scores them against).

The ids are written so that ``templates.RawTemplate`` renews them per request as it does for the
generated workload: every trace id ``magic(8) + epoch placeholder(4) + session index(2) + trace
number(2)``, and every occurrence of the captured session id, wherever the framework put it (an
attribute, JSON text inside one, an event), replaced by ``bench-zzzzzzzz-<index>``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sessions import session_id_of_index
from .templates import TRACE_EPOCH_PLACEHOLDER, RawTemplate, template_of

CAPTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "captures"

#: The default mix: frameworks whose captures the collector reads right (tests/test_captures.py),
#: traces only (no .logs.pb), weighted towards the big-state ones (LangGraph's chain spans carry
#: the graph state as JSON), about 2.6 KiB a span in all, as issue 34 measured.
DEFAULT_CAPTURES = (
    "langgraph_openllmetry",
    "langgraphjs_openinference",
    "llamaindex_openinference",
    "crewai_openinference",
    "pydantic_ai_native",
    "openllmetry_js_openai",
    "autogen_agentchat",
    "strands_latest",
    "vercel_ai_sdk6",
)


@dataclass
class CapturedSession:
    """One captured session: its spans (protobuf ``Span`` messages) with the resource and scope
    each came under, its session id as captured, and its trace ids in order of first appearance."""

    capture: str
    session_id: str
    spans: list[tuple[int, Any]]  # (index into the capture's (resource, scope) pairs, Span)
    groups: list[tuple[Any, Any]]  # the capture's (Resource, InstrumentationScope) pairs
    traces: list[bytes]

    @property
    def encoded_bytes(self) -> int:
        return sum(span.ByteSize() for _, span in self.spans)


def read_frames(path: Path) -> list[bytes]:
    """The length-prefixed requests of a capture file (``[uint32 big-endian length][bytes]``)."""
    data = path.read_bytes()
    frames, at = [], 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        frames.append(data[at + 4 : at + 4 + length])
        at += 4 + length
    return frames


def captured_sessions(name: str) -> list[CapturedSession]:
    """The sessions of one capture, as the collector would group them: a trace belongs to the
    session any of its spans names; traces that name none (a framework's setup) are left out."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_eval.mapping import session_id_of
    from otel_eval.readers import read_spans

    path = CAPTURES / f"{name}.traces.pb"
    session_of_span = {(r.trace_id, r.span_id): session_id_of(r) for r in read_spans(path)}
    groups: list[tuple[Any, Any]] = []
    spans: list[tuple[int, Any]] = []
    for frame in read_frames(path):
        request = ExportTraceServiceRequest.FromString(frame)
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                groups.append((resource_spans.resource, scope_spans.scope))
                spans.extend((len(groups) - 1, span) for span in scope_spans.spans)
    trace_session: dict[bytes, str] = {}
    for _, span in spans:
        found = session_of_span.get((span.trace_id.hex(), span.span_id.hex()))
        if found and span.trace_id not in trace_session:
            trace_session[span.trace_id] = found
    sessions: dict[str, CapturedSession] = {}
    for group, span in spans:
        session_id = trace_session.get(span.trace_id)
        if session_id is None:
            continue
        session = sessions.setdefault(session_id, CapturedSession(name, session_id, [], groups, []))
        session.spans.append((group, span))
        if span.trace_id not in session.traces:
            session.traces.append(span.trace_id)
    return list(sessions.values())


def _renamed_value(value: Any, old: str, new: str) -> None:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        if old in value.string_value:
            value.string_value = value.string_value.replace(old, new)
    elif kind == "array_value":
        for item in value.array_value.values:
            _renamed_value(item, old, new)
    elif kind == "kvlist_value":
        for kv in value.kvlist_value.values:
            _renamed_value(kv.value, old, new)


def _renamed(attributes: Any, old: str, new: str) -> None:
    for kv in attributes:
        _renamed_value(kv.value, old, new)


def encode_captured(sessions: Sequence[tuple[int, CapturedSession]], now_ns: int) -> RawTemplate:
    """One request holding each ``(index, session)`` as a session of its own, ready to be
    rendered with fresh ids (``RawTemplate.render``); its spans end at ``now_ns``."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    if len({i for i, _ in sessions}) != len(sessions) or max(i for i, _ in sessions) > 0xFFFF:
        raise ValueError("sessions in one template need distinct indexes below 65536")
    magic = os.urandom(8)
    request = ExportTraceServiceRequest()
    scopes: dict[tuple[str, int], Any] = {}
    count = 0
    for index, session in sessions:
        new_session = session_id_of_index(index)
        shift = now_ns - max(span.end_time_unix_nano for _, span in session.spans)
        trace_ids = {
            old: magic + TRACE_EPOCH_PLACEHOLDER + index.to_bytes(2, "big") + number.to_bytes(2, "big")
            for number, old in enumerate(session.traces, start=1)
        }
        for group, captured in session.spans:
            key = (session.capture, group)
            if key not in scopes:
                resource, scope = session.groups[group]
                resource_spans = request.resource_spans.add()
                resource_spans.resource.CopyFrom(resource)
                scope_spans = resource_spans.scope_spans.add()
                scope_spans.scope.CopyFrom(scope)
                scopes[key] = scope_spans
            span = scopes[key].spans.add()
            span.CopyFrom(captured)
            span.trace_id = trace_ids[captured.trace_id]
            span.start_time_unix_nano += shift
            span.end_time_unix_nano += shift
            if session.session_id in span.name:
                span.name = span.name.replace(session.session_id, new_session)
            _renamed(span.attributes, session.session_id, new_session)
            for event in span.events:
                event.time_unix_nano += shift
                _renamed(event.attributes, session.session_id, new_session)
            for link in span.links:
                if link.trace_id in trace_ids:
                    link.trace_id = trace_ids[link.trace_id]
            count += 1
    return template_of(request, magic, count, len(sessions))


def golden_evalset(filler_cases: int, seed: int) -> dict:
    """The golden set the captures match (tests/test_captures.py's right set: the six scripted
    conversations), plus ``filler_cases`` generated cases so the matcher looks through a set of
    realistic size."""
    from tests.test_captures import golden

    from .golden import golden_evalset as generated_evalset
    from .golden import make_golden_cases

    document = generated_evalset(make_golden_cases(filler_cases, seed)) if filler_cases else {"eval_cases": []}
    right = golden(wrong=False).model_dump(mode="json", exclude_none=True)
    document.update(eval_set_id="realsize_benchmark", name="Real-size benchmark golden set")
    document["eval_cases"] = right["eval_cases"] + document["eval_cases"]
    return document
