"""One session's spans → trajectory → golden match → scores. No I/O: the engine stores the outcome.

(The offline entry point that runs files through a real engine is :func:`otel_eval.offline.evaluate`.)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .criteria.base import JudgeClient, JudgeContext
from .golden.matcher import GoldenIndex, Match
from .judging.adk import trace_view as adk_trace_view
from .mapping import MappedSpan, aggregate_trace, map_spans, to_agent_data, with_log_events
from .metrics.sql import sql_and_tables
from .models.agent_data import AgentData
from .models.evalset import EvalCase, EvalConfig
from .models.results import EvalCaseResult
from .scoring import config_for_case, score_session
from .spans import LogEvent, SpanRecord
from .trajectory import Trajectory, build_trajectory

log = logging.getLogger("otel_eval.scoring")


@dataclass
class SessionEvaluation:
    """One session evaluated: its trajectory, golden match and result, and per trace the
    aggregated AgentData record."""

    trajectory: Trajectory
    match: Match
    result: EvalCaseResult
    trace_records: dict[str, AgentData] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    session_fields: dict[str, Any] = field(default_factory=dict)
    mapped: list[MappedSpan] = field(default_factory=list)
    judge_requests: list[dict[str, Any]] = field(default_factory=list)
    """The judge criteria left to the judge pool (``defer_judge``), one request each."""


def apply_logs(mapped: list[MappedSpan], events: Sequence[LogEvent]) -> None:
    """Content an instrumentation sent only as log records joins the reading of its span."""
    if not events:
        return
    by_span: dict[tuple[str, str], list[LogEvent]] = {}
    for event in events:
        by_span.setdefault((event.trace_id, event.span_id), []).append(event)
    for m in mapped:
        attached = by_span.get((m.span.trace_id, m.span.span_id))
        if attached:
            m.reading = with_log_events(m.span, m.reading, attached)
            m.data = to_agent_data(m.span, m.reading)


def evaluate_session(
    session_id: str,
    spans: Sequence[SpanRecord],
    events: Sequence[LogEvent],
    index: GoldenIndex,
    config: EvalConfig,
    judge: JudgeClient | None = None,
    max_value_chars: int = 65536,
) -> SessionEvaluation:
    """A session's spans and log records, mapped and evaluated (:func:`evaluate_mapped`): for
    callers that hold spans, not a stored session."""
    mapped = map_spans(spans, max_value_chars)
    apply_logs(mapped, events)
    return evaluate_mapped(session_id, mapped, index, config, judge)


def evaluate_mapped(
    session_id: str,
    mapped: list[MappedSpan],
    index: GoldenIndex,
    config: EvalConfig,
    judge: JudgeClient | None = None,
    defer_judge: bool = False,
) -> SessionEvaluation:
    """A session's mapped spans → trajectory → golden match → scores (see :mod:`otel_eval.pipeline`)."""

    trajectory = build_trajectory(session_id, mapped)
    per_trace: dict[str, list[MappedSpan]] = {}
    for m in mapped:
        per_trace.setdefault(m.span.trace_id, []).append(m)
    trace_records = {trace_id: aggregate_trace(members) for trace_id, members in per_trace.items()}
    match = index.match(trajectory.query, case_hint=trajectory.case_hint)
    if match.case is None and not trajectory.query and _content_not_recorded(mapped):
        match = replace(match, evidence={**match.evidence, "reason": NO_CONTENT_REASON})
        _warn_no_content_once()
    if session_id in per_trace and _part_of_a_loop(mapped):
        match = replace(match, evidence={**match.evidence, "note": LOOP_PART_NOTE})
        _warn_loop_part_once(session_id)
    # A golden set that declares its own criteria (Big Sky evaluators) is scored by them.
    eval_set = index.set_of(match.eval_set_id, match.eval_id)
    case_config = config_for_case(config, eval_set)
    judge_requests: list[dict[str, Any]] | None = [] if defer_judge and judge is None else None
    result = score_session(
        trajectory,
        match.case,
        case_config,
        judge=judge,
        judge_requests=judge_requests,
        judge_context=(lambda: _judge_context(trace_records, per_trace)) if judge_requests is not None else None,
    )
    result.session_id = session_id
    return SessionEvaluation(
        trajectory=trajectory,
        match=match,
        result=result,
        trace_records=trace_records,
        mapped=mapped,
        judge_requests=judge_requests or [],
        columns=_trajectory_columns(trajectory, match.case),
        details={
            "match": {"method": match.method, "score": match.score, "evidence": match.evidence},
            **({"criteria_from": f"eval set {match.eval_set_id}"} if case_config is not config else {}),
        },
        session_fields={
            "user_id": trajectory.user_id,
            "agent_version": trajectory.agent_version,
            "service_name": trajectory.service_name,
            "query": trajectory.query,
            "trace_count": len(trajectory.turns),
        },
    )


