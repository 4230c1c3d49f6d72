"""A message's content: text, content parts and blocks (OpenAI and GenAI parts, Bedrock and
Anthropic blocks, Gemini parts, Responses content), reasoning, and what is not text (media), kept
apart. A part that carries a tool call or result goes to :mod:`.calls`."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...json_text import as_text, json_value, parse_json_maybe
from .calls import add_call, add_response
from .model import Message, is_mapping, normalise_role

_TEXT_TYPES = frozenset({"text", "input_text", "output_text", "summary_text"})
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})
_CALL_TYPES = frozenset({"tool_call", "function_call", "tool_use", "server_tool_use", "function"})
_RESPONSE_TYPES = frozenset(
    {"tool_call_response", "function_response", "tool_result", "function_call_output", "tool_call_result"}
)
_MEDIA_TYPES = frozenset(
    {
        "image",
        "image_url",
        "input_image",
        "image_file",
        "audio",
        "input_audio",
        "file",
        "input_file",
        "document",
        "blob",
        "uri",
        "video",
        "media",
    }
)
PART_TYPES = _TEXT_TYPES | _REASONING_TYPES | _CALL_TYPES | _RESPONSE_TYPES | _MEDIA_TYPES | {"refusal", "json"}
#: Responses API items: messages of their own in a list, with the role they imply.
ITEM_ROLES = {"function_call": "assistant", "function_call_output": "tool"}
#: Untyped blocks (Bedrock Converse, Gemini parts) by their key.
_MEDIA_KEYS = (
    "image",
    "document",
    "video",
    "audio",
    "inline_data",
    "inlineData",
    "file_data",
    "fileData",
    "cachePoint",
    "guardContent",
    "executable_code",
    "executableCode",
    "code_execution_result",
    "codeExecutionResult",
    "citationsContent",
)
BLOCK_KEYS = frozenset(
    {
        "text",
        "toolUse",
        "toolResult",
        "function_call",
        "functionCall",
        "function_response",
        "functionResponse",
        "reasoningContent",
        "json",
        *_MEDIA_KEYS,
    }
)
#: LangChain's serialized messages: ``{"type": ..., "data": {...}}`` / ``{"lc": 1, "id": [..., class]}``.
LANGCHAIN_TYPES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "chat": None,
    "generic": None,
}
MAX_DEPTH = 6
_JSON_FIRST = frozenset("[{ \t\r\n")
_JSON_LOOKING = re.compile(r'\s*(\[\s*[{\["\]]|\{\s*")')
"""Text that means to be JSON content: an array of objects, arrays or strings, ``[]``, or an object."""


def is_part(item: Mapping[str, Any]) -> bool:
    """Is this dict a content block / part rather than a message?"""
    if "role" in item or "parts" in item or "message" in item:
        return False
    kind = item.get("type")
    if type(kind) is str and kind:
        return kind.lower() in PART_TYPES and kind not in ITEM_ROLES
    return not BLOCK_KEYS.isdisjoint(item.keys())


def all_parts(items: Sequence[Any]) -> bool:
    """Are these the content blocks of one message, not messages (nor a value)? Every item is
    text, a known part, or a typed part of a type we do not know, and one at least is known.
    (The first item that has a role says no at once: the usual case.)"""
    found = False
    for item in items:
        if type(item) is str:
            continue
        if not is_mapping(item):
            return False
        if is_part(item):
            found = True
        elif "role" in item or "parts" in item or "message" in item or type(item.get("type")) is not str:
            return False
        elif item["type"] in ITEM_ROLES or item["type"] in ("message", *LANGCHAIN_TYPES):
            return False
    return found


def content_is_parts(content: Any) -> bool:
    """Is a tool message's content blocks (read as parts) rather than the result itself?"""
    if type(content) is str:
        parsed = _json_blocks(content)
        return parsed is not None and not isinstance(parsed, str)
    if isinstance(content, (list, tuple)):
        return all_parts(content)
    return is_mapping(content) and is_part(content)


def _json_blocks(text: str) -> Any:
    """Content text that is JSON content blocks, parsed (a list, or a dict that is one block);
    None for text that is just text; the text itself when it looks like JSON and does not parse."""
    if text[:1] not in _JSON_FIRST or not _JSON_LOOKING.match(text):
        return None
    try:
        parsed = json_value(text.strip())
    except (ValueError, RecursionError):
        return text
    if isinstance(parsed, list):
        return parsed if not parsed or all_parts(parsed) else None
    if is_mapping(parsed) and is_part(parsed):
        return parsed
    return None


def add_content(message: Message, content: Any, depth: int) -> None:
    """A message's ``content``: text, content blocks (a list, or JSON text of one), or a value."""
    if content is None:
        return
    if type(content) is str:
        parsed = _json_blocks(content)
        if parsed is None:
            if content:
                message.texts.append(content)
            return
        if type(parsed) is str:
            message.note("content looks like JSON but does not parse")
            return
        content = parsed
    if isinstance(content, (list, tuple)):
        if depth > MAX_DEPTH:
            message.texts.append(as_text(content) or "")
            message.note("content nested too deep")
            return
        for block in content:
            add_part(message, block, depth + 1)
    elif is_mapping(content):
        add_part(message, content, depth + 1)
    else:
        message.texts.append(as_text(content) or "")


