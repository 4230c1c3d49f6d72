"""The evaluation feed: one database's stored evaluations, read incrementally.

``watch`` and the alert monitor follow the database through it (the collector's Prometheus
counters do not: the engine tells them what it stored). Each :meth:`EvaluationFeed.poll` costs
the same on a database with millions of rows as on an empty one:

* evaluations are read once, by ``id`` (SQLite's rowid, increasing with insertion): the first
  poll after :meth:`~EvaluationFeed.seek` starts at the first evaluation of the window, found by
  bisecting the rowid range on ``created_at``; later polls read only ``id > last seen``;
* superseded revisions are found with one rowid-range query (:meth:`~EvaluationFeed.superseded_since`).

The bisection relies on ids growing with time, which holds because one writer (the engine's
writer thread) appends to each table.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models.results import FAILED, NOT_EVALUATED, PASSED
from .database import DbPath, first_key_at_or_after, missing_schema, open_database
from .times import iso_utc, parse_iso

#: Numeric health metrics kept per evaluation (the keys of ``metrics.health.health_metrics``).
HEALTH_KEYS = (
    "turns",
    "tool_calls",
    "tool_errors",
    "tool_error_rate",
    "repeated_calls",
    "llm_calls",
    "steps",
    "max_turn_latency_ms",
    "session_latency_ms",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "missing_final_answer",
)
HEALTH_CRITERION = "health"


@dataclass
class EvaluationRow:
    """One stored evaluation with just what the live views use (no per-turn details)."""

    id: int
    db: str
    session_id: str
    revision: int
    case_id: str | None
    agent_version: str | None
    passed: bool
    score: float
    created_at: str
    query: str | None = None
    matched_by: str | None = None
    error: str | None = None
    superseded: bool = False
    failing: tuple[str, ...] = ()
    """Criteria that ran and did not pass (errors included), health included."""
    health: dict[str, Any] = field(default_factory=dict)
    """Numeric health metrics (:data:`HEALTH_KEYS`); empty when the health criterion did not run."""
    health_failed: bool = False
    health_reasons: tuple[str, ...] = ()
    verdict: str = ""
    """passed, failed or not_evaluated; derived from ``passed`` when not given."""
    judge_pending: bool = False
    """A judge criterion awaits its answer: the verdict is the deterministic one so far, and a
    later revision (which supersedes this one) completes it."""
    tool_path: str | None = None
    """The session's tool path (``evaluations.tool_path``), for trajectory drift."""
    created_s: float = field(init=False, default=0.0)
    """``created_at`` as epoch seconds, parsed once (windows compare it on every refresh)."""

    def __post_init__(self) -> None:
        self.created_s = parse_iso(self.created_at)
        if not self.verdict:
            self.verdict = PASSED if self.passed else FAILED

    @property
    def matched(self) -> bool:
        """The session matched a golden case."""
        return bool(self.case_id)

    @property
    def evaluated(self) -> bool:
        """Something was checked (passed or failed): only these count in pass rates and mean scores."""
        return self.verdict != NOT_EVALUATED

    @property
    def unhealthy_reasons(self) -> list[str]:
        """Why this session counts as unhealthy: a failed health criterion or any tool error."""
        reasons = list(self.health_reasons)
        if self.health_failed and not reasons:
            reasons.append("health criterion failed")
        errors = self.health.get("tool_errors") or 0
        if errors:
            reasons.append(f"{errors} tool error{'s' if errors != 1 else ''}")
        return reasons


