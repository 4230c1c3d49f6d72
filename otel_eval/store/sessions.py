"""Sessions: their status (open, ended, scored), the activity ingest records on them, and the
lookups the writer's scheduler makes when it resumes after a restart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .connection import StoreConnection
from .statements import RowsInsert, pairs

# Session states: open (receiving), ended (waiting to be scored), scored.
OPEN, ENDED, SCORED = "open", "ended", "scored"


@dataclass
class SessionRow:
    """A session as the scheduler resumes it."""

    session_id: str
    status: str
    keyed_by: str
    first_received_ns: int
    last_received_ns: int
    end_requested: bool
    revision: int


class Sessions(StoreConnection):
    """The part of a Store that keeps sessions."""

    def touch_sessions(self, rows: Sequence[tuple[str, str, int, bool]], received_ns: int) -> dict[str, str]:
        """:meth:`touch_session` for many ``(session_id, keyed_by, spans, end_requested)``; returns
        the previous status of the sessions that existed."""
        previous = dict(pairs(self.conn, "session_id, status", "sessions", "session_id", [row[0] for row in rows]))
        # New and known sessions alike in one upsert: a known one keeps its keyed_by and first time.
        _TOUCH_SESSIONS.run(
            self.conn,
            [(sid, OPEN, keyed_by, received_ns, received_ns, int(end), spans) for sid, keyed_by, spans, end in rows],
        )
        return previous

    def touch_session(self, session_id: str, keyed_by: str, spans: int, received_ns: int, end_requested: bool) -> str:
        """Record activity on a session; a scored or ended session is re-opened. Returns its previous status."""
        row = self.conn.execute("SELECT status FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            self.conn.execute(
                "INSERT INTO sessions (session_id, status, keyed_by, first_received_ns, last_received_ns,"
                " end_requested, span_count) VALUES (?,?,?,?,?,?,?)",
                (session_id, OPEN, keyed_by, received_ns, received_ns, int(end_requested), spans),
            )
            return ""
        self.conn.execute(
            "UPDATE sessions SET status = ?, last_received_ns = ?, span_count = span_count + ?,"
            " end_requested = MAX(end_requested, ?) WHERE session_id = ?",
            (OPEN, received_ns, spans, int(end_requested), session_id),
        )
        return row[0]

    def move_trace(self, trace_id: str, old_session: str, new_session: str) -> None:
        """A trace first keyed by its own id turned out to belong to a named session."""
        for table in ("spans", "agent_data_rows", "traces"):
            self.conn.execute(f"UPDATE {table} SET session_id = ? WHERE trace_id = ?", (new_session, trace_id))
        left = self.conn.execute("SELECT COUNT(*) FROM traces WHERE session_id = ?", (old_session,)).fetchone()[0]
        if left == 0:
            scored = self.conn.execute(
                "SELECT COUNT(*) FROM evaluations WHERE session_id = ?", (old_session,)
            ).fetchone()[0]
            if scored:
                self.conn.execute("UPDATE evaluations SET superseded = 1 WHERE session_id = ?", (old_session,))
            self.conn.execute("DELETE FROM sessions WHERE session_id = ?", (old_session,))

    def set_session_status(self, session_id: str, status: str, reason: str = "", now_ns: int = 0) -> None:
        """Records the session's new status, why it changed and when (receive clock)."""
        self.conn.execute(
            "UPDATE sessions SET status = ?, end_reason = ?, ended_ns = ? WHERE session_id = ?",
            (status, reason, now_ns, session_id),
        )

    def request_end(self, session_id: str) -> bool:
        """Records that the session was asked to end, so a restart still ends it; False when no such
        session is stored."""
        cur = self.conn.execute("UPDATE sessions SET end_requested = 1 WHERE session_id = ?", (session_id,))
        return cur.rowcount == 1

    def sessions_with_status(self, *statuses: str) -> list[SessionRow]:
        """The stored sessions in one of ``statuses``: what a restart resumes (open ones) or scores (ended ones)."""
        marks = ",".join("?" * len(statuses))
        rows = self.conn.execute(
            "SELECT session_id, status, keyed_by, first_received_ns, last_received_ns, end_requested, revision"
            f" FROM sessions WHERE status IN ({marks})",
            statuses,
        ).fetchall()
        return [SessionRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]

    def traces_of(self, session_id: str) -> list[tuple[str, str | None, int]]:
        """``(trace_id, root_span_id, last_received_ns)`` of a session's traces."""
        return self.conn.execute(
            "SELECT trace_id, root_span_id, last_received_ns FROM traces WHERE session_id = ?", (session_id,)
        ).fetchall()


_TOUCH_SESSIONS = RowsInsert(
    "INSERT INTO sessions (session_id, status, keyed_by, first_received_ns, last_received_ns, end_requested,"
    " span_count)",
    "(?,?,?,?,?,?,?)",
    " ON CONFLICT(session_id) DO UPDATE SET status = excluded.status,"
    " last_received_ns = excluded.last_received_ns, span_count = sessions.span_count + excluded.span_count,"
    " end_requested = MAX(sessions.end_requested, excluded.end_requested)",
)
