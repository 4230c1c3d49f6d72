"""The schema: the tables at each version (``PRAGMA user_version``), the migrations from every
older one, and the views (``agent_data``, ``trajectory_evaluations``, ``daily_pass_rate``).

sqlite-utils creates the tables; a migration runs in the opening Store's transaction, so a file
is either migrated whole or left as it was. The file stays plain SQLite: Datasette, ``sqlite3``
or any BI tool reads it as is."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from itertools import groupby
from typing import Any

import sqlite_utils

from ..models.results import CriterionResult, verdict_of
from .agent_rows import AGENT_DATA_COLUMNS, AGENT_DATA_FIELDS, AGENT_ROW_COLUMNS, SHARED_TEXT_FIELDS, text_digest
from .evaluations import health_details
from .sessions import OPEN

SCHEMA_VERSION = 7


def outdated_version(conn: sqlite3.Connection, path: str) -> int | None:
    """The file's schema version when it is older than :data:`SCHEMA_VERSION` (0: no schema yet),
    None when it is current. A newer version is a RuntimeError naming the file."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(f"{path}: database schema version {version} is newer than this otel-eval ({SCHEMA_VERSION})")
    return None if version == SCHEMA_VERSION else version


def migrate(conn: sqlite3.Connection, db: sqlite_utils.Database, version: int) -> None:
    """From ``version`` to :data:`SCHEMA_VERSION`, in the caller's transaction; the views are
    created again as this version defines them."""
    for step in STEPS[version:]:
        step(conn, db)
    _create_views(conn, db)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _create_v1(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    db.table("spans").create(
        {
            "trace_id": str,
            "span_id": str,
            "parent_span_id": str,
            "session_id": str,
            "name": str,
            "kind": str,
            "status": str,
            "start_ns": int,
            "end_ns": int,
            "received_ns": int,
            "convention": str,
            "span_type": str,
            "raw": str,
        },
        pk=("trace_id", "span_id"),
        if_not_exists=True,
    )
    db.table("spans").create_index(["session_id"], if_not_exists=True)
    columns: dict[str, Any] = {"id": int, "trace_id": str, "span_id": str, "session_id": str, "level": str}
    for name in AGENT_DATA_FIELDS:
        columns[name] = int if name == "agent_exit" else str
    db.table("agent_data").create(columns, pk="id", if_not_exists=True)
    db.table("agent_data").create_index(["trace_id", "span_id", "level"], unique=True, if_not_exists=True)
    db.table("agent_data").create_index(["session_id"], if_not_exists=True)
    db.table("log_events").create(
        {
            "trace_id": str,
            "span_id": str,
            "time_ns": int,
            "event_name": str,
            "body": str,
            "attributes": str,
            "received_ns": int,
        },
        pk=("trace_id", "span_id", "time_ns", "event_name"),
        if_not_exists=True,
    )
    db.table("traces").create(
        {
            "trace_id": str,
            "session_id": str,
            "root_span_id": str,
            "start_ns": int,
            "end_ns": int,
            "span_count": int,
            "first_received_ns": int,
            "last_received_ns": int,
        },
        pk="trace_id",
        if_not_exists=True,
    )
    db.table("traces").create_index(["session_id"], if_not_exists=True)
    db.table("sessions").create(
        {
            "session_id": str,
            "status": str,
            "keyed_by": str,
            "first_received_ns": int,
            "last_received_ns": int,
            "end_requested": int,
            "ended_ns": int,
            "end_reason": str,
            "revision": int,
            "span_count": int,
            "trace_count": int,
            "user_id": str,
            "agent_version": str,
            "service_name": str,
            "query": str,
        },
        pk="session_id",
        if_not_exists=True,
        defaults={"status": OPEN, "end_requested": 0, "revision": 0, "span_count": 0, "trace_count": 0},
    )
    db.table("sessions").create_index(["status"], if_not_exists=True)
    db.table("golden_cases").create(
        {
            "eval_set_id": str,
            "eval_id": str,
            "name": str,
            "query": str,
            "source": str,
            "file_hash": str,
            "case_json": str,
            "loaded_at": str,
        },
        pk=("eval_set_id", "eval_id"),
        if_not_exists=True,
    )
    db.table("evaluations").create(
        {
            "id": int,
            "session_id": str,
            "revision": int,
            "case_id": str,
            "eval_set_id": str,
            "matched_by": str,
            "match_score": float,
            "passed": int,
            "score": float,
            "created_at": str,
            "superseded": int,
            "config_hash": str,
            "agent_version": str,
            "query": str,
            "expected_tool": str,
            "actual_tool": str,
            "expected_table": str,
            "actual_table": str,
            "sql_generated": int,
            "error": str,
            "details": str,
        },
        pk="id",
        if_not_exists=True,
        defaults={"superseded": 0},
    )
    db.table("evaluations").create_index(["session_id", "revision"], unique=True, if_not_exists=True)
    db.table("evaluations").create_index(["case_id"], if_not_exists=True)
    db.table("criterion_results").create(
        {
            "id": int,
            "evaluation_id": int,
            "criterion": str,
            "score": float,
            "passed": int,
            "threshold": float,
            "skipped": int,
            "error": str,
            "details": str,
        },
        pk="id",
        foreign_keys=[("evaluation_id", "evaluations", "id")],
        if_not_exists=True,
    )
    db.table("criterion_results").create_index(["evaluation_id"], if_not_exists=True)


def _migrate_v2(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """The verdict column (passed | failed | not_evaluated). Stored evaluations get the verdict
    their stored criteria give under the current rule, so a session whose every criterion was
    skipped, once stored as passed, becomes not_evaluated; ``passed`` follows the verdict.
    Skipped criteria and not-evaluated sessions lose their placeholder 0.0 score (NULL)."""
    conn.execute("ALTER TABLE evaluations ADD COLUMN verdict TEXT")
    rows = conn.execute(
        "SELECT e.id, e.error, c.passed, c.skipped, c.error, c.details FROM evaluations e"
        " LEFT JOIN criterion_results c ON c.evaluation_id = e.id ORDER BY e.id, c.id"
    )
    updates = []
    for evaluation_id, group in groupby(rows, key=lambda r: r[0]):
        members = list(group)
        criteria = [
            CriterionResult(
                criterion="",
                score=0.0,
                threshold=0.0,
                passed=bool(passed),
                skipped=bool(skipped),
                error=error,
                details=health_details(details),
            )
            for _, _, passed, skipped, error, details in members
            if skipped is not None
        ]
        verdict = "failed" if members[0][1] else verdict_of(criteria)
        updates.append((verdict, int(verdict == "passed"), evaluation_id))
    conn.executemany("UPDATE evaluations SET verdict = ?, passed = ? WHERE id = ?", updates)
    conn.execute("UPDATE evaluations SET score = NULL WHERE verdict = 'not_evaluated'")
    conn.execute("UPDATE criterion_results SET score = NULL WHERE skipped = 1")
    db.table("evaluations").create_index(["verdict"], if_not_exists=True)


def _migrate_v3_golden(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """Golden cases are keyed by (eval_set_id, source, eval_id), as golden sets are by
    (eval_set_id, source): two files whose sets share an id (two ``cases.json`` in different
    folders, loaded in different runs) no longer overwrite each other's rows. ``golden_sets``
    (until now created on first use) exists from here on, with the set's own ``criteria``."""
    conn.execute("ALTER TABLE golden_cases RENAME TO golden_cases_v2")
    db.table("golden_cases").create(
        {
            "eval_set_id": str,
            "source": str,
            "eval_id": str,
            "name": str,
            "query": str,
            "file_hash": str,
            "case_json": str,
            "loaded_at": str,
        },
        pk=("eval_set_id", "source", "eval_id"),
    )
    conn.execute(
        "INSERT INTO golden_cases (eval_set_id, source, eval_id, name, query, file_hash, case_json, loaded_at)"
        " SELECT eval_set_id, COALESCE(source, ''), eval_id, name, query, file_hash, case_json, loaded_at"
        " FROM golden_cases_v2 ORDER BY rowid"
    )
    conn.execute("DROP TABLE golden_cases_v2")
    if db["golden_sets"].exists():
        conn.execute("ALTER TABLE golden_sets ADD COLUMN criteria TEXT")
    else:
        db.table("golden_sets").create(
            {
                "eval_set_id": str,
                "source": str,
                "name": str,
                "description": str,
                "criteria": str,
                "metadata": str,
                "saved_at": str,
            },
            pk=("eval_set_id", "source"),
        )


def _migrate_v4_shared_texts(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """AgentData rows keep a digest of their system prompt and tool schemas, and
    ``agent_texts`` each distinct text once: stored on every LLM span's row they were about
    two thirds of the bytes a scored session writes. ``agent_data`` becomes a view with the
    columns it had, so every query of it (Datasette's too) reads the same."""
    conn = conn
    conn.create_function(
        "otel_eval_digest", 1, lambda text: None if text is None else text_digest(text), deterministic=True
    )
    conn.execute("CREATE TABLE agent_texts (digest BLOB PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID")
    columns = ", ".join(
        f"[{c}_digest] BLOB" if c in SHARED_TEXT_FIELDS else f"[{c}] {_column_type(c)}" for c in AGENT_DATA_COLUMNS
    )
    conn.execute(f"CREATE TABLE agent_data_rows ([id] INTEGER PRIMARY KEY, {columns})")
    for name in SHARED_TEXT_FIELDS:
        conn.execute(
            f"INSERT OR IGNORE INTO agent_texts (digest, text) SELECT otel_eval_digest({name}), {name}"
            f" FROM agent_data WHERE {name} IS NOT NULL"
        )
    sources = ", ".join(f"otel_eval_digest({c})" if c in SHARED_TEXT_FIELDS else c for c in AGENT_DATA_COLUMNS)
    conn.execute(
        f"INSERT INTO agent_data_rows (id, {', '.join(AGENT_ROW_COLUMNS)})"
        f" SELECT id, {sources} FROM agent_data ORDER BY id"
    )
    conn.execute("DROP TABLE agent_data")
    conn.execute(
        "CREATE UNIQUE INDEX idx_agent_data_rows_trace_id_span_id_level ON agent_data_rows (trace_id, span_id, level)"
    )
    conn.execute("CREATE INDEX idx_agent_data_rows_session_id ON agent_data_rows (session_id)")


def _migrate_v5_rows_by_trace(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """``spans`` and ``agent_data_rows`` lose their ``session_id`` indexes: a session's rows
    are found through ``traces`` (``session_id`` → ``trace_id``, the leading column of the
    key each of them needs anyway). Session ids are as random as trace ids, so each index
    cost every session one more random leaf page per batch: on a database of a few thousand
    sessions a fifth of the writer's time per evaluation, and with random ids a tenth of its
    time per span (benchmarks/README.md, issue 11, ninth pass)."""
    conn.execute("DROP INDEX IF EXISTS idx_agent_data_rows_session_id")
    conn.execute("DROP INDEX IF EXISTS idx_spans_session_id")


def _migrate_v6_judge(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """The judge pool's state (issue 30). ``evaluations.judge_pending``: judge criteria this
    revision waits for (0: complete; stored evaluations are complete). ``judge_jobs``: the
    judge work of each pending revision (keyed by its evaluation id), kept until answered so a
    restart resumes it; ``outcome_evaluation_id`` is the revision that recorded the outcome.
    ``judge_usage``: calls and tokens spent, for the spend caps across restarts."""
    conn.execute("ALTER TABLE evaluations ADD COLUMN judge_pending INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS judge_jobs (evaluation_id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,"
        " status TEXT NOT NULL, request TEXT NOT NULL, created_at REAL NOT NULL, finished_at REAL,"
        " outcome_evaluation_id INTEGER, backfilled INTEGER NOT NULL DEFAULT 0)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS idx_judge_jobs_status ON judge_jobs (status)")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS judge_usage (id INTEGER PRIMARY KEY, at REAL NOT NULL, criterion TEXT NOT NULL,"
        " calls INTEGER NOT NULL, tokens INTEGER NOT NULL)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS idx_judge_usage_at ON judge_usage (at)")


def _migrate_v7_labels(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """Human labels and user feedback (issue 33.5), and room for a session's tool path.

    ``labels``: a reviewer's word on a session's verdict, ``agree`` or ``disagree``, with a note,
    who and when, and what was labelled (the evaluation, its revision, verdict and case); every
    label is kept, the latest of a session counts (otel_eval.read.labels). ``feedback``: the
    ``gen_ai.evaluation.result`` log records an application sent about its sessions
    (otel_eval.user_feedback), with the semantic-convention fields in columns and every attribute
    kept; ``session_id`` is the one the record named, else the session is found through
    ``trace_id``; a retried export is stored once. ``evaluations.tool_path``: the session's
    sequence of tool calls, written by the scorer (NULL until then and for older rows)."""
    conn.execute(
        "CREATE TABLE labels (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, evaluation_id INTEGER,"
        " revision INTEGER, verdict TEXT NOT NULL, case_id TEXT,"
        " label TEXT NOT NULL CHECK (label IN ('agree', 'disagree')), note TEXT, who TEXT NOT NULL,"
        " source TEXT NOT NULL, created_at TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX idx_labels_session_id ON labels (session_id, id)")
    conn.execute(
        "CREATE TABLE feedback (id INTEGER PRIMARY KEY, session_id TEXT, trace_id TEXT NOT NULL DEFAULT '',"
        " span_id TEXT NOT NULL DEFAULT '', name TEXT, score REAL, label TEXT, explanation TEXT, response_id TEXT,"
        " time_ns INTEGER NOT NULL, received_ns INTEGER NOT NULL, attributes TEXT, body TEXT)"
    )
    conn.execute(
        "CREATE UNIQUE INDEX idx_feedback_record ON feedback"
        " (trace_id, span_id, time_ns, COALESCE(name, ''), COALESCE(session_id, ''))"
    )
    conn.execute("CREATE INDEX idx_feedback_session_id ON feedback (session_id)")
    conn.execute("CREATE INDEX idx_feedback_trace_id ON feedback (trace_id)")
    conn.execute("ALTER TABLE evaluations ADD COLUMN tool_path TEXT")


def _create_views(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
    """The views at this schema version, replacing older definitions."""
    for view in ("trajectory_evaluations", "daily_pass_rate", "agent_data"):
        conn.execute(f"DROP VIEW IF EXISTS {view}")
    selected = ", ".join(f"{c}_text.text AS {c}" if c in SHARED_TEXT_FIELDS else f"r.{c}" for c in AGENT_DATA_COLUMNS)
    joins = " ".join(f"LEFT JOIN agent_texts {c}_text ON {c}_text.digest = r.{c}_digest" for c in SHARED_TEXT_FIELDS)
    conn.execute(f"CREATE VIEW agent_data AS SELECT r.id, {selected} FROM agent_data_rows r {joins}")
    # Deleting through the view (a user pruning rows) deletes the row; its shared texts stay.
    conn.execute(
        "CREATE TRIGGER agent_data_delete INSTEAD OF DELETE ON agent_data"
        " BEGIN DELETE FROM agent_data_rows WHERE id = OLD.id; END"
    )
    db.create_view(
        "trajectory_evaluations",
        """
        SELECT e.id AS evaluation_id, e.session_id, e.query AS test_query,
               e.expected_tool, e.actual_tool, e.expected_table, e.actual_table, e.sql_generated,
               (SELECT c.passed FROM criterion_results c
                 WHERE c.evaluation_id = e.id AND c.criterion = 'tool_selection' AND c.skipped = 0)
                 AS tool_selection_correct,
               (SELECT c.passed FROM criterion_results c
                 WHERE c.evaluation_id = e.id AND c.criterion = 'table_usage' AND c.skipped = 0)
                 AS table_usage_correct,
               (SELECT c.passed FROM criterion_results c
                 WHERE c.evaluation_id = e.id AND c.criterion = 'sql_generation' AND c.skipped = 0)
                 AS sql_generation_correct,
               e.created_at AS evaluation_timestamp, e.config_hash AS evaluator_config, e.verdict
          FROM evaluations e
         WHERE e.superseded = 0 AND e.case_id IS NOT NULL
        """,
    )
    # not_evaluated sessions are counted apart, outside the pass rate and the mean score.
    db.create_view(
        "daily_pass_rate",
        """
        SELECT substr(created_at, 1, 10) AS day, case_id, agent_version,
               COUNT(*) AS evaluations, SUM(verdict = 'passed') AS passed, SUM(verdict = 'failed') AS failed,
               SUM(verdict = 'not_evaluated') AS not_evaluated,
               ROUND(1.0 * SUM(verdict = 'passed') / NULLIF(SUM(verdict != 'not_evaluated'), 0), 4) AS pass_rate,
               ROUND(AVG(score), 4) AS avg_score
          FROM evaluations
         WHERE superseded = 0 AND case_id IS NOT NULL
         GROUP BY day, case_id, agent_version
        """,
    )


#: The step to each version from the one before (``STEPS[0]`` creates version 1): each the
#: historical definition of its version, so a test can build a file as an older otel-eval wrote it.
STEPS: tuple[Callable[[sqlite3.Connection, sqlite_utils.Database], None], ...] = (
    _create_v1,
    _migrate_v2,
    _migrate_v3_golden,
    _migrate_v4_shared_texts,
    _migrate_v5_rows_by_trace,
    _migrate_v6_judge,
    _migrate_v7_labels,
)
assert len(STEPS) == SCHEMA_VERSION


def _column_type(name: str) -> str:
    return "INTEGER" if name == "agent_exit" else "TEXT"
