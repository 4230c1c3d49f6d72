"""The queries of unmatched sessions, for the dashboard's "Unmatched clusters" page: the most
recent ones in a window, read with one indexed query and a cap, so the page stays a page on a
database of millions of sessions (``otel-eval golden suggest`` reads them all, through
:func:`otel_eval.golden_suggest.unmatched_sessions`)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

_WHERE = " FROM evaluations WHERE superseded = 0 AND case_id IS NULL AND created_at >= ?"
_HAS_QUERY = " AND TRIM(COALESCE(query, '')) != ''"


@dataclass
class UnmatchedQueries:
    """The unmatched sessions of a window, and the most recent of them with a query to cluster."""

    total: int = 0
    """Unmatched sessions (current evaluation without a case) in the window."""
    with_query: int = 0
    """Those with a query to cluster."""
    sessions: list[tuple[str, str, str]] = field(default_factory=list)
    """``(session_id, query, created_at)`` of the most recent ``limit`` of them, oldest first."""

    @property
    def capped(self) -> bool:
        """More sessions had a query than were read (the page says so)."""
        return self.with_query > len(self.sessions)


def unmatched_queries(conn: sqlite3.Connection, since: str | None, limit: int) -> UnmatchedQueries:
    """Unmatched sessions created at or after ``since`` (the store's ``created_at`` form; None: all)."""
    bound = (since or "",)
    total, with_query = conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM(TRIM(COALESCE(query, '')) != ''), 0){_WHERE}", bound
    ).fetchone()
    rows = conn.execute(
        f"SELECT session_id, query, created_at{_WHERE}{_HAS_QUERY} ORDER BY id DESC LIMIT ?", (*bound, limit)
    ).fetchall()
    return UnmatchedQueries(total, with_query, [(r[0], r[1], r[2]) for r in reversed(rows)])
