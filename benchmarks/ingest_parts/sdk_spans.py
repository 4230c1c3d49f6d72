"""Sessions as SDK ReadableSpans with fresh ids, for the OTLP exporters (grpc and http clients)."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from .agent_spans import RESOURCE_ATTRIBUTES, SCOPES, SESSION_KEYS
from .sessions import SessionSpec


class SpanFactory:
    """ReadableSpans with fresh ids for the SDK exporters, as a BatchSpanProcessor would hand them over."""

    def __init__(self) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanKind

        self.resource = Resource(RESOURCE_ATTRIBUTES)
        self.scopes = {c: InstrumentationScope(name, version) for c, (name, version) in SCOPES.items()}
        self.kinds = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}

    def spans(self, sessions: Sequence[SessionSpec], rng: random.Random) -> list:
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import SpanContext, TraceFlags
        from opentelemetry.trace.status import Status, StatusCode

        sampled = TraceFlags(TraceFlags.SAMPLED)
        unset = Status(StatusCode.UNSET)
        now = time.time_ns()
        out = []
        for session in sessions:
            session_id = f"bench-{rng.getrandbits(64):016x}"
            trace_ids = [rng.getrandbits(128) for _ in range(session.traces + 1)]
            base = rng.getrandbits(40) << 16
            begin = now - session.duration
            for spec in session.spans:
                trace_id = trace_ids[spec.trace_no]
                context = SpanContext(trace_id, base | spec.trace_no << 8 | spec.span_no, False, sampled)
                parent = (
                    SpanContext(trace_id, base | spec.trace_no << 8 | spec.parent_no, False, sampled)
                    if spec.parent_no
                    else None
                )
                attributes = dict(spec.attributes)
                for key in SESSION_KEYS:
                    if key in attributes:
                        attributes[key] = session_id
                events = [Event(name, attrs, begin + spec.start + at) for name, at, attrs in spec.events]
                out.append(
                    ReadableSpan(
                        name=spec.name,
                        context=context,
                        parent=parent,
                        resource=self.resource,
                        attributes=attributes,
                        events=events,
                        kind=self.kinds[spec.kind],
                        instrumentation_scope=self.scopes[session.convention],
                        status=Status(StatusCode.ERROR, spec.error) if spec.error else unset,
                        start_time=begin + spec.start,
                        end_time=begin + spec.end,
                    )
                )
        return out
