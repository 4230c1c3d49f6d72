"""One engine per database: the engine holds an exclusive lock on ``<db>.lock`` while it runs,
so a second engine on the same file is refused instead of scoring every session twice."""

from __future__ import annotations

import os
from typing import TextIO

from ..errors import OtelEvalError


def exclusive_lock(db_path: str) -> TextIO | None:
    """Hold ``<db>.lock`` while running: two engines on one database would each end and score
    the same sessions. Readers (report, watch, Datasette) need no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no guard
        return None

    path = db_path + ".lock"
    while True:
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise OtelEvalError(
                f"{db_path}: already in use by {holder}; run one otel-eval engine per database "
                "(a second one would score sessions twice)"
            ) from None
        try:
            same_file = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same_file = False
        if same_file:
            break
        # The engine that held it removed the file between our open and our lock: lock the new one.
        handle.close()
    handle.seek(0)
    handle.truncate()
    handle.write(f"otel-eval pid {os.getpid()}\n")
    handle.flush()
    return handle


def release_lock(handle: TextIO | None) -> None:
    """Remove ``<db>.lock`` on a clean stop (a killed engine leaves it; the next start takes it
    over, since the lock is the flock, not the file). Removed while still locked, so no other
    engine can hold a lock on a file that is about to vanish (see the inode check above)."""
    if handle is None:
        return
    try:
        os.unlink(handle.name)
    except OSError:
        pass
    handle.close()
