"""Session lifecycle: which session a span belongs to, and when a session has ended (DESIGN §5).

The tracker holds only indexes and timers; the state it decides from is also in SQLite, so
``resume`` rebuilds it after a restart. Time is the *receive* clock, never span timestamps, so a
skewed host cannot end a session early.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

KEYED_BY_ATTRIBUTE = "attribute"
KEYED_BY_TRACE = "trace"

REASON_EXPLICIT = "explicit"
REASON_TRACE_COMPLETE = "trace_complete"
REASON_IDLE = "idle"
REASON_SHUTDOWN = "shutdown"
REASON_REQUESTED = "requested"


@dataclass(frozen=True)
class Timing:
    """How long the tracker waits before a trace counts as complete and a session as ended."""

    trace_quiet: float = 5.0
    """Seconds without a new span, after the root ended, before a trace counts as complete."""
    session_idle: float = 60.0
    """Seconds without a new trace, once every trace is complete, before a session ends."""

    @property
    def quiet_ns(self) -> int:
        """:attr:`trace_quiet` in nanoseconds, the unit of the receive clock."""
        return int(self.trace_quiet * 1e9)

    @property
    def idle_ns(self) -> int:
        """:attr:`session_idle` in nanoseconds, the unit of the receive clock."""
        return int(self.session_idle * 1e9)


@dataclass
class _Trace:
    root_seen: bool = False
    last_received_ns: int = 0


@dataclass
class _Session:
    keyed_by: str
    last_received_ns: int = 0
    end_requested: bool = False
    traces: dict[str, _Trace] = field(default_factory=dict)
    order: int = 0
    """When the tracker first saw it: sessions ending in one round are reported in this order."""
    check_at_ns: int = -1
    """The earliest receive-clock time it could end: its live entry in the tracker's heap (-1: none)."""


