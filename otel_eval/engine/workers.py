"""Score workers: they read ended sessions (each through its own read-only connection), score
them and hand the finished records to the writer. They never write, so nothing they do can race
the writer for SQLite's lock, and a worker outliving its engine cannot store anything.

``score_workers=0`` scores in one thread of this process; ``N`` starts N worker processes (more
cores). Sessions of :data:`BIG_SESSION_SPANS` spans or more take a lane of their own: one more
thread, or one more worker process started at the first of them. A session of 32,000 spans takes
seconds to score, and the small sessions that end after it must not wait that long behind it
(benchmarks/README.md, "Issue 34.2"). A worker process is a plain
``python -m otel_eval.engine.worker_process`` child talking over its stdin/stdout pipes: no
multiprocessing machinery (no resource tracker, no semaphores), and it exits as soon as its
parent is gone (the kernel's parent-death signal, and end-of-file on its stdin). Beside worker processes, this process may score too, only while sessions wait for
them and no spans arrive (:class:`IdleScoring`).
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TypedDict

from ..golden.embedding import EmbedFunction
from ..pipeline import FinishedEvaluation, ScoringContext, score_stored_session
from ..store import Store

log = logging.getLogger("otel_eval.engine")

#: Sessions sent to a worker process per round trip: each costs the parent a few GIL hand-offs,
#: which a busy ingest makes slow, so one per session would starve scoring.
PROCESS_BATCH = 32
#: The pipe a worker process writes its answers to, and this side's read buffer (see _widen_pipe).
ANSWER_PIPE_BYTES = 1 << 20
#: Batches a worker process has been sent and not yet answered in full, at most: one it works on,
#: one waiting in its pipe.
IN_FLIGHT = 2

#: How often the idle scorer looks for waiting sessions and an idle ingest (:class:`IdleScoring`).
IDLE_POLL_SECONDS = 0.02

#: Sessions of at least this many spans are scored in the big sessions' lane. Scoring costs
#: 0.1-0.25 ms a span (32,000 spans: 3-8 s on this machine), so the small lane never holds a
#: session longer than a few hundred milliseconds, while a realistic session (5-20 spans, a
#: long one a few hundred) never leaves it.
BIG_SESSION_SPANS = 1000
#: The big sessions' worker process stops after this many seconds without one: it is started
#: again (a second or two) at the next, and the memory a giant left in it goes back meanwhile.
BIG_LANE_IDLE_SECONDS = 30.0

Deliver = Callable[[FinishedEvaluation], None]
SkipSession = Callable[[str], None]
WantsResults = Callable[[], bool]
"""Whether a listener may ask for the full result of what is scored now (else it is dropped)."""


class WorkerInit(TypedDict):
    """The scoring setup a worker process is sent first (pickled): enough to build the same
    scoring context as this process's, the golden sets and config as JSON text."""

    db: str
    eval_sets: list[str]
    defer_judge: bool
    config: str
    fuzzy_threshold: float
    embedding_threshold: float | None
    embed: EmbedFunction | None
    max_value_chars: int
    config_hash: str
    session_attributes: tuple[str, ...]
    user_attributes: tuple[str, ...]


Answer = FinishedEvaluation | str | None
"""A worker process's answer for one session: its record, an error message, or None (no spans)."""


@dataclass(frozen=True)
class IdleScoring:
    """What :class:`ProcessWorkers` need to score in this process too, while ingest is idle:
    the worker processes' scoring context (no in-process judge: theirs has none either, and a
    session must score the same whoever takes it), the database, and whether spans arrive."""

    db_path: str
    context: ScoringContext
    ingest_idle: Callable[[], bool]


