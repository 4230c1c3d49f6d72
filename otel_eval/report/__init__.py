"""``otel-eval report``: summaries, per-case tables and one session's detail, drawn from the rows
of :mod:`otel_eval.read` (:func:`~otel_eval.read.evaluations.current_evaluations`,
:func:`~otel_eval.read.sessions.session_detail`). The ``--json`` shapes produced here are
documented in README and stable.

One module a job: :mod:`.summary` (the numbers), :mod:`.verdicts` (how a verdict reads),
:mod:`.overview` (the report's tables), :mod:`.session` (one session), :mod:`.details` (one
criterion's details, shared with the dashboard). Every public name is importable from here."""

from .details import (
    RESPONSE_CHARS,
    RESPONSE_KINDS,
    is_response_criterion,
    is_trajectory_criterion,
    measure_label,
    response_lines,
    response_turns,
    shorten_text,
    trajectory_rows,
)
from .overview import (
    calibration_line,
    coverage_line,
    render_calibration,
    render_coverage,
    render_report,
    sessions_table,
)
from .session import render_session, render_unread
from .summary import summarize_sessions
from .verdicts import VERDICT_STYLES, shows_score, verdict_markup, verdict_word

__all__ = [
    "RESPONSE_CHARS",
    "RESPONSE_KINDS",
    "VERDICT_STYLES",
    "calibration_line",
    "coverage_line",
    "is_response_criterion",
    "is_trajectory_criterion",
    "measure_label",
    "render_calibration",
    "render_coverage",
    "render_report",
    "render_session",
    "render_unread",
    "response_lines",
    "response_turns",
    "sessions_table",
    "shorten_text",
    "shows_score",
    "summarize_sessions",
    "trajectory_rows",
    "verdict_markup",
    "verdict_word",
]
