"""What has not been scored yet, and when it will be: the read side of the session lifecycle.

A session is scored only once it has ended (DESIGN §5): with the defaults, 5 s after its last
trace went quiet and 60 s after its last span, unless it was ended explicitly. Until then
``report`` and ``watch`` would show nothing; this module tells them how many sessions are open
(receiving spans) or awaiting scoring (ended, in the scorer's queue) and when the next one is due,
from the ``sessions`` and ``traces`` tables and the timing the engine runs with. The rule is the
engine's own (:meth:`otel_eval.sessions.SessionTracker.due`); tests hold the two together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from ..sessions import KEYED_BY_TRACE, Timing
from ..store import ENDED, OPEN
from .database import DbPath, missing_schema, open_database


def due_ns(
    keyed_by: str, end_requested: bool, last_received_ns: int, traces: Iterable[tuple[bool, int]], timing: Timing
) -> int:
    """When (receive clock, ns) an open session ends if nothing more arrives.

    ``traces`` are ``(root_seen, last_received_ns)``. A session whose traces are all complete ends
    ``trace_quiet`` after its last span when it asked to end (attribute ``otel_eval.session.end``,
    event ``session.end``, ``end_session``) or is keyed by its trace id; any other session ends
    ``session_idle`` after its last span (and never before its traces are quiet). Pure."""
    traces = list(traces)
    last_trace = max((last for _, last in traces), default=0)
    quiet_at = last_trace + timing.quiet_ns
    complete = all(root_seen for root_seen, _ in traces)
    if complete and (end_requested or keyed_by == KEYED_BY_TRACE):
        return quiet_at
    last = max(last_received_ns, last_trace) if traces else 0
    return max(quiet_at, last + timing.idle_ns)


@dataclass
class Backlog:
    """Sessions of one or more databases not scored yet."""

    open: int = 0
    """Receiving spans: not ended yet."""
    awaiting_scoring: int = 0
    """Ended, waiting for the scorer (status ``ended``)."""
    next_session: str | None = None
    """The open session due to end first."""
    next_due_ns: int | None = None
    awaiting_judge: int = 0
    """Scored, with a judge criterion pending: the verdict shown is the deterministic one so far."""

    def merge(self, other: Backlog) -> Backlog:
        """Both backlogs as one (of two databases): counts added, the next due of the two."""
        due = [(b.next_due_ns, b.next_session) for b in (self, other) if b.next_due_ns is not None]
        next_due_ns, next_session = min(due, key=lambda pair: pair[0]) if due else (None, None)
        return Backlog(
            self.open + other.open,
            self.awaiting_scoring + other.awaiting_scoring,
            next_session,
            next_due_ns,
            self.awaiting_judge + other.awaiting_judge,
        )

    def due_in_s(self, now_ns: int) -> float | None:
        """Seconds until the next open session ends; negative when it is overdue (nothing is
        ending sessions: the collector, or the process with the ``EvalSpanProcessor``, is stopped)."""
        return None if self.next_due_ns is None else round((self.next_due_ns - now_ns) / 1e9, 1)

    def to_dict(self, now_ns: int) -> dict[str, Any]:
        """The ``--json`` shape (``report``'s ``pending``), the next due as seconds from ``now_ns``."""
        return {
            "open": self.open,
            "awaiting_scoring": self.awaiting_scoring,
            "next_session": self.next_session,
            "next_due_in_s": self.due_in_s(now_ns),
            "awaiting_judge": self.awaiting_judge,
        }


def read_backlog(conn: sqlite3.Connection, timing: Timing) -> Backlog:
    """The backlog of one database (a connection to it, read-only is enough). A file without the
    otel-eval tables yet has none."""
    try:
        counts = dict(
            conn.execute(
                "SELECT status, COUNT(*) FROM sessions WHERE status IN (?, ?) GROUP BY status", (OPEN, ENDED)
            ).fetchall()
        )
        judge = _awaiting_judge(conn)
        if not counts.get(OPEN):
            return Backlog(0, counts.get(ENDED, 0), awaiting_judge=judge)
        sessions: dict[str, tuple[str, bool, int, list[tuple[bool, int]]]] = {
            sid: (keyed_by, bool(end_requested), last or 0, [])
            for sid, keyed_by, end_requested, last in conn.execute(
                "SELECT session_id, keyed_by, end_requested, last_received_ns FROM sessions WHERE status = ?", (OPEN,)
            )
        }
        for sid, root_span_id, last in conn.execute(
            "SELECT t.session_id, t.root_span_id, t.last_received_ns FROM traces t"
            " JOIN sessions s ON s.session_id = t.session_id WHERE s.status = ?",
            (OPEN,),
        ):
            sessions[sid][3].append((root_span_id is not None, last or 0))
    except sqlite3.OperationalError as exc:
        if missing_schema(exc):
            return Backlog()
        raise
    due = {
        sid: due_ns(keyed_by, end_requested, last, traces, timing)
        for sid, (keyed_by, end_requested, last, traces) in sessions.items()
    }
    first = min(due, key=lambda sid: (due[sid], sid))
    return Backlog(len(sessions), counts.get(ENDED, 0), first, due[first], judge)


def _awaiting_judge(conn: sqlite3.Connection) -> int:
    """Current evaluations waiting for their judge's answer (a partial index would make this
    cheaper; the judge_jobs table is small: its queued rows are exactly these)."""
    try:
        count: int = conn.execute(
            "SELECT COUNT(*) FROM judge_jobs j JOIN evaluations e ON e.id = j.evaluation_id"
            " WHERE j.status = 'queued' AND e.superseded = 0 AND e.judge_pending > 0"
        ).fetchone()[0]
        return count
    except sqlite3.OperationalError as exc:
        if missing_schema(exc):
            return 0
        raise


def backlog_of(db_paths: Sequence[DbPath], timing: Timing) -> Backlog:
    """Sessions not scored yet across the databases."""
    total = Backlog()
    for path in db_paths:
        with closing(open_database(path)) as conn:
            total = total.merge(read_backlog(conn, timing))
    return total


def _duration(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def describe(pending: dict[str, Any], timing: Timing) -> str:
    """One line for a person from :meth:`Backlog.to_dict`: what is waiting, when the next result
    comes, and why it takes that long. Empty when nothing is waiting."""
    opened, waiting, due = pending["open"], pending["awaiting_scoring"], pending["next_due_in_s"]
    judge = pending.get("awaiting_judge") or 0
    judged = (
        (
            f"{judge} session{'s' if judge != 1 else ''} awaiting the judge (verdict so far from the "
            "deterministic criteria)"
        )
        if judge
        else ""
    )
    if not opened and not waiting:
        return judged
    if judged:
        return describe({**pending, "awaiting_judge": 0}, timing) + "; " + judged
    parts = []
    if opened:
        parts.append(f"{opened} session{'s' if opened != 1 else ''} open")
    if waiting:
        parts.append(f"{waiting} awaiting scoring")
    text = " and ".join(parts)
    if due is None:
        return text + " (being scored now)"
    if due >= 0:
        return (
            f"{text}; the next ends in about {_duration(due)} (a session ends {timing.session_idle:g} s "
            f"after its last span, {timing.trace_quiet:g} s when it ends explicitly)"
        )
    return (
        f"{text}; the next was due {_duration(due)} ago: nothing is ending sessions; is the collector "
        "(or the process with EvalSpanProcessor) running?"
    )
