"""The Engine: ingest → one writer → session scheduler → score workers → writer → listeners.

Contract used by the collector and the in-process processor::

    engine = Engine(db, golden=[...], settings=EngineSettings(...), on_result=None).start()
    engine.ingest(spans, wait=True, timeout=None) -> IngestResult   # raises EngineUnavailable
    engine.ingest_logs(events, wait=True, timeout=None) -> IngestResult
    engine.end_session(session_id); engine.flush(timeout); engine.wait_idle(timeout)
    engine.close(score_open=False)   # True: end and score open sessions first (processor shutdown)
    engine.stats() -> dict; engine.health() -> EngineHealth
    engine.add_listener(fn(EvalCaseResult)); engine.on_evaluation(fn(EvaluationStored))
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from ..criteria.base import JudgeClient
from ..golden import GoldenSets, GoldenSource
from ..golden.embedding import EmbedFunction
from ..golden.matcher import GoldenIndex
from ..mapping import use_identity_attributes
from ..models.evalset import EvalConfig, EvalSet
from ..pipeline import FinishedEvaluation, ScoringContext
from ..sessions import Timing
from ..span_rows import span_row
from ..spans import LogEvent, SpanRecord
from ..store import Store
from .api import EngineClosed, IngestResult, QueueFull
from .checkpointer import Checkpointer
from .events import EvaluationStored, EventListener, ResultCallback
from .file_lock import exclusive_lock, release_lock
from .judge_link import JudgeLink
from .queue_items import Barrier, CompleteJudgment, EndSessions, IngestBatch, RestartWal, Stop, StoreEvaluation, Wake
from .scheduler import SessionScheduler
from .settings import UNSET, EngineSettings, golden_index, merged_settings
from .stats import EngineStats, EngineStatsReport
from .workers import IdleScoring, ProcessWorkers, ScoreWorkers, ThreadWorkers, WorkerInit
from .writer import EngineHealth, SpanSource, Writer, tune_writer_connection

log = logging.getLogger("otel_eval.engine")

#: Finished evaluations that may wait for the writer at once, in-process. A worker that would
#: exceed it waits: a writer that falls behind then holds back scoring (sessions wait as ids, and
#: 'ended' in the database) instead of growing a queue of scored records. Those records are the
#: largest things the engine keeps (their result as JSON text, ~14 KiB, and their rows), in the
#: agent's own memory.
MAX_WAITING_EVALUATIONS = 128
#: The same bound when score worker processes send the records, in a collector's memory. A
#: collector whose GIL is busy with ingest commits them in bursts, and with 128 the thread feeding
#: a worker waited on the hand-off in a fifth of the samples at full load while the worker idled
#: (benchmarks/README.md, seventh pass).
MAX_WAITING_FROM_PROCESSES = 512
#: Seconds without a batch handed in before ingest counts as idle (``EngineSettings.score_when_idle``):
#: longer than the gaps between requests of a busy fleet, short beside a backlog's drain.
INGEST_IDLE_SECONDS = 0.1


class Engine:
    """Stores what it is sent, ends sessions when they go quiet, scores them and tells listeners:
    the one object the collector, the in-process processor and ``evaluate()`` drive."""

    def __init__(
        self,
        db: str | Path,
        golden: Iterable[GoldenSource] = (),
        config: EvalConfig | None = None,
        trace_quiet: float = UNSET,
        session_idle: float = UNSET,
        on_result: ResultCallback | None = None,
        max_queue_spans: int = UNSET,
        fuzzy_threshold: float = UNSET,
        embedding_threshold: float | None = UNSET,
        judge: JudgeClient | None = UNSET,
        embed: EmbedFunction | None = UNSET,
        max_value_chars: int = UNSET,
        score_workers: int = UNSET,
        *,
        settings: EngineSettings | None = None,
    ):
        """``settings`` holds every knob; the keyword arguments of the same names override it."""
        self.settings = merged_settings(
            settings,
            config,
            trace_quiet=trace_quiet,
            session_idle=session_idle,
            max_queue_spans=max_queue_spans,
            fuzzy_threshold=fuzzy_threshold,
            embedding_threshold=embedding_threshold,
            judge=judge,
            embed=embed,
            max_value_chars=max_value_chars,
            score_workers=score_workers,
        )
        use_identity_attributes(self.settings.session_attributes, self.settings.user_attributes)
        self.db_path = str(db)
        self.golden = GoldenSets.load(golden)
        self.golden_summary = self.golden.summary()
        """Each set's source, id and case count (``eval_sets`` lose their cases once started)."""
        self.config_hash = self.settings.config_hash
        self._results: list[ResultCallback] = [on_result] if on_result else []
        self._listeners: list[tuple[EventListener, bool]] = []
        """Each listener, and whether it reads full results (see :meth:`on_evaluation`)."""
        self._index: GoldenIndex | None = None
        self._stats = EngineStats()
        self._scheduler = SessionScheduler(self.settings.timing)
        self._queued = 0
        self._queue_lock = threading.Lock()
        self._last_ingest = 0.0  # time.monotonic() of the last batch handed in
        self._outstanding = 0
        """Sessions handed to the workers whose evaluation is not committed (or given up) yet."""
        self._idle = threading.Condition()
        self._notify_queue: queue.Queue[EvaluationStored | None] = queue.Queue()
        self._handoff = threading.BoundedSemaphore(
            MAX_WAITING_FROM_PROCESSES if self.settings.score_workers > 0 else MAX_WAITING_EVALUATIONS
        )
        """One slot per finished evaluation between a worker and the writer's commit."""
        self._writer: Writer | None = None
        self._checkpointer: Checkpointer | None = None
        self._workers: ScoreWorkers | None = None
        self._notifier: threading.Thread | None = None
        self._lock_file: TextIO | None = None
        self._judge: JudgeLink | None = None
        self._closing = False
        self._closed = False

    # --- properties kept for callers of the flat constructor ---------------------------------

    @property
    def eval_sets(self) -> list[EvalSet]:
        """The golden sets; once the engine has started, without their cases (the index has them)."""
        return self.golden.sets

    @property
    def config(self) -> EvalConfig:
        """The criteria sessions are scored with (``settings.config``)."""
        return self.settings.config

    @property
    def timing(self) -> Timing:
        """When a trace is complete and a session ended (``settings.timing``)."""
        return self.settings.timing

    @property
    def score_workers(self) -> int:
        """Score worker processes (0: scoring in a thread of this process)."""
        return self.settings.score_workers

    @property
    def golden_index(self) -> GoldenIndex:
        """The golden cases, indexed for matching; built on first use (at start, at the latest)."""
        if self._index is None:
            self._index = golden_index(self.eval_sets, self.settings)
        return self._index

    def scoring_context(self) -> ScoringContext:
        """What the in-process score workers (and idle scoring) score sessions with."""
        s = self.settings
        return ScoringContext(
            index=self.golden_index,
            config=s.config,
            judge=s.judge,
            max_value_chars=s.max_value_chars,
            config_hash=self.config_hash,
            defer_judge=s.judge is None,
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> Engine:
        """Take the database's lock, resume what the last run left (open sessions, ended ones to
        score, judge jobs) and start the writer, workers and notifier; a started engine returns itself."""
        if self._writer is not None:
            return self
        self._lock_file = exclusive_lock(self.db_path)
        try:
            store = Store(self.db_path, cache_mib=self.settings.write_cache_mib)
            tune_writer_connection(store)
            self.golden.save(store)
            pending = self._scheduler.resume(store)
            self._workers = self._make_workers()
            self._release_cases()
            self._judge = JudgeLink(self.settings, self._put_judgment, self._judgment_stored)
            resumed = self._judge.start(store)
            self._writer = Writer(
                store,
                self._scheduler,
                self._stats,
                ended=self._score,
                stored=self._stored,
                given_up=self._given_up,
                released=self._release,
                judged=self._judge.committed,
            )
        except BaseException:
            if self._judge is not None:
                self._judge.close(5)
                self._judge = None
            release_lock(self._lock_file)
            self._lock_file = None
            raise
        self._notifier = threading.Thread(target=self._notify_loop, name="otel-eval-notify", daemon=True)
        self._notifier.start()
        self._checkpointer = Checkpointer(self.db_path, restart=self._request_wal_restart).start()
        self._writer.start()
        self._score(pending)
        self._judge.resume()
        if resumed:
            log.info("%d judge job(s) left pending at the last stop: resumed", resumed)
        return self

    def _put_judgment(self, item: CompleteJudgment) -> None:
        writer = self._writer
        if writer is not None and writer.alive:
            writer.put(item)
        elif self._judge is not None:  # stopped: the job stays queued in the database for the next start
            item.info = None
            self._judge.committed(item)

    def _judgment_stored(self, item: CompleteJudgment, event: EvaluationStored | None) -> None:
        """A judge outcome committed (``event``: its revision, None when it completed nothing)."""
        if event is not None:
            with self._idle:
                self._outstanding += 1  # announced like any evaluation: wait_idle waits for it
            self._notify_queue.put(event)

    def _request_wal_restart(self) -> None:
        """The checkpointer has copied a large WAL back: the writer starts it over between two
        rounds, from its own connection (see :class:`Checkpointer`)."""
        if self._writer is not None:
            self._writer.put(RestartWal())

    def _release_cases(self) -> None:
        # Scoring has what it needs now: the index keeps each case as text, worker processes got
        # their copy. The parsed cases (~35 objects each) would only lengthen every full walk of
        # the cyclic GC, which runs on whichever thread allocates: in-process, the agent's.
        if self._index is None:  # built first (compact), so engine.golden_index keeps every case
            self._index = golden_index(self.eval_sets, self.settings)
        self.golden = self.golden.without_cases()

    def _make_workers(self) -> ScoreWorkers:
        if self.settings.score_workers > 0:
            s = self.settings
            init = WorkerInit(
                db=self.db_path,
                eval_sets=[e.model_dump_json() for e in self.eval_sets],
                defer_judge=True,
                config=s.config.model_dump_json(),
                fuzzy_threshold=s.fuzzy_threshold,
                embedding_threshold=s.embedding_threshold,
                embed=s.embed,
                max_value_chars=s.max_value_chars,
                config_hash=self.config_hash,
                session_attributes=s.session_attributes,
                user_attributes=s.user_attributes,
            )
            idle = None
            if s.score_when_idle:  # with the context the worker processes have: no in-process judge
                idle = IdleScoring(
                    self.db_path,
                    dataclasses.replace(self.scoring_context(), judge=None, defer_judge=True),
                    self._ingest_idle,
                )
            return ProcessWorkers(
                s.score_workers, init, self._deliver, self._skipped, self._wants_results, idle
            ).start()
        return ThreadWorkers(
            self.db_path, self.scoring_context(), self._deliver, self._skipped, self._wants_results
        ).start()

    def _ingest_idle(self) -> bool:
        return time.monotonic() - self._last_ingest >= INGEST_IDLE_SECONDS

    def _wants_results(self) -> bool:
        """Whether a listener may read a full result: else workers drop it once scored."""
        return bool(self._results) or any(with_result for _, with_result in self._listeners)

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_listener(self, callback: ResultCallback) -> None:
        """``callback(result)`` after each committed evaluation (off the writer thread)."""
        self._results.append(callback)

    def on_evaluation(self, listener: EventListener, *, with_result: bool = True) -> None:
        """``listener(EvaluationStored)`` after each committed evaluation (off the writer thread).
        ``with_result=False``: the listener reads only the event's plain fields (verdict, score,
        case, ids), never ``event.result``; when no listener needs results, workers do not keep
        them (encoding one as JSON cost a score worker ~3% of its CPU)."""
        self._listeners.append((listener, with_result))

    # --- ingest API ----------------------------------------------------------------------------

    def ingest(self, spans: Sequence[SpanRecord], wait: bool = True, timeout: float | None = None) -> IngestResult:
        """Queue spans for storage; with ``wait`` return only once they are committed. The
        spans are read into their rows here, on the caller's thread (a receiver's)."""
        return self._submit(IngestBatch(spans=[span_row(span) for span in spans]), wait, timeout)

    def ingest_logs(self, events: Sequence[LogEvent], wait: bool = True, timeout: float | None = None) -> IngestResult:
        """Queue log records (content some instrumentations send apart from their spans), as :meth:`ingest`."""
        return self._submit(IngestBatch(logs=list(events)), wait, timeout)

    def _submit(self, batch: IngestBatch, wait: bool, timeout: float | None) -> IngestResult:
        writer = self._writer
        if self._closing or writer is None:
            raise EngineClosed("engine is not running")
        with self._queue_lock:
            if self._queued and self._queued + batch.size > self.settings.max_queue_spans:
                self._stats.add(spans_dropped=len(batch.spans))
                raise QueueFull(f"ingest queue full ({self._queued} spans waiting)")
            self._queued += batch.size
        self._stats.add(spans_received=len(batch.spans))
        self._last_ingest = time.monotonic()
        writer.put(batch)
        if not wait:
            return IngestResult(accepted=len(batch.spans))
        if not batch.done.wait(timeout):
            raise TimeoutError("batch not committed in time; it stays queued and will be stored")
        if batch.error is not None:
            raise batch.error
        return batch.result

    def add_span_source(self, source: SpanSource) -> None:
        """Let the writer pull spans from ``source()`` at every round (the in-process processor's
        buffer: the agent's thread only appends, and converting and storing happen here).
        Call :meth:`wake` when the source goes from empty to non-empty."""
        if self._writer is None:
            raise EngineClosed("start the engine before adding a span source")
        self._writer.add_source(source)

    def wake(self) -> None:
        """Tell the writer a span source has spans again (it sleeps while every source is empty)."""
        if self._writer is not None:
            self._writer.put(Wake())

    def _release(self, size: int) -> None:
        with self._queue_lock:
            self._queued -= size

    def end_session(self, session_id: str) -> bool:
        """End a session now (it is scored as soon as its spans are committed)."""
        if self._writer is None:
            return False
        request = EndSessions(session_id)
        self._writer.put(request)
        request.done.wait()
        return bool(request.ended)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is committed."""
        if self._writer is None or not self._writer.alive:
            return True
        barrier = Barrier()
        self._writer.put(barrier)
        return barrier.done.wait(timeout)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the queue is empty and every ended session is scored and stored, its judge
        outcome included (bounded by ``EngineSettings.judge_deadline``)."""
        return self._wait_idle(timeout, judge=True)

    def _wait_idle(self, timeout: float | None, judge: bool) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self.flush(timeout):
            return False
        with self._idle:
            while self._outstanding or (judge and self._judge is not None and self._judge.busy()):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining if remaining is not None else 0.5)
        return self.flush(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def close(self, score_open: bool = False, timeout: float | None = None, wait_judge: bool = False) -> None:
        """Stop accepting, commit what is queued; ``score_open`` also ends and scores open sessions;
        ``wait_judge`` also waits for their judge outcomes (offline runs, whose database may be
        temporary: no next start would resume the judge work)."""
        if self._closed:
            return
        writer, workers = self._writer, self._workers
        if writer is None or workers is None:
            self._closed = True
            return
        self.flush(timeout)
        if score_open:
            request = EndSessions(None)
            writer.put(request)
            request.done.wait(timeout)
            self._wait_idle(timeout, judge=wait_judge)  # else judge work left persists: the next start resumes it
        self._closing = True
        if self._judge is not None:
            self._judge.close(timeout)
        # Sessions still waiting to be scored stay 'ended' in the database; the next start
        # scores them, so a stop need not wait for the whole backlog.
        left = workers.drop_waiting()
        if left:
            log.info("%d ended session(s) left for the next start to score", left)
        workers.close(timeout)  # the ones being scored finish and reach the writer's queue
        writer.put(Stop())
        writer.join(timeout)
        if self._checkpointer is not None:
            self._checkpointer.stop(timeout)
        self._notify_queue.put(None)
        if self._notifier is not None:
            self._notifier.join(timeout)
        writer.store.close()
        self._scheduler.activity.flush()
        release_lock(self._lock_file)
        self._lock_file = None
        self._closed = True

    # --- health and stats ----------------------------------------------------------------------

    def health(self) -> EngineHealth:
        """Whether the engine can store what it is sent (for /healthz)."""
        if self._writer is None:
            return EngineHealth(False, "engine not started")
        return self._writer.health()

    def health_problem(self) -> str | None:
        """Why the engine cannot store what it is sent now (for /healthz), or None."""
        health = self.health()
        return None if health.ok else health.reason

    def stats(self) -> EngineStatsReport:
        """The counters and the queues as they are now (a plain dict: /metrics and /stats render it)."""
        counters = self._stats.snapshot()
        with self._idle:
            awaiting = self._outstanding
        out = EngineStatsReport(
            **counters,
            queue_depth=self._queued,
            sessions_open=len(self._scheduler),
            sessions_awaiting_score=awaiting,
            sessions_scored_idle=self._workers.scored_idle if self._workers is not None else 0,
        )
        if self._judge is not None:
            out["judge"] = self._judge.stats()
        return out

    def worker_pids(self) -> list[int]:
        """Process ids of the score worker processes (empty when scoring in a thread)."""
        return self._workers.pids() if self._workers is not None else []

    def is_open(self, session_id: str) -> bool:
        """Is the session receiving spans (not ended yet)? Answered from the writer's timers."""
        return session_id in self._scheduler

    # --- scoring -------------------------------------------------------------------------------

    def _score(self, sessions: list[tuple[str, int]]) -> None:
        """Sessions the writer committed as ended, with their span counts: to the workers (the
        count chooses the lane, see :data:`~.workers.BIG_SESSION_SPANS`)."""
        if not sessions or self._workers is None:
            return
        with self._idle:
            self._outstanding += len(sessions)
        for session_id, spans in sessions:
            self._workers.submit(session_id, spans)

    def _deliver(self, finished: FinishedEvaluation) -> None:
        """A worker's finished record: to the writer, committed with the next group. Waits while
        ``MAX_WAITING_EVALUATIONS`` records wait already (not for a writer that is gone)."""
        writer = self._writer
        assert writer is not None
        while not self._handoff.acquire(timeout=0.5):
            if not writer.alive:
                break  # put it anyway: nothing will commit it, and nothing must block on it
        writer.put(StoreEvaluation(finished))

    def _skipped(self, session_id: str) -> None:
        self._done_scoring()

    def _given_up(self, finished: FinishedEvaluation) -> None:
        self._release_handoff()
        self._done_scoring()

    def _release_handoff(self) -> None:
        try:
            self._handoff.release()
        except ValueError:  # delivered without a slot, past a writer that had stopped
            pass

    def _done_scoring(self) -> None:
        with self._idle:
            self._outstanding -= 1
            self._idle.notify_all()

    def _stored(self, finished: FinishedEvaluation, evaluation_id: int, revision: int) -> None:
        """Called by the writer after the commit: stats, log, listeners — off its thread."""
        self._release_handoff()
        if finished.rows.judge_job is not None and self._judge is not None:
            self._judge.submit(evaluation_id, finished.session_id, finished.rows.judge_job)
        self._notify_queue.put(
            EvaluationStored(
                judge_pending=int(finished.rows.evaluation.get("judge_pending") or 0),
                revision=revision,
                evaluation_id=evaluation_id,
                session_id=finished.session_id,
                trace_ids=finished.trace_ids,
                root_span_ids=finished.root_span_ids,
                agent_version=finished.agent_version,
                matched=finished.matched,
                matched_by=finished.matched_by,
                score_seconds=finished.seconds,
                verdict=finished.verdict,
                case_id=finished.case_id,
                score=finished.score,
                load_result=lambda: finished.result,
            )
        )

    def _notify_loop(self) -> None:
        while True:
            event = self._notify_queue.get()
            if event is None:
                break
            try:
                self._announce(event)
            except Exception:
                log.exception("announcing the evaluation of session %s failed", event.session_id)
            finally:
                self._done_scoring()

    def _announce(self, event: EvaluationStored) -> None:
        if event.completes is None:
            self._stats.add(score_seconds_sum=event.score_seconds, score_seconds_count=1, sessions_scored=1)
        if event.judge_pending:
            self._stats.add(evaluations_judge_pending=1)
        elif event.completes is not None and not event.backfill:
            self._stats.add(evaluations_judge_completed=1)
        if event.counted and event.matched:
            self._stats.add(evaluations_matched=1)
            if event.evaluated:  # not_evaluated ones are counted apart, outside the pass rate
                self._stats.add(evaluations_total=1, evaluations_passed=int(event.passed))
            else:
                self._stats.add(evaluations_not_evaluated=1)
        if event.counted:
            self._scheduler.activity.scored(
                event.session_id,
                event.revision,
                event.verdict if event.matched else event.matched_by,
                event.case_id or "-",
                event.score,
            )
        for listener, _ in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("evaluation listener failed for session %s", event.session_id)
        if not event.counted:  # on_result hears of each scoring once, with its final verdict
            return
        for callback in self._results:
            try:
                callback(event.result)
            except Exception:
                log.exception("on_result callback failed for session %s", event.session_id)
