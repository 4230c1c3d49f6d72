"""One message, whatever wraps it: a role and content (OpenAI, GenAI), a choice
(``{"message": ...}``), LangChain's serialized forms, a Responses item, a bare part, string or
list of blocks. :func:`resolve_message` says which it is; its body is read by :mod:`.parts` and
:mod:`.calls`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...json_text import parse_json_maybe
from ..base import RequestedToolCall
from .calls import add_call, call_id_of, call_list, is_failed, result_value
from .model import Message, ToolResponse, is_mapping, normalise_role, str_or_none
from .parts import (
    BLOCK_KEYS,
    ITEM_ROLES,
    LANGCHAIN_TYPES,
    MAX_DEPTH,
    PART_TYPES,
    add_content,
    add_part,
    content_is_parts,
)

_MESSAGE_KEYS = frozenset({"role", "parts", "content", "message", "tool_calls", "function_call"})
#: Keys of a message or choice that carry no content: a dict of only these is an empty message.
_METADATA_KEYS = frozenset(
    {
        "role",
        "index",
        "finish_reason",
        "id",
        "name",
        "type",
        "status",
        "tool_call_id",
        "call_id",
        "logprobs",
        "annotations",
        "refusal",
        "audio",
        "model",
        "usage",
        "stop_reason",
        "created",
        "object",
    }
)
_LANGCHAIN_CLASSES = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "tool",
    "FunctionMessageChunk": "tool",
    "ChatMessage": None,
    "ChatMessageChunk": None,
}


def parse_message(item: Any, default_role: str = "user") -> Message | None:
    """One message in any shape the module docstring lists; None for None. A value no rule makes
    a message of is still a message, empty or with the value as text, its reason in ``unread``."""
    item = parse_json_maybe(item) if type(item) is str else item
    if type(item) is dict:
        quick = plain_message(item, default_role)
        if quick is not None:
            return quick
    try:
        role, body, form = resolve_message(item, default_role)
    except Exception as error:  # a shape no rule foresaw: the span still reads
        return Message(normalise_role(default_role), unread=[f"message not read ({type(error).__name__})"])
    if role is None:
        return None
    message = Message(role, [], [], [])
    try:
        _read_message(message, body, form)
    except Exception as error:
        message.note(f"message not read ({type(error).__name__})")
    return message


_PLAIN_MESSAGE_KEYS = frozenset({"role", "parts", "finish_reason"})
_PLAIN_CALL_KEYS = frozenset({"type", "id", "name", "arguments"})


def plain_message(item: dict[str, Any], default_role: str) -> Message | None:
    """The commonest shape, ``{"role", "parts": [...]}`` whose parts are texts
    (``{"type": "text", "content": "..."}``) and tool calls with their arguments as an object
    (``{"type": "tool_call", "id", "name", "arguments": {...}}``), read directly: what the general
    path below gives it. None for any other shape."""
    parts = item.get("parts")
    if type(parts) is not list or not item.keys() <= _PLAIN_MESSAGE_KEYS:
        return None
    texts = []
    calls = []
    for part in parts:
        if type(part) is not dict:
            return None
        kind = part.get("type")
        if kind == "text":
            content = part.get("content")
            if type(content) is not str or part.get("thought") is True:
                return None
            if content:
                texts.append(content)
        elif kind == "tool_call" and part.keys() <= _PLAIN_CALL_KEYS:
            name, arguments, call_id = part.get("name"), part.get("arguments"), part.get("id")
            if type(name) is not str or not name or type(arguments) is not dict:
                return None
            if call_id is not None and type(call_id) is not str:
                return None
            calls.append(RequestedToolCall(name, arguments, call_id or None))
        else:
            return None
    role = normalise_role(item.get("role") or default_role)
    # Positional: a dataclass's __init__ by keyword costs ~0.3 µs more, and this runs per message.
    return Message(role, texts, calls) if role != "tool" else None


def resolve_message(item: Any, default_role: str, depth: int = 0) -> tuple[str | None, Any, str]:
    """``(role, body, form)`` of a message: ``form`` says how ``body`` is read ("text": a string;
    "content": content blocks or a value; "part": one part; "message": a message dict; "empty":
    nothing to read). Role None: no message."""
    if item is None:
        return None, None, "empty"
    if type(item) is str:
        return normalise_role(default_role), item, "text"
    if isinstance(item, (list, tuple)):
        return normalise_role(default_role), item, "content"
    if not is_mapping(item):
        return normalise_role(default_role), item, "content"  # a bare number: its text
    if "role" in item and "message" not in item and "lc" not in item:  # the usual message: at once
        return normalise_role(item["role"] or default_role), item, "message"
    if item.get("lc") == 1 and is_mapping(item.get("kwargs")):
        ident = item.get("id")
        cls = str(ident[-1]) if isinstance(ident, (list, tuple)) and ident else ""
        body = item["kwargs"]
        role = _LANGCHAIN_CLASSES.get(cls, cls.lower() or None) or body.get("role")
        return normalise_role(role or default_role), body, "message"
    kind = item.get("type")
    if type(kind) is str and kind in LANGCHAIN_TYPES and is_mapping(item.get("data")):
        body = item["data"]
        return normalise_role(LANGCHAIN_TYPES[kind] or body.get("role") or default_role), body, "message"
    if "message" in item and "parts" not in item and "content" not in item:
        inner = item["message"]
        inner = parse_json_maybe(inner) if type(inner) is str else inner
        if is_mapping(inner) and depth < MAX_DEPTH:  # a choice: {"index", "finish_reason", "message": {...}}
            role, body, form = resolve_message(inner, default_role, depth + 1)
            if form == "message" and "tool_calls" in item and "tool_calls" not in body:
                body = {**body, "tool_calls": item["tool_calls"]}
            return role, body, form
        # a choice whose message is its content: a string or content blocks (Strands)
        body = {key: value for key, value in item.items() if key != "message"}
        body["content"] = item["message"]
        return normalise_role(item.get("role") or default_role), body, "message"
    if "role" not in item and "parts" not in item and type(kind) is str and kind:
        lowered = kind.lower()
        if lowered == "message":
            return normalise_role(default_role), item, "message"
        if lowered in ITEM_ROLES:
            return ITEM_ROLES[lowered], item, "part"
        if kind in LANGCHAIN_TYPES and "content" in item:
            return normalise_role(LANGCHAIN_TYPES[kind] or default_role), item, "message"
        if lowered in PART_TYPES:
            return normalise_role(default_role), item, "part"
    if not _MESSAGE_KEYS.isdisjoint(item.keys()):
        return normalise_role(item.get("role") or default_role), item, "message"
    if not BLOCK_KEYS.isdisjoint(item.keys()):
        return normalise_role(default_role), item, "part"
    return normalise_role(default_role), item, "empty"


def _read_message(message: Message, body: Any, form: str) -> None:
    if form == "text":
        add_content(message, body, 0)
    elif form == "content":
        add_content(message, body, 0)
    elif form == "part":
        add_part(message, body, 0)
    elif form == "message":
        _read_body(message, body)
    else:
        extra = sorted(str(key) for key in body.keys() - _METADATA_KEYS)
        if extra:
            message.note(f"message of unknown shape (keys {', '.join(extra[:5])})")
    if message.role == "tool" and not message.responses and not message.calls:
        # OpenAI tool message / gen_ai.tool.message body: the content is the tool's result.
        value = "\n".join(message.texts) if message.texts else None
        message.texts = []
        source = body if is_mapping(body) else {}
        message.responses.append(
            ToolResponse(
                call_id_of(source), str_or_none(source.get("name")), parse_json_maybe(value), is_failed(source)
            )
        )


def _read_body(message: Message, body: Mapping[str, Any]) -> None:
    parts = body.get("parts")
    if parts is not None:
        parts = parse_json_maybe(parts) if type(parts) is str else parts
        if isinstance(parts, (list, tuple)):
            for part in parts:
                add_part(message, part, 1)
        elif parts is not None:
            add_part(message, parts, 1)
    content = body.get("content")
    if content is not None:
        if message.role == "tool" and not content_is_parts(content):
            # a tool's result as it is (an object, a list, a string): no blocks to read
            message.responses.append(
                ToolResponse(call_id_of(body), str_or_none(body.get("name")), result_value(content), is_failed(body))
            )
        else:
            add_content(message, content, 0)
    tool_calls = body.get("tool_calls")
    if tool_calls is not None:
        for call in call_list(tool_calls):
            add_call(message, call, "tool call")
    function_call = body.get("function_call")
    if function_call is not None:
        add_call(message, function_call, "function_call")
    if "reasoning_content" in body or "reasoning" in body:
        for key in ("reasoning_content", "reasoning"):
            if isinstance(body.get(key), str) and body[key]:
                message.think(body[key])
    if message.role == "tool" and message.responses and is_failed(body):
        for response in message.responses:
            response.is_error = True
