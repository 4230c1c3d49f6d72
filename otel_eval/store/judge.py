"""The judge pool's state (:mod:`otel_eval.judging`): the judge work each pending evaluation
waits for (``judge_jobs``, kept until answered so a restart resumes it), the outcome recorded
as the session's next revision, and the spend (``judge_usage``) the caps count."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from ..models.results import CriterionResult, verdict_of
from .connection import StoreConnection
from .evaluations import (
    CRITERION_COLUMNS,
    EVALUATION_COLUMNS,
    INSERT_CRITERION,
    INSERT_EVALUATION,
    INSERT_JOB,
    criterion_row,
    evaluation_values,
    health_details,
    now_iso,
)
from .statements import stored_json

_INSERT_USAGE = "INSERT INTO judge_usage (at, criterion, calls, tokens) VALUES (?, ?, ?, ?)"


class JudgeJobs(StoreConnection):
    """The part of a Store that keeps judge jobs and judge spend."""

    def complete_judgment(
        self,
        job_id: int,
        results: Sequence[CriterionResult],
        usage: Sequence[tuple[str, int, int]],
        retry: bool,
        backfill: bool,
        now: float | None = None,
    ) -> dict[str, Any] | None:
        """Record a judge job's outcome as the session's next revision: the revision it completes
        with its judge criteria replaced by ``results``, the verdict and score computed again, no
        judge pending. The job is done (or kept for one backfill: ``retry``), its spend recorded.
        Returns the new evaluation (id, revision, verdict, ...), or None when the revision it
        completes is no longer the session's latest (late spans scored it again: that revision
        has its own judge job), or the job is unknown or already done."""
        now = time.time() if now is None else now
        with self.transaction() as conn:
            if usage:
                conn.executemany(_INSERT_USAGE, [(now, name, calls, tokens) for name, calls, tokens in usage if calls])
            job = conn.execute(
                "SELECT session_id, status, outcome_evaluation_id FROM judge_jobs WHERE evaluation_id = ?", (job_id,)
            ).fetchone()
            if job is None:
                return None
            session_id, status, outcome_id = job
            source_id = outcome_id if backfill else job_id
            if status == "done" or (backfill and status != "retry") or source_id is None:
                return None
            names = ", ".join(EVALUATION_COLUMNS)
            row = conn.execute(
                f"SELECT revision, superseded, {names} FROM evaluations WHERE id = ?", (source_id,)
            ).fetchone()
            if row is None or row[1]:
                conn.execute(
                    "UPDATE judge_jobs SET status = 'stale', finished_at = ?, request = '{}' WHERE evaluation_id = ?",
                    (now, job_id),
                )
                return None
            revision = row[0] + 1
            evaluation = dict(zip(EVALUATION_COLUMNS, row[2:]))
            by_name = {r.criterion: r for r in results}
            criteria = []
            for criterion, score, passed, threshold, skipped, error, details in conn.execute(
                f"SELECT {', '.join(CRITERION_COLUMNS)} FROM criterion_results WHERE evaluation_id = ? ORDER BY id",
                (source_id,),
            ):
                new = by_name.get(criterion)
                if new is not None:
                    criteria.append(criterion_row(new))
                else:
                    criteria.append((criterion, score, passed, threshold, skipped, error, details))
            present = {c[0] for c in criteria}
            criteria.extend(criterion_row(r) for r in results if r.criterion not in present)
            verdict, score = _verdict_and_score(criteria, evaluation["error"])
            details = json.loads(evaluation["details"]) if evaluation["details"] else {}
            details["judge"] = {"completes_revision": row[0], **({"backfill": True} if backfill else {})}
            evaluation.update(
                verdict=verdict,
                passed=int(verdict == "passed"),
                score=score,
                judge_pending=0,
                details=stored_json(details),
            )
            evaluation_id = conn.execute(
                INSERT_EVALUATION, (session_id, revision, now_iso(), *evaluation_values(evaluation))
            ).lastrowid
            conn.execute(
                "UPDATE evaluations SET superseded = 1 WHERE session_id = ? AND revision < ?", (session_id, revision)
            )
            conn.executemany(INSERT_CRITERION, [(evaluation_id, *c) for c in criteria])
            conn.execute("UPDATE sessions SET revision = ? WHERE session_id = ?", (revision, session_id))
            # A finished job's messages (a copy of what the spans hold) are dropped: the table stays
            # the size of the work in progress. A job kept for its backfill keeps them.
            conn.execute(
                "UPDATE judge_jobs SET status = ?, finished_at = ?, outcome_evaluation_id = ?,"
                " backfilled = MAX(backfilled, ?), request = CASE WHEN ? THEN request ELSE '{}' END"
                " WHERE evaluation_id = ?",
                ("retry" if retry else "done", now, evaluation_id, int(backfill), int(retry), job_id),
            )
            traces = conn.execute(
                "SELECT trace_id, root_span_id FROM traces WHERE session_id = ? ORDER BY start_ns", (session_id,)
            ).fetchall()
        return {
            "trace_ids": tuple(t for t, _ in traces),
            "root_span_ids": tuple(r for _, r in traces if r),
            "evaluation_id": evaluation_id,
            "revision": revision,
            "session_id": session_id,
            "verdict": verdict,
            "score": score,
            "case_id": evaluation["case_id"],
            "agent_version": evaluation["agent_version"],
            "matched_by": evaluation["matched_by"],
            "completes": row[0],
            "error": evaluation["error"],
            "criteria": criteria,
        }

    def add_judge_job(self, evaluation_id: int, session_id: str, request: dict[str, Any]) -> None:
        """Judge work for a stored evaluation (``rescore --judge-only``), kept until answered."""
        with self.transaction() as conn:
            conn.execute(INSERT_JOB, (evaluation_id, session_id, stored_json(request), time.time()))

    def judge_job(self, evaluation_id: int) -> tuple[str, str] | None:
        """``(status, request JSON)`` of the judge job of this evaluation, or None."""
        return self.conn.execute(
            "SELECT status, request FROM judge_jobs WHERE evaluation_id = ?", (evaluation_id,)
        ).fetchone()

    def record_judge_usage(self, usage: Sequence[tuple[str, int, int]], now: float | None = None) -> None:
        """Judge spend ``(criterion, calls, tokens)`` with no outcome recorded (calls that failed)."""
        now = time.time() if now is None else now
        with self.transaction() as conn:
            conn.executemany(_INSERT_USAGE, [(now, name, calls, tokens) for name, calls, tokens in usage if calls])

    def judge_jobs_to_resume(self) -> list[tuple[int, str, str, float, bool]]:
        """``(job id, session id, request JSON, created_at, backfill)`` of judge work to do at start:
        jobs not answered yet, and jobs waiting for their one backfill."""
        return [
            (r[0], r[1], r[2], r[3], r[4] == "retry")
            for r in self.conn.execute(
                "SELECT evaluation_id, session_id, request, created_at, status FROM judge_jobs"
                " WHERE status = 'queued' OR (status = 'retry' AND backfilled = 0) ORDER BY evaluation_id"
            )
        ]

    def forget_judge_usage(self, before: float) -> None:
        """Drop the spend recorded before ``before`` (epoch seconds): kept a while as a record,
        only the last day counts against the caps."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM judge_usage WHERE at < ?", (before,))

    def judge_usage_since(self, since: float) -> list[tuple[str, float, int, int]]:
        """``(criterion, at, calls, tokens)`` of the judge spend since ``since`` (epoch seconds)."""
        return self.conn.execute(
            "SELECT criterion, at, calls, tokens FROM judge_usage WHERE at >= ? ORDER BY at", (since,)
        ).fetchall()


def _verdict_and_score(criteria: Sequence[tuple], error: str | None) -> tuple[str, float | None]:
    """A stored evaluation's verdict and score from its criterion rows (:data:`CRITERION_COLUMNS`),
    as scoring computes them: the mean score of the criteria that ran, health aside."""
    results = [
        CriterionResult(
            criterion=c[0],
            score=c[1] or 0.0,
            passed=bool(c[2]),
            threshold=c[3] or 0.0,
            skipped=bool(c[4]),
            error=c[5],
            details=health_details(c[6]),
        )
        for c in criteria
    ]
    verdict = "failed" if error else verdict_of(results)
    scored = [r.score for r in results if not r.skipped and not r.details]
    if verdict == "not_evaluated":
        return verdict, None
    return verdict, round(sum(scored) / len(scored), 6) if scored else 0.0
