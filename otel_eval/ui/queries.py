"""Everything the dashboard reads from the SQLite file, through a read-only connection.

The dashboard never writes: it opens the file with ``mode=ro`` for each request, so it cannot
block the collector's writer beyond what any WAL reader does, and a bug here cannot corrupt data.
Every value comes back as plain Python data; nothing here knows about HTML.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from ..errors import InputError
from ..report import failing_criteria, session_turns
from ..spans import SpanRecord, from_json
from ..store import upgrade_if_older

DbPath = Union[str, Path]

#: Result filter values and the SQL condition each stands for (on the current evaluation ``e``).
RESULT_FILTERS: dict[str, str] = {
    "passed": "e.case_id IS NOT NULL AND e.verdict = 'passed'",
    "failed": "e.case_id IS NOT NULL AND e.verdict = 'failed'",
    "not_evaluated": "e.case_id IS NOT NULL AND e.verdict = 'not_evaluated'",
    "unmatched": "e.id IS NOT NULL AND e.case_id IS NULL",
    "pending": "e.id IS NULL",
}
MAX_PAGE_SIZE = 500


def connect_read_only(db: DbPath) -> sqlite3.Connection:
    if not Path(db).exists():
        raise InputError(str(db), "database file not found")
    conn = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True, timeout=5.0)
    upgrade_if_older(conn, db)
    conn.row_factory = sqlite3.Row
    return conn


@dataclass(frozen=True)
class SessionFilter:
    case: str = ""
    version: str = ""
    result: str = ""
    text: str = ""
    page: int = 1
    page_size: int = 50

    @classmethod
    def from_query(cls, params: Mapping[str, Sequence[str]]) -> "SessionFilter":
        """From a parsed query string; raises :class:`InputError` naming the parameter that is wrong."""
        def one(name: str) -> str:
            values = params.get(name) or [""]
            return values[-1].strip()

        result = one("result").lower()
        if result and result not in RESULT_FILTERS:
            raise InputError("query string", f"result must be one of {', '.join(RESULT_FILTERS)}, got {result!r}",
                             "result")
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
        values = {"case": self.case, "version": self.version, "result": self.result, "q": self.text,
                  "page": "" if self.page == 1 else str(self.page),
                  "page_size": "" if self.page_size == 50 else str(self.page_size)}
        values.update({k: str(v) for k, v in overrides.items()})
        return {k: v for k, v in values.items() if v}


_SESSION_COLUMNS = """
    s.session_id, s.status, s.revision, s.user_id, s.service_name, s.end_reason, s.span_count, s.trace_count,
    s.first_received_ns, s.last_received_ns, COALESCE(e.query, s.query) AS query,
    COALESCE(e.agent_version, s.agent_version) AS agent_version,
    e.id AS evaluation_id, e.case_id, e.eval_set_id, e.matched_by, e.match_score, e.passed, e.score,
    e.verdict AS stored_verdict, e.created_at, e.error
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


def list_sessions(conn: sqlite3.Connection, f: SessionFilter) -> tuple[list[dict[str, Any]], int]:
    """One page of sessions, most recently active first, and how many match the filter in all."""
    where, params = _where(f)
    total = conn.execute("SELECT COUNT(*)" + _SESSION_FROM + where, params).fetchone()[0]
    rows = [dict(r) for r in conn.execute(
        "SELECT" + _SESSION_COLUMNS + _SESSION_FROM + where
        + " ORDER BY s.last_received_ns DESC, s.session_id LIMIT ? OFFSET ?",
        [*params, f.page_size, (f.page - 1) * f.page_size],
    )]
    criteria = _criteria_of(conn, [r["evaluation_id"] for r in rows if r["evaluation_id"] is not None])
    for r in rows:
        r["verdict"] = verdict(r)
        r["passed"] = None if r["passed"] is None else bool(r["passed"])
        r["failing_criteria"] = failing_criteria({"criteria": criteria.get(r["evaluation_id"], [])})
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
    versions = {r[0] for r in conn.execute(
        "SELECT DISTINCT COALESCE(e.agent_version, s.agent_version)" + _SESSION_FROM
        + " WHERE COALESCE(e.agent_version, s.agent_version) IS NOT NULL")}
    return {"cases": sorted(cases), "versions": sorted(versions)}


def change_stamp(conn: sqlite3.Connection) -> str:
    """Changes whenever a span, a session state or an evaluation is written: the pages poll this."""
    s = conn.execute(
        "SELECT COUNT(*), COALESCE(MAX(last_received_ns), 0), COALESCE(SUM(span_count), 0),"
        " COALESCE(MAX(ended_ns), 0), SUM(status = 'scored'), SUM(status = 'ended') FROM sessions"
    ).fetchone()
    e = conn.execute("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM evaluations").fetchone()
    return "-".join(str(v or 0) for v in (*s, *e))


def _criteria_of(conn: sqlite3.Connection, evaluation_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    if not evaluation_ids:
        return out
    marks = ",".join("?" * len(evaluation_ids))
    for c in conn.execute(f"SELECT * FROM criterion_results WHERE evaluation_id IN ({marks}) ORDER BY id",
                          list(evaluation_ids)):
        out.setdefault(c["evaluation_id"], []).append({
            "criterion": c["criterion"], "score": c["score"], "passed": bool(c["passed"]),
            "threshold": c["threshold"], "skipped": bool(c["skipped"]), "error": c["error"],
            "details": _loads(c["details"]),
        })
    return out


def _loads(text: Optional[str]) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text}


