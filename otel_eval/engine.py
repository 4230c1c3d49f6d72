"""The engine: queue → store → sessions → scoring → notify.

One writer thread owns ingestion: it drains the bounded queue, resolves each span's session and
stores the raw spans in one transaction per drained group, and only then acknowledges the callers
(``ingest(wait=True)`` returns after commit). It also runs the session timers. Ended sessions go to
the scorer: a thread, or worker processes (``score_workers``) so scoring uses another core. The
scorer maps the session's spans once, evaluates them, and stores the evaluation with the
session's AgentData rows; a slow LLM judge never stalls ingestion.

Contract used by the collector and the in-process processor::

    engine = Engine(db, golden=[...], config=None, trace_quiet=5.0, session_idle=60.0,
                    on_result=None, max_queue_spans=100_000).start()
    engine.ingest(spans, wait=True, timeout=None) -> IngestResult   # raises QueueFull
    engine.ingest_logs(events, wait=True, timeout=None) -> IngestResult
    engine.end_session(session_id); engine.flush(timeout); engine.wait_idle(timeout)
    engine.close(score_open=False)   # True: end and score open sessions first (processor shutdown)
    engine.stats() -> dict[str, float]
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from .mapping import convention_name, ends_session, session_id_of
from .models.evalset import EvalConfig, EvalSet
from .models.results import EvalCaseResult
from .sessions import (
    KEYED_BY_ATTRIBUTE,
    KEYED_BY_TRACE,
    REASON_REQUESTED,
    REASON_SHUTDOWN,
    SessionTracker,
    Timing,
)
from .spans import LogEvent, SpanRecord
from .store import ENDED, OPEN, SCORED, Store, agent_data_params

log = logging.getLogger("otel_eval.engine")

GoldenSource = Union[str, Path, EvalSet]
ResultCallback = Callable[[EvalCaseResult], Any]


class QueueFull(Exception):
    """The bounded ingest queue cannot take this batch now; the sender should retry later."""

    retry_after: float = 1.0


class EngineClosed(Exception):
    """The engine is shutting down and accepts no more spans."""


@dataclass
class IngestResult:
    accepted: int = 0
    stored: int = 0
    duplicates: int = 0


@dataclass
class _Batch:
    spans: Sequence[SpanRecord] = ()
    logs: Sequence[LogEvent] = ()
    done: threading.Event = field(default_factory=threading.Event)
    result: IngestResult = field(default_factory=IngestResult)
    error: Optional[BaseException] = None
    enqueued: float = field(default_factory=time.perf_counter)

    @property
    def size(self) -> int:
        return len(self.spans) + len(self.logs)


class Engine:
    def __init__(
        self,
        db: Union[str, Path],
        golden: Iterable[GoldenSource] = (),
        config: Optional[EvalConfig] = None,
        trace_quiet: float = 5.0,
        session_idle: float = 60.0,
        on_result: Optional[ResultCallback] = None,
        max_queue_spans: int = 100_000,
        fuzzy_threshold: float = 90.0,
        embedding_threshold: Optional[float] = None,
        judge: Any = None,
        embed: Any = None,
        max_value_chars: int = 65536,
        score_workers: int = 0,
    ):
        self.db_path = str(db)
        self.config = config or EvalConfig.default()
        self.timing = Timing(trace_quiet, session_idle)
        self.max_queue_spans = max_queue_spans
        self.judge = judge
        self.max_value_chars = max_value_chars
        self.score_workers = score_workers
        """0: score in a thread of this process; N: in N worker processes (uses more cores)."""
        self._callbacks: list[ResultCallback] = [on_result] if on_result else []
        self.eval_sets = [_load_golden(g) for g in golden]
        self._golden_sources = [str(g) for g in golden if not isinstance(g, EvalSet)]
        self.fuzzy_threshold = fuzzy_threshold
        self.embedding_threshold = embedding_threshold
        """Offline embedding match after fuzzy fails (0-100); None turns it off."""
        self.embed = embed
        """The embedding step's model (e.g. ``OpenAIEmbeddings``); None: the offline n-grams."""
        self._index = None
        self.config_hash = hashlib.sha256(self.config.model_dump_json().encode()).hexdigest()[:12]

        self._queue: "queue.Queue[Optional[_Batch]]" = queue.Queue()
        self._queued_spans = 0
        self._queue_lock = threading.Lock()
        self._score_queue: "queue.Queue[Optional[str]]" = queue.Queue()
        self._tracker = SessionTracker(self.timing)
        self._writer: Optional[threading.Thread] = None
        self._scorers: list[threading.Thread] = []
        self._notify_queue: "queue.Queue[Optional[_EvaluationWrite]]" = queue.Queue()
        self._notifier: Optional[threading.Thread] = None
        self._pool: Any = None
        self._writers_waiting: Any = None
        self._store: Optional[Store] = None
        self._lock_file: Optional[Any] = None
        self._closing = False
        self._closed = False
        self._scoring_busy = 0
        self._idle = threading.Condition()
        self._stats_lock = threading.Lock()
        self._stats: dict[str, float] = dict.fromkeys(
            ("spans_received", "spans_stored", "spans_duplicate", "spans_dropped", "logs_stored",
             "sessions_scored", "evaluations_total", "evaluations_passed", "evaluations_matched",
             "evaluations_not_evaluated",
             "ingest_seconds_sum", "ingest_seconds_count", "score_seconds_sum", "score_seconds_count"), 0.0)
        self._latency_buckets = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
        self._latency_counts = [0] * (len(self._latency_buckets) + 1)

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def golden_index(self):
        if self._index is None:
            from .golden import GoldenIndex

            self._index = GoldenIndex(self.eval_sets, fuzzy_threshold=self.fuzzy_threshold,
                                      embedding_threshold=self.embedding_threshold, embed=self.embed)
        return self._index

    def start(self) -> "Engine":
        if self._writer is not None:
            return self
        self._lock_file = _exclusive_lock(self.db_path)
        self._store = Store(self.db_path)
        self._save_golden(self._store)
        self._resume(self._store)
        _ = self.golden_index  # build once, before the first session ends
        if self.score_workers > 0:
            self._pool = self._make_pool()
        self._writer = threading.Thread(target=self._write_loop, name="otel-eval-writer", daemon=True)
        self._scorers = [threading.Thread(target=self._score_loop, name=f"otel-eval-scorer-{i}", daemon=True)
                         for i in range(max(1, self.score_workers))]
        self._notifier = threading.Thread(target=self._notify_loop, name="otel-eval-notify", daemon=True)
        self._writer.start()
        self._notifier.start()
        for scorer in self._scorers:
            scorer.start()
        return self

    def _make_pool(self) -> Any:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: this process runs threads (gRPC, uvicorn) that fork would copy mid-flight.
        context = multiprocessing.get_context("spawn")
        if self._writers_waiting is None:
            self._writers_waiting = context.Value("i", 0)
        return ProcessPoolExecutor(
            max_workers=self.score_workers, mp_context=context, initializer=_init_worker,
            initargs=(self.db_path, [e.model_dump_json() for e in self.eval_sets], self.config.model_dump_json(),
                      self.fuzzy_threshold, self.embedding_threshold, self.max_value_chars, self.config_hash,
                      self._writers_waiting, self.embed),
        )

    def __enter__(self) -> "Engine":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def add_listener(self, callback: ResultCallback) -> None:
        self._callbacks.append(callback)

    def _resume(self, store: Store) -> None:
        resumed = 0
        for row in store.sessions_with_status(OPEN):
            self._tracker.resume(row.session_id, row.keyed_by, row.end_requested, store.traces_of(row.session_id))
            resumed += 1
        pending = store.sessions_with_status(ENDED)
        for row in pending:
            self._enqueue_scoring(row.session_id)
        if resumed or pending:
            log.info("resumed %d open session(s) and %d awaiting scoring from %s", resumed, len(pending), self.db_path)

    def _save_golden(self, store: Store) -> None:
        rows = []
        for eval_set in self.eval_sets:
            digest = hashlib.sha256(eval_set.model_dump_json().encode()).hexdigest()[:16]
            for case in eval_set.eval_cases:
                rows.append({
                    "eval_set_id": eval_set.eval_set_id, "eval_id": case.eval_id, "name": case.name,
                    "query": case.query, "source": eval_set.metadata.get("source", ""), "file_hash": digest,
                    "case_json": case.model_dump_json(), "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                })
        if rows:
            store.save_golden_cases(rows)
        store.save_golden_sets(self.eval_sets)  # set metadata (Big Sky criteria) for rescoring

    # --- ingest API ------------------------------------------------------------------------

    def ingest(self, spans: Sequence[SpanRecord], wait: bool = True, timeout: Optional[float] = None) -> IngestResult:
        """Queue spans for storage; with ``wait`` return only once they are committed."""
        return self._submit(_Batch(spans=list(spans)), wait, timeout)

    def ingest_logs(self, events: Sequence[LogEvent], wait: bool = True, timeout: Optional[float] = None) -> IngestResult:
        return self._submit(_Batch(logs=list(events)), wait, timeout)

    def _submit(self, batch: _Batch, wait: bool, timeout: Optional[float]) -> IngestResult:
        if self._closing or self._writer is None:
            raise EngineClosed("engine is not running")
        with self._queue_lock:
            if self._queued_spans and self._queued_spans + batch.size > self.max_queue_spans:
                self._count("spans_dropped", len(batch.spans))
                raise QueueFull(f"ingest queue full ({self._queued_spans} spans waiting)")
            self._queued_spans += batch.size
        self._count("spans_received", len(batch.spans))
        self._queue.put(batch)
        if not wait:
            return IngestResult(accepted=len(batch.spans))
        if not batch.done.wait(timeout):
            raise TimeoutError("batch not committed in time; it stays queued and will be stored")
        if batch.error is not None:
            raise batch.error
        return batch.result

    def end_session(self, session_id: str) -> bool:
        """End a session now (it is scored as soon as its spans are committed)."""
        barrier = _Batch()
        barrier.logs = ()
        self._queue.put(_EndRequest(session_id, barrier))  # type: ignore[arg-type]
        barrier.done.wait()
        return bool(barrier.result.accepted)

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until everything queued so far is committed."""
        if self._writer is None or not self._writer.is_alive():
            return True
        barrier = _Batch()
        self._queue.put(barrier)
        return barrier.done.wait(timeout)

    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Wait until the queue is empty and no session is waiting to be scored (tests, offline runs)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self.flush(timeout):
            return False
        with self._idle:
            while self._scoring_busy or not self._score_queue.empty():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining if remaining is not None else 0.5)
        return True

    def close(self, score_open: bool = False, timeout: Optional[float] = None) -> None:
        """Stop accepting, commit what is queued; ``score_open`` also ends and scores open sessions."""
        if self._closed:
            return
        if self._writer is None:
            self._closed = True
            return
        self.flush(timeout)
        if score_open:
            done = _Batch()
            self._queue.put(_EndRequest(None, done))  # type: ignore[arg-type]
            done.done.wait(timeout)
        self._closing = True
        if not score_open:
            # Sessions still waiting to be scored stay 'ended' in the database; the next start
            # scores them, so a stop need not wait for the whole backlog.
            left = self._drain_score_queue()
            if left:
                log.info("%d ended session(s) left for the next start to score", left)
        # Scorers first: their evaluations are written by the writer, which must still run.
        self._score_queue.put(None)
        for scorer in self._scorers:
            scorer.join(timeout)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._queue.put(None)
        self._writer.join(timeout)
        self._notify_queue.put(None)
        if self._notifier is not None:
            self._notifier.join(timeout)
        if self._store is not None:
            self._store.close()
        if self._lock_file is not None:
            self._lock_file.close()  # closing releases the lock
        self._closed = True

    def _drain_score_queue(self) -> int:
        dropped = 0
        while True:
            try:
                item = self._score_queue.get_nowait()
            except queue.Empty:
                return dropped
            dropped += item is not None

    # --- stats -----------------------------------------------------------------------------

    def _count(self, key: str, amount: float = 1) -> None:
        with self._stats_lock:
            self._stats[key] += amount

    def stats(self) -> dict[str, Any]:
        with self._stats_lock:
            out: dict[str, Any] = dict(self._stats)
            out["ingest_latency_buckets"] = list(zip(self._latency_buckets + (float("inf"),),
                                                     _cumulative(self._latency_counts)))
        out["queue_depth"] = self._queued_spans
        out["sessions_open"] = len(self._tracker)
        out["sessions_awaiting_score"] = self._score_queue.qsize() + self._scoring_busy
        return out

    # --- writer thread ---------------------------------------------------------------------

    def _write_loop(self) -> None:
        store = self._store
        assert store is not None
        tick = max(0.01, min(self.timing.trace_quiet, self.timing.session_idle) / 5)
        tick = min(tick, 0.5)
        running = True
        while running:
            try:
                item = self._queue.get(timeout=tick)
            except queue.Empty:
                item = _TICK
            items = [item]
            # Group commit: take whatever else is already waiting, up to a bounded amount.
            while len(items) < 64:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            batches: list[_Batch] = []
            ends: list[_EndRequest] = []
            evaluations: list[_EvaluationWrite] = []
            for it in items:
                if it is None:
                    running = False
                elif isinstance(it, _EndRequest):
                    ends.append(it)
                elif isinstance(it, _Batch):
                    batches.append(it)
                elif isinstance(it, _EvaluationWrite):
                    evaluations.append(it)
            if batches:
                self._write_batches(store, batches)
            for write in evaluations:
                write.run(store)
            for request in ends:
                self._handle_end(store, request)
            self._end_due_sessions(store, time.time_ns())

    def _yield_to_scorers(self, limit: float = 0.2) -> None:
        """Let a score worker that is waiting for SQLite's write lock have it (bounded wait)."""
        waiting = self._writers_waiting
        if waiting is None or not waiting.value:
            return
        deadline = time.monotonic() + limit
        while waiting.value and time.monotonic() < deadline:
            time.sleep(0.001)

    def _write_batches(self, store: Store, batches: list[_Batch]) -> None:
        self._yield_to_scorers()
        now_ns = time.time_ns()
        try:
            with store.transaction():
                for batch in batches:
                    if batch.spans:
                        self._write_spans(store, batch, now_ns)
                    if batch.logs:
                        stored = store.insert_log_events(batch.logs, now_ns)
                        batch.result.stored += stored
                        self._count("logs_stored", stored)
        except Exception as exc:  # the database failed: report to every waiting caller, keep running
            log.exception("could not store %d batch(es)", len(batches))
            for batch in batches:
                batch.error = exc
        finished = time.perf_counter()
        with self._queue_lock:
            self._queued_spans -= sum(b.size for b in batches)
        for batch in batches:
            if batch.spans or batch.logs:
                self._observe_latency(finished - batch.enqueued)
            batch.done.set()

    def _write_spans(self, store: Store, batch: _Batch, now_ns: int) -> None:
        # Ingest only stores: a span is mapped to AgentData once, when its session is scored, so the
        # hot path pays for decoding and one insert, not for reading every convention twice.
        spans = batch.spans
        # A session id on any span of a trace names the session of the whole trace.
        named: dict[str, str] = {}
        for span in spans:
            if span.trace_id not in named:
                found = session_id_of(span)
                if found:
                    named[span.trace_id] = found
        rows = []
        keys: list[tuple[str, str]] = []
        resolved: dict[str, tuple[str, str]] = {}  # trace id → (session id, keyed by), once per batch
        for span in spans:
            trace_id = span.trace_id
            if trace_id not in resolved:
                resolved[trace_id] = self._resolve_session(store, trace_id, named.get(trace_id))
            session_id, keyed_by = resolved[trace_id]
            rows.append((span, session_id, convention_name(span), None))
            keys.append((session_id, keyed_by))
        fresh = store.insert_spans(rows, now_ns)
        new_rows = [(span, key) for span, key, is_new in zip(spans, keys, fresh) if is_new]
        stored = len(new_rows)
        batch.result.accepted += len(spans)
        batch.result.stored += stored
        batch.result.duplicates += len(spans) - stored
        self._count("spans_stored", stored)
        self._count("spans_duplicate", len(spans) - stored)
        per_trace: dict[str, list[SpanRecord]] = {}
        session_of: dict[str, tuple[str, str]] = {}
        for span, key in new_rows:
            per_trace.setdefault(span.trace_id, []).append(span)
            session_of[span.trace_id] = key
        per_session: dict[str, list[SpanRecord]] = {}
        for trace_id, members in per_trace.items():
            sid, keyed_by = session_of[trace_id]
            roots = [span for span in members if span.is_root]
            store.touch_trace(
                trace_id, sid, roots[0].span_id if roots else None,
                min(span.start_ns for span in members), max(span.end_ns for span in members), len(members), now_ns,
            )
            per_session.setdefault(sid, []).extend(members)
            self._tracker.observe(sid, keyed_by, trace_id, bool(roots), now_ns, any(map(ends_session, members)))
        for sid, members in per_session.items():
            keyed_by = session_of[members[0].trace_id][1]
            previous = store.touch_session(sid, keyed_by, len(members), now_ns, any(map(ends_session, members)))
            if previous in (SCORED, ENDED):
                log.info("session %s re-opened by %d late span(s); it will be scored again", sid, len(members))

    def _resolve_session(self, store: Store, trace_id: str, named: Optional[str]) -> tuple[str, str]:
        """The session a trace belongs to. A trace first seen without a session id is its own
        session; when a later span names one, the trace moves there."""
        known = self._tracker.session_of_trace(trace_id) or store.trace_session(trace_id)
        if named is None:
            session_id = known or trace_id
            return session_id, KEYED_BY_TRACE if session_id == trace_id else KEYED_BY_ATTRIBUTE
        if known is not None and known != named and known == trace_id:
            store.move_trace(trace_id, known, named)
            self._tracker.move_trace(trace_id, known, named, KEYED_BY_ATTRIBUTE)
        return named, KEYED_BY_ATTRIBUTE

    def _handle_end(self, store: Store, request: "_EndRequest") -> None:
        now_ns = time.time_ns()
        if request.session_id is None:  # shutdown: end every open session
            targets = [(sid, REASON_SHUTDOWN) for sid in self._tracker.open_sessions()]
        elif request.session_id in self._tracker:
            targets = [(request.session_id, REASON_REQUESTED)]
        else:
            targets = []
        for sid, _ in targets:
            self._tracker.forget(sid)
        self._mark_ended(store, targets, now_ns)
        request.done.result.accepted = len(targets)
        request.done.done.set()

    def _end_due_sessions(self, store: Store, now_ns: int) -> None:
        due = self._tracker.due(now_ns)
        if due:
            self._mark_ended(store, due, now_ns)

    def _mark_ended(self, store: Store, ended: list[tuple[str, str]], now_ns: int) -> None:
        if not ended:
            return
        with store.transaction():
            for sid, reason in ended:
                store.set_session_status(sid, ENDED, reason, now_ns)
        for sid, reason in ended:
            log.debug("session %s ended (%s)", sid, reason)
            self._enqueue_scoring(sid)

    def _observe_latency(self, seconds: float) -> None:
        with self._stats_lock:
            self._stats["ingest_seconds_sum"] += seconds
            self._stats["ingest_seconds_count"] += 1
            for i, bound in enumerate(self._latency_buckets):
                if seconds <= bound:
                    self._latency_counts[i] += 1
                    break
            else:
                self._latency_counts[-1] += 1

    # --- scorer thread ---------------------------------------------------------------------

    def _enqueue_scoring(self, session_id: str) -> None:
        with self._idle:
            self._score_queue.put(session_id)

    def _score_loop(self) -> None:
        # With score workers, this thread only hands session ids to a worker process and waits
        # (releasing the GIL), so scoring runs on another core instead of competing with ingest.
        store = None if self._pool is not None else Store(self.db_path)
        try:
            while True:
                session_id = self._score_queue.get()
                if session_id is None:
                    self._score_queue.put(None)  # let the other scorer threads see it too
                    break
                if self._pool is not None:
                    self._score_batch_in_worker(session_id)
                    continue
                with self._idle:
                    self._scoring_busy += 1
                try:
                    prepared = prepare_evaluation(store, session_id, self.golden_index, self.config, self.judge,
                                                  self.max_value_chars, self.config_hash)
                except Exception:
                    log.exception("scoring session %s failed", session_id)
                    self._scoring_done()
                    continue
                if prepared is None:
                    self._scoring_done()
                else:
                    # One writer: the evaluation is committed by the writer thread between ingest
                    # batches (never waiting on SQLite's lock behind a busy ingest), and this thread
                    # goes on with the next session meanwhile.
                    self._queue.put(_EvaluationWrite(prepared, self._notify_queue.put))
        finally:
            if store is not None:
                store.close()

    def _score_batch_in_worker(self, first: str) -> None:
        # Sessions go to the worker in batches: each round trip costs this process a few GIL
        # hand-offs, which a busy ingest makes slow, so one per session would starve scoring.
        batch = [first]
        while len(batch) < 64:
            try:
                session_id = self._score_queue.get_nowait()
            except queue.Empty:
                break
            if session_id is None:
                self._score_queue.put(None)
                break
            batch.append(session_id)
        with self._idle:
            self._scoring_busy += len(batch)
        try:
            written = self._pool.submit(_score_many_in_worker, batch).result()
        except BrokenProcessPool:
            # The worker died (killed, out of memory). These sessions stay 'ended' in the database
            # and are scored at the next start; a fresh worker takes the sessions after them.
            log.error("score worker died; %d session(s) left for the next start, starting a new worker", len(batch))
            self._pool = self._make_pool()
            written = [None] * len(batch)
        except Exception:
            log.exception("scoring sessions %s failed", ", ".join(batch))
            written = [None] * len(batch)
        for write in written:
            if write is None:
                self._scoring_done()
            else:
                self._notify_queue.put(write)

    def _scoring_done(self) -> None:
        with self._idle:
            self._scoring_busy -= 1
            self._idle.notify_all()

    def _notify_loop(self) -> None:
        """Stats, log line and on_result callbacks of stored evaluations, off the writer thread."""
        while True:
            write = self._notify_queue.get()
            if write is None:
                break
            try:
                if write.error is not None:
                    log.error("storing the evaluation of session %s failed: %s",
                              write.prepared.result.session_id, write.error)
                else:
                    self._scored(write.prepared, write.revision)
            finally:
                self._scoring_done()

    def _scored(self, scored: "PreparedEvaluation", revision: int) -> None:
        self._count("score_seconds_sum", scored.seconds)
        self._count("score_seconds_count")
        self._count("sessions_scored")
        result = scored.result
        if scored.matched:
            self._count("evaluations_matched")
            if result.evaluated:  # not_evaluated ones are counted apart, outside the pass rate
                self._count("evaluations_total")
                self._count("evaluations_passed", int(result.passed))
            else:
                self._count("evaluations_not_evaluated")
        log.info(
            "session %s scored (revision %d): %s, case %s, score %.2f",
            result.session_id, revision,
            result.verdict if scored.matched else scored.matched_by,
            result.eval_id or "-", result.score,
        )
        for callback in self._callbacks:
            try:
                callback(result)
            except Exception:
                log.exception("on_result callback failed for session %s", result.session_id)


@dataclass
class PreparedEvaluation:
    """A scored session ready to store (picklable: it crosses from a worker process)."""

    result: EvalCaseResult
    record: dict[str, Any]
    """Keyword arguments of :meth:`Store.record_evaluation`."""
    matched: bool
    matched_by: str
    seconds: float


class _EvaluationWrite:
    """A writer-queue item: store one prepared evaluation, then hand it to ``then``."""

    def __init__(self, prepared: PreparedEvaluation, then: Callable[["_EvaluationWrite"], Any]):
        self.prepared = prepared
        self.then = then
        self.revision = 0
        self.error: Optional[BaseException] = None

    def run(self, store: Store) -> None:
        try:
            _, self.revision = store.record_evaluation(self.prepared.result.session_id or "", self.prepared.result,
                                                       **self.prepared.record)
        except Exception as exc:
            self.error = exc
        self.then(self)


def prepare_evaluation(store: Store, session_id: str, index: Any, config: EvalConfig, judge: Any,
                       max_value_chars: int, config_hash: str) -> Optional[PreparedEvaluation]:
    """Read a session's spans and evaluate them; nothing is written here."""
    from .evaluate import evaluate_session, failed_outcome

    started = time.perf_counter()
    spans = store.session_spans(session_id)
    if not spans:
        return None
    try:
        outcome = evaluate_session(session_id, spans, store.session_log_events(session_id), index, config, judge,
                                   max_value_chars)
    except Exception as exc:  # a bug or a pathological trace must not leave the session unscored forever
        log.exception("evaluating session %s failed; storing the error as its evaluation", session_id)
        outcome = failed_outcome(session_id, exc)
    outcome.result.session_id = session_id
    record = dict(
        eval_set_id=outcome.match.eval_set_id, matched_by=outcome.match.method,
        match_score=outcome.match.score, config_hash=config_hash,
        agent_version=outcome.trajectory.agent_version, query=outcome.trajectory.query,
        columns=outcome.columns, details=outcome.details, session_fields=outcome.session_fields,
        agent_params=agent_data_params(
            [(m.span.trace_id, m.span.span_id, session_id, "span", m.data) for m in outcome.mapped]
            + [(trace_id, data.turn_id or trace_id, session_id, "trace", data)
               for trace_id, data in outcome.trace_records.items()]),
        span_types=[(m.span.trace_id, m.span.span_id, m.reading.span_type) for m in outcome.mapped],
    )
    return PreparedEvaluation(outcome.result, record, outcome.match.case is not None, outcome.match.method,
                              time.perf_counter() - started)


# --- score worker processes ------------------------------------------------------------------

_worker: dict[str, Any] = {}


def _init_worker(db_path: str, eval_sets_json: list[str], config_json: str, fuzzy_threshold: float,
                 embedding_threshold: Optional[float], max_value_chars: int, config_hash: str, writers_waiting: Any,
                 embed: Any = None) -> None:
    from .golden import GoldenIndex

    eval_sets = [EvalSet.model_validate_json(text) for text in eval_sets_json]
    store = Store(db_path)
    store.conn.execute("PRAGMA busy_timeout=0")  # see _run_polling_for_lock
    _worker.update(
        store=store, index=GoldenIndex(eval_sets, fuzzy_threshold=fuzzy_threshold,
                                             embedding_threshold=embedding_threshold, embed=embed),
        config=EvalConfig.model_validate_json(config_json), max_value_chars=max_value_chars,
        config_hash=config_hash, writers_waiting=writers_waiting,
    )


def _run_polling_for_lock(write: "_EvaluationWrite", store: Store, timeout: float = 30.0) -> None:
    # SQLite's own busy handler backs off up to 100 ms between tries; the writer pauses only
    # briefly for us, so poll every millisecond instead (the worker's busy_timeout is 0).
    import sqlite3

    deadline = time.monotonic() + timeout
    while True:
        write.error = None
        write.run(store)
        locked = isinstance(write.error, sqlite3.OperationalError) and "locked" in str(write.error)
        if not locked or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def _ignore(_: Any) -> None:
    pass


def _score_many_in_worker(session_ids: list[str]) -> list[Optional[_EvaluationWrite]]:
    out: list[Optional[_EvaluationWrite]] = []
    for session_id in session_ids:
        try:
            out.append(_score_in_worker(session_id))
        except Exception:
            log.exception("scoring session %s failed", session_id)
            out.append(None)
    return out


def _score_in_worker(session_id: str) -> Optional[_EvaluationWrite]:
    """Score and store one session in a worker process.

    The worker writes through its own connection. SQLite's busy handler alone would starve it
    behind the writer's back-to-back ingest transactions, so it raises ``writers_waiting`` first:
    the writer does not begin a new transaction while that is set (see Engine._yield_to_scorers).
    """
    w = _worker
    prepared = prepare_evaluation(w["store"], session_id, w["index"], w["config"], None, w["max_value_chars"],
                                  w["config_hash"])
    if prepared is None:
        return None
    write = _EvaluationWrite(prepared, _ignore)
    waiting = w["writers_waiting"]
    with waiting.get_lock():
        waiting.value += 1
    try:
        _run_polling_for_lock(write, w["store"])
    finally:
        with waiting.get_lock():
            waiting.value -= 1
    write.prepared.record = {}  # stored: no need to send the rows back
    write.then = None  # type: ignore[assignment]  # not picklable, and its job is done
    return write


@dataclass
class _EndRequest:
    session_id: Optional[str]
    done: _Batch


_TICK = object()


def _exclusive_lock(db_path: str) -> Any:
    """Hold ``<db>.lock`` while running: two engines on one database would each end and score
    the same sessions. Readers (report, watch, Datasette) need no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no guard
        return None
    from .errors import OtelEvalError

    handle = open(db_path + ".lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise OtelEvalError(f"{db_path}: already in use by {holder}; run one otel-eval engine per database "
                            "(a second one would score sessions twice)") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"otel-eval pid {os.getpid()}\n")
    handle.flush()
    return handle


def _cumulative(counts: list[int]) -> list[int]:
    out, total = [], 0
    for c in counts:
        total += c
        out.append(total)
    return out


def _load_golden(source: GoldenSource) -> EvalSet:
    if isinstance(source, EvalSet):
        return source
    from .golden import load_golden

    eval_set = load_golden(source)
    eval_set.metadata.setdefault("source", str(source))
    return eval_set
