"""Sessions: the list the dashboard filters and pages, one session's overview, its stored state,
and which sessions ``export`` and ``rescore`` work on.

A session is listed with its current evaluation (``sessions`` LEFT JOIN the evaluation that is
not superseded), so a session not scored yet is listed too, as pending. Every value comes back as
plain Python data; nothing here knows about HTML or terminals.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..store import SCORED
from .database import DbPath, missing_schema, named_rows, open_database
from .evaluations import (
    criteria_of,
    current_evaluations,
    failing_criteria,
    judge_state,
    match_evidence,
    outcome,
    revisions,
)
from .spans import session_reading, session_turns

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


def verdict(row: Mapping[str, Any]) -> str:
    """pass / fail / not_evaluated / unmatched / pending, the one word a person scans for."""
    if row.get("evaluation_id") is None:
        return "pending"
    if not row.get("case_id"):
        return "unmatched"
    return VERDICT_WORDS[row["stored_verdict"]]


def _dict_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in named_rows(conn, sql, params)]


def list_sessions(conn: sqlite3.Connection, f: SessionFilter) -> tuple[list[dict[str, Any]], int]:
    """One page of sessions, most recently active first, and how many match the filter in all."""
    where, params = _where(f)
    total = conn.execute("SELECT COUNT(*)" + _SESSION_FROM + where, params).fetchone()[0]
    rows = _dict_rows(
        conn,
        "SELECT"
        + _SESSION_COLUMNS
        + _SESSION_FROM
        + where
        + " ORDER BY s.last_received_ns DESC, s.session_id LIMIT ? OFFSET ?",
        [*params, f.page_size, (f.page - 1) * f.page_size],
    )
    criteria = criteria_of(conn, [r["evaluation_id"] for r in rows if r["evaluation_id"] is not None])
    for r in rows:
        r["verdict"] = verdict(r)
        r["passed"] = None if r["passed"] is None else bool(r["passed"])
        r["failing_criteria"] = failing_criteria({"criteria": criteria.get(r["evaluation_id"], [])})
        r["judge"] = judge_state(criteria.get(r["evaluation_id"], []))
    return rows, total


def result_counts(conn: sqlite3.Connection, f: SessionFilter) -> dict[str, int]:
    """Sessions per result under the other filters, so each result tab can show its count."""
    where, params = _where(f, with_result=False)
    selects = ", ".join(f"SUM(CASE WHEN {cond} THEN 1 ELSE 0 END)" for cond in RESULT_FILTERS.values())
    row = conn.execute(f"SELECT COUNT(*), {selects}" + _SESSION_FROM + where, params).fetchone()
    counts = {"all": row[0] or 0}
    counts.update({name: row[i + 1] or 0 for i, name in enumerate(RESULT_FILTERS)})
    return counts


def filter_options(conn: sqlite3.Connection) -> dict[str, list[str]]:
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
    return {"cases": sorted(cases), "versions": sorted(versions)}


def change_stamp(conn: sqlite3.Connection) -> str:
    """Changes whenever a span, a session state or an evaluation is written: the pages poll this."""
    s = conn.execute(
        "SELECT COUNT(*), COALESCE(MAX(last_received_ns), 0), COALESCE(SUM(span_count), 0),"
        " COALESCE(MAX(ended_ns), 0), SUM(status = 'scored'), SUM(status = 'ended') FROM sessions"
    ).fetchone()
    e = conn.execute("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM evaluations").fetchone()
    return "-".join(str(v or 0) for v in (*s, *e))


def session_overview(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """The session, its current evaluation with criteria and match evidence, and every revision."""
    found = _dict_rows(conn, "SELECT" + _SESSION_COLUMNS + _SESSION_FROM + " WHERE s.session_id = ?", (session_id,))
    if not found:
        return None
    out = found[0]
    out["verdict"] = verdict(out)
    out["passed"] = None if out["passed"] is None else bool(out["passed"])
    out["criteria"] = []
    out["match"] = {}
    if out["evaluation_id"] is not None:
        out["criteria"] = criteria_of(conn, [out["evaluation_id"]]).get(out["evaluation_id"], [])
        out["match"] = match_evidence(conn, out["evaluation_id"])
    out["judge"] = judge_state(out["criteria"])
    out["failing_criteria"] = failing_criteria(out)
    out["turns"] = session_turns(conn, session_id)
    out["revisions"] = revisions(conn, session_id)
    return out


def session_detail(db_paths: Sequence[DbPath], session_id: str) -> dict[str, Any] | None:
    """The session's current evaluation (as :func:`~otel_eval.read.evaluations.current_evaluations`
    gives it) with ``turns``: per turn (trace) its ``user_input``, as the scorer read it, and
    ``match``: how it was matched to its case, and why not (``details.match``)."""
    for row in current_evaluations(db_paths):
        if row["session_id"] == session_id:
            with closing(open_database(row["db"])) as conn:
                row["turns"], row["unread"] = session_reading(conn, session_id)
                found = conn.execute(
                    "SELECT id FROM evaluations WHERE session_id = ? AND revision = ?", (session_id, row["revision"])
                ).fetchone()
                row["match"] = match_evidence(conn, found[0]) if found else {}
            return row
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
            return row[0]
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
