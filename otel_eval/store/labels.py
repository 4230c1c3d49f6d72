"""Human labels: a reviewer's ``agree`` / ``disagree`` with a session's current verdict, with a
note, who and when (``otel-eval label``, the dashboard's form).

Written by :meth:`Labels.add_label` in one short ``BEGIN IMMEDIATE`` transaction of its own,
beside a running collector: SQLite's busy timeout (the Store's ``timeout``) waits out the
writer's commits, as ``rescore``'s writes do. Every label is kept; the latest of a session counts
(:mod:`otel_eval.read.labels`). User feedback sent by applications is :mod:`.feedback`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from .connection import StoreConnection
from .evaluations import now_iso

AGREE, DISAGREE = "agree", "disagree"
LABELS = (AGREE, DISAGREE)
#: Longest note kept; a longer one is refused (a note is a sentence or two, not a document).
MAX_NOTE_CHARS = 4000


class UnlabellableSession(LookupError):
    """The session is unknown (``state`` None) or has no evaluation yet (``state`` open / ended)."""

    def __init__(self, session_id: str, state: str | None):
        super().__init__(session_id)
        self.session_id = session_id
        self.state = state


@dataclass(frozen=True)
class StoredLabel:
    """A person's label on one evaluation of a session, as stored: what they judged, and who."""

    id: int
    session_id: str
    evaluation_id: int
    revision: int
    verdict: str
    """What was labelled: the current evaluation's verdict (passed, failed, not_evaluated), or
    ``unmatched`` when it matched no golden case."""
    case_id: str | None
    label: str
    note: str | None
    who: str
    source: str
    created_at: str


class Labels(StoreConnection):
    """The part of a Store that records human labels."""

    def add_label(self, session_id: str, label: str, *, note: str | None, who: str, source: str) -> StoredLabel:
        """Label the session's current evaluation; :class:`UnlabellableSession` when it has none,
        ValueError for a label other than agree / disagree or an overlong note."""
        if label not in LABELS:
            raise ValueError(f"label must be agree or disagree, got {label!r}")
        note = (note or "").strip() or None
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise ValueError(f"the note has {len(note)} characters; at most {MAX_NOTE_CHARS}")
        with self.transaction() as conn:
            # Read and write in one transaction: the engine cannot supersede the evaluation between.
            found = conn.execute(
                "SELECT id, revision, case_id, verdict FROM evaluations WHERE session_id = ? AND superseded = 0"
                " ORDER BY revision DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            if found is None:
                state = conn.execute("SELECT status FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
                raise UnlabellableSession(session_id, state[0] if state else None)
            evaluation_id, revision, case_id, verdict = found
            verdict = verdict if case_id else "unmatched"
            created_at = now_iso()
            cursor = conn.execute(
                "INSERT INTO labels (session_id, evaluation_id, revision, verdict, case_id, label, note, who, source,"
                " created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (session_id, evaluation_id, revision, verdict, case_id, label, note, who, source, created_at),
            )
        return StoredLabel(
            int(cursor.lastrowid or 0),
            session_id,
            evaluation_id,
            revision,
            verdict,
            case_id,
            label,
            note,
            who,
            source,
            created_at,
        )
