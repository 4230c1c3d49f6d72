"""Spans, their log records and traces: the ingest path's writes (inside the writer's transaction)
and the few lookups the writer's scheduler makes of them.

Spans are stored as sent (raw JSON), idempotent on (trace_id, span_id), so a retried export is
harmless; multi-row statements (:class:`~.statements.RowsInsert`) and one-step lookups
(:func:`~.statements.pairs`) keep the writer's rounds short beside a busy thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Sequence

from ..span_rows import TRACE_ID, SpanRow
from ..spans import LogEvent, SpanRecord, from_json
from .connection import StoreConnection
from .feedback import insert_feedback, split_feedback
from .statements import RowsInsert, pairs, stored_json


class Spans(StoreConnection):
    """The part of a Store that keeps spans, span-linked log records and traces."""

    def insert_spans(
        self, rows: Sequence[tuple[SpanRow, str]], received_ns: int, new_traces: Collection[str] = ()
    ) -> list[bool]:
        """Insert spans, ignoring ones already stored; returns, per row, whether it was new.

        ``rows`` are ``(span_row, session_id)`` (:func:`otel_eval.span_rows.span_row`).
        Idempotence on (trace_id, span_id) is what makes a retried export harmless.
        ``new_traces``: traces the caller found nowhere in ``traces``, so none of their spans
        can be stored (a span is stored in the transaction that touches its trace): their
        spans are not looked up. An agent's batch is mostly such traces, and looking up every
        span key of them cost the writer more than the insert that checks them anyway.
        """
        # One query for what may be stored already, multi-row INSERTs for the rest (RowsInsert).
        stored = self._stored_span_keys({row[TRACE_ID] for row, _ in rows}.difference(new_traces))
        fresh: list[bool] = []
        params = []
        for row, session_id in rows:
            key = row[:2]  # (trace_id, span_id)
            if key in stored:
                fresh.append(False)
                continue
            stored.add(key)  # the same span twice in one batch is stored once
            fresh.append(True)
            # The row's values in the order of _INSERT_SPANS, with the two the writer decides.
            params.append((*row[:3], session_id, *row[3:8], received_ns, *row[8:11]))
        _INSERT_SPANS.run(self.conn, params)
        return fresh

    def _stored_span_keys(self, trace_ids: Iterable[str]) -> set[tuple[str, str]]:
        return set(map(tuple, pairs(self.conn, "trace_id, span_id", "spans", "trace_id", trace_ids)))

    def insert_log_events(self, events: Sequence[LogEvent], received_ns: int) -> int:
        """Store log records; user feedback among them goes to ``feedback`` (:mod:`.feedback`).
        Returns how many were new."""
        feedback, events = split_feedback(events)
        stored = insert_feedback(self.conn, feedback, received_ns) if feedback else 0
        if not events:
            return stored
        cur = self.conn.executemany(
            "INSERT OR IGNORE INTO log_events (trace_id, span_id, time_ns, event_name, body, attributes, received_ns)"
            " VALUES (?,?,?,?,?,?,?)",
            [
                (
                    e.trace_id,
                    e.span_id,
                    e.time_ns,
                    e.event_name,
                    stored_json(e.body),
                    stored_json(dict(e.attributes)),
                    received_ns,
                )
                for e in events
            ],
        )
        return stored + cur.rowcount

    def trace_sessions(self, trace_ids: Iterable[str]) -> dict[str, str]:
        """trace id → session id of the given traces that are stored."""
        return dict(pairs(self.conn, "trace_id, session_id", "traces", "trace_id", trace_ids))

    def touch_traces(self, rows: Sequence[tuple[str, str, str | None, int, int, int]], received_ns: int) -> None:
        """:meth:`touch_trace` for many ``(trace_id, session_id, root_span_id, start_ns, end_ns, spans)``."""
        _TOUCH_TRACES.run(self.conn, [(*row, received_ns, received_ns) for row in rows])

    def touch_trace(
        self,
        trace_id: str,
        session_id: str,
        root_span_id: str | None,
        start_ns: int,
        end_ns: int,
        spans: int,
        received_ns: int,
    ) -> None:
        """Records a trace's new spans: created at its first, its times widened, span count and last
        receive time updated after, so the session tracker can be rebuilt from the table."""
        self.conn.execute(
            _TOUCH_TRACE, (trace_id, session_id, root_span_id, start_ns, end_ns, spans, received_ns, received_ns)
        )

    def trace_spans(self, trace_id: str) -> list[SpanRecord]:
        """The stored spans of one trace, in start order."""
        rows = self.conn.execute("SELECT raw FROM spans WHERE trace_id = ? ORDER BY start_ns", (trace_id,)).fetchall()
        return [from_json(r[0]) for r in rows]

    def trace_session(self, trace_id: str) -> str | None:
        """The session a stored trace belongs to, None for a trace never stored."""
        row = self.conn.execute("SELECT session_id FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        return row[0] if row else None


def set_span_types(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, str]]) -> None:
    """``(trace_id, span_id, span_type)``: known once the span has been read at scoring time."""
    conn.executemany(
        "UPDATE spans SET span_type = ? WHERE trace_id = ? AND span_id = ?",
        [(span_type, trace_id, span_id) for trace_id, span_id, span_type in rows],
    )


_TOUCH_TRACES = RowsInsert(
    "INSERT INTO traces (trace_id, session_id, root_span_id, start_ns, end_ns, span_count, first_received_ns,"
    " last_received_ns)",
    "(?,?,?,?,?,?,?,?)",
    " ON CONFLICT(trace_id) DO UPDATE SET"
    " session_id = excluded.session_id,"
    " root_span_id = COALESCE(traces.root_span_id, excluded.root_span_id),"
    " start_ns = MIN(traces.start_ns, excluded.start_ns), end_ns = MAX(traces.end_ns, excluded.end_ns),"
    " span_count = traces.span_count + excluded.span_count, last_received_ns = excluded.last_received_ns",
)
_TOUCH_TRACE = _TOUCH_TRACES.text(1)
_INSERT_SPANS = RowsInsert(
    "INSERT OR IGNORE INTO spans (trace_id, span_id, parent_span_id, session_id, name, kind, status, start_ns,"
    " end_ns, received_ns, convention, span_type, raw)",
    "(?,?,?,?,?,?,?,?,?,?,?,?,?)",
)
