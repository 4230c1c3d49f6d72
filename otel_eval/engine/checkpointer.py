"""The WAL's checkpointer: copies the WAL back into the database file from its own thread and
connection, off the one writer's path. How it got its shape, with the measurements:
benchmarks/README.md, "The WAL checkpointer"."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger("otel_eval.engine")

#: A RESTART is left at most this much to copy (with the writer held) when the checkpointer has
#: caught up: ~1/30 s of writes at full load.
CATCH_UP_BYTES = 4 * 1024 * 1024
#: PASSIVE passes at most after the one that found the WAL large: each copies what the writer
#: wrote during the one before, so the passes shrink quickly unless the disk is slow.
MAX_CATCH_UP_PASSES = 4

#: Bytes a WAL frame adds to its page (SQLite's frame header).
_WAL_FRAME_HEADER = 24


class Checkpointer:
    """Runs a PASSIVE checkpoint every ``interval`` seconds (it never waits for the writer or
    readers), so the writer's connection never checkpoints inside a commit.

    A PASSIVE checkpoint never catches up with a steady writer, and SQLite starts the WAL over
    only after one that did, so the WAL would grow without bound. When a pass finds more than
    ``restart_bytes`` of frames, this thread catches up with more PASSIVE passes (until one
    finds at most :data:`CATCH_UP_BYTES` new), then asks for a RESTART checkpoint: ``restart``,
    when given, has the writer run it from its own connection between two rounds (no race for
    the write lock); without it (beside some other writer) this thread runs it. RESTART, not
    TRUNCATE: the WAL is written over in place, truncated once, when the checkpointer stops.

    The test is the frames the WAL holds, not its file's size: SQLite starts a WAL over in place
    once every frame is copied and no reader needs them, and the file keeps the size it reached."""

    def __init__(
        self,
        db_path: str,
        interval: float = 0.5,
        restart_bytes: int = 64 * 1024 * 1024,
        restart: Callable[[], None] | None = None,
    ):
        self.db_path = db_path
        self.interval = interval
        self.restart_bytes = restart_bytes
        self.restart = restart
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otel-eval-checkpoint", daemon=True)

    def start(self) -> Checkpointer:
        """Start the checkpoint thread; returns the checkpointer."""
        self._thread.start()
        return self

    def _run(self) -> None:
        conn = sqlite3.connect(self.db_path, timeout=1.0, isolation_level=None, check_same_thread=False)
        try:
            frame_bytes = conn.execute("PRAGMA page_size").fetchone()[0] + _WAL_FRAME_HEADER
            while not self._stop.wait(self.interval):
                mode = "PASSIVE"
                try:
                    # The WAL's frames since it last started over, not its file's size: SQLite
                    # starts a WAL over in place once every frame is copied and no reader needs
                    # them, and the file keeps the size it once reached.
                    frames = _passive(conn)
                    if frames * frame_bytes <= self.restart_bytes:
                        continue
                    for _ in range(MAX_CATCH_UP_PASSES):
                        more = _passive(conn)
                        fresh, frames = more - frames, more
                        if fresh * frame_bytes <= CATCH_UP_BYTES:
                            break
                    if self.restart is not None:
                        self.restart()
                    else:
                        mode = "RESTART"
                        conn.execute("PRAGMA wal_checkpoint(RESTART)")
                except sqlite3.Error as exc:  # busy or failing disk: the next round tries again
                    log.debug("%s checkpoint of %s failed: %s", mode, self.db_path, exc)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # leave a small WAL behind
            except sqlite3.Error:
                pass
        finally:
            conn.close()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread (waiting ``timeout`` seconds at most); the WAL keeps what it has not copied back."""
        self._stop.set()
        self._thread.join(timeout)


def _passive(conn: sqlite3.Connection) -> int:
    """A PASSIVE checkpoint; returns the frames the WAL held when it started."""
    _busy, frames, _copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return int(frames)
