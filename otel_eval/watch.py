"""``otel-eval watch``: a live terminal view of what the evaluator is finding, read from SQLite only.

The view polls the database file(s) the collector writes; it never talks to the collector. Each
refresh is incremental, so a database with millions of spans costs the same per refresh as an
empty one:

* evaluations are read once, by ``id`` (SQLite's rowid, increasing with insertion): the first
  refresh finds the first evaluation of the window by bisecting the rowid range on ``created_at``,
  later refreshes read only ``id > last seen``; the window is kept in memory and expired by time;
* superseded revisions are found with one rowid-range query over the window;
* the ingest rate bisects ``spans`` on ``received_ns`` by rowid and counts the recent range only.

Both bisections rely on ids growing with time, which holds because one writer (the engine's
writer thread for spans, its scorer thread for evaluations) appends to each table.

:class:`EvaluationFeed` (incremental reader of one database) is shared with the alert monitor
and the collector's Prometheus metrics. :func:`snapshot` returns a JSON-ready dict (the shape is
documented in ``docs/monitoring.md``); :func:`render` draws it with rich.
"""

from __future__ import annotations

import argparse
import calendar
import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from .backlog import Backlog, describe, read_backlog
from .errors import InputError
from .models.results import FAILED, NOT_EVALUATED, PASSED
from .sessions import Timing
from .store import upgrade_if_older

DbPath = Union[str, Path]

DEFAULT_WINDOW_MINUTES = 60.0
DEFAULT_REFRESH_SECONDS = 2.0
#: The ingest rate covers at most this many seconds (a rate over an hour hides a stalled exporter).
RATE_WINDOW_S = 60.0
#: Rows shown in each list of the view (latest, unmatched, unhealthy).
LIST_LIMIT = 10

#: Numeric health metrics kept per evaluation (the keys of ``metrics.health.health_metrics``).
HEALTH_KEYS = (
    "turns", "tool_calls", "tool_errors", "tool_error_rate", "repeated_calls", "llm_calls", "steps",
    "max_turn_latency_ms", "session_latency_ms", "input_tokens", "output_tokens", "total_tokens",
    "missing_final_answer",
)
HEALTH_CRITERION = "health"


# --- time ------------------------------------------------------------------------------------

