"""``otel-eval watch``: a live terminal view of what the evaluator is finding, read from SQLite only.

The view polls the database file(s) the collector writes; it never talks to the collector. Each
refresh is incremental, so a database with millions of spans costs the same per refresh as an
empty one: evaluations come from :class:`otel_eval.read.feed.EvaluationFeed` (new rows only), the
window is kept in memory and expired by time, and the ingest rate counts only the recent rowid
range of ``spans`` (:func:`otel_eval.read.spans.spans_received_between`).

:func:`snapshot` returns a JSON-ready dict (the shape is documented in ``docs/monitoring.md``);
:func:`render` draws it with rich.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import InputError
from .models.results import FAILED, NOT_EVALUATED, PASSED
from .read.backlog import Backlog, describe, read_backlog
from .read.coverage import golden_case_keys, retired_cases, window_coverage
from .read.database import DbPath, missing_schema
from .read.feed import EvaluationFeed, EvaluationRow
from .read.spans import spans_received_between
from .read.times import iso_utc
from .report import coverage_line
from .sessions import Timing

DEFAULT_WINDOW_MINUTES = 60.0
DEFAULT_REFRESH_SECONDS = 2.0
#: The ingest rate covers at most this many seconds (a rate over an hour hides a stalled exporter).
RATE_WINDOW_S = 60.0
#: Rows shown in each list of the view (latest, unmatched, unhealthy).
LIST_LIMIT = 10


# --- the window --------------------------------------------------------------------------------


class Watcher:
    """Keeps the sliding window of current evaluations of several databases up to date."""

    def __init__(
        self,
        db_paths: Sequence[DbPath],
        window_s: float,
        rate_window_s: float = RATE_WINDOW_S,
        limit: int = LIST_LIMIT,
        timing: Timing | None = None,
    ):
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
        """Close every database's feed (its read-only connection)."""
        for feed in self.feeds.values():
            feed.close()

    def refresh(self, now: float) -> None:
        """Read what each database scored since the last call: new current evaluations in, superseded
        revisions and rows older than the window out. The first call starts at the window's start."""
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

    def snapshot(self, now: float | None = None) -> dict[str, Any]:
        """The whole ``watch`` view at ``now`` as one dict (also ``watch --json``): the window's summary,
        coverage, sessions still open or awaiting scoring, and each database's ingest."""
        now = time.time() if now is None else now
        with self._lock:
            self.refresh(now)
            rows = self.current(now)
            databases, ingest, sessions = self._database_stats(now)
            golden = self._golden_cases()
        out = summarize_window(rows, limit=self.limit)
        cov = window_coverage(rows, golden, iso_utc(now - self.window_s))
        out.update(
            generated_at=iso_utc(now),
            window_s=self.window_s,
            databases=databases,
            coverage={
                "golden_cases": len(golden),
                "exercised": len(cov.exercised) - retired_cases(cov),
                "never_exercised": len(cov.never_exercised),
                "sessions": cov.sessions,
                "unmatched": cov.unmatched,
                "unmatched_share": None if cov.unmatched_share is None else round(cov.unmatched_share, 4),
                "line": coverage_line(cov),
            },
            sessions={
                "open": sessions.open,
                "ended": sessions.awaiting_scoring,
                "next_session": sessions.next_session,
                "next_due_in_s": sessions.due_in_s(int(now * 1e9)),
                "trace_quiet_s": self.timing.trace_quiet,
                "session_idle_s": self.timing.session_idle,
            },
            ingest={
                "spans": ingest,
                "rate_window_s": self.rate_window_s,
                "spans_per_s": round(ingest / self.rate_window_s, 3),
            },
        )
        return out

    def _golden_cases(self) -> list[tuple[str, str]]:
        """``(eval_set_id, eval_id)`` of the golden cases stored in the databases, each once."""
        found: dict[tuple[str, str], None] = {}
        for feed in self.feeds.values():
            conn = feed.connection()
            if conn is not None:
                found.update(dict.fromkeys(golden_case_keys(conn)))
        return list(found)

    def _database_stats(self, now: float) -> tuple[list[dict[str, Any]], int, Backlog]:
        databases: list[dict[str, Any]] = []
        spans = 0
        sessions = Backlog()
        low_ns = int((now - self.rate_window_s) * 1e9)
        high_ns = int(now * 1e9)
        for path, feed in self.feeds.items():
            conn = feed.connection()
            if conn is None:
                databases.append({"path": path, "status": "database file not found"})
                continue
            try:
                spans += spans_received_between(conn, low_ns, high_ns)
                sessions = sessions.merge(read_backlog(conn, self.timing))
            except sqlite3.OperationalError as exc:
                if not missing_schema(exc):
                    raise
                databases.append({"path": path, "status": "no otel-eval tables yet"})
                continue
            databases.append({"path": path, "status": "ok"})
        return databases, spans, sessions


