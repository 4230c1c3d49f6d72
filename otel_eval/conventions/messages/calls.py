"""Tool calls and tool results, in each shape a message may carry them: OpenAI ``tool_calls`` and
the legacy ``function_call``, GenAI ``tool_call`` / ``tool_call_response`` parts, Bedrock
``toolUse`` / ``toolResult`` and Anthropic ``tool_use`` / ``tool_result`` blocks, Gemini
``function_call`` / ``function_response`` parts, Responses ``function_call`` items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...json_text import parse_json_maybe
from ..base import RequestedToolCall, as_arguments
from .model import Message, ToolResponse, is_mapping, str_or_none


def call_list(value: Any) -> list[Any]:
    """A message's ``tool_calls`` as a list of calls: JSON text parsed, one call or a flattened
    ``{"0": ..., "1": ...}`` made a list."""
    value = parse_json_maybe(value) if type(value) is str else value
    if value is None:
        return []
    if is_mapping(value):
        if value and all(type(key) is str and key.isdigit() for key in value):  # flattened tool_calls.N.*
            return [value[key] for key in sorted(value, key=int)]
        return [value]
    return list(value) if isinstance(value, (list, tuple)) else [value]


def add_call(message: Message, call: Any, what: str) -> None:
    """The call to ``message.calls``; a call without a name is noted as unread (``what`` names its shape)."""
    requested = _requested_call(call)
    if requested is not None:
        message.calls.append(requested)
    elif call is not None:
        message.note(f"{what} without a tool name")


def add_response(message: Message, part: Any, what: str) -> None:
    """A tool result (a part or block, or the value itself) to ``message.responses``."""
    part = parse_json_maybe(part) if type(part) is str else part
    if not is_mapping(part):
        message.responses.append(ToolResponse(None, None, result_value(part)))
        return
    value = None
    for key in ("response", "result", "output", "content"):
        if key in part:
            value = part[key]
            break
    message.responses.append(
        ToolResponse(call_id_of(part), str_or_none(part.get("name")), result_value(value), is_failed(part))
    )


def call_id_of(source: Mapping[str, Any]) -> str | None:
    """The call id a call, result or tool message carries, under whichever key its shape uses."""
    for key in _ID_KEYS:
        if key in source:
            value = source[key]
            if value is not None and value != "":
                return value if type(value) is str else str(value)
    return None


_ID_KEYS = ("call_id", "tool_call_id", "tool_use_id", "toolUseId", "id")
"""Where a call's id may be, most specific first (a Responses item's ``id`` is the item's own)."""


def is_failed(source: Mapping[str, Any]) -> bool:
    """Does the result or tool message say the call failed (``status: "error"``, ``is_error``)?"""
    if "status" not in source and "is_error" not in source and "isError" not in source:
        return False
    status = source.get("status")
    return (
        source.get("is_error") is True
        or source.get("isError") is True
        or (type(status) is str and status.lower() == "error")
    )


def _requested_call(call: Any) -> RequestedToolCall | None:
    call = parse_json_maybe(call) if type(call) is str else call
    if not is_mapping(call):
        return None
    function = call.get("function")
    function = parse_json_maybe(function) if type(function) is str else function
    source = function if is_mapping(function) else call
    name = source.get("name")
    if name in (None, ""):
        return None
    arguments = source.get("arguments", source.get("args", source.get("input")))
    return RequestedToolCall(str(name), as_arguments(arguments), call_id_of(call))


def result_value(value: Any) -> Any:
    """A tool's result as the shapes carry it, unwrapped: JSON text parsed, and content blocks
    that only carry text or a JSON value (Bedrock ``[{"text": ...}]`` / ``[{"json": ...}]``,
    Anthropic / MCP ``[{"type": "text", "text": ...}]``) reduced to that text or value."""
    value = parse_json_maybe(value)
    if is_mapping(value):
        single = _block_value(value)
        return value if single is _NOT_A_BLOCK else single
    if isinstance(value, list) and value:
        pieces = [_block_value(item) if is_mapping(item) else _NOT_A_BLOCK for item in value]
        if any(piece is _NOT_A_BLOCK for piece in pieces):
            return value
        if len(pieces) == 1:
            return pieces[0]
        texts = [piece for piece in pieces if type(piece) is str]
        if len(texts) == len(pieces):
            return parse_json_maybe("\n".join(texts))
        return pieces
    return value


_NOT_A_BLOCK = object()
_TEXT_BLOCK_KEYS = frozenset({"type", "text", "annotations", "cache_control", "citations", "_meta"})


def _block_value(block: Mapping[str, Any]) -> Any:
    keys = block.keys()
    if len(keys) == 1:
        if "text" in block and isinstance(block["text"], str):
            return parse_json_maybe(block["text"])
        if "json" in block:
            return block["json"]
    elif block.get("type") == "text" and isinstance(block.get("text"), str) and keys <= _TEXT_BLOCK_KEYS:
        return parse_json_maybe(block["text"])
    return _NOT_A_BLOCK
