"""User feedback: the OTLP ``gen_ai.evaluation.result`` log records an application sends about
its own sessions (a thumbs up or down, a star rating, "this answer was wrong"), told apart from
otel-eval's own results.

**The rule** (docs/production-loop.md, *User feedback*): a log record is user feedback when its
event name (OTLP's ``event_name``, or the ``event.name`` attribute older SDKs set) is
``gen_ai.evaluation.result`` and none of its attributes starts with ``otel_eval.``. otel-eval's own
results, sent by ``--forward-results`` (:mod:`otel_eval.export.otel`), always carry
``otel_eval.criterion.threshold`` and ``otel_eval.case.verdict``, so a collector that receives
another collector's results (a fleet's backend) keeps them as log records, as before, and never
counts them as what users said.

A feedback record names the session it is about by a session attribute (``session.id``,
``gen_ai.conversation.id``, or a ``--session-attribute`` key), or by its trace id (the trace of
the turn it judges; the semantic conventions parent the event to the span it evaluates). Pure:
no I/O; the store (:mod:`otel_eval.store.labels`) keeps what :func:`feedback_fields` reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EVENT_NAME = "gen_ai.evaluation.result"
OWN_PREFIX = "otel_eval."
NAME = "gen_ai.evaluation.name"
SCORE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"


def is_user_feedback(event_name: str, attributes: Mapping[str, Any]) -> bool:
    """The record is a ``gen_ai.evaluation.result`` event and not one of otel-eval's own."""
    name = event_name or attributes.get("event.name") or ""
    if name != EVENT_NAME:
        return False
    return not any(key.startswith(OWN_PREFIX) for key in attributes)


@dataclass(frozen=True)
class FeedbackFields:
    """What a feedback record says, as the ``feedback`` table keeps it (the attributes are kept
    whole beside these)."""

    name: str | None
    score: float | None
    label: str | None
    explanation: str | None
    response_id: str | None
    session_id: str | None
    """The session the record names by attribute; None: found through its trace id."""


def feedback_fields(
    attributes: Mapping[str, Any], resource: Mapping[str, Any], session_keys: Sequence[str]
) -> FeedbackFields:
    """The semantic-convention fields of a feedback record; ``session_keys``: the attribute keys
    that name a session, in precedence order (the record's own attributes first, then its
    resource's, as for spans)."""
    session = _first(attributes, session_keys) or _first(resource, session_keys)
    return FeedbackFields(
        name=_text(attributes.get(NAME)),
        score=_number(attributes.get(SCORE)),
        label=_text(attributes.get(LABEL)),
        explanation=_text(attributes.get(EXPLANATION)),
        response_id=_text(attributes.get(RESPONSE_ID)),
        session_id=session,
    )


def _first(values: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        text = _text(values.get(key))
        if text:
            return text
    return None


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _number(value: Any) -> float | None:
    """``score.value`` is a double; an app that sends ``1`` or ``"0.5"`` means the same number.
    Anything else is left out here (the attributes still hold it)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
