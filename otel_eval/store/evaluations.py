"""Evaluations: one session's scored result as ``evaluations`` and ``criterion_results`` rows,
each its session's next revision (earlier ones kept, superseded), committed with the session's
AgentData rows and status in one transaction.

A score worker builds :class:`EvaluationRows` (plain values it can pickle); the writer only
executes them, one by one or a round's together (:meth:`Evaluations.store_evaluations`)."""

from __future__ import annotations

import json
import operator
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import json_text
from ..models.agent_data import AgentData
from ..models.results import CriterionResult, EvalCaseResult
from .agent_rows import AgentDataParams, AgentRows, agent_data_params, agent_data_upsert
from .sessions import ENDED, SCORED
from .spans import set_span_types
from .statements import RowsInsert, stored_json


@dataclass
class EvaluationRows:
    """One evaluation as the SQL parameters the writer executes, built where the session is
    scored. Only plain values (dicts, tuples, strings, numbers): a score worker process pickles
    these for the collector's one writer, which then unpickles few objects and only executes.

    ``evaluation`` maps :data:`EVALUATION_COLUMNS` to values; ``criteria`` holds one
    :data:`CRITERION_COLUMNS` tuple per criterion, in the result's order."""

    evaluation: dict[str, Any]
    criteria: list[tuple]
    session_fields: dict[str, Any] = field(default_factory=dict)
    """``sessions`` columns the evaluation fills in (turns, tokens, ...)."""
    agent_params: AgentDataParams = field(default_factory=lambda: AgentDataParams())
    """The session's ``agent_data`` rows (:func:`agent_data_params`)."""
    span_types: list[tuple[str, str, str]] = field(default_factory=list)
    """``(trace_id, span_id, span_type)`` of spans whose stored type changed."""
    expected_status: str = ENDED
    """The status flips to scored only if the session is still this one when committed."""
    judge_job: dict[str, Any] | None = None
    """The judge work this evaluation waits for (:mod:`otel_eval.judging.jobs`), stored with it in
    ``judge_jobs``; None when no judge criterion is pending."""

    @classmethod
    def build(
        cls,
        result: EvalCaseResult,
        *,
        eval_set_id: str | None,
        matched_by: str,
        match_score: float,
        config_hash: str,
        agent_version: str | None,
        query: str | None,
        columns: dict[str, Any],
        details: dict[str, Any],
        session_fields: dict[str, Any] | None = None,
        expected_status: str = ENDED,
        agent_params: AgentDataParams | None = None,
        span_types: Sequence[tuple[str, str, str]] = (),
        judge_job: dict[str, Any] | None = None,
        tool_path: str | None = None,
    ) -> EvaluationRows:
        """The rows of one evaluation, from its result and what the pipeline learnt matching and scoring
        it: made off the writer's thread, so the write itself is only statements."""
        pending = [c.criterion for c in result.criterion_results if c.skipped and c.details.get("judge") == "pending"]
        if pending:
            details = {**details, "judge": {"pending": pending}}
        evaluation = {
            "case_id": result.eval_id or None,
            "eval_set_id": eval_set_id,
            "matched_by": matched_by,
            "match_score": match_score,
            "passed": int(result.passed),
            "verdict": result.verdict,
            # A not_evaluated result has no score: NULL, never a 0.0 that reads as a failure.
            "score": result.score if result.evaluated else None,
            "config_hash": config_hash,
            "agent_version": agent_version,
            "query": query,
            **{name: columns.get(name) for name in _EVALUATION_COLUMN_FIELDS},
            "error": result.error,
            "details": stored_json(details),
            "judge_pending": len(pending),
            "tool_path": tool_path,
        }
        criteria = [criterion_row(c) for c in result.criterion_results]
        return cls(
            evaluation,
            criteria,
            dict(session_fields or {}),
            agent_params or AgentDataParams(),
            list(span_types),
            expected_status,
            judge_job if pending else None,
        )


