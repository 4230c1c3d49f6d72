"""The memory bound of the receivers: one budget of request-body bytes shared by all requests.

Each export reserves its body's bytes before (HTTP, from ``Content-Length``) or as (chunked, gzip)
it reads them, and gives them back once answered. A request that does not fit is refused with
HTTP 503 + Retry-After / gRPC UNAVAILABLE, which exporters retry, instead of the process growing
until the kernel kills it. A decoded request takes a few times its body (protobuf objects, span
records), so the peak resident memory is about ``base + k × budget``; docs/collector.md has the
measured ``k``.

After a burst the C allocator keeps the freed pages: glibc raises its mmap threshold to the size
of the largest freed block, so 16 MB bodies end up in heap arenas that never shrink. When the
budget drains to zero after a burst, :func:`release_memory` hands the free pages back
(``malloc_trim``), so the resident size falls back near its idle level.
"""

from __future__ import annotations

import logging
import threading
import time

from .memory import release_memory

log = logging.getLogger("otel_eval.collector")

#: Freed bytes after which a drained budget triggers ``malloc_trim`` (small bursts are not worth it).
TRIM_AFTER_BYTES = 32 * 1024 * 1024
#: At most one trim this often: it walks every arena.
TRIM_INTERVAL_SECONDS = 1.0


class OverBudget(Exception):
    """The bytes are not available now; the request should be retried later."""


class ByteBudget:
    """Bytes of request bodies held at once, across every request and both protocols (thread-safe)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.in_use = 0
        self.peak = 0
        self.refused = 0
        self._freed_since_trim = 0
        self._last_trim = 0.0
        self._lock = threading.Lock()

    def reserve(self, size: int) -> None:
        """Take ``size`` bytes or raise :class:`OverBudget`. A single request larger than the whole
        budget is let through when nothing else is held, so a budget below the request limit
        cannot make a valid request impossible."""
        with self._lock:
            if self.in_use and self.in_use + size > self.limit:
                self.refused += 1
                raise OverBudget(
                    f"the collector is holding {self.in_use} bytes of requests (budget {self.limit}); retry later"
                )
            self.in_use += size
            self.peak = max(self.peak, self.in_use)

    def release(self, size: int) -> None:
        """Give back ``size`` bytes. When the budget drains after a burst, free heap pages go back to the
        OS (on a thread of their own: trimming a large heap takes milliseconds)."""
        with self._lock:
            self.in_use -= size
            self._freed_since_trim += size
            trim = (
                self.in_use == 0
                and self._freed_since_trim >= TRIM_AFTER_BYTES
                and time.monotonic() - self._last_trim >= TRIM_INTERVAL_SECONDS
            )
            if trim:
                self._freed_since_trim = 0
                self._last_trim = time.monotonic()
        if trim:
            # Off the request's thread: trimming a large heap takes milliseconds.
            threading.Thread(target=release_memory, name="otel-eval-trim", daemon=True).start()


class Reservation:
    """Bytes reserved for one request, given back (all at once) by :meth:`close`."""

    def __init__(self, budget: ByteBudget | None):
        self.budget = budget
        self.size = 0

    def add(self, size: int) -> None:
        """Reserve ``size`` more bytes for this request, or raise :class:`OverBudget` (nothing reserved)."""
        if self.budget is not None and size > 0:
            self.budget.reserve(size)
            self.size += size

    def close(self) -> None:
        """Give back every byte this request reserved; closing twice gives back nothing more."""
        if self.budget is not None and self.size:
            self.budget.release(self.size)
            self.size = 0

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
