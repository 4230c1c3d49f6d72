"""Score workers: they read ended sessions (each through its own read-only connection), score
them and hand the finished records to the writer. They never write, so nothing they do can race
the writer for SQLite's lock, and a worker outliving its engine cannot store anything.

``score_workers=0`` scores in one thread of this process; ``N`` starts N worker processes (more
cores). A worker process is a plain ``python -m otel_eval.engine.worker_process`` child talking
over its stdin/stdout pipes: no multiprocessing machinery (no resource tracker, no semaphores),
and it exits as soon as its parent is gone (the kernel's parent-death signal, and end-of-file on
its stdin).
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
from typing import Any, Callable, Optional

from ..pipeline import FinishedEvaluation, ScoringContext, score_session
from ..store import Store

log = logging.getLogger("otel_eval.engine")

#: Sessions sent to a worker process per round trip: each costs the parent a few GIL hand-offs,
#: which a busy ingest makes slow, so one per session would starve scoring.
PROCESS_BATCH = 32

Deliver = Callable[[FinishedEvaluation], None]
Skip = Callable[[str], None]


class ScoreWorkers:
    """A queue of ended sessions and the workers that drain it."""

    def __init__(self, deliver: Deliver, skip: Skip):
        self._deliver = deliver
        self._skip = skip
        self.queue: "queue.Queue[Optional[str]]" = queue.Queue()
        self._threads: list[threading.Thread] = []

    def submit(self, session_id: str) -> None:
        self.queue.put(session_id)

    def waiting(self) -> int:
        return self.queue.qsize()

    def drop_waiting(self) -> int:
        """Forget the sessions not started yet (they stay 'ended' in the database)."""
        dropped = 0
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return dropped
            if item is not None:
                dropped += 1
                self._skip(item)

    def close(self, timeout: Optional[float] = None) -> None:
        for _ in self._threads:
            self.queue.put(None)
        for thread in self._threads:
            thread.join(timeout)

    def pids(self) -> list[int]:
        return []


class ThreadWorkers(ScoreWorkers):
    def __init__(self, db_path: str, context: ScoringContext, deliver: Deliver, skip: Skip, threads: int = 1):
        super().__init__(deliver, skip)
        self._db_path = db_path
        self._context = context
        self._threads = [threading.Thread(target=self._run, name=f"otel-eval-scorer-{i}", daemon=True)
                         for i in range(threads)]

    def start(self) -> "ThreadWorkers":
        for thread in self._threads:
            thread.start()
        return self

    def _run(self) -> None:
        store = Store.open_read_only(self._db_path)
        try:
            while True:
                session_id = self.queue.get()
                if session_id is None:
                    return
                try:
                    finished = score_session(store, session_id, self._context)
                except Exception:
                    log.exception("scoring session %s failed", session_id)
                    finished = None
                if finished is None:
                    self._skip(session_id)
                else:
                    self._deliver(finished)
        finally:
            store.close()


class ProcessWorkers(ScoreWorkers):
    def __init__(self, processes: int, init: dict[str, Any], deliver: Deliver, skip: Skip):
        super().__init__(deliver, skip)
        self._init = pickle.dumps(init, protocol=pickle.HIGHEST_PROTOCOL)
        self._children: list[Optional[subprocess.Popen]] = [None] * processes
        self._threads = [threading.Thread(target=self._feed, args=(i,), name=f"otel-eval-scorer-{i}", daemon=True)
                         for i in range(processes)]
        self._closing = False

    def start(self) -> "ProcessWorkers":
        # Start the children here, so a broken worker fails the engine's start, not a session later.
        for i in range(len(self._children)):
            self._children[i] = self._spawn()
        for thread in self._threads:
            thread.start()
        return self

    def pids(self) -> list[int]:
        return [c.pid for c in self._children if c is not None and c.poll() is None]

    def _spawn(self) -> subprocess.Popen:
        # The child imports otel_eval from wherever this process did, whatever its start directory.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        child = subprocess.Popen(
            [sys.executable, "-m", "otel_eval.engine.worker_process", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, env=env,
        )
        _send(child, self._init)
        return child

    def _feed(self, slot: int) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < PROCESS_BATCH:
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self.queue.put(None)  # for this thread's next round
                    break
                batch.append(item)
            child = self._children[slot]
            done = 0
            try:
                if child is None:
                    child = self._children[slot] = self._spawn()
                _send(child, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
                while done < len(batch):  # the answers come in order, a frame at a time
                    answers = pickle.loads(_receive(child))
                    for session_id, answer in zip(batch[done:], answers):
                        self._answer(session_id, answer)
                    done += len(answers)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                # The worker died (killed, out of memory). These sessions stay 'ended' in the
                # database and are scored at the next start; a fresh worker takes the next ones.
                left = batch[done:]
                log.error("score worker %s died (%s); %d session(s) left for the next start, starting a new worker",
                          child.pid if child else "?", exc, len(left))
                _stop(child)
                self._children[slot] = None
                for session_id in left:
                    self._skip(session_id)
                time.sleep(1.0)  # a worker that cannot start must not be restarted in a hot loop
                continue
        _stop(self._children[slot])
        self._children[slot] = None

    def _answer(self, session_id: str, answer: Any) -> None:
        if isinstance(answer, FinishedEvaluation):
            self._deliver(answer)
        else:
            if answer:  # an error message from the worker
                log.error("scoring session %s failed in a worker: %s", session_id, answer)
            self._skip(session_id)


def _send(child: subprocess.Popen, payload: bytes) -> None:
    assert child.stdin is not None
    child.stdin.write(struct.pack("!Q", len(payload)) + payload)
    child.stdin.flush()


def _receive(child: subprocess.Popen) -> bytes:
    assert child.stdout is not None
    return read_frame(child.stdout)


def read_frame(stream: Any) -> bytes:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("worker pipe closed")
    (size,) = struct.unpack("!Q", header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("worker pipe closed mid-message")
    return payload


def _stop(child: Optional[subprocess.Popen]) -> None:
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
