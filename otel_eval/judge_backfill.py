"""``otel-eval rescore --judge-only``: judge stored sessions with the judge pool, within the budget.

For each scored session (``--since``, ``--session``, ``--case`` narrow them) whose current
evaluation matched a case and has no judge answer yet: the judge request is built from its spans
(the same context the live engine sends: the turn, the reference, the tool trajectory), stored in
``judge_jobs`` for that evaluation, and sent through a :class:`~otel_eval.judging.pool.JudgePool`.
Each answer is recorded as the session's next revision with the judge criteria filled in (its
verdict computed again), exactly as a live judge completion is.

Resumable: a job is stored before it is sent and recorded when answered; after an interruption (or
a judge outage, or an exhausted budget, which leave their jobs queued) the next run sends only
what is left, and sessions already judged are skipped. Spend is charged to the same ledger as the
live engine's, so the caps hold across both.
"""

from __future__ import annotations

import fnmatch
import json
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .golden import GoldenSets
from .judging import jobs as J
from .judging.budget import DAY, Limits
from .judging.pool import JudgePool
from .models.evalset import EvalConfig
from .read.sessions import scored_sessions
from .read.times import parse_since
from .store import Store

if TYPE_CHECKING:  # only for annotations: the engine is loaded when a run starts
    from .engine.settings import EngineSettings

#: ``progress(done, total)`` after each session (rescore's too).
ProgressCallback = Callable[[int, int], Any]


@dataclass
class JudgeBackfill:
    """What a ``rescore --judge-only`` run did."""

    judged: list[str] = field(default_factory=list)
    """Sessions whose judge outcome was recorded (an answer, or a garbage answer's error)."""
    left: dict[str, str] = field(default_factory=dict)
    """Session → why its job is left queued for the next run (budget exhausted, judge unavailable)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Session → why it was not sent (already judged, not sampled, filtered, unmatched, pending live)."""

    def to_dict(self) -> dict[str, Any]:
        """``rescore --judge-only --json``'s counts, the reasons work was left, and the sessions judged."""
        return {
            "judged": len(self.judged),
            "left": len(self.left),
            "skipped": len(self.skipped),
            "left_reasons": sorted(set(self.left.values())),
            "sessions": self.judged,
        }


def judge_stored(
    db: str | Path,
    config: EvalConfig | None = None,
    since: str | datetime | None = None,
    sessions: Sequence[str] | None = None,
    cases: Sequence[str] = (),
    progress: ProgressCallback | None = None,
    settings: EngineSettings | None = None,
    env: dict[str, str] | None = None,
) -> JudgeBackfill:
    """Judge the stored sessions still waiting for a judge answer (see the module docstring); each
    answer becomes the session's next revision. Resumable; stops at the budget, leaving the rest queued."""
    from .engine.settings import EngineSettings, golden_index
    from .pipeline import ScoringContext, score_stored_session

    if not Path(db).exists():
        raise InputError(str(db), "database file not found")
    settings = settings or EngineSettings()
    if config is not None:
        settings = settings.replace(config=config)
    since_ns = parse_since(since)
    out = JudgeBackfill()
    store = Store(db)
    try:
        index = golden_index(GoldenSets.stored(store).sets, settings)
        context = ScoringContext(
            index=index,
            config=settings.config,
            max_value_chars=settings.max_value_chars,
            config_hash=settings.config_hash,
            defer_judge=True,
        )
        work: list[J.JudgeJob] = []
        for session_id in scored_sessions(store.conn, store.path, since_ns, sessions):
            job = _job_for(store, session_id, cases, context, score_stored_session, out)
            if job is not None:
                work.append(job)
        run_jobs(store, work, settings, progress, out, env)
        return out
    finally:
        store.close()


