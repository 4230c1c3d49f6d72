"""Sessions: the list the dashboard filters and pages, one session's overview, its stored state,
and which sessions ``export`` and ``rescore`` work on.

A session is listed with its current evaluation (``sessions`` LEFT JOIN the evaluation that is
not superseded), so a session not scored yet is listed too, as pending. Rows come back typed
(:class:`SessionSummary`, :class:`SessionOverview`, :class:`SessionDetail`), their ``to_dict()``
the dashboard API's and ``report --session --json``'s shapes; nothing here knows about HTML or
terminals.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any, NamedTuple

from ..errors import InputError
from ..store import SCORED
from ..store.labels import StoredLabel
from ..unread import Unread
from .database import DbPath, missing_schema, named_rows, open_database
from .evaluations import (
    MatchEvidence,
    Revision,
    StoredCriterion,
    StoredEvaluation,
    criteria_of,
    current_evaluations,
    failing_criteria,
    judge_state,
    match_evidence,
    match_to_dict,
    outcome,
    revisions,
)
from .labels import UserFeedback, label_dict, session_feedback, session_labels
from .spans import TurnReading, session_reading, session_turns

#: Result filter values and the SQL condition each stands for (on the current evaluation ``e``).
RESULT_FILTERS: dict[str, str] = {
    "passed": "e.case_id IS NOT NULL AND e.verdict = 'passed'",
    "failed": "e.case_id IS NOT NULL AND e.verdict = 'failed'",
    "not_evaluated": "e.case_id IS NOT NULL AND e.verdict = 'not_evaluated'",
    "unmatched": "e.id IS NOT NULL AND e.case_id IS NULL",
    "pending": "e.id IS NULL",
}
MAX_PAGE_SIZE = 500


@dataclass(frozen=True)
class SessionFilter:
    """The dashboard's session list filter and page, as its query string gives them."""

    case: str = ""
    version: str = ""
    result: str = ""
    text: str = ""
    page: int = 1
    page_size: int = 50

    @classmethod
    def from_query(cls, params: Mapping[str, Sequence[str]]) -> SessionFilter:
        """From a parsed query string; raises :class:`InputError` naming the parameter that is wrong."""

        def one(name: str) -> str:
            values = params.get(name) or [""]
            return values[-1].strip()

        result = one("result").lower()
        if result and result not in RESULT_FILTERS:
            raise InputError(
                "query string", f"result must be one of {', '.join(RESULT_FILTERS)}, got {result!r}", "result"
            )
        numbers = {}
        for name, default, upper in (("page", 1, 1_000_000), ("page_size", 50, MAX_PAGE_SIZE)):
            text = one(name)
            if not text:
                numbers[name] = default
                continue
            if not text.isdigit() or not 1 <= int(text) <= upper:
                raise InputError("query string", f"{name} must be a whole number from 1 to {upper}, got {text!r}", name)
            numbers[name] = int(text)
        return cls(case=one("case"), version=one("version"), result=result, text=one("q"), **numbers)

    def query_params(self, **overrides: Any) -> dict[str, str]:
        """The non-default settings as query parameters (for links that keep the other filters)."""
        values = {
            "case": self.case,
            "version": self.version,
            "result": self.result,
            "q": self.text,
            "page": "" if self.page == 1 else str(self.page),
            "page_size": "" if self.page_size == 50 else str(self.page_size),
        }
        values.update({k: str(v) for k, v in overrides.items()})
        return {k: v for k, v in values.items() if v}


_SESSION_COLUMNS = """
    s.session_id, s.status, s.revision, s.user_id, s.service_name, s.end_reason, s.span_count, s.trace_count,
    s.first_received_ns, s.last_received_ns, COALESCE(e.query, s.query) AS query,
    COALESCE(e.agent_version, s.agent_version) AS agent_version,
    e.id AS evaluation_id, e.case_id, e.eval_set_id, e.matched_by, e.match_score, e.passed, e.score,
    e.verdict AS stored_verdict, e.created_at, e.error, e.judge_pending
"""
_SESSION_FROM = " FROM sessions s LEFT JOIN evaluations e ON e.session_id = s.session_id AND e.superseded = 0"


