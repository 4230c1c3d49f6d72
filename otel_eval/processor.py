"""EvalSpanProcessor: otel-eval inside the agent's own process, as an SDK ``SpanProcessor``.

``on_end`` only appends the finished span to a bounded buffer the engine's writer drains (it
converts and stores the spans in its own thread): it never blocks the agent and never raises into
it. When the buffer is full the span is dropped and counted (``dropped_spans``), as the SDK's own
BatchSpanProcessor does.
"""

from __future__ import annotations

import logging
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .engine import Engine, EngineSettings
from .engine.writer import SOURCE_ROUND
from .models.evalset import EvalConfig, EvalSet
from .models.results import EvalCaseResult
from .spans import SpanRecord, from_sdk_span, sdk_resource

log = logging.getLogger("otel_eval.processor")

#: Buffered spans that wake the writer at once (BatchSpanProcessor's max_export_batch_size);
#: fewer wait for the writer's next tick (at most 0.5 s).
WAKE_AT = 512


class EvalSpanProcessor(SpanProcessor):
    """``EvalSpanProcessor(engine=Engine(...))`` hands spans to an engine you built (as
    ``SimpleSpanProcessor`` takes an exporter); without one it builds and starts its own from
    ``db``, ``golden`` and ``settings`` (the keyword arguments of the same names override those)."""

    def __init__(
        self,
        db: Union[str, Path] = "otel-eval.db",
        golden: Union[str, Path, EvalSet, Iterable[Union[str, Path, EvalSet]]] = (),
        config: Optional[EvalConfig] = None,
        on_result: Optional[Callable[[EvalCaseResult], Any]] = None,
        trace_quiet: Optional[float] = None,
        session_idle: Optional[float] = None,
        max_queue_spans: Optional[int] = None,
        max_value_chars: Optional[int] = None,
        fuzzy_threshold: Optional[float] = None,
        embedding_threshold: Optional[float] = None,
        embed: Optional[Callable[[list[str]], list[list[float]]]] = None,
        *,
        engine: Optional[Engine] = None,
        settings: Optional[EngineSettings] = None,
    ):
        if engine is None:
            if isinstance(golden, (str, Path, EvalSet)):
                golden = [golden]
            overrides = {name: value for name, value in dict(
                config=config, trace_quiet=trace_quiet, session_idle=session_idle, max_queue_spans=max_queue_spans,
                max_value_chars=max_value_chars, fuzzy_threshold=fuzzy_threshold,
                embedding_threshold=embedding_threshold, embed=embed).items() if value is not None}
            engine = Engine(db, golden=list(golden), settings=(settings or EngineSettings()).replace(**overrides))
        if on_result is not None:
            engine.add_listener(on_result)
        self.engine = engine.start()
        self.dropped_spans = 0
        self._shut_down = False
        self._limit = engine.settings.max_queue_spans
        self._buffer: deque[ReadableSpan] = deque()
        engine.add_span_source(self._drain)

    def on_start(self, span: Span, parent_context: Optional[Context] = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        # The agent's thread only appends the finished span (deque.append is atomic); the
        # engine's writer converts and stores it, as BatchSpanProcessor's worker exports.
        if self._shut_down:
            return
        buffer = self._buffer
        if len(buffer) >= self._limit:
            self.dropped_spans += 1
            if self.dropped_spans == 1 or self.dropped_spans % 1000 == 0:
                log.warning("otel-eval dropped %d span(s) so far: %d spans waiting to be stored",
                            self.dropped_spans, len(buffer))
            return
        buffer.append(span)
        if len(buffer) == WAKE_AT:  # else the writer takes them at its next tick, like BatchSpanProcessor
            self.engine.wake()

    def _drain(self) -> list[SpanRecord]:
        """Called by the engine's writer: the buffered spans as SpanRecords (up to one round's worth)."""
        out: list[SpanRecord] = []
        buffer = self._buffer
        # Every span of a TracerProvider shares its one immutable Resource: convert it once.
        resource: Any = None
        converted: dict[str, Any] = {}
        for _ in range(min(len(buffer), SOURCE_ROUND)):
            span = buffer.popleft()
            try:
                if span.resource is not resource:
                    resource, converted = span.resource, sdk_resource(span.resource)
                out.append(from_sdk_span(span, converted))
            except Exception:  # an unreadable span must not take the others with it
                self.dropped_spans += 1
                log.warning("otel-eval could not convert span %r; dropped", getattr(span, "name", "?"), exc_info=True)
        return out

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.engine.flush(timeout_millis / 1000)

    def end_session(self, session_id: str) -> bool:
        """End a session now instead of waiting for ``session_idle``."""
        self.engine.flush()
        return self.engine.end_session(session_id)

    def shutdown(self) -> None:
        """Commit what is queued, end and score every open session, close the database."""
        if self._shut_down:
            return
        self._shut_down = True
        self.engine.close(score_open=True)
