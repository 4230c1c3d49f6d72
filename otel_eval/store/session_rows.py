"""A session's rows as stored: its spans (raw JSON, the convention and span type detected at
ingest) and its span-linked log records. The two reads every path to a stored session starts
from: the scorer (:func:`otel_eval.pipeline.load_session`, on a score worker's read-only Store)
and the views (:mod:`otel_eval.read.spans`). The store's own query of its tables, so both the
pipeline (above the store) and the views (above the pipeline) use it."""

from __future__ import annotations

import json
import sqlite3

from ..spans import LogEvent

#: ``WHERE`` condition for a session's rows of ``spans`` or ``agent_data``, bound to the session id
#: twice. Through its traces: those tables are keyed by trace and have no session index (schema 5).
IN_SESSION_TRACES = "trace_id IN (SELECT trace_id FROM traces WHERE session_id = ?) AND session_id = ?"


def session_span_rows(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str | None, str | None]]:
    """``(raw JSON, convention, span type)`` of a session's spans, in start order, as stored."""
    return conn.execute(
        f"SELECT raw, convention, span_type FROM spans WHERE {IN_SESSION_TRACES} ORDER BY start_ns, end_ns",
        (session_id, session_id),
    ).fetchall()


def session_log_events(conn: sqlite3.Connection, session_id: str) -> list[LogEvent]:
    """The span-linked log records of a session's traces, in time order."""
    rows = conn.execute(
        "SELECT l.trace_id, l.span_id, l.time_ns, l.event_name, l.body, l.attributes FROM log_events l"
        " JOIN traces t ON t.trace_id = l.trace_id WHERE t.session_id = ? ORDER BY l.time_ns",
        (session_id,),
    ).fetchall()
    return [
        LogEvent(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None, json.loads(r[5]) if r[5] else {})
        for r in rows
    ]
