"""INFO lines for what a user waits on: a session opened, a session scored.

Results arrive about a minute after an agent stops (the session's idle timer), and a silent
collector makes that minute look like a hang. So each session says when it opens (and when it
will be scored) and when it is scored. Under load a line per session would drown the log: past
``per_window`` lines in a ``window``, sessions are counted instead and one summary line says how
many opened and were scored meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..sessions import KEYED_BY_TRACE, Timing

log = logging.getLogger("otel_eval.engine")


class ActivityLog:
    """The engine's INFO lines about sessions, rate-limited to ``per_window`` lines a ``window`` (then counted and
    summarised)."""

    def __init__(
        self,
        timing: Timing,
        per_window: int = 20,
        window: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ):
        self._timing = timing
        self._per_window = per_window
        self._window = window
        self._clock = clock
        self._log = logger
        self._lock = threading.Lock()  # opened: the writer thread; scored: the notifier thread
        self._window_start = clock()
        self._lines = 0
        self._quiet = {"opened": 0, "scored": 0}

    def opened(self, session_id: str, keyed_by: str) -> None:
        """Say a session opened and when it will be scored (its timer's length), once its first spans are committed."""
        if keyed_by == KEYED_BY_TRACE:
            when = f"scored {self._timing.trace_quiet:g} s after its trace completes"
        else:
            when = (
                f"scored {self._timing.session_idle:g} s after its last trace completes, "
                "or as soon as it ends explicitly"
            )
        self._say("opened", "session %s opened; it will be %s", session_id, when)

    def scored(self, session_id: str, revision: int, verdict: str, case: str, score: float) -> None:
        """Say a session was scored: its revision, verdict, case and score."""
        self._say(
            "scored",
            "session %s scored (revision %d): %s, case %s, score %.2f",
            session_id,
            revision,
            verdict,
            case,
            score,
        )

    def flush(self) -> None:
        """Say what the current window held back (at shutdown)."""
        with self._lock:
            self._summarize()

    def _say(self, kind: str, message: str, *args: object) -> None:
        with self._lock:
            now = self._clock()
            if now - self._window_start >= self._window:
                self._summarize()
                self._window_start, self._lines = now, 0
            if self._lines < self._per_window:
                self._lines += 1
                self._log.info(message, *args)
            else:
                self._quiet[kind] += 1

    def _summarize(self) -> None:
        opened, scored = self._quiet["opened"], self._quiet["scored"]
        if opened or scored:
            self._log.info(
                "... and %d more session(s) opened, %d more scored (one line a session up to %d lines per %g s)",
                opened,
                scored,
                self._per_window,
                self._window,
            )
        self._quiet = {"opened": 0, "scored": 0}
