"""Opening a database to read it: the one way every reader does it.

Read-only (``mode=ro``, :func:`otel_eval.store.connection.connect_read_only`), so a view can never
write and never holds the writer up beyond what any WAL reader does; a file an older otel-eval wrote
is migrated first (:func:`upgrade_if_older`), so every query here may assume the
current schema; rows come back as :class:`sqlite3.Row` (by index or by column name).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..store import SCHEMA_VERSION, Store
from ..store.connection import connect_read_only

DbPath = str | Path

#: Seconds a reader waits on a lock before SQLite gives up (the writer holds one for milliseconds).
READ_TIMEOUT_S = 5.0


def open_database(path: DbPath, timeout: float = READ_TIMEOUT_S) -> sqlite3.Connection:
    """A read-only connection to an otel-eval database. :class:`InputError` naming the file when
    it does not exist (a reader never creates one) or is not an SQLite database."""
    if not Path(path).is_file():
        raise InputError(str(path), "database file not found")
    try:
        conn = connect_read_only(path, timeout)
    except sqlite3.Error as exc:
        raise InputError(str(path), f"cannot open database: {exc}") from None
    try:
        upgrade_if_older(conn, path)
    except sqlite3.OperationalError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:  # "file is not a database"
        conn.close()
        raise InputError(str(path), f"not an otel-eval database ({exc})") from None
    except BaseException:
        conn.close()
        raise
    conn.row_factory = sqlite3.Row
    return conn


def open_store(path: DbPath, timeout: float = READ_TIMEOUT_S) -> Store:
    """A read-only :class:`Store`, for the engine's own reads (:func:`otel_eval.pipeline.load_session`);
    the same checks and migration as :func:`open_database`."""
    open_database(path, timeout).close()
    return Store.open_read_only(path, timeout)


def upgrade_if_older(conn: sqlite3.Connection, path: str | Path) -> None:
    """Readers open the file read-only; a file an older otel-eval wrote (schema version below
    :data:`SCHEMA_VERSION`) is migrated first, with one writable open. Version 0 (no schema yet:
    the collector has not started) is left for the collector to create."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if not 0 < version < SCHEMA_VERSION:
        return
    try:
        Store(path).close()
    except sqlite3.Error as exc:
        raise InputError(
            str(path),
            f"database schema version {version} is older than this otel-eval's "
            f"({SCHEMA_VERSION}) and migrating it failed: {exc}",
        ) from None


def named_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
    """``sql``'s rows as :class:`sqlite3.Row` (by index or column name) on any connection, a
    plain one too, whatever its own ``row_factory``."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor.execute(sql, params)


def require_tables(conn: sqlite3.Connection, path: DbPath) -> None:
    """:class:`InputError` unless the file has the otel-eval tables (a collector that never
    started leaves none)."""
    try:
        conn.execute("SELECT 1 FROM sessions LIMIT 1")
    except sqlite3.DatabaseError as exc:
        raise InputError(str(path), f"not an otel-eval database ({exc})") from None


def missing_schema(exc: sqlite3.OperationalError) -> bool:
    """The file exists but the collector has not created the tables yet."""
    return "no such table" in str(exc)


def first_key_at_or_after(conn: sqlite3.Connection, table: str, key: str, column: str, value: Any) -> int | None:
    """Smallest ``key`` (an integer rowid) whose row has ``column >= value``, assuming ``column``
    grows with ``key``; None when no row qualifies. O(log n) indexed lookups, no table scan.
    ``table``, ``key`` and ``column`` are this package's own names, never user input."""
    lo, hi = conn.execute(f"SELECT MIN({key}), MAX({key}) FROM {table}").fetchone()
    if lo is None:
        return None
    last = conn.execute(f"SELECT {column} FROM {table} WHERE {key} = ?", (hi,)).fetchone()
    if last is None or last[0] is None or last[0] < value:
        return None
    probe = f"SELECT {key}, {column} FROM {table} WHERE {key} >= ? ORDER BY {key} LIMIT 1"
    while lo < hi:
        mid = (lo + hi) // 2
        found_key, found_value = conn.execute(probe, (mid,)).fetchone()
        if found_value is not None and found_value >= value:
            hi = mid
        else:
            lo = found_key + 1
    first: int = conn.execute(probe, (lo,)).fetchone()[0]
    return first
