"""The one writer: the only code that writes to the database while the engine runs.

It drains one queue of typed items (:mod:`.queue_items`). Ingest batches and finished evaluations that are waiting
are committed together in one transaction (a group commit). Each batch is inside its own
savepoint, and the round's evaluations are stored together in one more (one statement a table;
one by one if that fails): a batch or an evaluation whose data SQLite refuses fails alone, and
the rest of the group still commits. Evaluations are committed at most every
:data:`EVALUATION_WAIT`, so a stream of them shares its commits. A big session's agent rows are
written a slice a round (:data:`AGENT_ROWS_PER_ROUND`), the last slice with its evaluation, so
that one giant does not hold every other commit back. Only after the commit are
callers acknowledged, counters updated and the session timers told; then the sessions whose
timers ran out are marked ended and handed to the score workers, each with its size (the spans
stored), by which the workers choose its lane.

The thread never dies of a database error. A failed commit (disk full, locked past the timeout,
an I/O error) answers every batch of the group with :class:`StorageUnavailable` (retryable), puts
the evaluations back for the next round, backs off, and reports itself unhealthy until a commit
succeeds again.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..pipeline import FinishedEvaluation, commit_evaluation, commit_evaluations
from ..span_rows import SpanRow
from ..store import ENDED, Store
from ..store.agent_rows import AgentDataParams
from .api import StorageUnavailable
from .queue_items import (
    Barrier,
    CompleteJudgment,
    EndSessions,
    IngestBatch,
    RestartWal,
    Stop,
    StoreEvaluation,
    WriterItem,
)
from .scheduler import SessionScheduler, Staged, with_span_counts
from .stats import EngineStats

log = logging.getLogger("otel_eval.engine")

#: Items taken from the queue for one group commit.
MAX_GROUP = 64
#: Evaluations are committed at most this often, sooner when ``MAX_GROUP`` are ready or something
#: waits on them (a flush, the end of sessions, shutdown): a commit writes every page it touched
#: to the WAL, and an evaluation touches pages all over the indexes. Committed 11 at a time an
#: evaluation cost the writer 224-242 µs of CPU, 64 at a time 136-140 (``benchmarks.writer``).
#: After a quiet spell the first one is committed at once; a steady stream waits at most this.
#: Ingest batches, whose callers wait for their acknowledgement, never wait.
EVALUATION_WAIT = 0.05
#: A finished evaluation whose commit keeps failing for our reasons is retried this often, then
#: left to the next start (its session stays 'ended' in the database).
MAX_EVALUATION_ATTEMPTS = 5
#: Agent rows of one evaluation a round writes at most. An evaluation with more (a session of
#: thousands of spans: 32,000 spans make 40,000 rows) is written in slices, one a round beside
#: the round's ingest batches and other evaluations, and the last slice in one transaction with
#: the evaluation itself. In one piece those 40,000 rows held the writer 0.3-0.45 s, and every
#: ingest acknowledgement and every small session's verdict waited behind them (benchmarks/README.md,
#: "Issue 34.2"). Until the last slice the session stays 'ended': a reader sees its new agent rows
#: before its verdict, and a stop or crash in between leaves it to be scored again at the next
#: start, which writes the same rows again (an upsert).
AGENT_ROWS_PER_ROUND = 4096
#: Seconds the writer's RESTART checkpoint waits for readers to leave the WAL's old frames (and
#: for a checkpoint pass in progress) before it gives up until the checkpointer asks again.
RESTART_WAIT = 0.25

SpanSource = Callable[[bool], list[SpanRow]]
"""Returns (and forgets) the spans a producer buffered, as rows; called by the writer at every
round, with True when something waits on the round (a flush, the end of sessions, the stop): then
the source first converts every span it was handed so far."""

#: Spans a source hands over per round (the rest wait for the next round, a moment later).
SOURCE_ROUND = 8192
#: Source rounds one flush takes at most (a source holds at most ``max_queue_spans``).
MAX_SOURCE_ROUNDS = 64


@dataclass
class Slices:
    """An evaluation whose agent rows are written a slice a round (:data:`AGENT_ROWS_PER_ROUND`)."""

    item: StoreEvaluation
    written: int = 0
    """Agent rows committed so far (they come first in ``agent_params.rows``)."""

    @property
    def params(self) -> AgentDataParams:
        """All of the evaluation's agent rows (span and trace records)."""
        return self.item.finished.rows.agent_params

    def next_slice(self) -> AgentDataParams:
        """The next :data:`AGENT_ROWS_PER_ROUND` rows not written yet, for this round's commit."""
        params = self.params
        return AgentDataParams(
            params.rows[self.written : self.written + AGENT_ROWS_PER_ROUND], params.texts, params.null_columns
        )

    def rest(self) -> StoreEvaluation:
        """The evaluation with the rows not written yet, to be committed like any other."""
        params = self.params
        if self.written:
            self.item.finished.rows.agent_params = AgentDataParams(
                params.rows[self.written :], params.texts, params.null_columns
            )
        return self.item