def iso_utc(epoch_s: float) -> str:
    """The store's ``created_at`` format, so window bounds compare as strings."""
    millis = int(round(epoch_s * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"


def parse_iso(text: str) -> float:
    """``2026-01-02T03:04:05.678Z`` (fraction optional) → epoch seconds."""
    base = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    fraction = text[19:].rstrip("Z")
    return base + (float("0" + fraction) if fraction.startswith(".") else 0.0)


# --- one evaluation, as the live views need it -------------------------------------------------

@dataclass
class EvaluationRow:
    """One stored evaluation with just what the live views use (no per-turn details)."""

    id: int
    db: str
    session_id: str
    revision: int
    case_id: Optional[str]
    agent_version: Optional[str]
    passed: bool
    score: float
    created_at: str
    query: Optional[str] = None
    matched_by: Optional[str] = None
    error: Optional[str] = None
    superseded: bool = False
    failing: tuple[str, ...] = ()
    """Criteria that ran and did not pass (errors included), health included."""
    health: dict[str, Any] = field(default_factory=dict)
    """Numeric health metrics (:data:`HEALTH_KEYS`); empty when the health criterion did not run."""
    health_failed: bool = False
    health_reasons: tuple[str, ...] = ()
    verdict: str = ""
    """passed, failed or not_evaluated; derived from ``passed`` when not given."""
    created_s: float = field(init=False, default=0.0)
    """``created_at`` as epoch seconds, parsed once (windows compare it on every refresh)."""

    def __post_init__(self) -> None:
        self.created_s = parse_iso(self.created_at)
        if not self.verdict:
            self.verdict = PASSED if self.passed else FAILED

    @property
    def matched(self) -> bool:
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


def _connect_ro(path: str) -> Optional[sqlite3.Connection]:
    """Read-only connection, or None while the file does not exist (the collector has not started)."""
    if not Path(path).exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0, check_same_thread=False,
                           isolation_level=None)
    conn.execute("PRAGMA busy_timeout=5000")
    upgrade_if_older(conn, path)
    return conn


def _missing_schema(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


def first_key_at_or_after(conn: sqlite3.Connection, table: str, key: str, column: str, value: Any) -> Optional[int]:
    """Smallest ``key`` (an integer rowid) whose row has ``column >= value``, assuming ``column``
    grows with ``key``; None when no row qualifies. O(log n) indexed lookups, no table scan."""
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
    return conn.execute(probe, (lo,)).fetchone()[0]


class EvaluationFeed:
    """Reads one database's evaluations incrementally: each :meth:`poll` returns only rows stored
    since the previous one. Safe to use from one thread at a time (callers hold their own lock)."""

    def __init__(self, path: DbPath):
        self.path = str(path)
        self.last_id = 0
        self._conn: Optional[sqlite3.Connection] = None
        self._positioned = False
        self._since: Optional[float] = None

    @property
    def available(self) -> bool:
        return self._connection() is not None

    def _connection(self) -> Optional[sqlite3.Connection]:
        if self._conn is None:
            self._conn = _connect_ro(self.path)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def seek(self, since_s: Optional[float]) -> None:
        """Start at the first evaluation created at or after ``since_s`` (None: only evaluations
        stored from now on). A database that does not exist yet is read from its first row."""
        self._since = since_s
        self._positioned = False
        self._position()

    def _position(self) -> None:
        if self._positioned:
            return
        conn = self._connection()
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
            if not _missing_schema(exc):
                raise
            self.last_id = 0
        self._positioned = True

    def poll(self) -> list[EvaluationRow]:
        """Evaluations stored since the last poll, oldest first (superseded ones included, flagged)."""
        conn = self._connection()
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
                    " matched_by, error, superseded, verdict FROM evaluations WHERE id > ? ORDER BY id",
                    (self.last_id,),
                ).fetchall()
                criteria = conn.execute(
                    "SELECT evaluation_id, criterion, passed, skipped, error,"
                    " CASE WHEN criterion = ? OR json_type(details, '$.violations') = 'array' THEN details END"
                    " FROM criterion_results WHERE evaluation_id > ? AND evaluation_id <= ? ORDER BY id",
                    (HEALTH_CRITERION, self.last_id, rows[-1][0] if rows else self.last_id),
                ).fetchall() if rows else []
            finally:
                conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if _missing_schema(exc):
                return []
            raise
        if not rows:
            return []
        by_id: dict[int, EvaluationRow] = {}
        for r in rows:
            by_id[r[0]] = EvaluationRow(
                id=r[0], db=self.path, session_id=r[1], revision=r[2], case_id=r[3] or None, agent_version=r[4],
                passed=bool(r[5]), score=float(r[6] or 0.0), created_at=r[7], query=r[8], matched_by=r[9],
                error=r[10], superseded=bool(r[11]), verdict=r[12],
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
        conn = self._connection()
        if conn is None:
            return set()
        try:
            return {r[0] for r in conn.execute(
                "SELECT id FROM evaluations WHERE id >= ? AND superseded = 1", (min_id,))}
        except sqlite3.OperationalError as exc:
            if _missing_schema(exc):
                return set()
            raise


def _read_health(row: EvaluationRow, criterion: str, passed: bool, error: Optional[str], details: str) -> None:
    try:
        report = json.loads(details)
    except ValueError:
        return
    if not isinstance(report, dict):
        return
    row.health = {k: report[k] for k in HEALTH_KEYS if k in report}
    if not passed or error:
        row.health_failed = True
        reasons = [str(v.get("reason")) for v in report.get("violations") or [] if isinstance(v, dict) and v.get("reason")]
        if error:
            reasons.append(f"{criterion}: {error}")
        row.health_reasons = tuple(reasons)


# --- the window --------------------------------------------------------------------------------

class Watcher:
    """Keeps the sliding window of current evaluations of several databases up to date."""

    def __init__(self, db_paths: Sequence[DbPath], window_s: float, rate_window_s: float = RATE_WINDOW_S,
                 limit: int = LIST_LIMIT, timing: Optional[Timing] = None):
        if window_s <= 0:
            raise ValueError("window must be positive")
        self.paths = [str(p) for p in db_paths]
        self.window_s = float(window_s)
        self.rate_window_s = min(float(rate_window_s), self.window_s)
        self.limit = limit
        self.timing = timing or Timing()
        """The writer's session timing, to tell when the next open session is due."""
        self.feeds = {p: EvaluationFeed(p) for p in self.paths}
        self._rows: dict[str, dict[int, EvaluationRow]] = {p: {} for p in self.paths}
        self._started = False
        self._lock = threading.Lock()

    def close(self) -> None:
        for feed in self.feeds.values():
            feed.close()

    def refresh(self, now: float) -> None:
        cutoff = now - self.window_s
        if not self._started:
            for feed in self.feeds.values():
                feed.seek(cutoff)
            self._started = True
        for path, feed in self.feeds.items():
            window = self._rows[path]
            for row in feed.poll():
                if not row.superseded:
                    window[row.id] = row
            if window:
                for gone in feed.superseded_since(min(window)):
                    window.pop(gone, None)
            for row_id in [i for i, r in window.items() if r.created_s < cutoff]:
                del window[row_id]

    def current(self, now: float) -> list[EvaluationRow]:
        """Current evaluations created within the window ending at ``now``, oldest first."""
        cutoff = now - self.window_s
        rows = [r for window in self._rows.values() for r in window.values() if cutoff <= r.created_s <= now]
        rows.sort(key=lambda r: (r.created_at, r.db, r.id))
        return rows

    def snapshot(self, now: Optional[float] = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        with self._lock:
            self.refresh(now)
            rows = self.current(now)
            databases, ingest, sessions = self._database_stats(now)
        out = summarize_window(rows, limit=self.limit)
        out.update(
            generated_at=iso_utc(now), window_s=self.window_s, databases=databases,
            sessions={"open": sessions.open, "ended": sessions.awaiting_scoring,
                      "next_session": sessions.next_session, "next_due_in_s": sessions.due_in_s(int(now * 1e9)),
                      "trace_quiet_s": self.timing.trace_quiet, "session_idle_s": self.timing.session_idle},
            ingest={"spans": ingest, "rate_window_s": self.rate_window_s,
                    "spans_per_s": round(ingest / self.rate_window_s, 3)},
        )
        return out

    def _database_stats(self, now: float) -> tuple[list[dict[str, Any]], int, Backlog]:
        databases: list[dict[str, Any]] = []
        spans = 0
        sessions = Backlog()
        low_ns = int((now - self.rate_window_s) * 1e9)
        high_ns = int(now * 1e9)
        for path, feed in self.feeds.items():
            conn = feed._connection()
            if conn is None:
                databases.append({"path": path, "status": "database file not found"})
                continue
            try:
                first = first_key_at_or_after(conn, "spans", "rowid", "received_ns", low_ns)
                if first is not None:
                    spans += conn.execute(
                        "SELECT COUNT(*) FROM spans WHERE rowid >= ? AND received_ns BETWEEN ? AND ?",
                        (first, low_ns, high_ns)).fetchone()[0]
                sessions = sessions.merge(read_backlog(conn, self.timing))
            except sqlite3.OperationalError as exc:
                if not _missing_schema(exc):
                    raise
                databases.append({"path": path, "status": "no otel-eval tables yet"})
                continue
            databases.append({"path": path, "status": "ok"})
        return databases, spans, sessions


def _rate(passed: int, total: int) -> Optional[float]:
    return round(passed / total, 4) if total else None


def summarize_window(rows: Sequence[EvaluationRow], limit: int = LIST_LIMIT) -> dict[str, Any]:
    """The aggregates of the view, from current evaluations (oldest first). Pure.

    Matched sessions are passed, failed or not_evaluated; pass rates and mean scores are over the
    evaluated (passed + failed) ones, so a session where nothing was checked is counted apart."""
    matched = [r for r in rows if r.matched]
    evaluated = [r for r in matched if r.evaluated]
    passed = sum(1 for r in matched if r.verdict == PASSED)
    unhealthy = [r for r in rows if r.unhealthy_reasons]

    def groups(key: str, field_name: str) -> list[dict[str, Any]]:
        stats: dict[str, dict[str, Any]] = {}
        for r in matched:
            name = getattr(r, field_name) or "unknown"
            s = stats.setdefault(name, {key: name, "sessions": 0, "passed": 0, "not_evaluated": 0,
                                        "score_sum": 0.0})
            s["sessions"] += 1
            s["passed"] += int(r.verdict == PASSED)
            if r.evaluated:
                s["score_sum"] += r.score
            else:
                s["not_evaluated"] += 1
        out = []
        for s in stats.values():
            total = s.pop("score_sum")
            checked = s["sessions"] - s["not_evaluated"]
            s["pass_rate"] = _rate(s["passed"], checked)
            s["avg_score"] = round(total / checked, 4) if checked else None
            out.append(s)
        return out

    # Worst first; a case never evaluated (no pass rate) after every case that has one.
    cases = sorted(groups("case_id", "case_id"),
                   key=lambda c: (c["pass_rate"] is None, c["pass_rate"] or 0.0, c["case_id"]))
    versions = sorted(groups("agent_version", "agent_version"), key=lambda v: v["agent_version"])
    newest = list(reversed(rows))
    return {
        "totals": {
            "sessions": len(rows),
            "matched": len(matched),
            "passed": passed,
            "failed": len(evaluated) - passed,
            "not_evaluated": len(matched) - len(evaluated),
            "unmatched": len(rows) - len(matched),
            "unhealthy": len(unhealthy),
            "pass_rate": _rate(passed, len(evaluated)),
            "avg_score": round(sum(r.score for r in evaluated) / len(evaluated), 4) if evaluated else None,
        },
        "cases": cases,
        "versions": versions,
        "latest": [
            {"session_id": r.session_id, "created_at": r.created_at, "case_id": r.case_id,
             "agent_version": r.agent_version,
             "verdict": _VERDICT_WORDS[r.verdict] if r.matched else "unmatched",
             "score": r.score if r.matched and r.evaluated else None, "failing": list(r.failing)}
            for r in newest[:limit]
        ],
        "unmatched": [
            {"session_id": r.session_id, "created_at": r.created_at, "query": r.query}
            for r in newest if not r.matched
        ][:limit],
        "unhealthy": [
            {"session_id": r.session_id, "created_at": r.created_at, "case_id": r.case_id,
             "reasons": r.unhealthy_reasons}
            for r in reversed(unhealthy)
        ][:limit],
    }


#: Stored verdict → the word of the ``latest`` list (pass and fail as before; the new one as is).
_VERDICT_WORDS = {PASSED: "pass", FAILED: "fail", NOT_EVALUATED: "not_evaluated"}


def snapshot(db_paths: Sequence[DbPath], window_s: float, now: Optional[float] = None) -> dict[str, Any]:
    """One frame of the view as JSON-ready data: current evaluations created in the last
    ``window_s`` seconds before ``now`` (default: the clock) across ``db_paths``."""
    watcher = Watcher(db_paths, window_s)
    try:
        return watcher.snapshot(now)
    finally:
        watcher.close()


# --- drawing -----------------------------------------------------------------------------------

def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0%}"


def _rate_style(value: Optional[float]) -> str:
    if value is None:
        return "dim"
    return "green" if value >= 0.9 else "yellow" if value >= 0.7 else "red"


def _window_text(seconds: float) -> str:
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    if seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


def render(snap: dict[str, Any]) -> Any:
    """The frame as a rich renderable; its tables fit whatever width it is drawn at (a terminal,
    or the 80 columns of a pipe or CI log), dropping or abbreviating columns rather than cutting
    a verdict or a word."""
    return _Frame(snap)


class _Frame:
    def __init__(self, snap: dict[str, Any]):
        self.snap = snap

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from frame_parts(self.snap, options.max_width)


#: Latest-sessions columns, most important first (the verdict is never dropped or cut).
_LATEST_PRIORITY = ("result", "session", "score", "failing criteria", "time", "case", "version")


def frame_parts(snap: dict[str, Any], width: int) -> list[Any]:
    """The header and tables of one frame, each no wider than ``width``."""
    from rich.text import Text

    from .tablefit import Column, fit_table, middle_ellipsis

    totals = snap["totals"]
    header = Text()
    header.append("otel-eval watch", style="bold")
    header.append(f"  {snap['generated_at']}  last {_window_text(snap['window_s'])}\n")
    header.append(f"{totals['sessions']} sessions: ")
    header.append(f"{totals['passed']} passed", style="green")
    header.append(", ")
    header.append(f"{totals['failed']} failed", style="red")
    header.append(", ")
    header.append(f"{totals['not_evaluated']} not evaluated", style="yellow")
    header.append(f", {totals['unmatched']} unmatched, {totals['unhealthy']} unhealthy; pass rate ")
    header.append(_pct(totals["pass_rate"]), style=f"bold {_rate_style(totals['pass_rate'])}")
    avg = "-" if totals["avg_score"] is None else f"{totals['avg_score']:.2f}"
    header.append(f", mean score {avg}\n")
    ingest = snap["ingest"]
    sessions = snap["sessions"]
    header.append(f"ingest {ingest['spans_per_s']:g} spans/s (last {_window_text(ingest['rate_window_s'])})")
    waiting = describe({"open": sessions["open"], "awaiting_scoring": sessions["ended"],
                        "next_due_in_s": sessions.get("next_due_in_s")},
                       Timing(sessions.get("trace_quiet_s", 5.0), sessions.get("session_idle_s", 60.0)))
    header.append("; " + (waiting or "no session open or awaiting scoring"),
                  style="yellow" if waiting else "")
    for db in snap["databases"]:
        if db["status"] != "ok":
            header.append(f"\n{db['path']}: {db['status']} (waiting for the collector to create it)", style="yellow")
    parts: list[Any] = [header]
    count = Column("sessions", justify="right")

    def grouped(title: str, key: str, rows: list[dict[str, Any]]) -> Any:
        columns = [Column(key.replace("_", " ").replace(" id", ""), min_width=10, shorten=middle_ellipsis,
                          max_width=40),
                   count, Column("passed", justify="right"), Column("not evaluated", justify="right"),
                   Column("pass rate", justify="right"), Column("mean score", justify="right")]
        cells = [[r[key], str(r["sessions"]), str(r["passed"]), str(r["not_evaluated"]),
                  (_pct(r["pass_rate"]), _rate_style(r["pass_rate"])),
                  "-" if r["avg_score"] is None else f"{r['avg_score']:.2f}"] for r in rows]
        return fit_table(title, columns, cells, width, priority=[0, 4, 5, 1, 2, 3], title_justify="left")

    if snap["cases"]:
        parts.append(grouped("Golden cases (worst first)", "case_id", snap["cases"]))
    if snap["versions"]:
        parts.append(grouped("Agent versions", "agent_version", snap["versions"]))
    if snap["latest"]:
        styles = {"pass": "green", "fail": "red", "not_evaluated": "yellow", "unmatched": "yellow"}
        layout = ("time", "session", "case", "version", "result", "score", "failing criteria")
        columns = [Column("time"), Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
                   Column("case", min_width=10, shorten=middle_ellipsis, max_width=36),
                   Column("version", min_width=8, shorten=middle_ellipsis), Column("result"),
                   Column("score", justify="right"), Column("failing criteria", min_width=16, is_list=True, max_width=34)]
        cells = [[r["created_at"][11:19], r["session_id"], r["case_id"] or "-", r["agent_version"] or "-",
                  (r["verdict"].replace("_", " ").upper() if r["verdict"] != "unmatched" else "unmatched",
                   styles[r["verdict"]]),
                  "-" if r["score"] is None else f"{r['score']:.2f}", r["failing"] or ["-"]]
                 for r in snap["latest"]]
        parts.append(fit_table("Latest sessions", columns, cells, width,
                               priority=[layout.index(c) for c in _LATEST_PRIORITY], title_justify="left"))
    if snap["unmatched"]:
        columns = [Column("time"), Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
                   Column("query", min_width=16, max_width=60)]
        cells = [[r["created_at"][11:19], r["session_id"], r["query"] or "-"] for r in snap["unmatched"]]
        parts.append(fit_table("Unmatched sessions (no golden case)", columns, cells, width, priority=[1, 2, 0],
                               title_justify="left"))
    if snap["unhealthy"]:
        columns = [Column("time"), Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
                   Column("case", min_width=10, shorten=middle_ellipsis, max_width=36),
                   Column("why", min_width=16, is_list=True, separator="; ")]
        cells = [[r["created_at"][11:19], r["session_id"], r["case_id"] or "-", r["reasons"]]
                 for r in snap["unhealthy"]]
        parts.append(fit_table("Unhealthy sessions", columns, cells, width, priority=[1, 3, 0, 2],
                               title_justify="left"))
    if not snap["latest"]:
        parts.append(Text("No evaluations in the window yet.", style="dim"))
    return parts


# --- command line ------------------------------------------------------------------------------

def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``watch`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument("--db", action="append", default=[], metavar="PATH",
                        help="database file; repeat to watch several collectors (default otel-eval.db)")
    parser.add_argument("--window", type=float, default=DEFAULT_WINDOW_MINUTES, metavar="MINUTES",
                        help=f"sliding window of evaluations shown (default {DEFAULT_WINDOW_MINUTES:g})")
    parser.add_argument("--refresh", type=float, default=DEFAULT_REFRESH_SECONDS, metavar="SECONDS",
                        help=f"seconds between refreshes (default {DEFAULT_REFRESH_SECONDS:g})")
    parser.add_argument("--once", action="store_true", help="print one frame and exit")
    parser.add_argument("--json", action="store_true", help="with --once: print the frame as JSON")
    parser.add_argument("--trace-quiet", type=float, default=Timing.trace_quiet, metavar="SECONDS",
                        help="the writer's trace_quiet, to tell when the next session ends (default 5)")
    parser.add_argument("--session-idle", type=float, default=Timing.session_idle, metavar="SECONDS",
                        help="the writer's session_idle, to tell when the next session ends (default 60)")


def watch_main(args: argparse.Namespace, console: Any = None) -> int:
    """Run ``otel-eval watch`` from parsed arguments; returns the exit code. Bad arguments and (with
    ``--once``) a missing database raise :class:`InputError` for the CLI's usual error line."""
    from rich.console import Console
    from rich.live import Live

    paths = list(getattr(args, "db", None) or []) or ["otel-eval.db"]
    window = getattr(args, "window", DEFAULT_WINDOW_MINUTES)
    refresh = getattr(args, "refresh", DEFAULT_REFRESH_SECONDS)
    if not window or window <= 0:
        raise InputError("watch", f"--window must be a positive number of minutes, got {window}", "--window")
    if not refresh or refresh <= 0:
        raise InputError("watch", f"--refresh must be a positive number of seconds, got {refresh}", "--refresh")
    timing = Timing(getattr(args, "trace_quiet", Timing.trace_quiet), getattr(args, "session_idle", Timing.session_idle))
    for name, value in (("--trace-quiet", timing.trace_quiet), ("--session-idle", timing.session_idle)):
        if not value > 0:
            raise InputError("watch", f"{name} must be a positive number of seconds, got {value}", name)
    console = console or Console()
    watcher = Watcher(paths, window * 60.0, timing=timing)
    try:
        if getattr(args, "once", False):
            for path in paths:
                if not Path(path).exists():
                    raise InputError(path, "database file not found")
            snap = watcher.snapshot()
            if getattr(args, "json", False):
                console.print_json(json.dumps(snap))
            else:
                console.print(render(snap))
            return 0
        try:
            with Live(render(watcher.snapshot()), console=console, refresh_per_second=4,
                      screen=False, transient=False) as live:
                while True:
                    time.sleep(refresh)
                    live.update(render(watcher.snapshot()))
        except KeyboardInterrupt:
            return 0
    finally:
        watcher.close()

