"""Databases as an earlier otel-eval wrote them, built with the store's own migration steps (each
step is the historical definition of its version), for the tests of migrating them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from otel_eval.store.schema import STEPS


def database_at_version(path: Path, version: int) -> Path:
    """A new database file at schema ``version`` (1 to the current one), no rows."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        db = sqlite_utils.Database(conn)
        conn.execute("BEGIN IMMEDIATE")
        for step in STEPS[:version]:
            step(conn, db)
        conn.execute(f"PRAGMA user_version={version}")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path
