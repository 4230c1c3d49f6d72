"""Spans converted in a worker process (:mod:`otel_eval.convert_worker`): the processor's end.

In-process, converting an ended span into the row the writer stores (its raw JSON, its
convention and span type, the session it names) is ~10-25 µs of Python a span, and in a thread
of the agent's process it holds the agent's GIL all that time: beside an agent that ends spans
in a tight loop, the agent's own thread waited for it (benchmarks/README.md, "Issue 34.1").
When the user allows worker processes (``EvalSpanProcessor(convert_process=True)``, or
``score_workers`` ≥ 1), the processor sends the spans' parts (:func:`otel_eval.sdk_rows.ended_parts`,
plain values) here in batches, as one pickle each, and takes rows back the same way: this
process holds the GIL ~2 µs a span (pickling, unpickling), the conversion runs on another core.

The parent keeps every batch until its rows are back; if this process dies, the parent converts
the unanswered batches itself and goes on in its own thread (:class:`ConverterProcess`), so no
span is lost and rows stay in the order the spans ended.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger("otel_eval.processor")

#: Seconds a flush waits for the converter process to answer what it was sent before it counts
#: the process as hung, stops it and converts the rest in this process.
ANSWER_TIMEOUT = 30.0
#: Each pipe's size (Linux): ~1,000 spans of 1 KiB in flight before a side waits on the other.
PIPE_BYTES = 1 << 20

Rows = Callable[[list[Any]], None]
"""Called with each batch's rows, in order (on the reader thread, or the caller's after a failure)."""
Fallback = Callable[[list[Any]], None]
"""Converts a batch in this process (the child died or never started)."""


class ConverterProcess:
    """The parent's end: :meth:`send` batches, rows come back to ``on_rows`` on a reader thread."""

    def __init__(self, on_rows: Rows, on_errors: Callable[[list[str]], None], fallback: Fallback):
        self._on_rows = on_rows
        self._on_errors = on_errors
        self._fallback = fallback
        self._child: subprocess.Popen | None = None
        self._pending: deque[list[Any]] = deque()
        """Batches sent and not answered yet, oldest first (converted here if the child dies)."""
        self._sending = threading.Lock()
        """Held while a batch is pickled and written, so batches reach the child in order."""
        self._answered = threading.Condition()
        self._failed = False
        self._reader: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        """Whether the converter process converts (else batches are converted in this process)."""
        return self._child is not None and not self._failed

    def start(self) -> ConverterProcess:
        """Start the converter process and its reader thread; when it cannot start, batches are converted here. Returns
        itself."""
        from .engine.workers import _widen_pipe
        from .mapping import identity_attributes

        session_keys, user_keys = identity_attributes()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "otel_eval.convert_worker", str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
                env=env,
                bufsize=PIPE_BYTES,
            )
        except OSError as exc:
            log.warning("otel-eval could not start its converter process (%s); converting spans in a thread", exc)
            self._failed = True
            return self
        _widen_pipe(child.stdin)
        _widen_pipe(child.stdout)
        self._child = child
        self._write(pickle.dumps({"session_attributes": session_keys, "user_attributes": user_keys}))
        self._reader = threading.Thread(target=self._read_loop, name="otel-eval-convert-reader", daemon=True)
        self._reader.start()
        return self

    def send(self, items: list[Any]) -> None:
        """Have ``items`` converted: by the child, or here if it is gone (in order either way)."""
        with self._sending:
            if not self._failed:
                try:
                    payload = pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # a value pickle cannot take: this batch here, after those sent
                    log.debug("a batch of spans could not be pickled; converting it here", exc_info=True)
                    with self._answered:
                        self._answered.wait_for(lambda: not self._pending or self._failed, ANSWER_TIMEOUT)
                    if not self._failed and not self._pending:
                        self._fallback(items)
                        return
                    self._fail("no answer while a batch waited to be converted here")
                else:
                    with self._answered:
                        self._pending.append(items)
                    try:
                        self._write(payload)
                        return
                    except (OSError, ValueError) as exc:
                        self._fail(f"writing to it failed: {exc}")
                        self._drain_pending_here()  # this batch among them, in order
                        return
            self._drain_pending_here()  # the child died: what it was sent first, then these
            self._fallback(items)

    def wait_answered(self, timeout: float = ANSWER_TIMEOUT) -> None:
        """Until every batch sent so far has its rows back (or has been converted here)."""
        with self._answered:
            if self._answered.wait_for(lambda: not self._pending or self._failed, timeout):
                if not self._failed:
                    return
        if not self._failed:
            self._fail(f"no answer in {timeout:g} s")
        with self._sending:
            self._drain_pending_here()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the child once it has answered everything sent (converted here otherwise)."""
        self.wait_answered()
        child = self._child
        if child is None:
            return
        with self._sending:
            self._failed = True  # from now on: nothing more is sent
            try:
                if child.stdin is not None:
                    child.stdin.close()
            except OSError:
                pass
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if self._reader is not None:
            self._reader.join(timeout)
        if child.stdout is not None:
            child.stdout.close()

    def pid(self) -> int | None:
        """The converter process's id, None when there is none."""
        return self._child.pid if self._child is not None else None

    # --- internals ----------------------------------------------------------------------------

    def _write(self, payload: bytes) -> None:
        child = self._child
        assert child is not None and child.stdin is not None
        child.stdin.write(struct.pack("!Q", len(payload)) + payload)
        child.stdin.flush()

    def _read_loop(self) -> None:
        from .engine.workers import read_frame

        child = self._child
        assert child is not None and child.stdout is not None
        while True:
            try:
                rows, errors = pickle.loads(read_frame(child.stdout))
            except Exception as exc:  # EOF (the child exited or died), a broken frame
                if not self._failed:
                    self._fail(f"it stopped answering ({type(exc).__name__}: {exc})")
                    with self._sending:
                        self._drain_pending_here()
                return
            with self._answered:
                batch = self._pending.popleft() if self._pending else None
                if batch is not None:
                    # Delivered under the condition's lock: a batch the child died on (converted
                    # here by another thread) cannot overtake one it answered.
                    if errors:
                        self._on_errors(errors)
                    self._on_rows(rows)
                self._answered.notify_all()

    def _fail(self, why: str) -> None:
        if not self._failed:
            self._failed = True
            log.error("otel-eval's converter process %s: %s; converting spans in a thread from now on", self.pid(), why)
            child = self._child
            if child is not None and child.poll() is None:
                child.kill()
        with self._answered:
            self._answered.notify_all()

    def _drain_pending_here(self) -> None:
        """Convert here, in order, the batches the child has not answered (caller holds ``_sending``)."""
        with self._answered:
            while self._pending:
                self._fallback(self._pending.popleft())
            self._answered.notify_all()
