"""The session scheduler: which session a trace belongs to, and when sessions end (DESIGN §5).

It is driven by the writer thread only: session resolution reads the writer's connection, and
every change to the in-memory timers is staged while a transaction is open and applied only once
it committed (:meth:`Staged.apply`), so the timers never count spans that were rolled back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..mapping import session_id_of
from ..sessions import (
    KEYED_BY_ATTRIBUTE,
    KEYED_BY_TRACE,
    REASON_REQUESTED,
    REASON_SHUTDOWN,
    SessionTracker,
    Timing,
)
from ..span_rows import END_NS, ENDS_SESSION, NAMED_SESSION_ID, PARENT_SPAN_ID, SPAN_ID, START_NS, TRACE_ID, SpanRow
from ..spans import SpanRecord
from ..store import ENDED, OPEN, SCORED, Store
from ..store.statements import pairs
from .activity import ActivityLog

log = logging.getLogger("otel_eval.engine")


@dataclass
class Staged:
    """Tracker changes of one write, applied after its commit (discarded on rollback)."""

    changes: list[Callable[[SessionTracker], None]] = field(default_factory=list)
    traces: dict[str, str] = field(default_factory=dict)
    """trace id → session id decided in this write (the tracker learns them only at commit)."""
    earlier: Staged | None = None
    """The staged writes before this one in the same transaction (a group commit)."""

    def session_of_trace(self, trace_id: str) -> str | None:
        """The session this write (or an earlier one of the same transaction) put the trace in, if any."""
        staged: Staged | None = self
        while staged is not None:
            found = staged.traces.get(trace_id)
            if found is not None:
                return found
            staged = staged.earlier
        return None

    def apply(self, tracker: SessionTracker) -> None:
        """Apply the staged changes to the tracker, the earlier writes' first: called once the transaction committed."""
        if self.earlier is not None:
            self.earlier.apply(tracker)
        for change in self.changes:
            change(tracker)


