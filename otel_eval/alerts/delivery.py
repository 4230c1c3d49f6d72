"""Delivering events: a log line at once, webhooks from a background thread that never blocks the
scorer (a bounded queue, a timeout per attempt, a bounded number of retries)."""

from __future__ import annotations

import json
import logging
import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Callable

from .events import FIRING, AlertEvent

# The package's name: users' logging configuration and the tests' caplog name it.
log = logging.getLogger("otel_eval.alerts")


class Notifier:
    """Logs every event at once; posts webhooks from one background thread.

    ``retries`` extra attempts (with doubling ``backoff_s``) follow a timeout, a connection error or
    a 5xx/408/429 answer; other 4xx answers are not retried (the request itself is wrong). At most
    ``max_pending`` posts wait; more are dropped and counted, so a dead endpoint costs bounded memory.
    """

    def __init__(
        self,
        timeout: float = 5.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_pending: int = 1000,
        default_webhook: str | None = None,
        post: Callable[[str, bytes, float], int] | None = None,
    ):
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.default_webhook = default_webhook
        self._post = post or _http_post
        self._queue: queue.Queue[tuple[str, AlertEvent] | None] = queue.Queue(maxsize=max_pending)
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._start_lock = threading.Lock()
        self.sent = 0
        self.failed = 0
        self.dropped = 0

    def notify(self, event: AlertEvent) -> None:
        """Log ``event`` now and queue its webhook post; never blocks (a full queue drops the post and counts it)."""
        if event.status == FIRING:
            log.warning("%s", event.message)
        else:
            log.info("%s", event.message)
        url = event.rule.webhook or self.default_webhook
        if not url or self._closing.is_set():
            return
        self._ensure_thread()
        try:
            self._queue.put_nowait((url, event))
        except queue.Full:
            self.dropped += 1
            log.warning("alert webhook queue full: dropped the %s notification of %r", event.status, event.rule.name)

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._deliver_loop, name="otel-eval-alerts", daemon=True)
                self._thread.start()

    def _deliver_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            url, event = item
            self._deliver(url, event)

    def _deliver(self, url: str, event: AlertEvent) -> bool:
        body = json.dumps(event.payload()).encode()
        reason = ""
        for attempt in range(self.retries + 1):
            if attempt:
                # Waits on the closing flag, so shutdown is not held up by a long backoff.
                if self._closing.wait(self.backoff_s * 2 ** (attempt - 1)):
                    break
            try:
                status = self._post(url, body, self.timeout)
            except (OSError, urllib.error.URLError) as exc:
                reason = str(getattr(exc, "reason", exc))
                continue
            if 200 <= status < 300:
                self.sent += 1
                return True
            reason = f"HTTP {status}"
            if 400 <= status < 500 and status not in (408, 429):
                break
        self.failed += 1
        log.error("alert webhook %s failed for %r (%s): %s", url, event.rule.name, event.status, reason)
        return False

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued (within ``timeout``), then stop the thread."""
        if self._thread is None:
            self._closing.set()
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        self._closing.set()


def _http_post(url: str, body: bytes, timeout: float) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": "otel-eval-alerts"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
