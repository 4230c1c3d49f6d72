"""Databases as an earlier otel-eval wrote them, built with the store's own migration steps (each
step is the historical definition of its version), for the tests of migrating them."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import sqlite_utils

from otel_eval.store import Store


def database_at_version(path: Path, version: int) -> Path:
    """A new database file at schema ``version`` (1 to the current one), no rows."""
    store = Store.__new__(Store)
    store.path, store.read_only = str(path), False
    store.conn = sqlite3.connect(path, isolation_level=None)
    store.db = sqlite_utils.Database(store.conn)
    store._lock = threading.RLock()
    steps = [store._create_v1, store._migrate_v2, store._migrate_v3_golden, store._migrate_v4_shared_texts,
             store._migrate_v5_rows_by_trace, store._migrate_v6_judge]
    try:
        with store.transaction():
            for step in steps[:version]:
                step()
            store.conn.execute(f"PRAGMA user_version={version}")
    finally:
        store.conn.close()
    return path