def run_jobs(
    store: Store,
    work: list[J.JudgeJob],
    settings: EngineSettings,
    progress: ProgressCallback | None = None,
    out: JudgeBackfill | None = None,
    env: dict[str, str] | None = None,
    record_faults: bool = False,
) -> JudgeBackfill:
    """Judge stored jobs through a pool (``settings``: an EngineSettings; its config gives the
    endpoint, key and caps) and record each answer in ``store``; shared by ``rescore`` and
    ``rescore --judge-only``. A job the budget or an outage stops stays queued for the next run,
    or, with ``record_faults`` (``rescore``, as the live engine does), is recorded not evaluated
    with the reason (an outage's job kept for its one backfill). An interruption leaves the rest
    queued."""
    out = out if out is not None else JudgeBackfill()
    if not work:
        return out
    outcomes: queue.Queue[tuple[J.JudgeJob, list, dict, bool]] = queue.Queue()
    options = {name: dict(c.options) for name, c in settings.config.criteria.items()}
    for job in work:
        job.criteria = J.with_live_options(job.criteria, lambda name: options.get(name, {}))
    pool = JudgePool(
        lambda job, results, usage, retry: outcomes.put((job, results, usage, retry)),
        concurrency=settings.judge_concurrency,
        max_queue=max(1, len(work)),
        deadline=max(settings.judge_deadline, 120.0),
        breaker_threshold=settings.judge_breaker_failures,
        breaker_cooldown=settings.judge_breaker_cooldown,
        secrets=lambda name: options.get(name, {}).get("api_key"),
        limits=lambda name: Limits.from_options(options.get(name, {})),
        env=env,
    ).start()
    try:
        for criterion, at, calls, tokens in store.judge_usage_since(time.time() - DAY):
            pool.charge(criterion, at, calls, tokens)
        _run(store, pool, work, outcomes, settings.judge_concurrency * 2, progress, out, record_faults)
    finally:
        pool.close(5)
    return out


def _job_for(
    store: Store, session_id: str, cases: Sequence[str], context: Any, score_stored_session: Any, out: JudgeBackfill
) -> J.JudgeJob | None:
    row = store.conn.execute(
        "SELECT id, case_id, judge_pending FROM evaluations WHERE session_id = ? AND superseded = 0", (session_id,)
    ).fetchone()
    if row is None or not row[1]:
        out.skipped[session_id] = "unmatched"
        return None
    evaluation_id, case_id, pending = row
    if cases and not any(fnmatch.fnmatchcase(case_id, c) for c in cases):
        out.skipped[session_id] = f"case {case_id} not asked for"
        return None
    stored = store.judge_job(evaluation_id)
    if stored is not None and stored[0] == "queued":  # left by an interrupted run or a rescore: resume it
        return J.JudgeJob(evaluation_id, session_id, json.loads(stored[1])["criteria"])
    if pending:
        out.skipped[session_id] = "its judge answer is pending in the live engine"
        return None
    answered = {
        r[0]
        for r in store.conn.execute(
            "SELECT criterion FROM criterion_results WHERE evaluation_id = ? AND skipped = 0"
            " AND json_extract(details, '$.judge') = ?",
            (evaluation_id, J.ANSWERED),
        )
    }
    finished = score_stored_session(store, session_id, context)
    request = finished.rows.judge_job if finished is not None else None
    if request is not None:
        request = {**request, "criteria": [c for c in request["criteria"] if c["criterion"] not in answered]}
    if not request or not request["criteria"]:
        out.skipped[session_id] = (
            "already judged" if answered else "no judge criterion to run (not sampled, filtered or none configured)"
        )
        return None
    store.add_judge_job(evaluation_id, session_id, request)
    return J.JudgeJob(evaluation_id, session_id, request["criteria"])


def _run(
    store: Store,
    pool: JudgePool,
    work: list[J.JudgeJob],
    outcomes: queue.Queue,
    window: int,
    progress: ProgressCallback | None,
    out: JudgeBackfill,
    record_faults: bool = False,
) -> None:
    total, done, sent, waiting = len(work), 0, 0, 0
    stop_sending = False
    if progress is not None:
        progress(0, total)
    while done < total:
        while not stop_sending and sent < total and waiting < window:
            pool.submit(work[sent])
            sent += 1
            waiting += 1
        if waiting == 0:  # nothing more will be sent: the rest is left for the next run
            for job in work[sent:]:
                out.left[job.session_id] = "judge budget exhausted"
            break
        job, results, usage, retry = outcomes.get()
        waiting -= 1
        done += 1
        spent = [(name, calls, tokens) for name, (calls, tokens) in usage.items()]
        states = {r.details.get("judge") for r in results}
        if record_faults:
            store.complete_judgment(job.evaluation_id, results, spent, retry=retry, backfill=False)
            out.judged.append(job.session_id)
        elif states & {J.BUDGET, J.UNAVAILABLE}:
            reason = next(
                str(r.details.get("reason")) for r in results if r.details.get("judge") in (J.BUDGET, J.UNAVAILABLE)
            )
            out.left[job.session_id] = reason
            store.record_judge_usage(spent)
            if J.BUDGET in states:
                stop_sending = True  # the budget is spent until its window rolls over: leave the rest queued
        else:
            store.complete_judgment(job.evaluation_id, results, spent, retry=False, backfill=False)
            out.judged.append(job.session_id)
        if progress is not None:
            progress(done, total)