def add_part(message: Message, part: Any, depth: int) -> None:
    """One content part or block into ``message``: text, reasoning, a tool call or result; a part
    no rule reads is kept as JSON text and noted."""
    if part is None:
        return
    if type(part) is str:
        parsed = _json_blocks(part)
        if is_mapping(parsed):
            part = parsed
        else:
            if part:
                message.texts.append(part)
            return
    if isinstance(part, (list, tuple)):
        add_content(message, part, depth)
        return
    if not is_mapping(part):
        message.texts.append(as_text(part) or "")  # a number, a boolean
        return
    kind = part.get("type")
    if kind is not None and kind != "":
        if type(kind) is not str:
            _unknown(message, part, f"content part whose type is not text ({as_text(kind)})")
            return
        _add_typed_part(message, part, kind if kind in PART_TYPES else kind.lower(), depth)
        return
    if "text" in part:
        text = part["text"]
        if part.get("thought") is True:
            if isinstance(text, str) and text:
                message.think(text)
        elif isinstance(text, str):
            if text:
                message.texts.append(text)
        elif text is not None:
            _unknown(message, part, "text block whose text is not text")
    elif "toolUse" in part:
        add_call(message, part["toolUse"], "toolUse block")
    elif "toolResult" in part:
        add_response(message, part["toolResult"], "toolResult block")
    elif "function_call" in part or "functionCall" in part:
        add_call(message, part.get("function_call", part.get("functionCall")), "function_call part")
    elif "function_response" in part or "functionResponse" in part:
        add_response(message, part.get("function_response", part.get("functionResponse")), "function_response part")
    elif "reasoningContent" in part:
        _add_reasoning(message, part["reasoningContent"])
    elif "json" in part:
        message.texts.append(as_text(part["json"]) or "")
    elif "content" in part and depth <= MAX_DEPTH:  # an untyped text part
        add_content(message, part["content"], depth + 1)
    else:
        for key in _MEDIA_KEYS:
            if key in part:
                message.note(f"{key} block not read (not text)")
                return
        keys = ", ".join(sorted(str(key) for key in part)[:5])
        _unknown(message, part, f"unknown content block (keys {keys})" if keys else "empty content block")


def _add_typed_part(message: Message, part: Mapping[str, Any], kind: str, depth: int) -> None:
    if kind in _TEXT_TYPES:
        text = part.get("content")
        if text is None:
            text = part.get("text")
        if text is None:
            return
        if not isinstance(text, str):
            if is_mapping(text) or isinstance(text, (list, tuple)):
                _unknown(message, part, f"{kind} part whose content is not text")
                return
            text = as_text(text) or ""
        if part.get("thought") is True:
            if text:
                message.think(text)
        elif text:
            message.texts.append(text)
    elif kind in _CALL_TYPES:
        add_call(message, part, f"{kind} part")
    elif kind in _RESPONSE_TYPES:
        add_response(message, part, f"{kind} part")
    elif kind in _REASONING_TYPES:
        _add_reasoning(message, part)
    elif kind == "refusal":
        text = part.get("refusal", part.get("content"))
        if isinstance(text, str) and text:
            message.texts.append(text)
    elif kind == "json":
        message.texts.append(as_text(part.get("json", part.get("content"))) or "")
    elif kind in _MEDIA_TYPES:
        message.note(f"{kind} part not read (not text)")
    elif kind == "message" and depth <= MAX_DEPTH:  # a Responses message item among parts
        add_content(message, part.get("content"), depth + 1)
    else:
        _unknown(message, part, f"unknown content part type {part.get('type')!r}")


def _unknown(message: Message, part: Any, reason: str) -> None:
    """A part no rule reads: kept as its JSON text, and named."""
    message.texts.append(as_text(part) or "")
    message.note(reason)


def _add_reasoning(message: Message, part: Any) -> None:
    if isinstance(part, str):
        if part:
            message.think(part)
        return
    if not is_mapping(part):
        return
    for key in ("content", "thinking", "text", "reasoningText", "summary"):
        value = part.get(key)
        if isinstance(value, str):
            if value:
                message.think(value)
            return
        if is_mapping(value) and isinstance(value.get("text"), str):  # Bedrock {"reasoningText": {"text"}}
            message.think(value["text"])
            return
        if isinstance(value, (list, tuple)):  # Responses {"summary": [{"type": "summary_text", "text"}]}
            texts = [item.get("text") for item in value if is_mapping(item) and isinstance(item.get("text"), str)]
            if texts:
                message.think("\n".join(texts))
            return


def read_content(content: Any, role: str = "user") -> Message:
    """A message's ``content`` alone (text, parts or content blocks) as a :class:`Message`."""
    message = Message(normalise_role(role), [], [], [])
    try:
        add_content(message, content, 0)
    except Exception as error:
        message.note(f"content not read ({type(error).__name__})")
    return message


def instructions_text(value: Any) -> str | None:
    """``gen_ai.system_instructions`` (a part list or plain text) as one string."""
    if isinstance(value, str):
        return _instructions_of_text(value)  # the same prompt on every LLM span: parse it once
    return _instructions_text(value)


@functools.lru_cache(maxsize=256)
def _instructions_of_text(value: str) -> str | None:
    return _instructions_text(value)


def _instructions_text(value: Any) -> str | None:
    parsed = parse_json_maybe(value)
    if parsed in (None, "", []):
        return None
    if isinstance(parsed, str):
        return parsed
    message = Message(role="system")
    for part in parsed if isinstance(parsed, list) else [parsed]:
        add_part(message, part, 0)
    return message.text