class SessionScheduler:
    """Decides which session each trace belongs to and when sessions end, for the writer (its only caller)."""

    def __init__(self, timing: Timing, activity: ActivityLog | None = None):
        self.timing = timing
        self.tracker = SessionTracker(timing)
        self.activity = activity or ActivityLog(timing)
        self._retry_ends: list[tuple[str, str]] = []
        """Sessions whose end could not be committed (storage fault): marked again next round."""
        self._contested: set[str] = set()
        """Traces in which spans name different sessions (a nested agent's own conversation id):
        each new batch of theirs settles the session again, nearest the root, until they end."""

    def __len__(self) -> int:
        return len(self.tracker)

    def __contains__(self, session_id: str) -> bool:
        return session_id in self.tracker

    @property
    def tick(self) -> float:
        """How often the writer looks for ended sessions when nothing else wakes it."""
        return min(0.5, max(0.01, min(self.timing.trace_quiet, self.timing.session_idle) / 5))

    def resume(self, store: Store) -> list[tuple[str, int]]:
        """Rebuild the timers of open sessions from the database; returns the ended sessions
        still waiting to be scored, with their sizes (:func:`with_span_counts`)."""
        opened = store.sessions_with_status(OPEN)
        for row in opened:
            self.tracker.resume(row.session_id, row.keyed_by, row.end_requested, store.traces_of(row.session_id))
        pending = [row.session_id for row in store.sessions_with_status(ENDED)]
        if opened or pending:
            log.info(
                "resumed %d open session(s) and %d awaiting scoring from %s", len(opened), len(pending), store.path
            )
        return with_span_counts(store, pending)

    # --- ingest (inside the writer's transaction) ----------------------------------------------

    def store_spans(self, store: Store, rows: Sequence[SpanRow], now_ns: int, staged: Staged) -> int:
        """Insert a batch's spans with their session; returns how many were new."""
        # One pass over the rows: each trace's rows (in the order traces first appear), and the
        # session id any span of a trace names (it names the whole trace's session). Per-row
        # work here holds the GIL, in-process the agent's (benchmarks/README.md, "Issue 34.1").
        by_trace: dict[str, list[SpanRow]] = {}
        named: dict[str, str] = {}
        for row in rows:
            trace_id = row[TRACE_ID]
            members = by_trace.get(trace_id)
            if members is None:
                by_trace[trace_id] = [row]
            else:
                members.append(row)
            found = row[NAMED_SESSION_ID]
            if found:
                first = named.setdefault(trace_id, found)
                if first != found:  # two sessions named inside one trace: settled below
                    self._contested.add(trace_id)
        tracked = self.tracker.session_of_trace
        known: dict[str, str | None] = {
            trace_id: staged.session_of_trace(trace_id) or tracked(trace_id) for trace_id in by_trace
        }
        unknown = [trace_id for trace_id, session in known.items() if session is None]
        new_traces: set[str] = set()
        if unknown:  # traces this process has not seen since it started: maybe stored before
            stored_before = store.trace_sessions(unknown)
            known.update(stored_before)
            new_traces.update(trace_id for trace_id in unknown if trace_id not in stored_before)
        for trace_id, name in named.items():
            session = known.get(trace_id)
            if session is not None and session != trace_id and session != name:
                self._contested.add(trace_id)
        for trace_id in self._contested.intersection(known):
            named[trace_id] = nearest_root_session(store.trace_spans(trace_id), rows, trace_id)
        resolved = {
            trace_id: self._resolve(store, trace_id, session, named.get(trace_id), staged)
            for trace_id, session in known.items()
        }
        fresh = store.insert_spans([(row, resolved[row[TRACE_ID]][0]) for row in rows], now_ns, new_traces)
        if all(fresh):
            per_trace = by_trace
        else:  # some were stored before (a retried export): only the new ones count
            per_trace = {}
            for row, is_new in zip(rows, fresh):
                if is_new:
                    per_trace.setdefault(row[TRACE_ID], []).append(row)
        per_session: dict[
            str, tuple[str, int, bool]
        ] = {}  # session id → (keyed_by, new spans, an explicit end among them)
        trace_rows = []
        observed: list[tuple[str, str, str, bool, bool]] = []
        for trace_id, members in per_trace.items():
            session_id, keyed_by = resolved[trace_id]
            if len(members) == 1:  # most traces of a batch, in-process: one span each
                row = members[0]
                root = None if row[PARENT_SPAN_ID] else row[SPAN_ID]
                ends = bool(row[ENDS_SESSION])
                start_ns, end_ns = row[START_NS], row[END_NS]
            else:
                roots = [row[SPAN_ID] for row in members if not row[PARENT_SPAN_ID]]
                root = roots[0] if roots else None
                ends = any(row[ENDS_SESSION] for row in members)
                start_ns, end_ns = min(row[START_NS] for row in members), max(row[END_NS] for row in members)
            trace_rows.append((trace_id, session_id, root, start_ns, end_ns, len(members)))
            entry = per_session.get(session_id)
            if entry is None:
                per_session[session_id] = (keyed_by, len(members), ends)
            else:
                per_session[session_id] = (entry[0], entry[1] + len(members), entry[2] or ends)
            observed.append((session_id, keyed_by, trace_id, root is not None, ends))
        if observed:  # one change for the batch's traces, applied in order once committed
            staged.changes.append(lambda t: _observe(t, observed, now_ns))
        store.touch_traces(trace_rows, now_ns)
        previous = store.touch_sessions(
            [(session_id, keyed_by, count, ends) for session_id, (keyed_by, count, ends) in per_session.items()], now_ns
        )
        for session_id, (keyed_by, count, _) in per_session.items():
            if previous.get(session_id) in (SCORED, ENDED):
                log.info("session %s re-opened by %d late span(s); it will be scored again", session_id, count)
            elif session_id not in previous:  # said once committed: a rolled-back batch opened nothing

                def opened(tracker: SessionTracker, session: str = session_id, keyed: str = keyed_by) -> None:
                    self.activity.opened(session, keyed)

                staged.changes.append(opened)
        return sum(fresh)

    def _resolve(
        self, store: Store, trace_id: str, known: str | None, named: str | None, staged: Staged
    ) -> tuple[str, str]:
        """The session a trace belongs to (``known``: where it is so far, if anywhere). A trace
        first seen without a session id is its own session; when a later span names one, the
        trace moves there."""
        if named is None:
            staged.traces[trace_id] = known or trace_id
            session_id = known or trace_id
            return session_id, KEYED_BY_TRACE if session_id == trace_id else KEYED_BY_ATTRIBUTE
        if known is not None and known != named and (known == trace_id or trace_id in self._contested):
            store.move_trace(trace_id, known, named)
            staged.changes.append(lambda t: t.move_trace(trace_id, known, named, KEYED_BY_ATTRIBUTE))
        staged.traces[trace_id] = named
        return named, KEYED_BY_ATTRIBUTE

    # --- ends ------------------------------------------------------------------------------------

    def take_requested(self, session_id: str | None) -> list[tuple[str, str]]:
        """Sessions an explicit request ends now (None: every open one, at shutdown)."""
        if session_id is None:
            ended = [(sid, REASON_SHUTDOWN) for sid in self.tracker.open_sessions()]
        elif session_id in self.tracker:
            ended = [(session_id, REASON_REQUESTED)]
        else:
            ended = []
        for sid, _ in ended:
            self.tracker.forget(sid)
        self._settle_contested()
        return ended

    def take_due(self, now_ns: int) -> list[tuple[str, str]]:
        """Sessions whose timers ran out, plus any whose end failed to commit last time."""
        due, self._retry_ends = self._retry_ends + self.tracker.due(now_ns), []
        if due:
            self._settle_contested()
        return due

    def _settle_contested(self) -> None:
        """Stop watching the contested traces of sessions that ended: they are settled."""
        if self._contested:
            self._contested = {
                t for t in self._contested if (s := self.tracker.session_of_trace(t)) is not None and s in self.tracker
            }

    def end_failed(self, ended: list[tuple[str, str]]) -> None:
        """Sessions whose end could not be committed: :meth:`take_due` returns them again next round."""
        self._retry_ends.extend(ended)


