"""One session as a Vertex-native evaluation record (seed ``vertex-export-schema.md``).

The record is built from the trajectory (what the scorer sees) plus, where the spans have them,
the texts an LLM wrote alongside its tool calls ("Let me check the forecast…"): those are model
messages too. Messages go in conversation order, consecutive messages of one role are merged
into one ``Content`` (texts joined by a blank line), and every tool call points, with a 1-based
``turn``, at the merged ``request.contents`` entry of the model message that made it.

Pure functions: no I/O. :func:`otel_eval.export.load_sessions` supplies the inputs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .json_text import as_text
from .trajectory import ActualToolCall, Trajectory

if TYPE_CHECKING:
    from .mapping import MappedSpan

USER, MODEL = "user", "model"
MERGE_SEPARATOR = "\n\n"
TITLE_CHARS = 80


@dataclass
class _Message:
    role: str
    text: str


def intermediate_texts(mapped: Sequence[MappedSpan]) -> dict[str, list[str]]:
    """Per trace id, the texts LLM spans wrote together with tool calls, in start order.

    Only a response that requested tool calls counts (the final answer is the turn's own), and
    text that is a JSON document is left out: some instrumentations put the whole completion,
    tool calls included, in the output value, which is not something the model *said*.
    """
    found: dict[str, list[tuple[int, str]]] = {}
    for m in mapped:
        reading = m.reading
        if reading.span_type != "llm" or not reading.requested_calls:
            continue
        text = (reading.response or "").strip()
        if not text or _is_json_document(text):
            continue
        found.setdefault(m.span.trace_id, []).append((m.span.start_ns, text))
    return {trace_id: [t for _, t in sorted(items, key=lambda x: x[0])] for trace_id, items in found.items()}


def _is_json_document(text: str) -> bool:
    if text[:1] not in ("{", "["):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def iso_time(ns: int | None) -> str | None:
    """Nanoseconds since the epoch → ISO-8601 UTC with milliseconds (``2026-02-16T10:00:00.123Z``)."""
    if not ns:
        return None
    seconds, rest = divmod(int(ns), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"


def title_of(trajectory: Trajectory, width: int = TITLE_CHARS) -> str:
    """Sessions have no title of their own: the first user message, on one line, shortened."""
    text = " ".join((trajectory.query or "").split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def function_response(call: ActualToolCall) -> dict[str, Any]:
    """Gemini's ``FunctionResponse.response`` must be an object: results that are not one are
    wrapped as ``{"output": …}``, a failed call is ``{"error": message}``."""
    if call.error is not None:
        return {"error": call.error}
    if isinstance(call.result, dict):
        return call.result
    return {"output": call.result}


def vertex_record(
    trajectory: Trajectory,
    intermediate: Mapping[str, Sequence[str]] | None = None,
    created_ns: int | None = None,
    title: str | None = None,
    verdict: str | None = None,
) -> dict[str, Any]:
    """The seed's record for one session. ``intermediate``: :func:`intermediate_texts` of its spans;
    ``verdict``: the session's evaluation outcome (passed, failed, not_evaluated, unmatched,
    unscored), kept in ``metadata.verdict`` when given."""
    intermediate = intermediate or {}
    messages: list[_Message] = []
    anchored: list[tuple[ActualToolCall, int | None]] = []
    for turn in trajectory.turns:
        if turn.user_input:
            messages.append(_Message(USER, turn.user_input))
        first_model: int | None = None
        texts = [t for t in intermediate.get(turn.trace_id, ()) if t != turn.final_response]
        if turn.final_response:
            texts.append(turn.final_response)
        for text in texts:
            if first_model is None:
                first_model = len(messages)
            messages.append(_Message(MODEL, text))
        # The model message that made the calls; a turn where the model said nothing at all
        # points at the last message before the calls (the user's request).
        anchor = first_model if first_model is not None else (len(messages) - 1 if messages else None)
        anchored.extend((call, anchor) for call in turn.calls)

    contents: list[dict[str, Any]] = []
    content_of: list[int] = []  # message index → 0-based index in contents
    for message in messages:
        if contents and contents[-1]["role"] == message.role:
            part = contents[-1]["parts"][0]
            part["text"] = part["text"] + MERGE_SEPARATOR + message.text
        else:
            contents.append({"role": message.role, "parts": [{"text": message.text}]})
        content_of.append(len(contents) - 1)

    events, legacy = [], []
    for call, anchor in anchored:
        turn_number = content_of[anchor] + 1 if anchor is not None else 0
        events.append(
            {
                "function_call": {"name": call.name, "args": dict(call.args)},
                "function_response": {"name": call.name, "response": function_response(call)},
                "turn": turn_number,
            }
        )
        legacy.append(
            {
                "tool": call.name,
                "args": dict(call.args),
                "output": as_text(call.result) if call.error is None else f"error: {call.error}",
                "turn": turn_number,
            }
        )

    user_texts = [m.text for m in messages if m.role == USER]
    model_texts = [m.text for m in messages if m.role == MODEL]
    last_user = max((i for i, c in enumerate(contents) if c["role"] == USER), default=None)
    final = trajectory.final_response
    first_start = min((t.start_ns for t in trajectory.turns if t.start_ns), default=None)
    return {
        "session_id": trajectory.session_id,
        "title": title if title is not None else title_of(trajectory),
        "created": iso_time(created_ns if created_ns is not None else first_start),
        "request": {"contents": contents},
        "response": {"candidates": [{"content": {"role": MODEL, "parts": [{"text": final}]}}] if final else []},
        "intermediate_events": events,
        "prompt": user_texts[-1] if user_texts else "",
        "prompt_concat": MERGE_SEPARATOR.join(user_texts),
        "response_concat": MERGE_SEPARATOR.join(model_texts),
        "conversation_history": contents[:last_user] if last_user is not None else list(contents),
        "generated_trajectory": legacy,
        "metadata": {
            "total_turns": len(contents),
            "total_tools": len(events),
            "user_turns": sum(1 for c in contents if c["role"] == USER),
            "model_turns": sum(1 for c in contents if c["role"] == MODEL),
            "traces": len(trajectory.turns),
            "agent_version": trajectory.agent_version,
            "user_id": trajectory.user_id,
            "service_name": trajectory.service_name,
            **({"verdict": verdict} if verdict is not None else {}),
        },
    }