def _rate(passed: int, total: int) -> float | None:
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
            s = stats.setdefault(name, {key: name, "sessions": 0, "passed": 0, "not_evaluated": 0, "score_sum": 0.0})
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
    cases = sorted(
        groups("case_id", "case_id"), key=lambda c: (c["pass_rate"] is None, c["pass_rate"] or 0.0, c["case_id"])
    )
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
            {
                "session_id": r.session_id,
                "created_at": r.created_at,
                "case_id": r.case_id,
                "agent_version": r.agent_version,
                "verdict": _VERDICT_WORDS[r.verdict] if r.matched else "unmatched",
                "score": r.score if r.matched and r.evaluated else None,
                "failing": list(r.failing),
                "judge_pending": r.judge_pending,
            }
            for r in newest[:limit]
        ],
        "unmatched": [
            {"session_id": r.session_id, "created_at": r.created_at, "query": r.query} for r in newest if not r.matched
        ][:limit],
        "unhealthy": [
            {
                "session_id": r.session_id,
                "created_at": r.created_at,
                "case_id": r.case_id,
                "reasons": r.unhealthy_reasons,
            }
            for r in reversed(unhealthy)
        ][:limit],
    }


#: Stored verdict → the word of the ``latest`` list (pass and fail as before; the new one as is).
_VERDICT_WORDS = {PASSED: "pass", FAILED: "fail", NOT_EVALUATED: "not_evaluated"}


def snapshot(db_paths: Sequence[DbPath], window_s: float, now: float | None = None) -> dict[str, Any]:
    """One frame of the view as JSON-ready data: current evaluations created in the last
    ``window_s`` seconds before ``now`` (default: the clock) across ``db_paths``."""
    watcher = Watcher(db_paths, window_s)
    try:
        return watcher.snapshot(now)
    finally:
        watcher.close()


# --- drawing -----------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _rate_style(value: float | None) -> str:
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
    waiting = describe(
        {
            "open": sessions["open"],
            "awaiting_scoring": sessions["ended"],
            "next_due_in_s": sessions.get("next_due_in_s"),
        },
        Timing(sessions.get("trace_quiet_s", 5.0), sessions.get("session_idle_s", 60.0)),
    )
    header.append("; " + (waiting or "no session open or awaiting scoring"), style="yellow" if waiting else "")
    if snap.get("coverage"):
        header.append("\n" + snap["coverage"]["line"])
    for db in snap["databases"]:
        if db["status"] != "ok":
            header.append(f"\n{db['path']}: {db['status']} (waiting for the collector to create it)", style="yellow")
    parts: list[Any] = [header]
    count = Column("sessions", justify="right")

    def grouped(title: str, key: str, rows: list[dict[str, Any]]) -> Any:
        columns = [
            Column(key.replace("_", " ").replace(" id", ""), min_width=10, shorten=middle_ellipsis, max_width=40),
            count,
            Column("passed", justify="right"),
            Column("not evaluated", justify="right"),
            Column("pass rate", justify="right"),
            Column("mean score", justify="right"),
        ]
        cells = [
            [
                r[key],
                str(r["sessions"]),
                str(r["passed"]),
                str(r["not_evaluated"]),
                (_pct(r["pass_rate"]), _rate_style(r["pass_rate"])),
                "-" if r["avg_score"] is None else f"{r['avg_score']:.2f}",
            ]
            for r in rows
        ]
        return fit_table(title, columns, cells, width, priority=[0, 4, 5, 1, 2, 3], title_justify="left")

    if snap["cases"]:
        parts.append(grouped("Golden cases (worst first)", "case_id", snap["cases"]))
    if snap["versions"]:
        parts.append(grouped("Agent versions", "agent_version", snap["versions"]))
    if snap["latest"]:
        styles = {"pass": "green", "fail": "red", "not_evaluated": "yellow", "unmatched": "yellow"}
        layout = ("time", "session", "case", "version", "result", "score", "failing criteria")
        columns = [
            Column("time"),
            Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
            Column("case", min_width=10, shorten=middle_ellipsis, max_width=36),
            Column("version", min_width=8, shorten=middle_ellipsis),
            Column("result"),
            Column("score", justify="right"),
            Column("failing criteria", min_width=16, is_list=True, max_width=34),
        ]
        cells = [
            [
                r["created_at"][11:19],
                r["session_id"],
                r["case_id"] or "-",
                r["agent_version"] or "-",
                (
                    (r["verdict"].replace("_", " ").upper() if r["verdict"] != "unmatched" else "unmatched")
                    + (" · judge pending" if r.get("judge_pending") else ""),
                    styles[r["verdict"]],
                ),
                "-" if r["score"] is None else f"{r['score']:.2f}",
                r["failing"] or ["-"],
            ]
            for r in snap["latest"]
        ]
        parts.append(
            fit_table(
                "Latest sessions",
                columns,
                cells,
                width,
                priority=[layout.index(c) for c in _LATEST_PRIORITY],
                title_justify="left",
            )
        )
    if snap["unmatched"]:
        columns = [
            Column("time"),
            Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
            Column("query", min_width=16, max_width=60),
        ]
        cells = [[r["created_at"][11:19], r["session_id"], r["query"] or "-"] for r in snap["unmatched"]]
        parts.append(
            fit_table(
                "Unmatched sessions (no golden case)", columns, cells, width, priority=[1, 2, 0], title_justify="left"
            )
        )
    if snap["unhealthy"]:
        columns = [
            Column("time"),
            Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
            Column("case", min_width=10, shorten=middle_ellipsis, max_width=36),
            Column("why", min_width=16, is_list=True, separator="; "),
        ]
        cells = [
            [r["created_at"][11:19], r["session_id"], r["case_id"] or "-", r["reasons"]] for r in snap["unhealthy"]
        ]
        parts.append(
            fit_table("Unhealthy sessions", columns, cells, width, priority=[1, 3, 0, 2], title_justify="left")
        )
    if not snap["latest"]:
        parts.append(Text("No evaluations in the window yet.", style="dim"))
    return parts