class ScoreWorkers:
    """Two queues of ended sessions, small and big (:data:`BIG_SESSION_SPANS`), and the workers
    that drain them: a session waits only behind sessions of its own lane."""

    def __init__(self, deliver: Deliver, skip: SkipSession, wants_results: WantsResults = lambda: True):
        self._deliver = deliver
        self._skip = skip
        self._wants_results = wants_results
        self.queue: queue.Queue[str | None] = queue.Queue()
        """The small sessions' lane."""
        self.big_queue: queue.Queue[str | None] = queue.Queue()
        """The big sessions' lane."""
        self._threads: list[threading.Thread] = []
        """The small lane's threads (each takes an end-of-work marker, None, from :attr:`queue`)."""
        self._big_threads: list[threading.Thread] = []
        """The big lane's (from :attr:`big_queue`)."""
        self.scored_idle = 0
        """Sessions this process scored itself beside its worker processes, while no spans
        arrived (:class:`IdleScoring`; always 0 for threads)."""

    def submit(self, session_id: str, spans: int = 0) -> None:
        """Queue an ended session of ``spans`` spans in its lane."""
        (self.big_queue if spans >= BIG_SESSION_SPANS else self.queue).put(session_id)

    def waiting(self) -> int:
        """Sessions queued and not started yet, both lanes."""
        return self.queue.qsize() + self.big_queue.qsize()

    def drop_waiting(self) -> int:
        """Forget the sessions not started yet (they stay 'ended' in the database)."""
        dropped = 0
        for lane in (self.queue, self.big_queue):
            while True:
                try:
                    item = lane.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    dropped += 1
                    self._skip(item)
        return dropped

    def close(self, timeout: float | None = None) -> None:
        """Stop the workers once the sessions being scored are done (``timeout`` seconds at most); queued ones stay
        'ended' for the next start."""
        for lane, threads in ((self.queue, self._threads), (self.big_queue, self._big_threads)):
            for _ in threads:
                lane.put(None)
        for thread in self._threads + self._big_threads:
            thread.join(timeout)

    def pids(self) -> list[int]:
        """Process ids of the worker processes (none when scoring in threads)."""
        return []


class ThreadWorkers(ScoreWorkers):
    """Scoring in threads of this process: ``threads`` for small sessions, one for big ones.
    The two lanes share the GIL, a switch interval (5 ms) each in turn: a small session scored
    beside a giant takes about twice its time instead of waiting for the giant's seconds. What
    stays is the cyclic GC's full collections that a giant's millions of objects bring on, which
    hold every thread of the process (0.1-0.4 s each for 32,000 spans; benchmarks/README.md)."""

    def __init__(
        self,
        db_path: str,
        context: ScoringContext,
        deliver: Deliver,
        skip: SkipSession,
        wants_results: WantsResults = lambda: True,
        threads: int = 1,
    ):
        super().__init__(deliver, skip, wants_results)
        self._db_path = db_path
        self._context = context
        self._threads = [
            threading.Thread(target=self._run, args=(self.queue,), name=f"otel-eval-scorer-{i}", daemon=True)
            for i in range(threads)
        ]
        self._big_threads = [
            threading.Thread(target=self._run, args=(self.big_queue,), name="otel-eval-scorer-big", daemon=True)
        ]

    def start(self) -> ThreadWorkers:
        """Start the scoring threads; returns the workers."""
        for thread in self._threads + self._big_threads:
            thread.start()
        return self

    def _run(self, lane: queue.Queue[str | None]) -> None:
        session_id = lane.get()  # the connection is opened at the lane's first session: most never see a big one
        if session_id is None:
            return
        store = Store.open_read_only(self._db_path)
        try:
            while session_id is not None:
                _score_here(store, session_id, self._context, self._deliver, self._skip, self._wants_results)
                session_id = lane.get()
        finally:
            store.close()


def _score_here(
    store: Store,
    session_id: str,
    context: ScoringContext,
    deliver: Deliver,
    skip: SkipSession,
    wants_results: WantsResults,
) -> bool:
    """Score one session in this thread and hand the record on (as :class:`ThreadWorkers` do);
    False when there was nothing to hand on (no spans, or reading failed)."""
    try:
        finished = score_stored_session(store, session_id, context)
    except Exception:
        log.exception("scoring session %s failed", session_id)
        finished = None
    if finished is None:
        skip(session_id)
        return False
    deliver(finished.compact() if wants_results() else finished.without_result())
    return True