class EvaluationFeed:
    """Reads one database's evaluations incrementally: each :meth:`poll` returns only rows stored
    since the previous one. A file that does not exist yet (the collector has not started) reads
    as empty until it appears. Safe to use from one thread at a time (callers hold their own lock)."""

    def __init__(self, path: DbPath):
        self.path = str(path)
        self.last_id = 0
        self._conn: sqlite3.Connection | None = None
        self._positioned = False
        self._since: float | None = None

    @property
    def available(self) -> bool:
        """The database file exists (the feed has a connection to it)."""
        return self.connection() is not None

    def connection(self) -> sqlite3.Connection | None:
        """The feed's read-only connection, or None while the file does not exist."""
        if self._conn is None and Path(self.path).is_file():
            self._conn = open_database(self.path)
        return self._conn

    def close(self) -> None:
        """Close the connection; a later poll opens it again."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def seek(self, since_s: float | None) -> None:
        """Start at the first evaluation created at or after ``since_s`` (None: only evaluations
        stored from now on). A database that does not exist yet is read from its first row."""
        self._since = since_s
        self._positioned = False
        self._position()

    def _position(self) -> None:
        if self._positioned:
            return
        conn = self.connection()
        if conn is None:
            return  # positioned once the file appears; everything in it is new then
        try:
            if self._since is None:
                self.last_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM evaluations").fetchone()[0]
            else:
                first = first_key_at_or_after(conn, "evaluations", "id", "created_at", iso_utc(self._since))
                if first is None:
                    self.last_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM evaluations").fetchone()[0]
                else:
                    self.last_id = first - 1
        except sqlite3.OperationalError as exc:
            if not missing_schema(exc):
                raise
            self.last_id = 0
        self._positioned = True

    def poll(self) -> list[EvaluationRow]:
        """Evaluations stored since the last poll, oldest first (superseded ones included, flagged)."""
        conn = self.connection()
        if conn is None:
            return []
        if not self._positioned:
            # The file appeared after seek(): nothing in it predates this feed.
            self._positioned = True
            self.last_id = 0
        try:
            conn.execute("BEGIN")  # one snapshot for evaluations and their criteria
            try:
                rows = conn.execute(
                    "SELECT id, session_id, revision, case_id, agent_version, passed, score, created_at, query,"
                    " matched_by, error, superseded, verdict, judge_pending, tool_path FROM evaluations"
                    " WHERE id > ? ORDER BY id",
                    (self.last_id,),
                ).fetchall()
                criteria = (
                    conn.execute(
                        "SELECT evaluation_id, criterion, passed, skipped, error,"
                        " CASE WHEN criterion = ? OR json_type(details, '$.violations') = 'array' THEN details END"
                        " FROM criterion_results WHERE evaluation_id > ? AND evaluation_id <= ? ORDER BY id",
                        (HEALTH_CRITERION, self.last_id, rows[-1][0] if rows else self.last_id),
                    ).fetchall()
                    if rows
                    else []
                )
            finally:
                conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if missing_schema(exc):
                return []
            raise
        if not rows:
            return []
        by_id: dict[int, EvaluationRow] = {}
        for r in rows:
            by_id[r[0]] = EvaluationRow(
                id=r[0],
                db=self.path,
                session_id=r[1],
                revision=r[2],
                case_id=r[3] or None,
                agent_version=r[4],
                passed=bool(r[5]),
                score=float(r[6] or 0.0),
                created_at=r[7],
                query=r[8],
                matched_by=r[9],
                error=r[10],
                superseded=bool(r[11]),
                verdict=r[12],
                judge_pending=bool(r[13]),
                tool_path=r[14],
            )
        for evaluation_id, criterion, passed, skipped, error, details in criteria:
            row = by_id.get(evaluation_id)
            if row is None or skipped:
                continue
            if not passed or error:
                row.failing = row.failing + (criterion,)
            if details is not None:
                _read_health(row, criterion, bool(passed), error, details)
        self.last_id = rows[-1][0]
        return list(by_id.values())

    def superseded_since(self, min_id: int) -> set[int]:
        """Ids ``>= min_id`` marked superseded (a later revision, or a trace moved to a named session)."""
        conn = self.connection()
        if conn is None:
            return set()
        try:
            return {
                r[0] for r in conn.execute("SELECT id FROM evaluations WHERE id >= ? AND superseded = 1", (min_id,))
            }
        except sqlite3.OperationalError as exc:
            if missing_schema(exc):
                return set()
            raise


def _read_health(row: EvaluationRow, criterion: str, passed: bool, error: str | None, details: str) -> None:
    try:
        report = json.loads(details)
    except ValueError:
        return
    if not isinstance(report, dict):
        return
    row.health = {k: report[k] for k in HEALTH_KEYS if k in report}
    if not passed or error:
        row.health_failed = True
        reasons = [
            str(v.get("reason")) for v in report.get("violations") or [] if isinstance(v, dict) and v.get("reason")
        ]
        if error:
            reasons.append(f"{criterion}: {error}")
        row.health_reasons = tuple(reasons)
