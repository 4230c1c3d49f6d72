"""One session from the database to a finished evaluation record: the single path the live
engine's score workers, ``rescore``, ``export`` and ``inspect`` share.

``load_session`` reads a session's spans (with the convention detected at ingest) and log
events and maps them; ``score_stored_session`` evaluates it and builds the record the writer commits;
``commit_evaluation`` stores that record in the caller's transaction. Only
``commit_evaluation`` writes, so a score worker runs the rest on a read-only connection.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .criteria.base import JudgeClient
from .golden.matcher import GoldenIndex
from .mapping import MappedSpan, map_spans
from .metrics.alignment import tool_path
from .models.evalset import EvalConfig
from .models.results import EvalCaseResult
from .session_evaluation import apply_logs, evaluate_mapped, failed_outcome
from .spans import LogEvent, SpanRecord, from_json
from .store import ENDED, EvaluationRows, Store, agent_data_params
from .store.session_rows import session_log_events, session_span_rows
from .truncation import DEFAULT_LIMIT

log = logging.getLogger("otel_eval.pipeline")


@dataclass
class ScoringContext:
    """What scoring a session needs, built once per engine, worker or rescore run."""

    index: GoldenIndex
    """The golden cases sessions are matched to."""
    config: EvalConfig = field(default_factory=EvalConfig.default)
    judge: JudgeClient | None = None
    """Judges the judge criteria in line; None: a judge built from each criterion's options (or
    the judge pool, with ``defer_judge``)."""
    max_value_chars: int = DEFAULT_LIMIT
    config_hash: str = ""
    defer_judge: bool = False
    """Leave the judge criteria pending for the judge pool (the engine); else, with ``judge`` or
    an endpoint, they are judged here, synchronously (rescore, tools)."""

    def __post_init__(self) -> None:
        if not self.config_hash:
            self.config_hash = config_hash(self.config)


def config_hash(config: EvalConfig) -> str:
    """Groups evaluations made with the same criteria (stored with every evaluation)."""
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:12]


@dataclass
class LoadedSession:
    """A stored session read back and mapped: what :func:`score_loaded` scores."""

    session_id: str
    spans: list[SpanRecord]
    events: list[LogEvent]
    mapped: list[MappedSpan]
    stored_span_types: list[str | None] = field(default_factory=list)
    """``spans.span_type`` as stored (at ingest, or by an earlier scoring), one per span."""


def map_session(
    spans: Sequence[SpanRecord],
    events: Sequence[LogEvent] = (),
    max_value_chars: int = DEFAULT_LIMIT,
    conventions: Sequence[str | None] | None = None,
) -> list[MappedSpan]:
    """Every span read by its convention (``conventions``: the names detected at ingest, else
    detected now), with content that arrived as log records joined to its span."""
    mapped = map_spans(spans, max_value_chars, conventions=conventions)
    apply_logs(mapped, events)
    return mapped


def load_session(store: Store, session_id: str, max_value_chars: int = DEFAULT_LIMIT) -> LoadedSession | None:
    """A stored session, mapped; None when it has no spans."""
    rows = session_span_rows(store.conn, session_id)
    if not rows:
        return None
    spans = [from_json(raw) for raw, _, _ in rows]
    events = session_log_events(store.conn, session_id)
    mapped = map_session(spans, events, max_value_chars, conventions=[convention for _, convention, _ in rows])
    return LoadedSession(session_id, spans, events, mapped, [span_type for _, _, span_type in rows])


class FinishedEvaluation:
    """A scored session ready to commit: its rows (plain values), what listeners are told, and the
    full result. Score workers hand it to the writer compacted (:meth:`compact`): the result as
    JSON text, parsed only if a listener asks for it. From a worker process it crosses as a pickle,
    where unpickling a pydantic model per session was the largest single cost of the collector's
    busy process; in-process, a tree of objects waiting for the commit cost the GC passes."""

    def __init__(
        self,
        session_id: str,
        result: EvalCaseResult,
        rows: EvaluationRows,
        matched: bool,
        matched_by: str,
        agent_version: str | None,
        trace_ids: tuple[str, ...],
        root_span_ids: tuple[str, ...],
        seconds: float,
    ):
        self.session_id = session_id
        self.rows = rows
        self.matched = matched
        self.matched_by = matched_by
        self.agent_version = agent_version
        self.trace_ids = trace_ids
        self.root_span_ids = root_span_ids
        self.seconds = seconds
        self.case_id: str | None = result.eval_id or None
        self.verdict: str = result.verdict
        self.score: float = result.score
        self._result: EvalCaseResult | None = result
        self._result_json: str | None = None

    @property
    def result(self) -> EvalCaseResult:
        """The full result, parsed from its JSON text the first time a listener asks."""
        if self._result is None:
            if self._result_json is None:
                raise LookupError(
                    f"the evaluation of session {self.session_id} was scored without its full result: no listener "
                    "asked for results then (Engine.add_listener, or Engine.on_evaluation(..., with_result=True))"
                )
            self._result = EvalCaseResult.model_validate_json(self._result_json)
        return self._result

    def without_result(self) -> FinishedEvaluation:
        """Drop the full result (the rows keep what is stored): when no listener will ask for it,
        encoding it as JSON was ~3% of a score worker's CPU for text nobody read."""
        self._result = None
        self._result_json = None
        return self

    def compact(self) -> FinishedEvaluation:
        """Keep the result as JSON text until a listener asks for it: a record waits for the writer's
        next commit (up to 50 ms), and a pydantic tree of ~100 objects per session waiting there
        outlives the young GC generations and brings on full collections."""
        if self._result is not None:
            self._result_json = self._result.model_dump_json()
            self._result = None
        return self

    def __getstate__(self) -> dict[str, Any]:
        return dict(self.compact().__dict__)