class ProcessWorkers(ScoreWorkers):
    """Scoring in worker processes (more cores; the agent's or collector's GIL only hands sessions over), a big
    sessions' process started on demand, and this process scoring too while ingest is idle (:class:`IdleScoring`)."""

    def __init__(
        self,
        processes: int,
        init: WorkerInit,
        deliver: Deliver,
        skip: SkipSession,
        wants_results: WantsResults = lambda: True,
        idle: IdleScoring | None = None,
    ):
        super().__init__(deliver, skip, wants_results)
        self._init = pickle.dumps(init, protocol=pickle.HIGHEST_PROTOCOL)
        # One slot a worker process: ``processes`` for the small lane, then the big lane's, whose
        # process is started at its first session and stopped when idle (BIG_LANE_IDLE_SECONDS).
        self._children: list[subprocess.Popen[bytes] | None] = [None] * (processes + 1)
        self._big_slot = processes
        self._threads = [
            threading.Thread(target=self._feed, args=(i,), name=f"otel-eval-scorer-{i}", daemon=True)
            for i in range(processes)
        ]
        self._big_threads = [
            threading.Thread(target=self._feed, args=(self._big_slot,), name="otel-eval-scorer-big", daemon=True)
        ]
        self._closing = False
        self._idle = idle
        self._idle_stop = threading.Event()
        self._idle_thread = threading.Thread(target=self._score_while_idle, name="otel-eval-idle-scorer", daemon=True)

    def start(self) -> ProcessWorkers:
        """Start the worker processes and their feeding threads; a worker that cannot start fails the engine's start."""
        # Start the children here, so a broken worker fails the engine's start, not a session later.
        for i in range(self._big_slot):
            self._children[i] = self._spawn()
        for thread in self._threads + self._big_threads:
            thread.start()
        if self._idle is not None:
            self._idle_thread.start()
        return self

    def close(self, timeout: float | None = None) -> None:
        self._idle_stop.set()
        if self._idle_thread.is_alive():
            self._idle_thread.join(timeout)
        if self.scored_idle:
            log.info("%d session(s) scored in this process while no spans arrived", self.scored_idle)
        super().close(timeout)

    def _score_while_idle(self) -> None:
        # Sessions wait in the queue only while every worker process has its batches: the workers
        # are behind. When no spans arrive either, this process's core is idle (after a burst, at
        # a restart that resumes a backlog), so it scores the next waiting session itself, one at
        # a time, asking again before each: spans that arrive take the GIL back within a session.
        idle = self._idle
        assert idle is not None
        store = Store.open_read_only(idle.db_path)
        try:
            while not self._idle_stop.wait(IDLE_POLL_SECONDS):
                while idle.ingest_idle() and not self._idle_stop.is_set():
                    try:
                        session_id = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if session_id is None:  # the end-of-work marker is the feeders'
                        self.queue.put(None)
                        return
                    if _score_here(store, session_id, idle.context, self._deliver, self._skip, self._wants_results):
                        self.scored_idle += 1
        finally:
            store.close()

    def pids(self) -> list[int]:
        return [c.pid for c in self._children if c is not None and c.poll() is None]

    def _spawn(self) -> subprocess.Popen[bytes]:
        # The child imports otel_eval from wherever this process did, whatever its start directory.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        child = subprocess.Popen(
            [sys.executable, "-m", "otel_eval.engine.worker_process", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            env=env,
            bufsize=ANSWER_PIPE_BYTES,
        )
        _widen_pipe(child.stdout)
        _send(child, self._init)
        return child

    def _feed(self, slot: int) -> None:
        # Batches are sent ahead (up to IN_FLIGHT) so the worker starts the next one as soon as it
        # finishes one. This thread needs the collector's GIL to take answers and send work, and
        # under a busy ingest it waits for it: sending one batch at a time left the worker idle
        # meanwhile (a third of the time at full load: benchmarks/README.md, sixth pass).
        # The big lane sends one session at a time, none ahead: a giant waiting behind another
        # stays in the queue, where a stop can leave it to the next start.
        big = slot == self._big_slot
        lane, batch_size, ahead = (self.big_queue, 1, 1) if big else (self.queue, PROCESS_BATCH, IN_FLIGHT)
        in_flight: deque[list[str]] = deque()  # sent, oldest first; answers come back in order
        answered = 0  # answers received for in_flight[0]
        closing = False
        while True:
            child = self._children[slot]
            try:
                while not closing and len(in_flight) < ahead:
                    batch, closing = self._next_batch(
                        lane, batch_size, wait=not in_flight, timeout=BIG_LANE_IDLE_SECONDS if big else None
                    )
                    if not batch:
                        break
                    in_flight.append(batch)  # first: if starting or sending fails, these are skipped below
                    if child is None:
                        child = self._children[slot] = self._spawn()
                    _send(child, pickle.dumps((batch, self._wants_results()), protocol=pickle.HIGHEST_PROTOCOL))
                if not in_flight:
                    if closing:
                        break
                    if big and child is not None:  # idle for BIG_LANE_IDLE_SECONDS: give its memory back
                        _stop(child)
                        self._children[slot] = None
                    continue
                assert child is not None
                for answer in pickle.loads(_receive(child)):  # at least every FLUSH_SECONDS while it works
                    self._answer(in_flight[0][answered], answer)
                    answered += 1
                    if answered == len(in_flight[0]):
                        in_flight.popleft()
                        answered = 0
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                # The worker died (killed, out of memory). These sessions stay 'ended' in the
                # database and are scored at the next start; a fresh worker takes the next ones.
                left = [session_id for batch in in_flight for session_id in batch][answered:]
                log.error(
                    "score worker %s died (%s); %d session(s) left for the next start, starting a new worker",
                    child.pid if child else "?",
                    exc,
                    len(left),
                )
                _stop(child)
                self._children[slot] = None
                in_flight.clear()
                answered = 0
                for session_id in left:
                    self._skip(session_id)
                time.sleep(1.0)  # a worker that cannot start must not be restarted in a hot loop
        _stop(self._children[slot])
        self._children[slot] = None

    @staticmethod
    def _next_batch(
        lane: queue.Queue[str | None], size: int, wait: bool, timeout: float | None = None
    ) -> tuple[list[str], bool]:
        """Up to ``size`` sessions waiting in ``lane`` (waiting for the first only when ``wait``,
        for ``timeout`` seconds at most: then none), and whether the end-of-work marker (None)
        came: this thread's cue to stop once its batches are answered."""
        batch: list[str] = []
        while len(batch) < size:
            try:
                item = lane.get(timeout=timeout) if wait and not batch else lane.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _answer(self, session_id: str, answer: Answer) -> None:
        if isinstance(answer, FinishedEvaluation):
            self._deliver(answer)
        else:
            if answer:  # an error message from the worker
                log.error("scoring session %s failed in a worker: %s", session_id, answer)
            self._skip(session_id)