def _where(f: SessionFilter, with_result: bool = True) -> tuple[str, list[Any]]:
    """The filter as a WHERE clause and its parameters (``with_result`` False: all results)."""
    clauses: list[str] = []
    params: list[Any] = []
    if f.case:
        clauses.append("e.case_id = ?")
        params.append(f.case)
    if f.version:
        clauses.append("COALESCE(e.agent_version, s.agent_version) = ?")
        params.append(f.version)
    if f.text:
        pattern = "%" + f.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append("(s.session_id LIKE ? ESCAPE '\\' OR COALESCE(e.query, s.query) LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    if with_result and f.result:
        clauses.append(RESULT_FILTERS[f.result])
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


#: Stored verdict → the word the pages show.
VERDICT_WORDS = {"passed": "pass", "failed": "fail", "not_evaluated": "not_evaluated"}


def listed_verdict(evaluation_id: int | None, case_id: str | None, stored_verdict: str | None) -> str:
    """pass / fail / not_evaluated / unmatched / pending, the one word a person scans for."""
    if evaluation_id is None or stored_verdict is None:
        return "pending"
    if not case_id:
        return "unmatched"
    return VERDICT_WORDS[stored_verdict]


@dataclass(frozen=True)
class SessionSummary:
    """A session as the dashboard lists it: its stored state and its current evaluation, if any
    (the evaluation's fields are None while it is pending)."""

    session_id: str
    status: str
    """open, ended or scored."""
    revision: int
    user_id: str | None
    service_name: str | None
    end_reason: str | None
    span_count: int
    trace_count: int
    first_received_ns: int | None
    last_received_ns: int | None
    query: str | None
    """The evaluation's query, else the session's."""
    agent_version: str | None
    """The evaluation's agent version, else the session's."""
    evaluation_id: int | None
    case_id: str | None
    eval_set_id: str | None
    matched_by: str | None
    match_score: float | None
    passed: bool | None
    score: float | None
    stored_verdict: str | None
    """passed, failed or not_evaluated as stored; :attr:`verdict` is the word the pages show."""
    created_at: str | None
    error: str | None
    judge_pending: int | None
    """Judge criteria the evaluation waits for (0: complete)."""
    verdict: str
    """:func:`listed_verdict`: pass, fail, not_evaluated, unmatched or pending."""
    failing_criteria: tuple[str, ...]
    judge: str | None
    """:func:`~otel_eval.read.evaluations.judge_state` of its criteria."""

    def _columns(self) -> dict[str, Any]:
        """The stored columns, in the order of the query, then the listed verdict."""
        return {
            "session_id": self.session_id,
            "status": self.status,
            "revision": self.revision,
            "user_id": self.user_id,
            "service_name": self.service_name,
            "end_reason": self.end_reason,
            "span_count": self.span_count,
            "trace_count": self.trace_count,
            "first_received_ns": self.first_received_ns,
            "last_received_ns": self.last_received_ns,
            "query": self.query,
            "agent_version": self.agent_version,
            "evaluation_id": self.evaluation_id,
            "case_id": self.case_id,
            "eval_set_id": self.eval_set_id,
            "matched_by": self.matched_by,
            "match_score": self.match_score,
            "passed": self.passed,
            "score": self.score,
            "stored_verdict": self.stored_verdict,
            "created_at": self.created_at,
            "error": self.error,
            "judge_pending": self.judge_pending,
            "verdict": self.verdict,
        }

    def to_dict(self) -> dict[str, Any]:
        """The dashboard API's shape of a listed session (``/api/sessions``)."""
        return {**self._columns(), "failing_criteria": list(self.failing_criteria), "judge": self.judge}


@dataclass(frozen=True)
class SessionOverview(SessionSummary):
    """One session with everything its page shows but the spans: the current evaluation's
    criteria and match evidence, the turns, every revision, the labels and the user feedback."""

    criteria: tuple[StoredCriterion, ...] = ()
    match: MatchEvidence | None = None
    turns: tuple[TurnReading, ...] = ()
    revisions: tuple[Revision, ...] = ()
    """Newest first."""
    labels: tuple[StoredLabel, ...] = ()
    """Newest first: the first is the one that counts."""
    feedback: tuple[UserFeedback, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The dashboard API's shape of one session (``/api/sessions/<id>``)."""
        return {
            **self._columns(),
            "criteria": [c.to_dict() for c in self.criteria],
            "match": match_to_dict(self.match),
            "judge": self.judge,
            "failing_criteria": list(self.failing_criteria),
            "turns": [t.to_dict() for t in self.turns],
            "revisions": [r.to_dict() for r in self.revisions],
            "labels": [label_dict(label) for label in self.labels],
            "feedback": [f.to_dict() for f in self.feedback],
        }


def _summary_fields(row: sqlite3.Row, criteria: Sequence[StoredCriterion]) -> dict[str, Any]:
    """A ``_SESSION_COLUMNS`` row and its evaluation's criteria as :class:`SessionSummary` fields."""
    fields = dict(row)
    fields["passed"] = None if row["passed"] is None else bool(row["passed"])
    fields["verdict"] = listed_verdict(row["evaluation_id"], row["case_id"], row["stored_verdict"])
    fields["failing_criteria"] = tuple(failing_criteria(criteria))
    fields["judge"] = judge_state(criteria)
    return fields


def list_sessions(conn: sqlite3.Connection, f: SessionFilter) -> tuple[list[SessionSummary], int]:
    """One page of sessions, most recently active first, and how many match the filter in all."""
    where, params = _where(f)
    total: int = conn.execute("SELECT COUNT(*)" + _SESSION_FROM + where, params).fetchone()[0]
    rows = list(
        named_rows(
            conn,
            "SELECT"
            + _SESSION_COLUMNS
            + _SESSION_FROM
            + where
            + " ORDER BY s.last_received_ns DESC, s.session_id LIMIT ? OFFSET ?",
            [*params, f.page_size, (f.page - 1) * f.page_size],
        )
    )
    criteria = criteria_of(conn, [r["evaluation_id"] for r in rows if r["evaluation_id"] is not None])
    return [SessionSummary(**_summary_fields(r, criteria.get(r["evaluation_id"], []))) for r in rows], total


def result_counts(conn: sqlite3.Connection, f: SessionFilter) -> dict[str, int]:
    """Sessions per result under the other filters, so each result tab can show its count."""
    where, params = _where(f, with_result=False)
    selects = ", ".join(f"SUM(CASE WHEN {cond} THEN 1 ELSE 0 END)" for cond in RESULT_FILTERS.values())
    row = conn.execute(f"SELECT COUNT(*), {selects}" + _SESSION_FROM + where, params).fetchone()
    counts = {"all": row[0] or 0}
    counts.update({name: row[i + 1] or 0 for i, name in enumerate(RESULT_FILTERS)})
    return counts


class FilterOptions(NamedTuple):
    """What the dashboard's filter menus offer."""

    cases: list[str]
    """Scored cases and every loaded golden case, sorted."""
    versions: list[str]
    """Agent versions seen, sorted."""


def filter_options(conn: sqlite3.Connection) -> FilterOptions:
    """Cases (scored ones and every loaded golden case) and agent versions seen, for the filter menus."""
    cases = {r[0] for r in conn.execute("SELECT DISTINCT case_id FROM evaluations WHERE case_id IS NOT NULL")}
    cases |= {r[0] for r in conn.execute("SELECT eval_id FROM golden_cases")}
    versions = {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT COALESCE(e.agent_version, s.agent_version)"
            + _SESSION_FROM
            + " WHERE COALESCE(e.agent_version, s.agent_version) IS NOT NULL"
        )
    }
    return FilterOptions(sorted(cases), sorted(versions))


def change_stamp(conn: sqlite3.Connection) -> str:
    """Changes whenever a span, a session state or an evaluation is written: the pages poll this."""
    s = conn.execute(
        "SELECT COUNT(*), COALESCE(MAX(last_received_ns), 0), COALESCE(SUM(span_count), 0),"
        " COALESCE(MAX(ended_ns), 0), SUM(status = 'scored'), SUM(status = 'ended') FROM sessions"
    ).fetchone()
    e = conn.execute("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM evaluations").fetchone()
    return "-".join(str(v or 0) for v in (*s, *e))


def session_overview(conn: sqlite3.Connection, session_id: str) -> SessionOverview | None:
    """The session, its current evaluation with criteria and match evidence, every revision, its
    labels and user feedback; None for an unknown session."""
    found = named_rows(conn, "SELECT" + _SESSION_COLUMNS + _SESSION_FROM + " WHERE s.session_id = ?", (session_id,))
    row = found.fetchone()
    if row is None:
        return None
    evaluation_id = row["evaluation_id"]
    criteria = criteria_of(conn, [evaluation_id]).get(evaluation_id, []) if evaluation_id is not None else []
    return SessionOverview(
        **_summary_fields(row, criteria),
        criteria=tuple(criteria),
        match=match_evidence(conn, evaluation_id) if evaluation_id is not None else None,
        turns=tuple(session_turns(conn, session_id)),
        revisions=tuple(revisions(conn, session_id)),
        labels=tuple(session_labels(conn, session_id)),
        feedback=tuple(session_feedback(conn, session_id)),
    )


@dataclass(frozen=True)
class SessionDetail(StoredEvaluation):
    """A session's current evaluation (:class:`StoredEvaluation`) with what ``report --session``
    adds: each turn's user input as the scorer read it, what no rule read, and the match evidence."""

    turns: tuple[TurnReading, ...] = ()
    unread: tuple[Unread, ...] = ()
    """What the session's spans carried that no rule read (:mod:`otel_eval.unread`)."""
    match: MatchEvidence | None = None
    """How it was matched to its case, and why not."""

    @classmethod
    def of(
        cls,
        evaluation: StoredEvaluation,
        turns: Sequence[TurnReading] = (),
        unread: Sequence[Unread] = (),
        match: MatchEvidence | None = None,
    ) -> SessionDetail:
        """``evaluation`` with these details (none: what ``report --session`` shows of the row alone)."""
        fields = {f.name: getattr(evaluation, f.name) for f in dataclass_fields(StoredEvaluation)}
        return cls(**fields, turns=tuple(turns), unread=tuple(unread), match=match)

    def to_dict(self) -> dict[str, Any]:
        """``report --session --json``'s shape: the session row with ``turns``, ``unread``, ``match``."""
        return {
            **super().to_dict(),
            "turns": [t.to_dict() for t in self.turns],
            "unread": [u.to_dict() for u in self.unread],
            "match": match_to_dict(self.match),
        }


def session_detail(db_paths: Sequence[DbPath], session_id: str) -> SessionDetail | None:
    """The session's current evaluation (as :func:`~otel_eval.read.evaluations.current_evaluations`
    gives it) with its turns, as the scorer read them, what no rule read, and how it was matched
    to its case (``details.match``); None when no database has an evaluation of it."""
    for row in current_evaluations(db_paths):
        if row.session_id == session_id:
            with closing(open_database(row.db)) as conn:
                turns, unread = session_reading(conn, session_id)
                found = conn.execute(
                    "SELECT id FROM evaluations WHERE session_id = ? AND revision = ?", (session_id, row.revision)
                ).fetchone()
                match = match_evidence(conn, found[0]) if found else None
            return SessionDetail.of(row, turns, unread, match)
    return None


def session_state(db_paths: Sequence[DbPath], session_id: str) -> str | None:
    """The stored status (open, ended, scored) of a session in any of the databases, or None."""
    for path in db_paths:
        with closing(open_database(path)) as conn:
            try:
                row = conn.execute("SELECT status FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            except sqlite3.OperationalError as exc:
                if not missing_schema(exc):
                    raise
                row = None
        if row is not None:
            return str(row[0])
    return None


@dataclass(frozen=True)
class SessionOutcome:
    """A session as ``export`` chooses among them."""

    session_id: str
    status: str
    agent_version: str | None
    """The session's agent version, else its evaluation's."""
    outcome: str
    """:func:`otel_eval.read.evaluations.outcome` of its current evaluation."""
    started_ns: int | None
    """When its first span started."""


def session_outcomes(conn: sqlite3.Connection) -> list[SessionOutcome]:
    """Every session with its current outcome, oldest first (by first span start)."""
    rows = conn.execute(
        "SELECT s.session_id, s.status, s.agent_version, e.case_id, e.verdict, e.agent_version,"
        " (SELECT MIN(t.start_ns) FROM traces t WHERE t.session_id = s.session_id) AS started"
        " FROM sessions s LEFT JOIN evaluations e ON e.session_id = s.session_id AND e.superseded = 0"
        " ORDER BY started, s.session_id"
    ).fetchall()
    return [
        SessionOutcome(sid, status, version or eval_version, outcome(case_id, verdict_), started)
        for sid, status, version, case_id, verdict_, eval_version, started in rows
    ]


def scored_sessions(
    conn: sqlite3.Connection, path: DbPath, since_ns: int | None = None, wanted: Sequence[str] | None = None
) -> list[str]:
    """The scored sessions, in the order they started; ``wanted``: only these, each of which must
    exist and be scored (else :class:`InputError` naming it); ``since_ns``: only those with a
    span received at or after then. An open or ended session is the live engine's to score."""
    if wanted:
        chosen = list(dict.fromkeys(wanted))
        marks = ",".join("?" * len(chosen))
        status = dict(
            conn.execute(f"SELECT session_id, status FROM sessions WHERE session_id IN ({marks})", chosen).fetchall()
        )
        for sid in chosen:
            if sid not in status:
                raise InputError(str(path), f"no session {sid!r} in this database", "--session")
            if status[sid] != SCORED:
                raise InputError(
                    str(path),
                    f"session {sid!r} is {status[sid]}, not scored yet: the live engine scores it when it ends",
                    "--session",
                )
    else:
        chosen = [
            r[0]
            for r in conn.execute(
                "SELECT s.session_id FROM sessions s WHERE s.status = ? ORDER BY"
                " (SELECT MIN(t.start_ns) FROM traces t WHERE t.session_id = s.session_id), s.session_id",
                (SCORED,),
            )
        ]
    if since_ns is not None:
        recent = {
            r[0] for r in conn.execute("SELECT session_id FROM sessions WHERE last_received_ns >= ?", (since_ns,))
        }
        chosen = [sid for sid in chosen if sid in recent]
    return chosen
