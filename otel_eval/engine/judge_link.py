"""The engine's side of the judge pool: pending evaluations in, judge outcomes out to the writer,
committed outcomes out to the listeners as :class:`EvaluationStored` completions.

Representation (README, "LLM judge"): an evaluation whose judge criteria are pending is stored at
once as revision *n* (``judge_pending`` > 0, the judge criteria skipped with ``details.judge ==
'pending'``, its verdict computed from the deterministic criteria); its job waits in
``judge_jobs``. The judge's outcome is stored as revision *n+1* (superseding *n*), with the
judge criteria answered, or *not evaluated* with the reason. Readers see one current revision
per session, as for any re-scoring; counters count the final one only
(:attr:`EvaluationStored.counted`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..judging import jobs as J
from ..judging.budget import DAY, Limits
from ..judging.pool import JudgePool, JudgePoolStats
from ..models.results import CriterionResult, EvalCaseResult
from ..store import Store
from .events import EvaluationStored
from .queue_items import CompleteJudgment
from .settings import EngineSettings

log = logging.getLogger("otel_eval.judge")

USAGE_KEPT_DAYS = 30
"""Days of judge spend kept in ``judge_usage`` (the caps read the last one)."""


class JudgeLink:
    """Starts the judge pool, hands it each pending evaluation's job, and turns its outcomes into writer items and, once
    committed, listener events."""

    def __init__(
        self,
        settings: EngineSettings,
        put: Callable[[CompleteJudgment], None],
        stored: Callable[[CompleteJudgment, EvaluationStored | None], None],
    ):
        self.settings = settings
        self._put = put
        self._stored = stored
        self._lock = threading.Lock()
        self._busy = 0
        """Jobs handed to the pool whose outcome is not committed yet."""
        self.pool: JudgePool | None = None
        self._resumed: list[J.JudgeJob] = []

    def _options(self, name: str) -> dict[str, Any]:
        cfg = self.settings.config.criteria.get(name)
        return dict(cfg.options) if cfg is not None else {}

    def _secret(self, name: str) -> str | None:
        return self._options(name).get("api_key")

    def start(self, store: Store) -> int:
        """Start the pool, charge it with the spend of the last day, and read the jobs left pending
        (sent by :meth:`resume`, once the writer that records their outcomes runs)."""
        s = self.settings
        self.pool = JudgePool(
            self._outcome,
            concurrency=s.judge_concurrency,
            max_queue=s.judge_queue,
            deadline=s.judge_deadline,
            breaker_threshold=s.judge_breaker_failures,
            breaker_cooldown=s.judge_breaker_cooldown,
            secrets=self._secret,
            judge_models=dict(s.judge_models),
            limits=lambda name: Limits.from_options(self._options(name)),
        ).start()
        store.forget_judge_usage(time.time() - USAGE_KEPT_DAYS * DAY)
        for criterion, at, calls, tokens in store.judge_usage_since(time.time() - DAY):
            self.pool.charge(criterion, at, calls, tokens)
        self._resumed = []
        for job_id, session_id, request, _created, backfill in store.judge_jobs_to_resume():
            job = J.JudgeJob(job_id, session_id, json.loads(request)["criteria"])
            if backfill:
                self.pool.keep_for_backfill(self._live(job))
            else:
                self._resumed.append(job)
        return len(self._resumed)

    def resume(self) -> None:
        """Send the jobs :meth:`start` read, each with a fresh deadline (the judge gets its full
        time after a restart)."""
        jobs, self._resumed = self._resumed, []
        for job in jobs:
            self._submit(job)

    def submit(self, evaluation_id: int, session_id: str, request: dict[str, Any]) -> None:
        """Queue the judge job of an evaluation just committed with judge criteria pending (``request``: its criteria's
        requests)."""
        self._submit(J.JudgeJob(evaluation_id, session_id, request["criteria"]))

    def _live(self, job: J.JudgeJob) -> J.JudgeJob:
        job.criteria = J.with_live_options(job.criteria, self._options)
        return job

    def _submit(self, job: J.JudgeJob) -> None:
        if self.pool is not None and self.pool.closing:
            return  # shutting down: the job stays queued in the database, the next start sends it
        job = self._live(job)
        with self._lock:
            self._busy += 1
        if self.pool is None or not self.pool.submit(job):
            results = [J.not_evaluated(c, J.QUEUE_FULL, J.QUEUE_FULL_REASON) for c in job.criteria]
            self._put(CompleteJudgment(job, results, [], retry=False))

    def _outcome(
        self, job: J.JudgeJob, results: list[CriterionResult], usage: dict[str, list[int]], retry: bool
    ) -> None:
        if job.backfill:
            with self._lock:
                self._busy += 1
        self._put(CompleteJudgment(job, results, [(name, c, t) for name, (c, t) in usage.items()], retry))
        if retry and self.pool is not None:
            self.pool.keep_for_backfill(J.JudgeJob(job.evaluation_id, job.session_id, job.criteria))

    def committed(self, item: CompleteJudgment) -> None:
        """The writer committed ``item`` (on its thread)."""
        with self._lock:
            self._busy = max(0, self._busy - 1)
        info = item.info
        event = None
        if info is not None:
            event = EvaluationStored(
                revision=info["revision"],
                evaluation_id=info["evaluation_id"],
                session_id=info["session_id"],
                trace_ids=info["trace_ids"],
                root_span_ids=info["root_span_ids"],
                agent_version=info["agent_version"],
                matched=bool(info["case_id"]),
                matched_by=info["matched_by"] or "",
                score_seconds=0.0,
                verdict=info["verdict"],
                case_id=info["case_id"],
                score=info["score"] or 0.0,
                load_result=lambda: _result(info),
                judge_pending=0,
                completes=info["completes"],
                backfill=item.job.backfill,
            )
        self._stored(item, event)

    def busy(self) -> bool:
        """Whether a judge outcome is still to be committed (``Engine.wait_idle`` waits for it)."""
        with self._lock:
            return self._busy > 0

    def stats(self) -> JudgePoolStats:
        """The judge pool's figures, and the jobs whose outcome is not committed yet (``pending_jobs``)."""
        out = self.pool.stats() if self.pool is not None else JudgePoolStats()
        with self._lock:
            out["pending_jobs"] = self._busy
        return out

    def close(self, timeout: float | None = None) -> None:
        """Stop the judge pool (``timeout`` seconds at most); unfinished jobs stay queued in the database for the next
        start."""
        if self.pool is not None:
            self.pool.close(timeout)


def _result(info: dict[str, Any]) -> EvalCaseResult:
    criteria = [
        CriterionResult(
            criterion=c[0],
            score=c[1] or 0.0,
            passed=bool(c[2]),
            threshold=c[3] or 0.0,
            skipped=bool(c[4]),
            error=c[5],
            details=json.loads(c[6]) if c[6] else {},
        )
        for c in info["criteria"]
    ]
    return EvalCaseResult(
        eval_id=info["case_id"] or "",
        passed=info["verdict"] == "passed",
        verdict=info["verdict"],
        criterion_results=criteria,
        session_id=info["session_id"],
        score=info["score"] or 0.0,
        error=info["error"],
    )
