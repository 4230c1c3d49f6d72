"""A stored session's spans: as trees, as AgentData rows, as the turns the scorer saw, and the
few facts other views look up (its first trace, its last response id, the ingest rate)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import InputError
from ..pipeline import map_session
from ..spans import LogEvent, SpanRecord, from_json
from ..store.agent_rows import JSON_FIELDS
from ..store.session_rows import IN_SESSION_TRACES, session_log_events, session_span_rows
from ..trajectory import build_trajectory
from ..unread import Unread, unread_in_session
from .database import DbPath, first_key_at_or_after, named_rows
from .evaluations import parse_json_text


def stored_spans(conn: sqlite3.Connection, path: DbPath, session_id: str) -> tuple[list[SpanRecord], list[LogEvent]]:
    """The session's spans (start order) and span-linked log records, as stored. A stored span
    that is not valid span JSON is an :class:`InputError` naming its row."""
    spans = []
    for index, (raw, _, _) in enumerate(session_span_rows(conn, session_id)):
        try:
            spans.append(from_json(raw))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(str(path), f"stored span is not valid span JSON: {exc}", f"spans[{index}].raw") from exc
    return spans, session_log_events(conn, session_id)


def recently_received_sessions(conn: sqlite3.Connection, limit: int = 5) -> list[str]:
    """Sessions whose first span arrived last, newest first (scored or not)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT session_id FROM sessions ORDER BY first_received_ns DESC, rowid DESC LIMIT ?", (limit,)
        )
    ]


@dataclass(frozen=True)
class TurnReading:
    """One turn (trace) of a stored session as the scorer read it."""

    turn: int
    """Its index, as in every criterion's ``per_turn``."""
    trace_id: str
    user_input: str | None
    answer_source: str | None
    """Where its answer was read (:attr:`otel_eval.trajectory.Turn.answer_source`)."""

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape: ``{turn, trace_id, user_input, answer_source}``."""
        return {
            "turn": self.turn,
            "trace_id": self.trace_id,
            "user_input": self.user_input,
            "answer_source": self.answer_source,
        }


def session_turns(conn: sqlite3.Connection, session_id: str) -> list[TurnReading]:
    """The turns of a stored session: its spans (read by the convention detected at ingest) and
    span-linked log records go through the same mapping and turn building as when it was scored,
    so turn *i* here is turn *i* of every criterion's ``per_turn``."""
    return session_reading(conn, session_id)[0]


def session_reading(conn: sqlite3.Connection, session_id: str) -> tuple[list[TurnReading], list[Unread]]:
    """:func:`session_turns`, and what the session's spans carry that no rule read
    (:func:`otel_eval.unread.unread_in_session`)."""
    rows = session_span_rows(conn, session_id)
    mapped = map_session(
        [from_json(raw) for raw, _, _ in rows],
        session_log_events(conn, session_id),
        conventions=[convention for _, convention, _ in rows],
    )
    trajectory = build_trajectory(session_id, mapped)
    turns = [TurnReading(t.index, t.trace_id, t.user_input, t.answer_source) for t in trajectory.turns]
    return turns, unread_in_session(mapped)


@dataclass(frozen=True)
class TreeRow:
    """One span of a :class:`TraceTree`, at its depth (the writer's row of a span is
    :data:`otel_eval.span_rows.SpanRow`)."""

    span: SpanRecord
    depth: int
    convention: str | None
    span_type: str | None


@dataclass(frozen=True)
class TraceTree:
    """One trace of a session as a tree (:func:`build_tree`): its spans in depth-first order."""

    trace_id: str
    start_ns: int
    end_ns: int
    rows: list[TreeRow] = field(default_factory=list)


def session_traces(conn: sqlite3.Connection, session_id: str) -> list[TraceTree]:
    """The session's spans as one tree per trace (parents before children, siblings by start time)."""
    by_trace: dict[str, list[tuple[SpanRecord, str | None, str | None]]] = {}
    for raw, convention, span_type in session_span_rows(conn, session_id):
        span = from_json(raw)
        by_trace.setdefault(span.trace_id, []).append((span, convention, span_type))
    trees = [build_tree(trace_id, members) for trace_id, members in by_trace.items()]
    return sorted(trees, key=lambda t: (t.start_ns, t.trace_id))