@dataclass
class EngineHealth:
    """Whether the writer can store what it is sent (``/healthz``)."""

    ok: bool
    reason: str = ""
    fatal: bool = False
    """The engine cannot go on by itself (its writer thread is gone): only a restart helps."""


class Writer:
    """The one writer thread: drains :attr:`queue` in rounds, each one group commit."""

    def __init__(
        self,
        store: Store,
        scheduler: SessionScheduler,
        stats: EngineStats,
        *,
        ended: Callable[[list[tuple[str, int]]], None],
        stored: Callable[[FinishedEvaluation, int, int], None],
        given_up: Callable[[FinishedEvaluation], None],
        released: Callable[[int], None],
        judged: Callable[[CompleteJudgment], None] = lambda item: None,
    ):
        self.store = store
        self.scheduler = scheduler
        self.stats = stats
        self.queue: queue.Queue[WriterItem] = queue.Queue()
        self._ended = ended
        self._stored = stored
        self._given_up = given_up
        self._released = released
        self._judged = judged
        self._judgments: list[CompleteJudgment] = []
        """The judge outcomes the current round commits."""
        self._failures = 0
        self._last_error = ""
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._sources: list[SpanSource] = []
        self._settled: set[int] = set()
        """Evaluations of the current round already stored, retried or given up (by ``id``)."""
        self._held: list[StoreEvaluation] = []
        """Evaluations waiting for company (see :data:`EVALUATION_WAIT`), oldest first."""
        self._evaluations_committed_at = float("-inf")
        """When the last evaluations were committed (``time.monotonic()``)."""
        self._committing: list[StoreEvaluation] = []
        """The evaluations the current round commits."""
        self._sliced: list[Slices] = []
        """Evaluations whose agent rows are being written a slice a round, oldest first."""
        self._slicing: Slices | None = None
        """The one whose slice the current round writes."""

    def add_source(self, source: SpanSource) -> None:
        """Pull spans from ``source`` at every round (see :data:`SpanSource`)."""
        self._sources.append(source)

    # --- thread ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread."""
        self._thread = threading.Thread(target=self._run, name="otel-eval-writer", daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the writer thread to end (after a :class:`Stop` item), ``timeout`` seconds at most."""
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """Whether the writer thread runs: items put to a stopped writer are never committed."""
        return self._thread is not None and self._thread.is_alive()

    def put(self, item: WriterItem) -> None:
        """Queue an item for the writer thread (never blocks: ingest bounds the queue itself)."""
        self.queue.put(item)

    def health(self) -> EngineHealth:
        """Whether the writer can store what it is sent; fatal when its thread died."""
        if self._thread is not None and not self._thread.is_alive() and not self._stopped:
            return EngineHealth(False, "the writer thread stopped", fatal=True)
        if self._failures:
            return EngineHealth(False, f"cannot write to {self.store.path}: {self._last_error}")
        return EngineHealth(True)

    def _run(self) -> None:
        tick = self.scheduler.tick
        while not self._stopped:
            timeout = tick
            if self._held:  # wake when they may be committed
                timeout = max(0.0, min(tick, self._evaluations_committed_at + EVALUATION_WAIT - time.monotonic()))
            if self._sliced:  # the next slice now
                timeout = 0.0
            try:
                first = self.queue.get(timeout=timeout)
            except queue.Empty:
                first = None
            items = [first] if first is not None else []
            while len(items) < MAX_GROUP:
                try:
                    items.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            self._settled = set()
            self._committing = []
            self._slicing = None
            try:
                if any(isinstance(item, RestartWal) for item in items):
                    self._restart_wal()
                self._round(items)
            except Exception:  # a bug here must not end ingestion: log it and keep serving
                log.exception("writer round failed")
                for item in items:
                    if isinstance(item, IngestBatch) and not item.done.is_set():
                        item.error = item.error or StorageUnavailable("internal error while storing; retry later")
                        item.done.set()
                    elif isinstance(item, (Barrier, EndSessions)):
                        item.done.set()
                for item in self._judgments or [i for i in items if isinstance(i, CompleteJudgment)]:
                    item.info = None  # its job stays queued in the database: the next start judges it
                    self._judged(item)
                self._judgments = []
                if self._slicing is not None:  # a slice that fails this way would fail every round
                    self._sliced.remove(self._slicing)
                    self._committing.append(self._slicing.item)
                for item in self._committing:
                    if id(item) not in self._settled:
                        # Its session stays 'ended' and is scored at the next start; the engine
                        # must hear of it, or the worker's hand-off slot would never come back.
                        self._given_up(item.finished)
            if self._failures:
                time.sleep(min(1.0, 0.05 * 2 ** min(self._failures, 5)))  # a full disk does not clear at once

    def _restart_wal(self) -> None:
        """A RESTART checkpoint on this connection, between two rounds: what is left to copy is
        what was written since the checkpointer's last pass, and no other connection competes
        for the write lock (see :class:`~.checkpointer.Checkpointer`). Readers get :data:`RESTART_WAIT`
        to leave the old frames; if one stays, the WAL goes on growing until the checkpointer asks again."""
        conn = self.store.conn
        try:
            conn.execute(f"PRAGMA busy_timeout={int(RESTART_WAIT * 1000)}")
            try:
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            finally:
                conn.execute(f"PRAGMA busy_timeout={int(self.store.timeout * 1000)}")
        except sqlite3.Error as exc:  # a failing disk: the rounds report it; the next request tries again
            log.debug("starting the WAL of %s over failed: %s", self.store.path, exc)
            return
        if busy:
            log.debug("the WAL of %s was not started over: a reader stayed on its old frames", self.store.path)

    # --- one round ---------------------------------------------------------------------------

    def _round(self, items: list[WriterItem]) -> None:
        evaluations = self._committing = self._evaluations_due(items)
        batches = [i for i in items if isinstance(i, IngestBatch)]
        # A flush (or an end, or the stop) waits for every span the sources hold, not one round's
        # worth; bounded, as an agent may end spans as fast as they are taken.
        waited_on = any(isinstance(i, (Barrier, EndSessions, Stop)) for i in items)
        for _ in range(MAX_SOURCE_ROUNDS if waited_on else 1):
            pulled = self._pull_sources(waited_on)
            if pulled is None:
                break
            batches.append(pulled)
        ends = [i for i in items if isinstance(i, EndSessions)]
        if any(isinstance(i, Stop) for i in items):
            self._stopped = True
        self._judgments = [i for i in items if isinstance(i, CompleteJudgment)]
        if self._sliced and self._stopped:  # the last round: the rest of every one, whole
            evaluations.extend(sliced.rest() for sliced in self._sliced)
            self._sliced = []
        elif self._sliced:
            self._slicing = self._sliced[0]
        if batches or evaluations or self._judgments or self._slicing:
            self._commit_group(batches, evaluations)
        ended = [pair for request in ends for pair in self._take_requested(request)]
        ended += self.scheduler.take_due(time.time_ns())
        if ended:
            self._mark_ended(ended)
        for item in items:
            if isinstance(item, (Barrier, EndSessions)):
                item.done.set()

    def _evaluations_due(self, items: list[WriterItem]) -> list[StoreEvaluation]:
        """The evaluations to commit this round: every one held, oldest first, or none while they
        wait for company (see :data:`EVALUATION_WAIT`). Those with more agent rows than a round
        writes go to :attr:`_sliced` instead; each joins the held ones when its last slice is due."""
        for item in items:
            if isinstance(item, StoreEvaluation):
                if len(item.finished.rows.agent_params.rows) > AGENT_ROWS_PER_ROUND:
                    self._sliced.append(Slices(item))
                else:
                    self._held.append(item)
        if self._sliced and len(self._sliced[0].params.rows) - self._sliced[0].written <= AGENT_ROWS_PER_ROUND:
            self._held.append(self._sliced.pop(0).rest())
        if not self._held:
            return []
        now = time.monotonic()
        waited_on = any(isinstance(item, (Barrier, EndSessions, Stop)) for item in items)
        if waited_on or len(self._held) >= MAX_GROUP or now - self._evaluations_committed_at >= EVALUATION_WAIT:
            due, self._held = self._held, []
            self._evaluations_committed_at = now
            return due
        return []

    def _pull_sources(self, waited_on: bool) -> IngestBatch | None:
        spans: list[SpanRow] = []
        for source in self._sources:
            try:
                spans.extend(source(waited_on))
            except Exception:
                log.exception("a span source failed")
        if not spans:
            return None
        self.stats.add(spans_received=len(spans))
        return IngestBatch(spans=spans, unattended=True)

    def _take_requested(self, request: EndSessions) -> list[tuple[str, str]]:
        taken = self.scheduler.take_requested(request.session_id)
        request.ended = len(taken)
        return taken

    def _commit_group(self, batches: list[IngestBatch], evaluations: list[StoreEvaluation]) -> None:
        store = self.store
        judgments: Sequence[CompleteJudgment] = self._judgments
        self._judgments = []
        now_ns = time.time_ns()
        staged: Staged | None = None
        kept: list[tuple[IngestBatch, int, int]] = []
        written: list[tuple[StoreEvaluation, int, int]] = []
        try:
            with store.transaction():
                for batch in batches:
                    mine = Staged(earlier=staged)
                    try:
                        with store.transaction():  # a savepoint: this batch alone rolls back
                            spans_stored = self._write_spans(batch, now_ns, mine) if batch.spans else 0
                            logs_stored = store.insert_log_events(batch.logs, now_ns) if batch.logs else 0
                    except Exception as exc:
                        batch.error = _as_batch_error(exc)
                        if not store.conn.in_transaction:
                            raise  # SQLite rolled the whole group back (disk full, I/O error)
                        log.warning(
                            "a batch of %d span(s) and %d log record(s) was not stored: %s",
                            len(batch.spans),
                            len(batch.logs),
                            exc,
                        )
                        continue
                    staged = mine
                    kept.append((batch, spans_stored, logs_stored))
                if evaluations:
                    self._write_evaluations(evaluations, written)
                if self._slicing is not None:
                    self._write_slice(self._slicing)
                for judgment in judgments:
                    self._write_judgment(judgment)
        except Exception as exc:  # BEGIN or COMMIT failed: nothing of this round is stored
            self._failed(exc)
            for judgment in judgments:  # tried again next round (the job stays queued meanwhile)
                judgment.info = None
                self.queue.put(judgment)
            judgments = ()
            error = StorageUnavailable(f"could not commit: {exc}; retry later")
            for batch, _, _ in kept:
                batch.error = error
            for item, _, _ in written:
                self._evaluation_failed(item, exc)
            if self._slicing is not None and self._slicing in self._sliced:
                self._slice_failed(self._slicing)
            kept, written = [], []
            staged = None
        else:
            self._succeeded()
            if self._slicing is not None and self._slicing in self._sliced:
                self._slicing.written += len(self._slicing.next_slice().rows)
        if staged is not None:
            staged.apply(self.scheduler.tracker)
        spans_stored = logs_stored = duplicates = 0
        for batch, n_spans, n_logs in kept:
            batch.result.accepted += len(batch.spans)
            batch.result.stored += n_spans + n_logs
            batch.result.duplicates += len(batch.spans) - n_spans
            spans_stored += n_spans
            logs_stored += n_logs
            duplicates += len(batch.spans) - n_spans
        self.stats.add(spans_stored=spans_stored, logs_stored=logs_stored, spans_duplicate=duplicates)
        finished = time.perf_counter()
        self._released(sum(b.size for b in batches if not b.unattended))
        for batch in batches:
            if batch.unattended:  # nobody waits to retry it: what was not stored is dropped
                if batch.error is not None:
                    self.stats.add(spans_dropped=len(batch.spans))
                    log.warning("%d span(s) from the in-process source dropped: %s", len(batch.spans), batch.error)
                continue
            if batch.size:
                self.stats.observe_ingest(finished - batch.enqueued)
            batch.done.set()
        for item, evaluation_id, revision in written:
            self._settled.add(id(item))
            self._stored(item.finished, evaluation_id, revision)
        for judgment in judgments:
            self._judged(judgment)

    def _slice_failed(self, sliced: Slices) -> None:
        """The round that wrote a slice did not commit (our side: disk, lock): tried again next
        round, up to :data:`MAX_EVALUATION_ATTEMPTS` in a row, as any evaluation."""
        sliced.item.attempts += 1
        if sliced.item.attempts < MAX_EVALUATION_ATTEMPTS:
            return
        log.error(
            "storing the agent rows of session %s failed %d times; it stays 'ended' and is scored at the next start",
            sliced.item.finished.session_id,
            sliced.item.attempts,
        )
        self._sliced.remove(sliced)
        self._given_up(sliced.item.finished)

    def _write_slice(self, sliced: Slices) -> None:
        """The next slice of a big evaluation's agent rows, in a savepoint of its own. A fault
        on our side (disk full, locked) fails the round as a failed commit does: tried again
        after the writer's back-off. If SQLite refuses the data, the evaluation goes on whole,
        as any other: it then fails alone (:meth:`_write_evaluations`)."""
        try:
            with self.store.transaction():
                self.store.upsert_agent_data_params(sliced.next_slice())
        except Exception as exc:
            if not self.store.conn.in_transaction or _is_storage_fault(exc):
                raise
            log.warning(
                "storing agent rows of session %s failed (%s); storing its evaluation whole",
                sliced.item.finished.session_id,
                exc,
            )
            self._sliced.remove(sliced)
            self._held.append(sliced.rest())

    def _write_judgment(self, item: CompleteJudgment) -> None:
        job = item.job
        try:
            item.info = self.store.complete_judgment(
                job.evaluation_id, item.results, item.usage, item.retry, job.backfill
            )
        except Exception as exc:
            if not self.store.conn.in_transaction:
                raise
            log.error("recording the judge outcome of session %s failed: %s", job.session_id, exc)
            item.info = None

    def _write_evaluations(
        self, evaluations: list[StoreEvaluation], written: list[tuple[StoreEvaluation, int, int]]
    ) -> None:
        """Store the round's evaluations, appending ``(item, evaluation_id, revision)`` to ``written``.

        Together first (one statement a table: :func:`commit_evaluations`); if that fails, one
        by one, each in a savepoint of its own, so only the evaluation SQLite refuses fails. Raises
        when SQLite rolled the whole transaction back (disk full, I/O error): then every one of
        them is in ``written`` (with ids 0), to be retried with the rest of the group."""
        store = self.store
        if len(evaluations) > 1:
            try:
                stored = commit_evaluations(store, [item.finished for item in evaluations])
            except Exception as exc:
                if not store.conn.in_transaction:
                    written.extend((item, 0, 0) for item in evaluations)
                    raise
                log.info("storing %d evaluations together failed (%s); storing them one by one", len(evaluations), exc)
            else:
                written.extend((item, *ids) for item, ids in zip(evaluations, stored))
                return
        for at, item in enumerate(evaluations):
            try:
                # A savepoint of its own (store_evaluation opens one): this evaluation alone rolls back.
                evaluation_id, revision = commit_evaluation(store, item.finished)
            except Exception as exc:
                if not store.conn.in_transaction:
                    written.extend((rest, 0, 0) for rest in evaluations[at:])  # retried with the rest
                    raise
                self._evaluation_failed(item, exc)
                continue
            written.append((item, evaluation_id, revision))

    def _write_spans(self, batch: IngestBatch, now_ns: int, staged: Staged) -> int:
        return self.scheduler.store_spans(self.store, batch.spans, now_ns, staged)

    def _evaluation_failed(self, item: StoreEvaluation, exc: BaseException) -> None:
        self._settled.add(id(item))  # retried from the queue, or given up: either way, not dropped
        session_id = item.finished.session_id
        item.attempts += 1
        if _is_storage_fault(exc) and item.attempts < MAX_EVALUATION_ATTEMPTS:
            log.warning("storing the evaluation of session %s failed (%s); will retry", session_id, exc)
            self.queue.put(item)
            return
        log.error(
            "storing the evaluation of session %s failed: %s; it stays 'ended' and is scored at the next start",
            session_id,
            exc,
        )
        self._given_up(item.finished)

    def _mark_ended(self, ended: list[tuple[str, str]]) -> None:
        now_ns = time.time_ns()
        try:
            with self.store.transaction():
                for session_id, reason in ended:
                    self.store.set_session_status(session_id, ENDED, reason, now_ns)
                sized = with_span_counts(self.store, [session_id for session_id, _ in ended])
        except Exception as exc:
            self._failed(exc)
            self.scheduler.end_failed(ended)
            return
        self._succeeded()
        for session_id, reason in ended:
            log.debug("session %s ended (%s)", session_id, reason)
        self._ended(sized)

    def _failed(self, exc: BaseException) -> None:
        self._failures += 1
        self._last_error = str(exc) or type(exc).__name__
        self.stats.add(commit_failures=1)
        if self._failures == 1 or self._failures % 100 == 0:
            log.error("could not write to %s (%d failure(s) in a row): %s", self.store.path, self._failures, exc)

    def _succeeded(self) -> None:
        if self._failures:
            log.info("writing to %s works again after %d failure(s)", self.store.path, self._failures)
        self._failures = 0
        self._last_error = ""


def tune_writer_connection(store: Store) -> None:
    """Settings of the writer's own connection, beyond those of every :class:`Store`."""
    store.conn.execute("PRAGMA wal_autocheckpoint=0")  # the Checkpointer thread does it (checkpointer.py)
    # SQLite copies each page that a savepoint (one per ingest batch) or a many-row statement
    # first changes to a sub-journal, which past 64 KiB is a temp file, created, written, unlinked
    # and closed again at every release: at full load as many bytes as the WAL got
    # (benchmarks/README.md, tenth pass). In memory it holds one batch's pages at most, freed at
    # the release. Only this connection: the writer runs its own bounded statements, where a
    # view's query or a migration's index build may sort more than fits in memory.
    store.conn.execute("PRAGMA temp_store=MEMORY")


def _is_storage_fault(exc: BaseException) -> bool:
    """Our side, not the data: disk full, locked, I/O error, a corrupt or unreadable file."""
    return isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError


def _as_batch_error(exc: BaseException) -> BaseException:
    if _is_storage_fault(exc):
        return StorageUnavailable(f"could not store: {exc}; retry later")
    return exc