def score_loaded(
    loaded: LoadedSession,
    ctx: ScoringContext,
    expected_status: str = ENDED,
    details: dict[str, Any] | None = None,
    started: float | None = None,
) -> FinishedEvaluation:
    """Evaluate a loaded session and build its record. A bug or a pathological trace must not
    leave the session unscored forever: an exception is stored as the evaluation's error."""
    started = time.perf_counter() if started is None else started
    session_id = loaded.session_id
    try:
        outcome = evaluate_mapped(
            session_id, loaded.mapped, ctx.index, ctx.config, ctx.judge, defer_judge=ctx.defer_judge
        )
    except Exception as exc:
        log.exception("evaluating session %s failed; storing the error as its evaluation", session_id)
        outcome = failed_outcome(session_id, exc)
    outcome.result.session_id = session_id
    mapped = outcome.mapped or loaded.mapped
    details = {**outcome.details, **(details or {})}
    rows = EvaluationRows.build(
        outcome.result,
        eval_set_id=outcome.match.eval_set_id,
        matched_by=outcome.match.method,
        match_score=outcome.match.score,
        config_hash=ctx.config_hash,
        agent_version=outcome.trajectory.agent_version,
        query=outcome.trajectory.query,
        columns=outcome.columns,
        details=details,
        session_fields=outcome.session_fields,
        expected_status=expected_status,
        agent_params=agent_data_params(
            [(m.span.trace_id, m.span.span_id, session_id, "span", m.data) for m in mapped]
            + [
                (trace_id, data.turn_id or trace_id, session_id, "trace", data)
                for trace_id, data in outcome.trace_records.items()
            ]
        ),
        span_types=_changed_span_types(mapped, loaded),
        judge_job={"session_id": session_id, "criteria": outcome.judge_requests} if outcome.judge_requests else None,
        tool_path=tool_path(outcome.trajectory.turns),
    )
    trace_ids = tuple(dict.fromkeys(s.trace_id for s in loaded.spans))
    roots = tuple(s.span_id for s in loaded.spans if s.is_root)
    return FinishedEvaluation(
        session_id,
        outcome.result,
        rows,
        outcome.match.case is not None,
        outcome.match.method,
        outcome.trajectory.agent_version,
        trace_ids,
        roots,
        time.perf_counter() - started,
    )


def _changed_span_types(mapped: list[MappedSpan], loaded: LoadedSession) -> list[tuple[str, str, str]]:
    """``(trace_id, span_id, span_type)`` of the spans whose stored type is not the one read now:
    updating a span's row rewrites its raw JSON, so unchanged ones are left alone."""
    stored = {(s.trace_id, s.span_id): t for s, t in zip(loaded.spans, loaded.stored_span_types)}
    return [
        (m.span.trace_id, m.span.span_id, m.reading.span_type)
        for m in mapped
        if stored.get((m.span.trace_id, m.span.span_id)) != m.reading.span_type
    ]


def score_stored_session(
    store: Store,
    session_id: str,
    ctx: ScoringContext,
    expected_status: str = ENDED,
    details: dict[str, Any] | None = None,
) -> FinishedEvaluation | None:
    """Load and score one stored session (reads only); None when it has no spans."""
    started = time.perf_counter()
    loaded = load_session(store, session_id, ctx.max_value_chars)
    if loaded is None:
        return None
    return score_loaded(loaded, ctx, expected_status, details, started)


def commit_evaluation(store: Store, finished: FinishedEvaluation) -> tuple[int, int]:
    """Store the record as the session's next revision; returns ``(evaluation_id, revision)``.
    Inside the caller's transaction it is a savepoint of its own: a failure rolls back this
    record alone and the transaction goes on."""
    return store.store_evaluation(finished.session_id, finished.rows)


def commit_evaluations(store: Store, group: Sequence[FinishedEvaluation]) -> list[tuple[int, int]]:
    """:func:`commit_evaluation` for many, with one statement a table for the group (see
    :meth:`Store.store_evaluations`): all of them or, on an error, none, which is raised."""
    return store.store_evaluations([(finished.session_id, finished.rows) for finished in group])