def build_tree(trace_id: str, members: Sequence[tuple[SpanRecord, str | None, str | None]]) -> TraceTree:
    """Depth-first order. A span whose parent never arrived is shown as a root, not dropped."""
    ids = {span.span_id for span, _, _ in members}
    children: dict[str | None, list[tuple[SpanRecord, str | None, str | None]]] = {}
    for member in members:
        parent = member[0].parent_span_id
        children.setdefault(parent if parent in ids else None, []).append(member)
    tree = TraceTree(trace_id, min(s.start_ns for s, _, _ in members), max(s.end_ns for s, _, _ in members))
    stack = [(m, 0) for m in reversed(sorted(children.get(None, []), key=lambda m: m[0].start_ns))]
    seen: set[str] = set()
    while stack:
        (span, convention, span_type), depth = stack.pop()
        if span.span_id in seen:  # a parent cycle in hostile input must not loop forever
            continue
        seen.add(span.span_id)
        tree.rows.append(TreeRow(span, depth, convention, span_type))
        kids = sorted(children.get(span.span_id, []), key=lambda m: m[0].start_ns)
        stack.extend((k, depth + 1) for k in reversed(kids))
    for span, convention, span_type in members:  # spans only reachable through a cycle
        if span.span_id not in seen:
            seen.add(span.span_id)
            tree.rows.append(TreeRow(span, 0, convention, span_type))
    return tree


class AgentDataKey(NamedTuple):
    """Which AgentData row: a span's (``level`` "span") or a trace's aggregate ("trace", ``span_id`` "")."""

    trace_id: str
    span_id: str
    level: str


def session_agent_data(conn: sqlite3.Connection, session_id: str) -> dict[AgentDataKey, dict[str, object]]:
    """The session's AgentData rows, each with only the fields that hold something (field name →
    value, JSON fields parsed): what the span tree lists under each span."""
    out: dict[AgentDataKey, dict[str, object]] = {}
    rows = named_rows(conn, f"SELECT * FROM agent_data WHERE {IN_SESSION_TRACES} ORDER BY id", (session_id, session_id))
    for r in rows:
        fields: dict[str, object] = {}
        for key in r.keys():
            if key in ("id", "trace_id", "span_id", "session_id", "level"):
                continue
            value: object = r[key]
            if key in JSON_FIELDS and isinstance(value, str):
                value = parse_json_text(value)
            if key == "agent_exit":
                value = bool(value)
                if not value:
                    continue
            if value in (None, "", [], {}):
                continue
            fields[key] = value
        out[AgentDataKey(r["trace_id"], r["span_id"], r["level"])] = fields
    return out


def first_trace(conn: sqlite3.Connection, session_id: str) -> tuple[str | None, str | None]:
    """``(trace id, root span id)`` of the session's first trace; when its root never arrived the
    earliest span stands in, as in the trajectory. ``(None, None)`` for an unknown session."""
    row = conn.execute(
        "SELECT trace_id, root_span_id FROM traces WHERE session_id = ? ORDER BY start_ns, trace_id LIMIT 1",
        (session_id,),
    ).fetchone()
    if row is None:
        return None, None
    trace_id, span_id = row
    if not span_id:
        found = conn.execute(
            "SELECT span_id FROM spans WHERE trace_id = ? ORDER BY start_ns LIMIT 1", (trace_id,)
        ).fetchone()
        span_id = found[0] if found else None
    return trace_id, span_id


def last_response_id(conn: sqlite3.Connection, session_id: str) -> str | None:
    """``gen_ai.response.id`` of the session's last completion (the latest-ending span that has
    one); None when no span recorded one."""
    row = conn.execute(
        "SELECT json_extract(raw, '$.attributes.\"gen_ai.response.id\"') AS rid FROM spans"
        " WHERE session_id = ? AND rid IS NOT NULL AND rid != '' ORDER BY end_ns DESC, start_ns DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return str(row[0]) if row else None


def spans_received_between(conn: sqlite3.Connection, low_ns: int, high_ns: int) -> int:
    """Spans received in ``[low_ns, high_ns]``: the rowid range is found by bisection (spans are
    appended in receive order), so the cost is the recent range, not the table."""
    first = first_key_at_or_after(conn, "spans", "rowid", "received_ns", low_ns)
    if first is None:
        return 0
    count: int = conn.execute(
        "SELECT COUNT(*) FROM spans WHERE rowid >= ? AND received_ns BETWEEN ? AND ?", (first, low_ns, high_ns)
    ).fetchone()[0]
    return count
