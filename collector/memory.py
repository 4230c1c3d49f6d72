"""The C allocator's side of the collector's memory (glibc only; elsewhere every call is a no-op).

Two things keep the resident size near what the collector really holds:

* **Fewer arenas.** Every gRPC and HTTP thread allocates request buffers and span texts with
  ``malloc``, and glibc gives each thread an arena of its own (up to eight per core). Freed
  blocks stay scattered in those arenas, so under a steady load the resident size crept up for
  minutes although nothing was kept (8 MiB/min at ~5,000 spans/s; benchmarks/README.md).
  :func:`limit_arenas`, called before the collector starts its threads, caps them at two.
* **Trimming after a burst.** glibc raises its mmap threshold to the largest block freed, so large
  request bodies end up in heap arenas that never shrink. :func:`release_memory` hands the free
  pages back (``malloc_trim`` also frees whole pages inside the arenas, not only at their tops);
  :mod:`collector.budget` calls it when the request budget drains after a burst.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

ARENAS = 2
"""glibc's ``M_ARENA_MAX`` for the collector: the receiving threads and the engine's share them."""

_M_ARENA_MAX = -8  # malloc.h


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not all(hasattr(libc, f) for f in ("gnu_get_libc_version", "malloc_trim", "mallopt")):
        return None  # musl, macOS: other allocators, nothing to tune
    return libc


def available() -> bool:
    """Whether this process's C library is glibc, so that arena limits and trimming take effect."""
    return _glibc() is not None


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (arenas already made stay). False where there is no glibc."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(_M_ARENA_MAX, arenas))


def release_memory() -> bool:
    """Give free heap pages back to the OS (glibc ``malloc_trim``); False where there is no glibc."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
