"""The collector's driver: reads new evaluations from the database(s) and evaluates the rules on
its own thread, woken by the engine and every few seconds."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..read.feed import EvaluationFeed
from .delivery import Notifier
from .evaluation import AlertEvaluator
from .events import AlertEvent
from .rules import load_rules

# The package's name: users' logging configuration and the tests' caplog name it.
log = logging.getLogger("otel_eval.alerts")


class AlertMonitor:
    """Reads new evaluations from the database(s) and evaluates the rules, on its own thread.

    :meth:`wake` (an engine listener: it only sets a flag) makes it look at once; otherwise it looks
    every ``poll_s`` seconds, which also lets windows slide when no session is scored."""

    def __init__(self, evaluator: AlertEvaluator, db_paths: Sequence[str], poll_s: float = 5.0):
        self.evaluator = evaluator
        self.feeds = [EvaluationFeed(p) for p in db_paths]
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._positioned = False

    @classmethod
    def from_config(
        cls,
        tables: Sequence[Mapping[str, Any]],
        db_paths: Sequence[str],
        source: str = "alerts",
        poll_s: float = 5.0,
        notifier: Notifier | None = None,
    ) -> AlertMonitor:
        """The monitor of the collector's ``[[alerts]]`` tables (validated here) over ``db_paths``."""
        rules = load_rules(tables, source)
        return cls(AlertEvaluator(rules, notifier or Notifier()), db_paths, poll_s)

    def check(self, now: float | None = None) -> list[AlertEvent]:
        """Read what is new and evaluate once; returns the state changes."""
        now = time.time() if now is None else now
        with self._lock:
            if not self._positioned:
                for feed in self.feeds:
                    feed.seek(now - self.evaluator.horizon_s)
                self._positioned = True
            for feed in self.feeds:
                self.evaluator.observe_many(feed.poll())
            return self.evaluator.evaluate(now)

    def wake(self, *_: Any) -> None:
        """Look now (an engine listener: it only sets a flag, so the writer is never held up)."""
        self._wake.set()

    def start(self) -> AlertMonitor:
        """Start the monitor's thread (once); returns the monitor."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="otel-eval-alert-monitor", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception:  # a locked or broken database must not end alerting for good
                log.exception("alert check failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """A last check (so a final result still alerts), then stop and flush webhooks."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        try:
            self.check()
        except Exception:
            log.exception("final alert check failed")
        for feed in self.feeds:
            feed.close()
        if self.evaluator.notifier is not None:
            self.evaluator.notifier.close(timeout)