#: Columns of ``evaluations`` filled from the evaluation's ``columns`` (the flat, queryable facts).
_EVALUATION_COLUMN_FIELDS = ("expected_tool", "actual_tool", "expected_table", "actual_table", "sql_generated")
EVALUATION_COLUMNS = (
    "case_id",
    "eval_set_id",
    "matched_by",
    "match_score",
    "passed",
    "verdict",
    "score",
    "config_hash",
    "agent_version",
    "query",
    *_EVALUATION_COLUMN_FIELDS,
    "error",
    "details",
    "judge_pending",
    "tool_path",
)
CRITERION_COLUMNS = ("criterion", "score", "passed", "threshold", "skipped", "error", "details")
#: Positional parameters: ``session_id, revision, created_at, *EVALUATION_COLUMNS values`` (named
#: ones cost the sqlite3 module a string built and looked up per parameter).
INSERT_EVALUATION = (
    f"INSERT INTO evaluations (session_id, revision, created_at, superseded, {', '.join(EVALUATION_COLUMNS)})"
    f" VALUES (?, ?, ?, 0, {', '.join('?' * len(EVALUATION_COLUMNS))})"
)
evaluation_values = operator.itemgetter(*EVALUATION_COLUMNS)
INSERT_CRITERION = (
    f"INSERT INTO criterion_results (evaluation_id, {', '.join(CRITERION_COLUMNS)})"
    f" VALUES (?, {', '.join('?' * len(CRITERION_COLUMNS))})"
)
#: A judge job stored with the evaluation it completes (:mod:`.judge`).
INSERT_JOB = (
    "INSERT OR REPLACE INTO judge_jobs (evaluation_id, session_id, status, request, created_at)"
    " VALUES (?, ?, 'queued', ?, ?)"
)


def criterion_row(result: CriterionResult) -> tuple:
    """A criterion's :data:`CRITERION_COLUMNS` values; a skipped criterion's score is NULL, as a
    not_evaluated result's is (never a 0.0 that reads as a failure)."""
    return (
        result.criterion,
        None if result.skipped else result.score,
        int(result.passed),
        result.threshold,
        int(result.skipped),
        result.error,
        stored_json(result.details),
    )


def health_details(details: str | None) -> dict[str, Any]:
    """What :func:`verdict_of` needs of a stored criterion's details: only a health report's
    shape matters, so other details are not parsed."""
    if not details or '"violations"' not in details:
        return {}
    parsed = json.loads(details)
    return parsed if isinstance(parsed, dict) else {}


def now_iso() -> str:
    """``created_at`` of an evaluation: UTC, to the millisecond."""
    now = time.time()  # one clock read, so the milliseconds belong to the same second
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


