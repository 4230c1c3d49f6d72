"""User feedback: the ``gen_ai.evaluation.result`` log records an application sent about its
sessions (:mod:`otel_eval.user_feedback`), stored by the engine's writer in ``feedback`` with the
other log records of a batch (:meth:`otel_eval.store.spans.Spans.insert_log_events`), in the
same commit, so a feedback export is acknowledged only once it is stored."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..mapping import identity_attributes
from ..spans import LogEvent
from ..user_feedback import feedback_fields, is_user_feedback
from .statements import stored_json


def split_feedback(events: Sequence[LogEvent]) -> tuple[list[LogEvent], list[LogEvent]]:
    """(user feedback, the other log records) of a batch (:func:`otel_eval.user_feedback.is_user_feedback`)."""
    feedback: list[LogEvent] = []
    others: list[LogEvent] = []
    for event in events:
        (feedback if is_user_feedback(event.event_name, event.attributes) else others).append(event)
    return feedback, others


def insert_feedback(conn: sqlite3.Connection, events: Sequence[LogEvent], received_ns: int) -> int:
    """Store feedback records (inside the writer's transaction); returns how many were new. A
    record that names neither a session nor a trace cannot be placed and is not stored."""
    session_keys = identity_attributes()[0]
    rows = []
    for event in events:
        fields = feedback_fields(event.attributes, event.resource, session_keys)
        if not fields.session_id and not event.trace_id:
            continue
        rows.append(
            (
                fields.session_id,
                event.trace_id,
                event.span_id,
                fields.name,
                fields.score,
                fields.label,
                fields.explanation,
                fields.response_id,
                event.time_ns or 0,
                received_ns,
                stored_json(dict(event.attributes)),
                stored_json(event.body),
            )
        )
    if not rows:
        return 0
    cursor = conn.executemany(
        "INSERT OR IGNORE INTO feedback (session_id, trace_id, span_id, name, score, label, explanation, response_id,"
        " time_ns, received_ns, attributes, body) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    return cursor.rowcount
