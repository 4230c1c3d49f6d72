"""EvalSpanProcessor: otel-eval inside the agent's own process, as an SDK ``SpanProcessor``.

``on_end`` only takes the finished span's values apart (:func:`otel_eval.sdk_rows.ended_parts`,
~1.5 µs) and appends them to a bounded buffer: it never blocks the agent and never raises into
it. When the buffer is full the span is dropped and counted (``dropped_spans``), as the SDK's own
BatchSpanProcessor does. The SDK's ``ReadableSpan`` goes at once: waiting in the buffer, its
eleven GC-tracked objects made every collection the agent's thread ran walk them.

A converter thread turns buffered spans into rows (:mod:`otel_eval.span_rows`) as soon as 512
wait, and the engine's writer stores those. A row is a tuple of plain values, which the GC stops
tracking. Converting is pure Python (10-25 µs a span), and in a thread it holds the agent's GIL:
an agent that ends spans in a tight loop waits for it. When the user allows worker processes
(``convert_process=True``, or ``score_workers`` ≥ 1), the converter thread sends the parts to a
converter process instead (:mod:`otel_eval.convert_process`) and only pickles and unpickles here
(benchmarks/README.md, "Issue 34.1").
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .convert_process import ConverterProcess
from .engine import Engine, EngineSettings
from .engine.writer import SOURCE_ROUND
from .golden.embedding import EmbedFunction
from .models.evalset import EvalConfig, EvalSet
from .models.results import EvalCaseResult
from .sdk_rows import Resources, ended_parts, row_of_parts
from .span_rows import SpanRow, span_row
from .spans import SpanRecord, from_sdk_span

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
        db: str | Path = "otel-eval.db",
        golden: str | Path | EvalSet | Iterable[str | Path | EvalSet] = (),
        config: EvalConfig | str | Path | None = None,
        on_result: Callable[[EvalCaseResult], object] | None = None,
        trace_quiet: float | None = None,
        session_idle: float | None = None,
        max_queue_spans: int | None = None,
        max_value_chars: int | None = None,
        fuzzy_threshold: float | None = None,
        embedding_threshold: float | None = None,
        embed: EmbedFunction | None = None,
        *,
        engine: Engine | None = None,
        settings: EngineSettings | None = None,
        convert_process: bool | None = None,
    ):
        """``convert_process``: convert spans in a worker process (another core: the agent's
        thread no longer waits for the GIL while spans are converted) instead of a thread; None
        (the default) does so when the engine scores in worker processes (``score_workers`` ≥ 1),
        the user's leave to start processes."""
        if isinstance(config, (str, Path)):  # a TOML file or google-adk's test_config.json
            from .adk_config.resolve import resolve_config

            config = resolve_config(config).config
        if engine is None:
            if isinstance(golden, (str, Path, EvalSet)):
                golden = [golden]
            overrides = {
                name: value
                for name, value in dict(
                    config=config,
                    trace_quiet=trace_quiet,
                    session_idle=session_idle,
                    max_queue_spans=max_queue_spans,
                    max_value_chars=max_value_chars,
                    fuzzy_threshold=fuzzy_threshold,
                    embedding_threshold=embedding_threshold,
                    embed=embed,
                ).items()
                if value is not None
            }
            engine = Engine(db, golden=list(golden), settings=(settings or EngineSettings()).replace(**overrides))
        if on_result is not None:
            engine.add_listener(on_result)
        self.engine = engine.start()
        self.dropped_spans = 0
        self._shut_down = False
        self._limit = engine.settings.max_queue_spans
        self._buffer: deque[Any] = deque()
        """Finished spans' parts as the agent ended them (the agent's thread appends), or the
        span itself when it is not the SDK's ``ReadableSpan``."""
        self._records: deque[SpanRow] = deque()
        """Converted spans waiting for the writer."""
        self._converting = threading.Lock()
        """Held while spans move from ``_buffer`` to ``_records``, so they keep their order."""
        self._resources = Resources()
        self._process: ConverterProcess | None = None
        if convert_process if convert_process is not None else engine.settings.score_workers > 0:
            self._process = ConverterProcess(self._rows_back, self._conversion_errors, self._convert_here).start()
            if not self._process.alive:
                self._process = None
        self._convert_now = threading.Event()
        self._converter = threading.Thread(target=self._convert_loop, name="otel-eval-converter", daemon=True)
        self._converter.start()
        engine.add_span_source(self._drain)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
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
                log.warning(
                    "otel-eval dropped %d span(s) so far: %d spans waiting to be stored", self.dropped_spans, waiting
                )
            return
        try:
            buffer.append(ended_parts(span, self._resources))
        except Exception:  # a span the fast path cannot read: converted the general way, or dropped there
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
        """Move every buffered span on to conversion (here, or to the converter process);
        returns how many records wait."""
        buffer = self._buffer
        with self._converting:
            items = [buffer.popleft() for _ in range(len(buffer))]
            if items:
                if self._process is not None:
                    self._process.send(items if all(type(item) is tuple for item in items) else self._portable(items))
                else:
                    self._convert_here(items)
            return len(self._records)

    def _convert_here(self, items: list[Any]) -> None:
        records = self._records
        for item in items:
            try:
                if type(item) is tuple:
                    records.append(row_of_parts(item))
                elif isinstance(item, SpanRecord):  # sent to the converter process, which died
                    records.append(span_row(item))
                else:
                    records.append(span_row(from_sdk_span(item, self._resources.of(item.resource))))
            except Exception:  # an unreadable span must not take the others with it
                self._dropped_unreadable(_name_of(item), exc_info=True)

    def _portable(self, items: list[Any]) -> list[Any]:
        """``items`` as the converter process takes them: a span that is not the SDK's
        ``ReadableSpan`` (no parts) goes as its record."""
        portable: list[Any] = []
        for item in items:
            try:
                portable.append(item if type(item) is tuple else from_sdk_span(item, self._resources.of(item.resource)))
            except Exception:
                self._dropped_unreadable(_name_of(item), exc_info=True)
        return portable

    def _rows_back(self, rows: list[SpanRow]) -> None:
        """The converter process's rows of a batch (on its reader thread)."""
        records = self._records
        records.extend(rows)
        if len(records) >= WAKE_AT:
            self.engine.wake()

    def _conversion_errors(self, errors: list[str]) -> None:
        for error in errors:
            self._dropped_unreadable(error)

    def _dropped_unreadable(self, what: str, exc_info: bool = False) -> None:
        self.dropped_spans += 1
        log.warning("otel-eval could not convert span %s; dropped", what, exc_info=exc_info)

    def _drain(self, wait: bool = False) -> list[SpanRow]:
        """Called by the engine's writer: the waiting spans' rows (up to one round's worth).
        ``wait`` (a flush): first every span ended so far is converted, in the converter process too."""
        self._convert()
        if wait and self._process is not None:
            self._process.wait_answered()
        records = self._records
        return [records.popleft() for _ in range(min(len(records), SOURCE_ROUND))]

    def converter_pid(self) -> int | None:
        """The converter process's id (None: spans are converted in a thread)."""
        return self._process.pid() if self._process is not None and self._process.alive else None

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
        if self._process is not None:
            self._process.close()


def _name_of(item: Any) -> str:
    return repr(item[3] if type(item) is tuple else getattr(item, "name", "?"))