class Evaluations(AgentRows):
    """The part of a Store that commits evaluations (with their AgentData rows)."""

    def record_evaluation(
        self,
        session_id: str,
        result: EvalCaseResult,
        *,
        agent_rows: Sequence[tuple[str, str, str | None, str, AgentData]] = (),
        **record: Any,
    ) -> tuple[int, int]:
        """Store one evaluation as the session's next revision (``record``: the keyword arguments
        of :meth:`EvaluationRows.build`; ``agent_rows``: the session's AgentData rows
        ``(trace_id, span_id, session_id, level, data)``). See :meth:`store_evaluation`."""
        if agent_rows:
            record["agent_params"] = (record.get("agent_params") or AgentDataParams()) + agent_data_params(agent_rows)
        return self.store_evaluation(session_id, EvaluationRows.build(result, **record))

    def store_evaluation(self, session_id: str, rows: EvaluationRows) -> tuple[int, int]:
        """Store one evaluation as the session's next revision and mark the session scored.

        The session's ``agent_data`` rows and changed span types are written in the same
        transaction: one commit per session. Returns ``(evaluation_id, revision)``. Earlier
        revisions are kept, marked superseded. The status flips to scored only if the session is
        still ``rows.expected_status`` — a span that re-opened it meanwhile gets it scored again later.
        """
        with self.transaction() as conn:
            if rows.agent_params.rows:
                self.upsert_agent_data_params(rows.agent_params)
            if rows.span_types:
                set_span_types(conn, rows.span_types)
            revision = (
                conn.execute(
                    "SELECT COALESCE(MAX(revision), 0) FROM evaluations WHERE session_id = ?", (session_id,)
                ).fetchone()[0]
                + 1
            )
            evaluation_id = conn.execute(
                INSERT_EVALUATION, (session_id, revision, now_iso(), *evaluation_values(rows.evaluation))
            ).lastrowid
            assert evaluation_id is not None  # an INSERT's cursor always has the new row's id
            if revision > 1:  # a session's first evaluation (the usual case) has nothing to supersede
                conn.execute(
                    "UPDATE evaluations SET superseded = 1 WHERE session_id = ? AND revision < ?",
                    (session_id, revision),
                )
            conn.executemany(INSERT_CRITERION, [(evaluation_id, *row) for row in rows.criteria])
            if rows.judge_job is not None:
                conn.execute(INSERT_JOB, (evaluation_id, session_id, stored_json(rows.judge_job), time.time()))
            # One statement: the status flips to scored only if it is still the expected one.
            fields = rows.session_fields
            sets = "".join(f", {k} = ?" for k in fields)
            conn.execute(
                f"UPDATE sessions SET revision = ?{sets}, status = CASE WHEN status = ? THEN ? ELSE status END"
                " WHERE session_id = ?",
                (revision, *fields.values(), rows.expected_status, SCORED, session_id),
            )
        return evaluation_id, revision

    def store_evaluations(self, group: Sequence[tuple[str, EvaluationRows]]) -> list[tuple[int, int]]:
        """:meth:`store_evaluation` for a writer round's evaluations, ``(session_id, rows)`` each,
        with one statement a table for the whole group; returns ``(evaluation_id, revision)`` each.

        All or nothing, in a savepoint: if any part fails, none of the group is stored and the
        error is raised, and the caller stores them one by one to find the one that fails. Why
        together: the sqlite3 module hands the GIL back at every step, ``executemany`` steps once a
        row and an evaluation is ~60 rows in eight statements; beside a busy Python thread (an
        agent's loop, in-process) each hand-back waits up to 5 ms for the GIL, which made an
        evaluation's commit ~94 ms of wall time (see :class:`~.statements.RowsInsert`). Ids and revisions
        are assigned here, which only the one writer may do.

        Falls back to one by one (same result) where grouping would change it: see
        :func:`_groupable`."""
        if len(group) < 2 or not _groupable(group):
            return [self.store_evaluation(session_id, rows) for session_id, rows in group]
        with self.transaction() as conn:
            self._store_agent_rows(conn, [rows for _, rows in group])
            return _store_evaluation_rows(conn, group)

    def _store_agent_rows(self, conn: sqlite3.Connection, group: Sequence[EvaluationRows]) -> None:
        """The group's shared texts (those this connection has not stored), agent rows and
        changed span types."""
        texts: dict[bytes, str] = {}
        # Consecutive evaluations whose rows leave the same columns NULL share a statement; the
        # rows keep the group's order, so ids and upserts come out as one by one.
        runs: list[tuple[tuple[int, ...], list[tuple]]] = []
        span_types: list[tuple[str, str, str]] = []
        for rows in group:
            params = rows.agent_params
            texts.update(params.texts)
            if params.rows:
                if runs and runs[-1][0] == params.null_columns:
                    runs[-1][1].extend(params.rows)
                else:
                    runs.append((params.null_columns, list(params.rows)))
            span_types.extend(rows.span_types)
        self._store_new_texts(texts.items())
        for null_columns, agent_rows in runs:
            agent_data_upsert(null_columns).run(conn, agent_rows)
        if span_types:  # rare (a type the ingest could not tell): one by one is fine
            set_span_types(conn, span_types)


_INSERT_EVALUATIONS = RowsInsert(
    f"INSERT INTO evaluations (id, session_id, revision, created_at, superseded, {', '.join(EVALUATION_COLUMNS)})",
    f"(?,?,?,?,0,{','.join('?' * len(EVALUATION_COLUMNS))})",
)
_INSERT_CRITERIA = RowsInsert(
    f"INSERT INTO criterion_results (evaluation_id, {', '.join(CRITERION_COLUMNS)})",
    f"(?,{','.join('?' * len(CRITERION_COLUMNS))})",
)
# Rows (session_id, revision) as a common table: each session's earlier evaluations superseded.
_SUPERSEDE = RowsInsert(
    "WITH scored(session_id, revision) AS (",
    "(?,?)",
    ") UPDATE evaluations SET superseded = 1 FROM scored"
    " WHERE evaluations.session_id = scored.session_id AND evaluations.revision < scored.revision",
)


