"""What the server's database says after a phase: session states, and when each scored session
was received, ended and its evaluation stored."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


def read_only(db: Path) -> sqlite3.Connection:
    """The server's database opened read-only: reading it never creates or changes the file measured."""
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def _iso_to_ns(text: str) -> int:
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def session_status_counts(db: Path) -> dict[str, int]:
    conn = read_only(db)
    try:
        return dict(conn.execute("SELECT status, COUNT(*) FROM sessions GROUP BY status").fetchall())
    finally:
        conn.close()


@dataclass
class SessionTimes:
    session_id: str
    first_received_ns: int
    last_received_ns: int
    ended_ns: int
    stored_ns: int
    matched_by: str


def scored_sessions(db: Path) -> list[SessionTimes]:
    """Every scored session with the time its first evaluation was stored: the verdict a user
    waits for. With the online judge on, a judged session's judge outcome is a later revision,
    stored when the judge answers (seconds later), which must not count as the verdict's latency."""
    conn = read_only(db)
    try:
        rows = conn.execute(
            "SELECT s.session_id, s.first_received_ns, s.last_received_ns, s.ended_ns, e.created_at, e.matched_by"
            " FROM sessions s JOIN evaluations e ON e.session_id = s.session_id AND e.revision ="
            " (SELECT MIN(revision) FROM evaluations WHERE session_id = s.session_id)"
            " WHERE s.status = 'scored'"
        ).fetchall()
    finally:
        conn.close()
    return [SessionTimes(r[0], r[1], r[2], r[3] or 0, _iso_to_ns(r[4]), r[5] or "") for r in rows]