# --- command line ------------------------------------------------------------------------------


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``watch`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="PATH",
        help="database file; repeat to watch several collectors (default otel-eval.db)",
    )
    parser.add_argument(
        "--window",
        type=float,
        default=DEFAULT_WINDOW_MINUTES,
        metavar="MINUTES",
        help=f"sliding window of evaluations shown (default {DEFAULT_WINDOW_MINUTES:g})",
    )
    parser.add_argument(
        "--refresh",
        type=float,
        default=DEFAULT_REFRESH_SECONDS,
        metavar="SECONDS",
        help=f"seconds between refreshes (default {DEFAULT_REFRESH_SECONDS:g})",
    )
    parser.add_argument("--once", action="store_true", help="print one frame and exit")
    parser.add_argument("--json", action="store_true", help="with --once: print the frame as JSON")
    parser.add_argument(
        "--trace-quiet",
        type=float,
        default=Timing.trace_quiet,
        metavar="SECONDS",
        help="the writer's trace_quiet, to tell when the next session ends (default 5)",
    )
    parser.add_argument(
        "--session-idle",
        type=float,
        default=Timing.session_idle,
        metavar="SECONDS",
        help="the writer's session_idle, to tell when the next session ends (default 60)",
    )


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
    timing = Timing(
        getattr(args, "trace_quiet", Timing.trace_quiet), getattr(args, "session_idle", Timing.session_idle)
    )
    for name, value in (("--trace-quiet", timing.trace_quiet), ("--session-idle", timing.session_idle)):
        if not value > 0:
            raise InputError("watch", f"{name} must be a positive number of seconds, got {value}", name)
    console = console or Console()
    watcher = Watcher(paths, window * 60.0, timing=timing)
    try:
        if getattr(args, "once", False):
            for path in paths:
                if not Path(path).is_file():
                    raise InputError(path, "database file not found")
            snap = watcher.snapshot()
            if getattr(args, "json", False):
                console.print_json(json.dumps(snap))
            else:
                console.print(render(snap))
            return 0
        try:
            with Live(
                render(watcher.snapshot()), console=console, refresh_per_second=4, screen=False, transient=False
            ) as live:
                while True:
                    time.sleep(refresh)
                    live.update(render(watcher.snapshot()))
        except KeyboardInterrupt:
            return 0
    finally:
        watcher.close()
