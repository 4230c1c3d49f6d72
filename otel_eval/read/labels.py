"""Human labels and user feedback, read back: a session's labels and feedback, the latest labels,
and **judge calibration**: how often the automatic verdicts agree with what people said.

A label says the verdict it was given on was right (``agree``) or wrong (``disagree``). Every
label is kept; a session's latest one counts. The *human-corrected verdict* of a labelled
session is the labelled verdict when the reviewer agreed and the opposite one when they did not;
only a ``passed`` or ``failed`` verdict has an opposite, so labels of ``not_evaluated`` or
unmatched sessions are kept (their notes matter) but counted apart. Calibration compares that
corrected verdict with the session's **current** evaluation, so a rescore with a new judge or new
thresholds is measured against the same human answers:

* per criterion: of the labelled sessions where it ran (not skipped, no error, not an
  informational value), how many times its pass/fail equals the corrected verdict, and how it
  missed when it did not (passed where people say the session failed, failed where they say it
  passed);
* the verdict as a whole, the same way.

User feedback (:mod:`otel_eval.user_feedback`) is counted per the current outcome of the session
it names (by attribute, else through its trace), per feedback name and value (its label, else
its score): how users' thumbs line up with the verdicts.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from ..models.results import FAILED, PASSED
from ..store.labels import StoredLabel
from .database import DbPath, missing_schema, named_rows, open_database
from .evaluations import UNSCORED, criteria_of, outcome

_OPPOSITE = {PASSED: FAILED, FAILED: PASSED}


def corrected_verdict(labelled_verdict: str, label: str) -> str | None:
    """The verdict people say is right: the labelled one (agree) or its opposite (disagree);
    None when the labelled verdict has no opposite (not_evaluated, unmatched)."""
    if labelled_verdict not in _OPPOSITE:
        return None
    return labelled_verdict if label == "agree" else _OPPOSITE[labelled_verdict]


@dataclass
class CriterionAgreement:
    """How often one criterion's pass/fail (or the verdict's) equals the human-corrected verdict."""

    criterion: str
    sessions: int = 0
    """Labelled sessions (with a corrected verdict) where the criterion ran."""
    agree: int = 0
    false_pass: int = 0
    """It passed; people say the session failed."""
    false_fail: int = 0
    """It failed; people say the session passed."""

    @property
    def rate(self) -> float | None:
        """The agreement rate; None when no labelled session ran it."""
        return self.agree / self.sessions if self.sessions else None

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape (``report``'s ``calibration.criteria``)."""
        return {
            "criterion": self.criterion,
            "sessions": self.sessions,
            "agree": self.agree,
            "agreement": None if self.rate is None else round(self.rate, 4),
            "false_pass": self.false_pass,
            "false_fail": self.false_fail,
        }


