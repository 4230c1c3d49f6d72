"""SQLite storage: one :class:`Store` a connection, its parts split by what they keep.

::

    connection.py   StoreConnection: pragmas, transactions (savepoints inside one), read-only connections
    schema.py       tables at each schema version, migrations, views
    statements.py   multi-row INSERTs (RowsInsert), one-step key lookups, JSON values
    spans.py        spans, span-linked log records, traces (the ingest path)
    sessions.py     sessions and their status (open, ended, scored)
    agent_rows.py   AgentData rows, their shared texts stored once
    evaluations.py  EvaluationRows and their commit, one by one or a round's together
    judge.py        judge jobs and judge spend
    labels.py       human labels of verdicts
    feedback.py     user feedback sent as gen_ai.evaluation.result log records
    golden.py       golden sets and cases

sqlite-utils creates and migrates the schema; the ingest path writes spans, traces and sessions
with multi-row ``INSERT`` statements (faster than ``insert_all``, and unlike ``executemany`` they
do not hand the GIL back once a row). Every statement takes its values as parameters. The file is
plain SQLite in WAL mode, so Datasette, ``sqlite3`` or any BI tool can read it while the collector
writes. The views read it through :mod:`otel_eval.read`, never through a Store.
"""

from __future__ import annotations

from pathlib import Path

from . import schema
from .agent_rows import agent_data_params
from .evaluations import EvaluationRows, Evaluations
from .golden import GoldenRows
from .judge import JudgeJobs
from .labels import Labels
from .schema import SCHEMA_VERSION
from .sessions import ENDED, OPEN, SCORED, Sessions
from .spans import Spans

__all__ = ["ENDED", "OPEN", "SCHEMA_VERSION", "SCORED", "EvaluationRows", "Store", "agent_data_params"]


class Store(Spans, Sessions, Evaluations, JudgeJobs, GoldenRows, Labels):
    """One SQLite file through one connection. Not shared across threads: open one Store per
    thread. A writable Store migrates an older file when it opens it."""

    def __init__(self, path: str | Path, timeout: float = 30.0, read_only: bool = False, cache_mib: int | None = None):
        """``cache_mib``: SQLite's page cache for this connection, in MiB (None: SQLite's default, 2 MB)."""
        super().__init__(path, timeout, read_only, cache_mib)
        if not read_only:
            version = schema.outdated_version(self.conn, self.path)
            if version is not None:
                with self.transaction():
                    schema.migrate(self.conn, self.db, version)

    def counts(self) -> dict[str, int]:
        """Rows of the main tables, and sessions by status."""
        out = {}
        for table in ("spans", "agent_data", "sessions", "evaluations"):
            out[table] = self.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for status in (OPEN, ENDED, SCORED):
            out[f"sessions_{status}"] = self.conn.execute(
                "SELECT COUNT(*) FROM sessions WHERE status = ?", (status,)
            ).fetchone()[0]
        return out