class SessionTracker:
    """Sessions' timers. ``due`` looks only at the sessions whose earliest possible end has come
    (a heap ordered by that time), not at every open session: the writer asks at every round, and
    a busy collector holds tens of thousands of open sessions."""

    def __init__(self, timing: Timing):
        self.timing = timing
        self._sessions: dict[str, _Session] = {}
        self._trace_session: dict[str, str] = {}
        self._checks: list[tuple[int, str]] = []
        """``(check_at_ns, session_id)``; an entry whose time is not the session's ``check_at_ns``
        any more (it saw a newer span, or it ended) is stale and skipped."""
        self._order = itertools.count()

    def _schedule(self, session_id: str, session: _Session, at_ns: int) -> None:
        session.check_at_ns = at_ns
        heapq.heappush(self._checks, (at_ns, session_id))

    def _new_session(self, session_id: str, keyed_by: str, end_requested: bool = False) -> _Session:
        """Tracked from now on, not yet scheduled (its first span, or ``resume``, does that)."""
        session = self._sessions[session_id] = _Session(keyed_by, 0, end_requested, order=next(self._order))
        return session

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._sessions

    def session_of_trace(self, trace_id: str) -> str | None:
        """The open session a trace was seen in, None when the tracker holds no such trace."""
        return self._trace_session.get(trace_id)

    def observe(
        self, session_id: str, keyed_by: str, trace_id: str, root_seen: bool, now_ns: int, end_requested: bool = False
    ) -> None:
        """A span of ``trace_id`` arrived for ``session_id`` at ``now_ns`` (receive clock)."""
        session = self._sessions.get(session_id)
        if session is None:
            session = self._new_session(session_id, keyed_by)
        session.last_received_ns = max(session.last_received_ns, now_ns)
        session.end_requested = session.end_requested or end_requested
        trace = session.traces.get(trace_id)
        if trace is None:
            trace = session.traces[trace_id] = _Trace()
        trace.root_seen = trace.root_seen or root_seen
        trace.last_received_ns = max(trace.last_received_ns, now_ns)
        self._trace_session[trace_id] = session_id
        # Nothing can end it before every trace has been quiet for trace_quiet.
        quiet_at = session.last_received_ns + self.timing.quiet_ns
        if quiet_at != session.check_at_ns:
            self._schedule(session_id, session, quiet_at)

    def move_trace(self, trace_id: str, old_session: str, new_session: str, keyed_by: str) -> None:
        """A trace first keyed by its own id turned out to belong to a named session: its timers and
        index entry go with it, and a session left with no trace is dropped."""
        old = self._sessions.get(old_session)
        trace = old.traces.pop(trace_id, None) if old else None
        if old is not None and not old.traces:
            del self._sessions[old_session]
        if trace is not None:
            self.observe(new_session, keyed_by, trace_id, trace.root_seen, trace.last_received_ns)
        self._trace_session[trace_id] = new_session

    def request_end(self, session_id: str) -> bool:
        """Marks the session to end once its traces are quiet, without waiting for it to go idle;
        False when no open session has that id."""
        session = self._sessions.get(session_id)
        if session is None:
            return False
        session.end_requested = True
        # It may end as soon as its traces are quiet, which can be now: look again at the next round.
        self._schedule(session_id, session, min(session.check_at_ns, session.last_received_ns + self.timing.quiet_ns))
        return True

    def due(self, now_ns: int) -> list[tuple[str, str]]:
        """Sessions that have ended by ``now_ns``, with the reason; they leave the tracker."""
        quiet, idle = self.timing.quiet_ns, self.timing.idle_ns
        checks = self._checks
        ended: list[tuple[_Session, str, str]] = []
        while checks and checks[0][0] <= now_ns:
            at_ns, session_id = heapq.heappop(checks)
            session = self._sessions.get(session_id)
            if session is None or session.check_at_ns != at_ns:
                continue  # stale: the session ended, or a newer span moved its check
            reason = self._end_reason(session, now_ns, quiet, idle)
            if reason:
                session.check_at_ns = -1  # a duplicate entry popped later in this round is stale
                ended.append((session, session_id, reason))
            else:  # quiet but not complete: it can only end idle (or by a newer span's schedule)
                wait = quiet if now_ns - session.last_received_ns < quiet else idle
                self._schedule(session_id, session, max(session.last_received_ns + wait, at_ns + 1))
        ended.sort(key=lambda item: item[0].order)
        for _, session_id, _ in ended:
            self.forget(session_id)
        return [(session_id, reason) for _, session_id, reason in ended]

    @staticmethod
    def _end_reason(session: _Session, now_ns: int, quiet: int, idle: int) -> str:
        all_quiet = all(now_ns - t.last_received_ns >= quiet for t in session.traces.values())
        if not all_quiet:
            return ""
        complete = all(t.root_seen for t in session.traces.values())
        if complete and session.end_requested:
            return REASON_EXPLICIT
        if complete and session.keyed_by == KEYED_BY_TRACE:
            return REASON_TRACE_COMPLETE
        # A trace whose root never arrived (lost, or not sampled) must not keep a session open forever.
        if now_ns - session.last_received_ns >= idle:
            return REASON_IDLE
        return ""

    def forget(self, session_id: str) -> None:
        """Drops an ended session and its traces' index entries, so memory holds only open sessions."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            for trace_id in session.traces:
                if self._trace_session.get(trace_id) == session_id:
                    del self._trace_session[trace_id]

    def open_sessions(self) -> list[str]:
        """The ids of every session not ended yet: what shutdown ends."""
        return list(self._sessions)

    def resume(
        self, session_id: str, keyed_by: str, end_requested: bool, traces: Iterable[tuple[str, str | None, int]]
    ) -> None:
        """Rebuild a session's timers from the database after a restart."""
        for trace_id, root_span_id, last_received_ns in traces:
            self.observe(session_id, keyed_by, trace_id, root_span_id is not None, last_received_ns, end_requested)
        if session_id not in self._sessions:  # a session row with no traces: end it at the next tick
            self._schedule(session_id, self._new_session(session_id, keyed_by, end_requested), 0)