def _observe(tracker: SessionTracker, observed: list[tuple[str, str, str, bool, bool]], now_ns: int) -> None:
    """The tracker hears of a committed batch's traces: ``(session, keyed_by, trace, root seen, end)``."""
    observe = tracker.observe
    for session_id, keyed_by, trace_id, root_seen, ends in observed:
        observe(session_id, keyed_by, trace_id, root_seen, now_ns, ends)


def with_span_counts(store: Store, session_ids: Sequence[str]) -> list[tuple[str, int]]:
    """``(session_id, spans stored)`` of each session, in the order given: the size the score
    workers choose a session's lane by (:data:`~.workers.BIG_SESSION_SPANS`). One statement for
    them all, on the caller's connection (the writer's)."""
    counts = dict(pairs(store.conn, "session_id, span_count", "sessions", "session_id", session_ids))
    return [(session_id, int(counts.get(session_id) or 0)) for session_id in session_ids]


def nearest_root_session(stored: Sequence[SpanRecord], rows: Sequence[SpanRow], trace_id: str) -> str:
    """The session a trace belongs to when its spans name several: the one named nearest its
    root (fewest parent links up), then by the earliest start, then by span id.

    A nested agent may keep a conversation of its own inside the trace (google-adk's
    ``AgentTool`` runs its agent in a throwaway session whose ``gen_ai.conversation.id`` is on
    the inner spans); that id never re-keys the turn. Spans end children first, so the inner id
    usually arrives first: the answer is worked out again on every batch of the trace, from
    all of its spans seen so far, so that it does not depend on where the SDK cut the batches.
    A span whose parent has not arrived counts its depth up to the gap."""
    parent_of: dict[str, str | None] = {}
    naming: dict[str, tuple[str, int]] = {}
    for span in stored:
        parent_of[span.span_id] = span.parent_span_id
        name = session_id_of(span)  # detects the span's dialect for its own session keys
        if name:
            naming[span.span_id] = (name, span.start_ns)
    for row in rows:
        if row[TRACE_ID] != trace_id:
            continue
        parent_of.setdefault(row[SPAN_ID], row[PARENT_SPAN_ID])
        if row[NAMED_SESSION_ID]:
            naming.setdefault(row[SPAN_ID], (row[NAMED_SESSION_ID], row[START_NS]))

    def depth(span_id: str) -> int:
        steps, seen = 0, {span_id}
        parent = parent_of.get(span_id)
        while parent is not None:
            steps += 1
            if parent not in parent_of or parent in seen:
                break
            seen.add(parent)
            parent = parent_of[parent]
        return steps

    best = min(naming, key=lambda sid: (depth(sid), naming[sid][1], sid))
    return naming[best][0]