def _store_evaluation_rows(
    conn: sqlite3.Connection, group: Sequence[tuple[str, EvaluationRows]]
) -> list[tuple[int, int]]:
    """The group's evaluations (each its session's next revision, earlier ones superseded),
    criteria and session updates; returns ``(evaluation_id, revision)`` each."""
    revisions = dict(_latest_revisions(conn, [session_id for session_id, _ in group]))
    first_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM evaluations").fetchone()[0]
    created_at = now_iso()
    evaluations: list[tuple[Any, ...]] = []
    criteria: list[tuple[Any, ...]] = []
    superseding: list[tuple[str, int]] = []
    by_fields: dict[tuple[str, ...], list[tuple]] = {}
    stored: list[tuple[int, int]] = []
    for evaluation_id, (session_id, rows) in enumerate(group, start=first_id):
        revision = revisions.get(session_id, 0) + 1
        evaluations.append((evaluation_id, session_id, revision, created_at, *evaluation_values(rows.evaluation)))
        criteria.extend((evaluation_id, *row) for row in rows.criteria)
        if revision > 1:
            superseding.append((session_id, revision))
        fields = rows.session_fields
        by_fields.setdefault(tuple(fields), []).append((session_id, revision, rows.expected_status, *fields.values()))
        stored.append((evaluation_id, revision))
    _INSERT_EVALUATIONS.run(conn, evaluations)
    if superseding:
        _SUPERSEDE.run(conn, superseding)
    _INSERT_CRITERIA.run(conn, criteria)
    jobs = [
        (evaluation_id, session_id, stored_json(rows.judge_job), time.time())
        for (evaluation_id, _), (session_id, rows) in zip(stored, group)
        if rows.judge_job is not None
    ]
    if jobs:
        conn.executemany(INSERT_JOB, jobs)
    for names, values in by_fields.items():
        _sessions_scored(names).run(conn, values)
    return stored


def _groupable(group: Sequence[tuple[str, EvaluationRows]]) -> bool:
    """Can :meth:`Store.store_evaluations` write these together with the same result as one by
    one? Not two evaluations of one session (the second supersedes the first, and one
    ``UPDATE`` cannot set a session's row twice), nor before SQLite 3.33 (no ``UPDATE ... FROM``)."""
    return sqlite3.sqlite_version_info >= (3, 33, 0) and len({session_id for session_id, _ in group}) == len(group)


def _latest_revisions(conn: sqlite3.Connection, session_ids: Sequence[str]) -> list[list[Any]]:
    """``[session_id, revision]`` of the latest evaluation of each of these sessions that has one,
    in one step (see :func:`~.statements.pairs`)."""
    ((found,),) = conn.execute(
        "SELECT json_group_array(json_array(session_id, revision)) FROM"
        " (SELECT session_id, MAX(revision) AS revision FROM evaluations"
        "   WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id)",
        (json_text.dumps(list(session_ids)),),
    ).fetchall()
    return json_text.loads(found)


_sessions_updates: dict[tuple[str, ...], RowsInsert] = {}


def _sessions_scored(fields: tuple[str, ...]) -> RowsInsert:
    """Rows ``(session_id, revision, expected_status, *values of fields)`` as a common table,
    written to ``sessions`` in one ``UPDATE``: the statement :meth:`Store.store_evaluation` runs
    once a session, for many. ``fields`` are column names the code chose, never input."""
    found = _sessions_updates.get(fields)
    if found is None:
        names = ("session_id", "revision", "expected", *(f"f{at}" for at in range(len(fields))))
        sets = "".join(f", {name} = scored.f{at}" for at, name in enumerate(fields))
        found = RowsInsert(
            f"WITH scored({', '.join(names)}) AS (",
            f"({','.join('?' * len(names))})",
            f") UPDATE sessions SET revision = scored.revision{sets},"
            f" status = CASE WHEN sessions.status = scored.expected THEN '{SCORED}' ELSE sessions.status END"
            " FROM scored WHERE sessions.session_id = scored.session_id",
        )
        if len(_sessions_updates) >= 64:
            _sessions_updates.clear()
        _sessions_updates[fields] = found
    return found
