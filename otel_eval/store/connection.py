"""A Store's one SQLite connection: opened with the pragmas every connection gets (WAL,
``synchronous=NORMAL``, busy timeout, foreign keys, the page size of a new file), and its
transactions, savepoints inside one. Every part of :class:`~otel_eval.store.Store` builds on
:class:`StoreConnection`; :func:`connect_read_only` is the connection score workers and readers use."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import sqlite_utils

#: Page size of new database files. Every page a commit changes is one WAL frame (two write
#: calls) and, later, one page the checkpoint copies back: a span's row (~3 KiB of raw JSON) and
#: its index entries, or a session's AgentData rows, cost fewer frames in 16 KiB pages than in
#: SQLite's default 4 KiB. Measured with benchmarks/writer.py: the writer's CPU per ingested span
#: -10%, the checkpointer's -40%, per committed evaluation -4%.
PAGE_SIZE = 16384

_Opened = TypeVar("_Opened", bound="StoreConnection")


class StoreConnection:
    """One SQLite file through one connection. Not shared across threads: open one per thread."""

    def __init__(self, path: str | Path, timeout: float = 30.0, read_only: bool = False, cache_mib: int | None = None):
        """``cache_mib``: SQLite's page cache for this connection, in MiB (None: SQLite's default, 2 MB)."""
        self.path = str(path)
        self.timeout = timeout
        """Seconds a statement waits for a lock another connection holds (``busy_timeout``)."""
        self.read_only = read_only
        if read_only:
            # A score worker's connection: SQLite itself refuses any write through it, so a worker
            # (even one whose engine died) can never store an evaluation behind the writer's back.
            self.conn = connect_read_only(self.path, timeout)
        else:
            self.conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            # Takes effect only on a file that has no pages yet (a new database); an existing one
            # keeps its page size. See PAGE_SIZE.
            self.conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        if cache_mib:
            self.conn.execute(f"PRAGMA cache_size={-int(cache_mib) * 1024}")  # negative: KiB, not pages
        self.conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.db = sqlite_utils.Database(self.conn)
        self._lock = threading.RLock()
        self._stored_texts: set[bytes] = set()
        """Digests of ``agent_texts`` rows this connection inserted (:mod:`.agent_rows`). Any
        rollback empties it, so it only holds texts that are committed or about to be: they need
        not be sent again."""

    @classmethod
    def open_read_only(cls: type[_Opened], path: str | Path, timeout: float = 30.0) -> _Opened:
        """A connection that can only read (``mode=ro``); the database must already exist."""
        return cls(path, timeout=timeout, read_only=True)

    def close(self) -> None:
        """Closes the SQLite connection; the object cannot be used after."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; inside another one it is a savepoint, so a failing part (one
        client's batch, one evaluation) rolls back alone and the rest of the group still commits."""
        with self._lock:
            if self.conn.in_transaction:
                self.conn.execute("SAVEPOINT part")
                try:
                    yield self.conn
                except BaseException:
                    # SQLite ends the whole transaction itself on some errors (disk full, I/O):
                    # then there is no savepoint to return to, and the caller must see that.
                    self._stored_texts.clear()  # which of them were rolled back is not tracked
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK TO part")
                        self.conn.execute("RELEASE part")
                    raise
                else:
                    self.conn.execute("RELEASE part")
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                self._stored_texts.clear()
                if self.conn.in_transaction:  # a failed COMMIT (disk full) leaves it open
                    self.conn.execute("ROLLBACK")
                raise


def connect_read_only(path: str | Path, timeout: float = 30.0) -> sqlite3.Connection:
    """The one read-only connection (``mode=ro``: SQLite itself refuses any write through it) that
    score workers and every reader (:mod:`otel_eval.read`) use. The file must exist. Autocommit,
    so a reader holds a snapshot only inside a ``BEGIN`` of its own and never blocks the writer's
    checkpoints longer; usable from any thread (callers keep to one at a time)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"  # as_uri escapes '?', '#' and '%' in the path
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    return conn
