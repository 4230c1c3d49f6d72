"""How the store runs its statements: many rows in one ``INSERT`` (:class:`RowsInsert`), many
keys looked up in one step (:func:`pairs`), and values as the JSON text the columns hold.

Every statement takes its values as parameters."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from .. import json_text


def stored_json(value: Any) -> str | None:
    """A value as the JSON text a column stores (None stays NULL)."""
    if value is None:
        return None
    if not value and type(value) in (list, dict):  # most AgentData list fields are empty
        return "[]" if type(value) is list else "{}"
    return json_text.dumps(value)


class RowsInsert:
    """One ``INSERT`` for many rows: ``head VALUES row, row, … tail``.

    ``executemany`` steps once a row, and Python's sqlite3 hands the GIL back around every step.
    When another thread runs Python on the other core (the agent's loop, in-process; gRPC
    threads decoding, in the collector) it takes the GIL at each hand-back, and the writer waits
    up to a switch interval (5 ms) to get it back: beside such a thread the writer's ingest took
    4.5 ms of wall time a span (``benchmarks.writer --busy``), against 0.22 ms this way. Here the
    rows go in batches whose sizes are powers of two (at most :data:`ROWS_PER_STATEMENT`), so a
    handful of statement texts, kept prepared by sqlite3's statement cache, serve any count.
    Rows are inserted in order, so duplicates and upserts resolve as one by one."""

    def __init__(self, head: str, row: str, tail: str = ""):
        self.head, self.row, self.tail = head, row, tail
        self.width = row.count("?")
        self._texts: dict[int, str] = {}

    def text(self, rows: int) -> str:
        """The statement for ``rows`` rows, made once per count: the same text lets sqlite3 reuse its
        prepared statement."""
        text = self._texts.get(rows)
        if text is None:
            text = self._texts[rows] = f"{self.head} VALUES {','.join([self.row] * rows)}{self.tail}"
        return text

    def run(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> int:
        """Insert ``rows``; returns how many rows the statements changed (``rowcount``)."""
        most = _rows_per_statement(conn, self.width)
        changed = 0
        at, count = 0, len(rows)
        while at < count:
            size = min(most, 1 << ((count - at).bit_length() - 1))  # the largest power of two left
            changed += conn.execute(self.text(size), list(chain.from_iterable(rows[at : at + size]))).rowcount
            at += size
        return changed


#: Rows one :class:`RowsInsert` statement takes at most (a power of two): enough that a writer
#: round of spans is a few statements, few enough that binding one stays a short GIL hold.
ROWS_PER_STATEMENT = 2048


def _max_parameters(conn: sqlite3.Connection) -> int:
    if sys.version_info >= (3, 11):
        return conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    # Python 3.10 cannot ask: SQLite's compiled-in default, 32,766 since 3.32, 999 before
    return 32766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999


def _rows_per_statement(conn: sqlite3.Connection, width: int) -> int:
    fits = max(1, min(ROWS_PER_STATEMENT, _max_parameters(conn) // max(1, width)))
    return 1 << (fits.bit_length() - 1)


def pairs(conn: sqlite3.Connection, columns: str, table: str, key: str, keys: Iterable[str]) -> list[list[Any]]:
    """``columns`` (two) of the rows of ``table`` whose ``key`` is one of ``keys``, in one step.

    The keys go in as one JSON array and the rows come back as one: the sqlite3 module hands
    the GIL back around every step (one per row fetched) and every statement it prepares (one
    per distinct number of ``?``), and the writer, which asks this every round, must not wait
    for a busy thread at each (see :class:`RowsInsert`). One text per lookup: prepared once."""
    keys = list(keys)
    if not keys:
        return []
    statement = (
        f"SELECT json_group_array(json_array({columns})) FROM {table} WHERE {key} IN (SELECT value FROM json_each(?))"
    )
    ((found,),) = conn.execute(statement, (json_text.dumps(keys),)).fetchall()
    return json_text.loads(found)