@dataclass
class FeedbackCount:
    """How many feedback records of one name and value are about sessions of one outcome."""

    outcome: str
    """The session's current outcome: passed, failed, not_evaluated, unmatched, or unscored (no
    evaluation yet, or no session of that id or trace is stored)."""
    name: str
    value: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape (``report``'s ``calibration.feedback``)."""
        return {"outcome": self.outcome, "name": self.name, "value": self.value, "count": self.count}


@dataclass
class Calibration:
    """Judge calibration against human labels, and user feedback per outcome (:func:`calibration`)."""

    labels: int = 0
    """Labels stored, every one (a session labelled twice counts twice)."""
    labelled_sessions: int = 0
    agree: int = 0
    """Labelled sessions whose latest label agrees with the verdict it was given on."""
    disagree: int = 0
    without_verdict: int = 0
    """Labelled sessions whose labelled verdict was not_evaluated or unmatched: no pass/fail to correct."""
    rescored_since: int = 0
    """Labelled sessions scored again since (their current revision is not the one labelled)."""
    verdict: CriterionAgreement = field(default_factory=lambda: CriterionAgreement("verdict"))
    """The current verdict against the corrected one (sessions whose current verdict is pass/fail)."""
    criteria: list[CriterionAgreement] = field(default_factory=list)
    feedback: list[FeedbackCount] = field(default_factory=list)

    @property
    def feedback_total(self) -> int:
        """Feedback records counted, of every name and value."""
        return sum(f.count for f in self.feedback)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape (``report``'s ``calibration``)."""
        return {
            "labels": self.labels,
            "labelled_sessions": self.labelled_sessions,
            "agree": self.agree,
            "disagree": self.disagree,
            "without_verdict": self.without_verdict,
            "rescored_since": self.rescored_since,
            "verdict": self.verdict.to_dict(),
            "criteria": [c.to_dict() for c in self.criteria],
            "feedback_total": self.feedback_total,
            "feedback": [f.to_dict() for f in self.feedback],
        }


def calibration(db_paths: Sequence[DbPath]) -> Calibration:
    """Judge calibration and feedback counts over every database (see the module's notes)."""
    out = Calibration()
    criteria: dict[str, CriterionAgreement] = {}
    feedback: dict[tuple[str, str, str], int] = {}
    for path in db_paths:
        with closing(open_database(path)) as conn:
            try:
                _add_labels(conn, out, criteria)
                _add_feedback(conn, feedback)
            except sqlite3.OperationalError as exc:
                if not missing_schema(exc):
                    raise
    out.criteria = sorted(criteria.values(), key=lambda c: (c.rate if c.rate is not None else 2.0, c.criterion))
    out.feedback = [
        FeedbackCount(o, n, v, c)
        for (o, n, v), c in sorted(feedback.items(), key=lambda item: (_OUTCOME_ORDER.get(item[0][0], 9), item[0]))
    ]
    return out


_OUTCOME_ORDER = {PASSED: 0, FAILED: 1, "not_evaluated": 2, "unmatched": 3, UNSCORED: 4}


def _add_labels(conn: sqlite3.Connection, out: Calibration, criteria: dict[str, CriterionAgreement]) -> None:
    out.labels += conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    rows = list(named_rows(conn, _LATEST_LABELS + " ORDER BY l.id"))
    ran = criteria_of(conn, [r["current_id"] for r in rows if r["current_id"] is not None])
    for r in rows:
        out.labelled_sessions += 1
        out.agree += r["label"] == "agree"
        out.disagree += r["label"] == "disagree"
        out.rescored_since += r["current_id"] is not None and r["current_revision"] != r["revision"]
        truth = corrected_verdict(r["verdict"], r["label"])
        if truth is None:
            out.without_verdict += 1
            continue
        if r["current_case"] and r["current_verdict"] in _OPPOSITE:
            _count(out.verdict, r["current_verdict"] == PASSED, truth)
        for c in ran.get(r["current_id"], []) if r["current_id"] is not None else []:
            if c.skipped or c.error or c.informational:
                continue
            _count(criteria.setdefault(c.criterion, CriterionAgreement(c.criterion)), c.passed, truth)


def _count(into: CriterionAgreement, passed: bool, truth: str) -> None:
    into.sessions += 1
    if passed == (truth == PASSED):
        into.agree += 1
    elif passed:
        into.false_pass += 1
    else:
        into.false_fail += 1


#: Each labelled session's latest label, with its current evaluation.
_LATEST_LABELS = (
    "SELECT l.*, e.id AS current_id, e.revision AS current_revision, e.case_id AS current_case,"
    " e.verdict AS current_verdict FROM labels l"
    " JOIN (SELECT session_id, MAX(id) AS id FROM labels GROUP BY session_id) latest ON latest.id = l.id"
    " LEFT JOIN evaluations e ON e.session_id = l.session_id AND e.superseded = 0"
)


def _add_feedback(conn: sqlite3.Connection, into: dict[tuple[str, str, str], int]) -> None:
    for case_id, verdict, name, label, score, count in conn.execute(
        "SELECT e.case_id, e.verdict, f.name, f.label, f.score, COUNT(*) FROM feedback f"
        " LEFT JOIN traces t ON f.session_id IS NULL AND t.trace_id = f.trace_id"
        " LEFT JOIN evaluations e ON e.session_id = COALESCE(f.session_id, t.session_id) AND e.superseded = 0"
        " GROUP BY 1, 2, 3, 4, 5"
    ):
        key = (outcome(case_id, verdict), name or "(unnamed)", feedback_value(label, score))
        into[key] = into.get(key, 0) + count


def feedback_value(label: str | None, score: float | None) -> str:
    """What a feedback record said, in one word: its label, else its score, else ``-``."""
    if label:
        return label
    if score is not None:
        return f"{score:g}"
    return "-"


# --- one session ------------------------------------------------------------------------------


def label_dict(label: StoredLabel) -> dict[str, Any]:
    """A label in the dashboard API's shape: its ``labels`` columns but ``session_id``."""
    return {
        "id": label.id,
        "evaluation_id": label.evaluation_id,
        "revision": label.revision,
        "verdict": label.verdict,
        "case_id": label.case_id,
        "label": label.label,
        "note": label.note,
        "who": label.who,
        "source": label.source,
        "created_at": label.created_at,
    }


#: A ``labels`` row's columns, in :class:`~otel_eval.store.labels.StoredLabel`'s order.
_LABEL_COLUMNS = "l.id, l.session_id, l.evaluation_id, l.revision, l.verdict, l.case_id, l.label, l.note, l.who, l.source, l.created_at"


def session_labels(conn: sqlite3.Connection, session_id: str) -> list[StoredLabel]:
    """Every label of the session, newest first (the first is the one that counts)."""
    return [
        StoredLabel(*row)
        for row in conn.execute(
            f"SELECT {_LABEL_COLUMNS} FROM labels l WHERE l.session_id = ? ORDER BY l.id DESC", (session_id,)
        )
    ]


@dataclass(frozen=True)
class UserFeedback:
    """One user feedback record about a session (a ``feedback`` row, :func:`session_feedback`)."""

    id: int
    session_id: str | None
    """The session it names by attribute; None: named through its trace."""
    trace_id: str
    span_id: str
    name: str | None
    score: float | None
    label: str | None
    explanation: str | None
    response_id: str | None
    time_ns: int
    received_ns: int
    attributes: dict[str, Any]
    """The log record's attributes, parsed."""
    body: object
    """The log record's body, parsed (None when it had none)."""
    value: str
    """:func:`feedback_value`: what it said, in one word."""

    def to_dict(self) -> dict[str, Any]:
        """The dashboard API's shape (the ``feedback`` columns, then ``value``)."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "name": self.name,
            "score": self.score,
            "label": self.label,
            "explanation": self.explanation,
            "response_id": self.response_id,
            "time_ns": self.time_ns,
            "received_ns": self.received_ns,
            "attributes": self.attributes,
            "body": self.body,
            "value": self.value,
        }


def session_feedback(conn: sqlite3.Connection, session_id: str) -> list[UserFeedback]:
    """The user feedback about the session (named by attribute, or through one of its traces),
    oldest first, ``attributes`` and ``body`` parsed."""
    rows = named_rows(
        conn,
        "SELECT * FROM (SELECT * FROM feedback WHERE session_id = ?"
        " UNION ALL SELECT f.* FROM feedback f JOIN traces t ON t.trace_id = f.trace_id"
        " WHERE f.session_id IS NULL AND t.session_id = ?) ORDER BY time_ns, id",
        (session_id, session_id),
    )
    return [
        UserFeedback(
            id=r["id"],
            session_id=r["session_id"],
            trace_id=r["trace_id"],
            span_id=r["span_id"],
            name=r["name"],
            score=r["score"],
            label=r["label"],
            explanation=r["explanation"],
            response_id=r["response_id"],
            time_ns=r["time_ns"],
            received_ns=r["received_ns"],
            attributes=json.loads(r["attributes"]) if r["attributes"] else {},
            body=json.loads(r["body"]) if r["body"] else None,
            value=feedback_value(r["label"], r["score"]),
        )
        for r in rows
    ]


@dataclass(frozen=True)
class RecentLabel:
    """A label as the Labels page lists it, with the session's current outcome (:func:`recent_labels`)."""

    stored: StoredLabel
    current_revision: int | None
    """The session's current revision: another one when it was scored again since."""
    corrected: str | None
    """:func:`corrected_verdict`: the verdict people say is right, when it has an opposite."""
    current: str
    """:func:`~otel_eval.read.evaluations.outcome` of the session's current evaluation."""


def recent_labels(conn: sqlite3.Connection, limit: int = 50) -> list[RecentLabel]:
    """The latest labels across sessions, newest first, with the session's current outcome."""
    out = []
    for row in conn.execute(
        f"SELECT {_LABEL_COLUMNS}, e.case_id, e.verdict, e.revision FROM labels l"
        " LEFT JOIN evaluations e ON e.session_id = l.session_id AND e.superseded = 0"
        " ORDER BY l.id DESC LIMIT ?",
        (limit,),
    ):
        label = StoredLabel(*row[:11])
        current_case, current_verdict, current_revision = row[11:]
        out.append(
            RecentLabel(
                label,
                current_revision,
                corrected_verdict(label.verdict, label.label),
                outcome(current_case, current_verdict),
            )
        )
    return out


def label_stamp(conn: sqlite3.Connection) -> str:
    """Changes whenever a label or a feedback record is stored (the dashboard polls it)."""
    try:
        row = conn.execute(
            "SELECT (SELECT COALESCE(MAX(id), 0) FROM labels), (SELECT COALESCE(MAX(id), 0) FROM feedback)"
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if not missing_schema(exc):
            raise
        return "0-0"
    return f"{row[0]}-{row[1]}"