def _widen_pipe(stream: IO[bytes] | None) -> None:
    """Let the worker write up to :data:`ANSWER_PIPE_BYTES` of answers before it has to wait for
    this process to read them (Linux; elsewhere the pipe keeps its size). A pipe holds 64 KiB,
    four or five finished evaluations, and the thread reading them needs the collector's GIL,
    which a busy ingest makes it wait for: at full load the worker spent a third of its time
    blocked in that write."""
    if stream is None or not sys.platform.startswith("linux"):
        return
    import fcntl  # F_SETPIPE_SZ: Linux, Python 3.10+

    try:
        fcntl.fcntl(stream.fileno(), fcntl.F_SETPIPE_SZ, ANSWER_PIPE_BYTES)
    except OSError:  # above /proc/sys/fs/pipe-max-size, or the user's pipe quota: keep the default
        pass


def _send(child: subprocess.Popen[bytes], payload: bytes) -> None:
    assert child.stdin is not None
    child.stdin.write(struct.pack("!Q", len(payload)) + payload)
    child.stdin.flush()


def _receive(child: subprocess.Popen[bytes]) -> bytes:
    assert child.stdout is not None
    return read_frame(child.stdout)


def read_frame(stream: IO[bytes]) -> bytes:
    """One length-prefixed message from a pipe (the 8-byte size, then the pickle); EOFError when
    the other end closed."""
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("worker pipe closed")
    (size,) = struct.unpack("!Q", header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("worker pipe closed mid-message")
    return payload


def _stop(child: subprocess.Popen[bytes] | None) -> None:
    if child is None:
        return
    try:
        if child.stdin is not None:
            child.stdin.close()  # end of file: the worker exits
        child.wait(5)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
        child.wait()
    finally:
        if child.stdout is not None:
            child.stdout.close()
