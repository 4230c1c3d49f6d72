"""Cut oversized text (prompts, documents, tool results) to a limit, visibly.

DESIGN §10: an oversized value is truncated and marked, never silently dropped. The marker keeps
the original length, so a reader knows how much was cut: ``"abc…[truncated, 183422 chars]"``.
The limit applies to every text value separately (each string inside a dict or list too), so a
structure keeps its shape and stays valid JSON. Truncating twice changes nothing: an already
marked text keeps its first marker and its original length.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import orjson

from .conventions.base import ExecutedToolCall, Reading, RequestedToolCall, ToolResponse

DEFAULT_LIMIT = 64 * 1024
"""Characters of text kept per value (64 Ki characters)."""

_MARKER = "…[truncated, {} chars]"
_MARKER_AT_END = re.compile(r"…\[truncated, (\d+) chars\]\Z")
_MARKER_TAIL = 64
"""Characters at the end of a text that can hold a marker (its number has at most ~40 digits)."""


def marker(original_length: int) -> str:
    """The text appended where a value was cut."""
    return _MARKER.format(original_length)


def is_truncated(text: str) -> bool:
    """Whether a text ends with :func:`marker`'s mark: a value cut on its way in, not the agent's
    whole text."""
    return isinstance(text, str) and _MARKER_AT_END.search(text) is not None


def original_length(text: str) -> int | None:
    """The length before truncation recorded in the marker, or None for an uncut text."""
    found = _MARKER_AT_END.search(text) if isinstance(text, str) else None
    return int(found.group(1)) if found else None


def truncate_text(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """``text`` itself if it has at most ``limit`` characters, else its first ``limit``
    characters followed by the marker."""
    _check(limit)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:  # whether or not it carries a marker, a short text stays as it is
        return text
    # The marker sits at the very end: look only there, not through the whole text.
    found = _MARKER_AT_END.search(text, max(0, len(text) - _MARKER_TAIL))
    if found is not None:
        head = text[: found.start()]
        if len(head) <= limit:
            return text
        return head[:limit] + marker(int(found.group(1)))
    if len(text) <= limit:
        return text
    return text[:limit] + marker(len(text))


def truncate_value(value: Any, limit: int = DEFAULT_LIMIT) -> Any:
    """``value`` with every string in it cut to ``limit`` characters; dicts, lists and tuples
    keep their shape, other values are returned unchanged. Never mutates its argument."""
    _check(limit)
    return _cut_value(value, limit)


def _cut_value(value: Any, limit: int) -> Any:
    kind = type(value)
    if kind is str:
        return value if len(value) <= limit else _cut(value, limit)
    if kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return _cut(value, limit)
    if isinstance(value, dict):
        return {key: _cut_value(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut_value(item, limit) for item in value]
    if isinstance(value, tuple):
        return tuple(_cut_value(item, limit) for item in value)
    return value


def truncate_reading(reading: Reading, limit: int = DEFAULT_LIMIT) -> Reading:
    """A copy of ``reading`` whose content fields (inputs, outputs, arguments, results,
    documents) are cut to ``limit``; identifiers, names and counts are left alone. When no
    content is longer than ``limit`` (nearly always), ``reading`` itself."""
    _check(limit)
    _cut_results_when_read(reading, limit)
    if _fits(reading, limit):
        return reading
    out = copy.copy(reading)
    out.user_input = _opt_text(reading.user_input, limit)
    out.system_prompt = _opt_text(reading.system_prompt, limit)
    out.response = _opt_text(reading.response, limit)
    out.trace = _opt_text(reading.trace, limit)
    out.parameters = _cut_value(reading.parameters, limit)
    out.requested_calls = [
        RequestedToolCall(call.name, _cut_value(call.args, limit), call.call_id) for call in reading.requested_calls
    ]
    if reading.tool is not None:
        out.tool = ExecutedToolCall(
            name=reading.tool.name,
            args=_cut_value(reading.tool.args, limit),
            call_id=reading.tool.call_id,
            result=_cut_value(reading.tool.result, limit),
            error=_opt_text(reading.tool.error, limit),
        )
    out.retrieval_query = _cut_value(reading.retrieval_query, limit)
    out.retrieved_documents = _cut_value(reading.retrieved_documents, limit)
    out.tools_available = list(reading.tools_available)
    out.sources = dict(reading.sources)
    return out


def _cut_results_when_read(reading: Reading, limit: int) -> None:
    """The tool results the model call was sent back (:meth:`Reading.tool_results`), cut to
    ``limit`` when they are read: they are parsed only when asked for, so ``reading`` itself is
    told how (its other fields stay as they are)."""
    found = reading.sent_back
    if callable(found):
        reading.sent_back = lambda: [_cut_response(r, limit) for r in found()]
    elif found:
        reading.sent_back = [_cut_response(r, limit) for r in found]


def _cut_response(response: ToolResponse, limit: int) -> ToolResponse:
    return ToolResponse(response.call_id, response.name, _cut_value(response.value, limit), response.is_error)


def _fits(reading: Reading, limit: int) -> bool:
    """True when no content text of ``reading`` is longer than ``limit``, decided cheaply: the
    structured fields are encoded as one UTF-8 JSON text (by orjson, in C), which has at least as
    many bytes as any string inside it has characters. False means "maybe not": the caller then
    walks every value."""
    for text in (reading.user_input, reading.system_prompt, reading.response, reading.trace):
        if text is not None and len(text) > limit:
            return False
    tool = reading.tool
    structured: list[Any] = [call.args for call in reading.requested_calls]
    if reading.parameters:
        structured.append(reading.parameters)
    if reading.retrieval_query is not None or reading.retrieved_documents is not None:
        structured += [reading.retrieval_query, reading.retrieved_documents]
    if tool is not None:
        if tool.error is not None and len(tool.error) > limit:
            return False
        structured += [tool.args, tool.result]
    if not structured:
        return True
    try:
        return len(orjson.dumps(structured)) <= limit
    except TypeError:  # orjson refuses it (a 100-bit int, a lone surrogate, > 254 levels): ask json
        pass
    try:
        # The walk below recurses: a value nested deeper than it can go must be settled here,
        # as it was before orjson, or the session could never be scored.
        return len(_json_encode(structured)) <= limit
    except (TypeError, ValueError, RecursionError):  # not JSON at all (a tuple key, a cycle): walk it
        return False


_json_encode = json.JSONEncoder(ensure_ascii=False).encode


def _opt_text(text: str | None, limit: int) -> str | None:
    return None if text is None else _cut(text, limit)


def _check(limit: int) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"truncation limit must be a positive number of characters, got {limit!r}")
