"""EvalSpanProcessor: otel-eval inside the agent's own process, as an SDK ``SpanProcessor``.

``on_end`` only appends the finished span to a bounded buffer: it never blocks the agent and never
raises into it. When the buffer is full the span is dropped and counted (``dropped_spans``), as
the SDK's own BatchSpanProcessor does.

A converter thread turns buffered spans into rows (:mod:`otel_eval.span_rows`) as soon as 512
wait, and the engine's writer stores those. Converting is pure Python and quick (a few µs a span);
storing is not, and beside an agent that keeps the GIL busy the writer gets it back only a switch
interval after each SQLite call. Spans left as SDK ``ReadableSpan``s meanwhile (eleven objects the
cyclic GC tracks) made every full GC pass the agent's thread paid walk them, and brought those
passes on; a row is a tuple of plain values, which the GC stops tracking.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .engine import Engine, EngineSettings
from .engine.writer import SOURCE_ROUND
from .models.evalset import EvalConfig, EvalSet
from .models.results import EvalCaseResult
from .span_rows import SpanRow, span_row
from .spans import from_sdk_span, sdk_resource

log = logging.getLogger("otel_eval.processor")

#: Buffered spans that wake the converter, and converted spans that wake the writer, at once
#: (BatchSpanProcessor's max_export_batch_size); fewer wait for the writer's next tick (at most 0.5 s).
WAKE_AT = 512


class EvalSpanProcessor(SpanProcessor):
    """``EvalSpanProcessor(engine=Engine(...))`` hands spans to an engine you built (as
    ``SimpleSpanProcessor`` takes an exporter); without one it builds and starts its own from
    ``db``, ``golden`` and ``settings`` (the keyword arguments of the same names override those)."""

    def __init__(
        self,
        db: Union[str, Path] = "otel-eval.db",
        golden: Union[str, Path, EvalSet, Iterable[Union[str, Path, EvalSet]]] = (),
        config: Union[EvalConfig, str, Path, None] = None,
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
        if isinstance(config, (str, Path)):  # a TOML file or google-adk's test_config.json
            from .adk_config.resolve import resolve_config

            config = resolve_config(config).config
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
        """Finished spans as the agent ended them (the agent's thread appends)."""
        self._records: deque[SpanRow] = deque()
        """Converted spans waiting for the writer."""
        self._converting = threading.Lock()
        """Held while spans move from ``_buffer`` to ``_records``, so they keep their order."""
        self._resource: Any = None
        self._resource_attributes: dict[str, Any] = {}
        self._convert_now = threading.Event()
        self._converter = threading.Thread(target=self._convert_loop, name="otel-eval-converter", daemon=True)
        self._converter.start()
        engine.add_span_source(self._drain)

    def on_start(self, span: Span, parent_context: Optional[Context] = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        # The agent's thread only appends the finished span (deque.append is atomic); the
        # engine's writer converts and stores it, as BatchSpanProcessor's worker exports.
        if self._shut_down:
            return
        buffer = self._buffer
        waiting = len(buffer) + len(self._records)
        if waiting >= self._limit:
            self.dropped_spans += 1
            if self.dropped_spans == 1 or self.dropped_spans % 1000 == 0:
                log.warning("otel-eval dropped %d span(s) so far: %d spans waiting to be stored",
                            self.dropped_spans, waiting)
            return
        buffer.append(span)
        if len(buffer) == WAKE_AT:  # else the writer converts them at its next tick, like BatchSpanProcessor
            self._convert_now.set()

    def _convert_loop(self) -> None:
        while not self._shut_down:
            self._convert_now.wait()
            self._convert_now.clear()
            if self._convert() >= WAKE_AT:
                self.engine.wake()
            if len(self._buffer) >= WAKE_AT:  # the agent ended that many meanwhile: no crossing of WAKE_AT told us
                self._convert_now.set()

    def _convert(self) -> int:
        """Move every buffered span to ``_records``; returns how many records wait."""
        buffer, records = self._buffer, self._records
        with self._converting:
            for _ in range(len(buffer)):
                span = buffer.popleft()
                try:
                    # Every span of a TracerProvider shares its one immutable Resource: convert it once.
                    if span.resource is not self._resource:
                        self._resource, self._resource_attributes = span.resource, sdk_resource(span.resource)
                    records.append(span_row(from_sdk_span(span, self._resource_attributes)))
                except Exception:  # an unreadable span must not take the others with it
                    self.dropped_spans += 1
                    log.warning("otel-eval could not convert span %r; dropped", getattr(span, "name", "?"),
                                exc_info=True)
            return len(records)

    def _drain(self) -> list[SpanRow]:
        """Called by the engine's writer: the waiting spans' rows (up to one round's worth)."""
        self._convert()
        records = self._records
        return [records.popleft() for _ in range(min(len(records), SOURCE_ROUND))]

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
        self._convert_now.set()  # the converter sees the flag and ends; the writer converts the rest
        self._converter.join()
        self.engine.close(score_open=True)