def _judge_context(trace_records: dict[str, AgentData], per_trace: dict[str, list[MappedSpan]]) -> JudgeContext:
    """Per turn (trace id): the system instructions and tool definitions a judge may see; and, at
    ``(adk_trace_view.CONTEXT_KEY, trace id)``, the trace as google-adk's judge metrics read it
    (each agent's instructions and tools, the model's responses: :func:`adk_trace_view.trace_view`)."""
    out: dict[str | tuple[str, str], Any] = {}
    for trace_id, data in trace_records.items():
        tools = [t.model_dump(exclude_none=True) if hasattr(t, "model_dump") else t for t in data.tools_available or []]
        if data.system_prompt or tools:
            out[trace_id] = (data.system_prompt, tools or None)
    for trace_id, members in per_trace.items():
        out[(adk_trace_view.CONTEXT_KEY, trace_id)] = adk_trace_view.trace_view(members)
    return out


NO_CONTENT_REASON = (
    "no user input to match on: the session's model calls carry no messages, so the instrumentation "
    "did not record message content (OpenTelemetry GenAI instrumentations, google-adk's included, record "
    "it only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is set: SPAN_ONLY for google-adk, "
    "true for most others)"
)


def _content_not_recorded(mapped: Sequence[MappedSpan]) -> bool:
    """The session has model calls and none of them shows a message, a completion or a tool
    request: what spans look like when their instrumentation leaves content out."""
    llm = [m.reading for m in mapped if m.reading.span_type == "llm"]
    return bool(llm) and not any(r.user_input or r.response or r.requested_calls or r.system_prompt for r in llm)


_warned_no_content = False


def _warn_no_content_once() -> None:
    global _warned_no_content
    if not _warned_no_content:
        _warned_no_content = True
        log.warning("a session could not be matched to a golden case: %s", NO_CONTENT_REASON)


LOOP_PART_NOTE = (
    "this session is one trace of a tool loop whose other steps are in other traces: its model calls "
    "are sent results of tool calls made elsewhere, or ask for tools whose results never come back here. "
    "An agent written by hand and traced only by its model client's instrumentation leaves a trace per "
    "model call, and without a session id each trace is a session of its own. Set session.id on the "
    "spans (OpenTelemetry baggage with BaggageSpanProcessor, or the instrumentation's session helper) "
    "so that the loop's traces form one session"
)


def _part_of_a_loop(mapped: Sequence[MappedSpan]) -> bool:
    """The session (one trace) runs no tool itself, yet its first model call is sent tool results
    or its last asks for tools: the rest of its loop is in other traces."""
    llms = sorted((m for m in mapped if m.reading.span_type == "llm"), key=lambda m: (m.span.start_ns, m.span.end_ns))
    if not llms or any(m.reading.span_type == "tool" for m in mapped):
        return False
    return bool(llms[0].reading.tool_results() or llms[-1].reading.requested_calls)


_warned_loop_part = False


def _warn_loop_part_once(session_id: str) -> None:
    global _warned_loop_part
    if not _warned_loop_part:
        _warned_loop_part = True
        log.warning("session %s (a trace without a session id) is part of a tool loop: %s", session_id, LOOP_PART_NOTE)


def failed_outcome(session_id: str, exc: Exception) -> SessionEvaluation:
    """What is stored when evaluating a session raised: an evaluation that says why."""
    match = Match(case=None, eval_set_id=None, method="error", score=0.0, evidence={})
    result = EvalCaseResult(
        eval_id="", passed=False, session_id=session_id, error=f"evaluation failed: {type(exc).__name__}: {exc}"
    )
    return SessionEvaluation(
        trajectory=Trajectory(session_id=session_id), match=match, result=result, details={"match": {"method": "error"}}
    )


def _trajectory_columns(trajectory: Trajectory, case: EvalCase | None) -> dict[str, Any]:
    """The seed's BigQuery columns (expected/actual tool and table, SQL generated)."""

    statements, tables = sql_and_tables(trajectory.sql_values())
    calls = trajectory.calls
    columns: dict[str, Any] = {
        "actual_tool": calls[0].name if calls else None,
        "actual_table": ", ".join(tables) or None,
        "sql_generated": int(bool(statements)),
    }
    if case is not None and case.conversation:
        first = case.conversation[0]
        expected_tool = first.expected_tool_selection or (
            first.expected_tool_trajectory[0].name if first.expected_tool_trajectory else None
        )
        columns["expected_tool"] = expected_tool
        columns["expected_table"] = ", ".join(first.expected_tables) or None
    return columns