def session_overview(conn: sqlite3.Connection, session_id: str) -> Optional[dict[str, Any]]:
    """The session, its current evaluation with criteria and match evidence, and every revision."""
    row = conn.execute("SELECT" + _SESSION_COLUMNS + _SESSION_FROM + " WHERE s.session_id = ?",
                       (session_id,)).fetchone()
    if row is None:
        return None
    out = dict(row)
    out["verdict"] = verdict(out)
    out["passed"] = None if out["passed"] is None else bool(out["passed"])
    out["criteria"] = []
    out["match"] = {}
    if out["evaluation_id"] is not None:
        out["criteria"] = _criteria_of(conn, [out["evaluation_id"]]).get(out["evaluation_id"], [])
        details = _loads(conn.execute("SELECT details FROM evaluations WHERE id = ?",
                                      (out["evaluation_id"],)).fetchone()[0])
        out["match"] = details.get("match") or {} if isinstance(details, dict) else {}
    out["failing_criteria"] = failing_criteria(out)
    out["turns"] = session_turns(conn, session_id)
    out["revisions"] = [dict(r) for r in conn.execute(
        "SELECT revision, case_id, passed, verdict, score, created_at, superseded FROM evaluations"
        " WHERE session_id = ? ORDER BY revision DESC", (session_id,))]
    return out


@dataclass
class SpanRow:
    span: SpanRecord
    depth: int
    convention: Optional[str]
    span_type: Optional[str]


@dataclass
class TraceTree:
    trace_id: str
    start_ns: int
    end_ns: int
    rows: list[SpanRow] = field(default_factory=list)


def session_traces(conn: sqlite3.Connection, session_id: str) -> list[TraceTree]:
    """The session's spans as one tree per trace (parents before children, siblings by start time)."""
    stored = conn.execute(
        "SELECT raw, convention, span_type FROM spans WHERE session_id = ? ORDER BY start_ns, end_ns, span_id",
        (session_id,),
    ).fetchall()
    by_trace: dict[str, list[tuple[SpanRecord, Optional[str], Optional[str]]]] = {}
    for raw, convention, span_type in stored:
        span = from_json(raw)
        by_trace.setdefault(span.trace_id, []).append((span, convention, span_type))
    trees = [build_tree(trace_id, members) for trace_id, members in by_trace.items()]
    return sorted(trees, key=lambda t: (t.start_ns, t.trace_id))


def build_tree(trace_id: str, members: Sequence[tuple[SpanRecord, Optional[str], Optional[str]]]) -> TraceTree:
    """Depth-first order. A span whose parent never arrived is shown as a root, not dropped."""
    ids = {span.span_id for span, _, _ in members}
    children: dict[Optional[str], list[tuple[SpanRecord, Optional[str], Optional[str]]]] = {}
    for member in members:
        parent = member[0].parent_span_id
        children.setdefault(parent if parent in ids else None, []).append(member)
    tree = TraceTree(trace_id, min(s.start_ns for s, _, _ in members), max(s.end_ns for s, _, _ in members))
    stack = [(m, 0) for m in reversed(sorted(children.get(None, []), key=lambda m: m[0].start_ns))]
    seen: set[str] = set()
    while stack:
        (span, convention, span_type), depth = stack.pop()
        if span.span_id in seen:  # a parent cycle in hostile input must not loop forever
            continue
        seen.add(span.span_id)
        tree.rows.append(SpanRow(span, depth, convention, span_type))
        kids = sorted(children.get(span.span_id, []), key=lambda m: m[0].start_ns)
        stack.extend((k, depth + 1) for k in reversed(kids))
    for span, convention, span_type in members:  # spans only reachable through a cycle
        if span.span_id not in seen:
            seen.add(span.span_id)
            tree.rows.append(SpanRow(span, 0, convention, span_type))
    return tree


#: AgentData columns stored as JSON text.
_JSON_COLUMNS = {"expected_tool_call", "tools_available", "tool_calls", "parameters_passed", "tool_call_results",
                 "retrieval_query", "retrieved_context"}


def session_agent_data(conn: sqlite3.Connection, session_id: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """AgentData rows keyed by (trace_id, span_id, level), with only the fields that hold something."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in conn.execute("SELECT * FROM agent_data WHERE session_id = ? ORDER BY id", (session_id,)):
        fields: dict[str, Any] = {}
        for key in r.keys():
            if key in ("id", "trace_id", "span_id", "session_id", "level"):
                continue
            value = r[key]
            if key in _JSON_COLUMNS and isinstance(value, str):
                value = _loads(value)
            if key == "agent_exit":
                value = bool(value)
                if not value:
                    continue
            if value in (None, "", [], {}):
                continue
            fields[key] = value
        out[(r["trace_id"], r["span_id"], r["level"])] = fields
    return out


def pass_rate_points(conn: sqlite3.Connection, case_id: Optional[str] = None) -> dict[str, list[tuple[str, str, bool]]]:
    """Per case: ``(created_at, agent_version, passed)`` of every current evaluation that checked
    something, oldest first (a not_evaluated session is no point of a pass rate)."""
    sql = ("SELECT case_id, created_at, COALESCE(agent_version, 'unknown'), passed FROM evaluations"
           " WHERE superseded = 0 AND case_id IS NOT NULL AND verdict != 'not_evaluated'")
    params: list[Any] = []
    if case_id:
        sql += " AND case_id = ?"
        params.append(case_id)
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for case, created_at, version, passed in conn.execute(sql + " ORDER BY created_at, id", params):
        out.setdefault(case, []).append((created_at, version, bool(passed)))
    return dict(sorted(out.items()))
