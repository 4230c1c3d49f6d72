"""Chat messages and tool definitions as LLM instrumentations write them: one tolerant message
reader that every dialect shares (OTel GenAI, Pydantic AI, ADK, Traceloop, OpenInference, ...).

A message may come as

* OTel GenAI parts: ``{"role", "parts": [{"type": "text" | "tool_call" | "tool_call_response" |
  "reasoning", ...}]}``;
* OpenAI chat: ``{"role", "content": str | [parts], "tool_calls": [...]}``, role ``tool`` with
  ``tool_call_id``; the legacy ``function_call``;
* Bedrock Converse / Strands content blocks (``{"text"}``, ``{"toolUse": {toolUseId, name, input}}``,
  ``{"toolResult": {toolUseId, content, status}}``, ``{"reasoningContent"}``) and Anthropic ones
  (``{"type": "text" | "tool_use" | "tool_result" | "thinking", ...}``);
* Gemini contents (``parts`` with ``text``, ``function_call`` / ``functionCall``,
  ``function_response`` / ``functionResponse``, ``thought``);
* OpenAI Responses items (``{"type": "message", "content": [{"type": "output_text" |
  "input_text"}]}``, ``{"type": "function_call", "call_id", ...}``, ``{"type":
  "function_call_output", "call_id", "output"}``);
* LangChain's serialized messages (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``,
  ``{"type": "human", "data": {...}}``);
* a choice wrapper (``{"message": ...}``, where the message may also be a plain string or a list
  of content blocks), a bare string, or a bare list of content blocks;

or as flattened ``gen_ai.prompt.N.*`` attributes. Tool definitions come as OpenAI function
schemas, Gemini declarations or flattened ``llm.request.functions.N.*``.

The reader never raises. A part it cannot read is kept as text (its JSON) and named in the
message's ``unread``, as is anything it skipped (an image, a call without a name, content that
looks like JSON but does not parse), so ``otel-eval inspect`` can say what was not read.
Reasoning is kept apart from the text: it is not the answer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ..models.agent_data import ToolSchema
from ..json_text import as_text, json_value, parse_json_maybe
from .base import Reading, RequestedToolCall, as_arguments, note_unread, tool_schema

_ROLE_ALIASES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system", "function": "tool"}
_PROMPT_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


# --- messages ----------------------------------------------------------------------------------

@dataclass
class ToolResponse:
    call_id: Optional[str]
    name: Optional[str]
    value: Any
    is_error: bool = False
    """The shape says the call failed: Bedrock ``toolResult.status == "error"``, Anthropic
    ``tool_result.is_error``, LangChain ``ToolMessage.status == "error"``."""


@dataclass
class Message:
    """One chat message, whatever dialect it was written in."""

    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[RequestedToolCall] = field(default_factory=list)
    responses: list[ToolResponse] = field(default_factory=list)
    reasoning: Sequence[str] = ()
    """The model's reasoning (``reasoning`` / ``thinking`` parts, Gemini ``thought`` texts): not text."""
    unread: Sequence[str] = ()
    """Why parts of the message were not read, or were kept as JSON text (``"unknown content
    part type 'foo'"``). Empty tuples until something is noted: most messages need no list."""

    @property
    def text(self) -> Optional[str]:
        return "\n".join(self.texts) if self.texts else None

    def note(self, reason: str) -> None:
        """Record what was not read (each reason once, at most :data:`MAX_NOTES`)."""
        unread = self.unread if type(self.unread) is list else list(self.unread)
        if reason not in unread and len(unread) < MAX_NOTES:
            unread.append(reason)
        self.unread = unread

    def think(self, text: str) -> None:
        reasoning = self.reasoning if type(self.reasoning) is list else list(self.reasoning)
        reasoning.append(text)
        self.reasoning = reasoning


MAX_NOTES = 20


def _is_map(value: Any) -> bool:
    # isinstance against the Mapping ABC is slow, and messages are nearly always plain dicts
    return type(value) is dict or isinstance(value, Mapping)


def normalise_role(role: Any) -> str:
    if type(role) is str:
        known = _NORMALISED.get(role)
        if known is not None:
            return known
    text = str(role or "").strip().lower()
    normalised = _ROLE_ALIASES.get(text, text or "user")
    if type(role) is str and len(_NORMALISED) < 256:  # the same few roles come in every message
        _NORMALISED[role] = normalised
    return normalised


_NORMALISED: dict[str, str] = {}


def parse_messages(value: Any, default_role: str = "user") -> list[Message]:
    """Messages from a JSON string, a list or one message, in any shape the module docstring
    lists. A list whose items are all content blocks (``[{"text": ...}, {"toolUse": ...}]``) is
    one message. Never raises: text that should be JSON and is not gives one empty message whose
    ``unread`` says so."""
    items = _message_items(value, default_role)
    if type(items) is not list:
        return [items] if items is not None else []
    out = []
    for item in items:
        message = parse_message(item, default_role)
        if message is not None:
            out.append(message)
    return out


def parse_history(value: Any, default_role: str = "user") -> list[Message]:
    """:func:`parse_messages`, with each message's content parsed only when first read. An LLM
    span's input is the whole conversation so far, of which a reading needs only the last user
    turn and the system messages: only their roles are read up front, except in messages of the
    commonest shape (texts and tool calls as semconv parts), which cost no more to read whole."""
    items = _message_items(value, default_role)
    if type(items) is not list:
        return [items] if items is not None else []
    out: list[Message] = []
    for item in items:
        # Deferring costs ~1 µs a message (the wrapper, then the first read through a property).
        message = _plain_message(item, default_role) if type(item) is dict else None
        if message is None:
            role = _role_of(item, default_role)
            if role is not None:
                message = _LazyMessage(role, item, default_role)
        if message is not None:
            out.append(message)
    return out


def _message_items(value: Any, default_role: str) -> Any:
    """The items of a message list; or, for a value that is no list of messages, the one
    :class:`Message` it makes (None: nothing)."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                parsed = json_value(text)
            except (ValueError, RecursionError):
                return Message(normalise_role(default_role), unread=["messages are not valid JSON"])
        elif text:  # text, where a message list belongs: not taken for a message
            return Message(normalise_role(default_role), unread=["messages are plain text, not a message list"])
        else:
            return None
    else:
        parsed = value
    if type(parsed) is list or type(parsed) is tuple:
        if all_parts(parsed):
            return parse_message(list(parsed), default_role)
        for item in parsed:
            if type(item) is list:
                return _batches_flattened(parsed)
        return parsed
    if parsed is None:
        return None
    return parse_message(parsed, default_role)


def _batches_flattened(items: Sequence[Any]) -> list[Any]:
    """A list that holds lists of messages (a batch, a call's positional arguments) with those
    messages in its place; a nested list of content blocks stays one message."""
    out: list[Any] = []
    for item in items:
        if type(item) is list and not all_parts(item) and any(_is_map(x) and not is_part(x) for x in item):
            out.extend(item)
        else:
            out.append(item)
    return out


def all_parts(items: Sequence[Any]) -> bool:
    """Are these the content blocks of one message, not messages (nor a value)? Every item is
    text, a known part, or a typed part of a type we do not know, and one at least is known.
    (The first item that has a role says no at once: the usual case.)"""
    found = False
    for item in items:
        if type(item) is str:
            continue
        if not _is_map(item):
            return False
        if is_part(item):
            found = True
        elif "role" in item or "parts" in item or "message" in item or type(item.get("type")) is not str:
            return False
        elif item["type"] in _ITEM_ROLES or item["type"] in ("message", *_LANGCHAIN_TYPES):
            return False
    return found


def _role_of(item: Any, default_role: str) -> Optional[str]:
    """The role :func:`parse_message` gives ``item`` (None where it gives no message), without
    reading the content."""
    try:
        return _resolve(parse_json_maybe(item), default_role)[0]
    except Exception:  # the general reader's own safety net gives this role too
        return normalise_role(default_role)


def _lazy_field(name: str) -> property:
    def get(self: "_LazyMessage") -> Any:
        if "_loaded" not in self.__dict__:
            self._load()
        return self.__dict__[name]

    def set(self: "_LazyMessage", value: Any) -> None:
        if "_loaded" not in self.__dict__:
            self._load()
        self.__dict__[name] = value

    return property(get, set)


class _LazyMessage(Message):
    """A message whose role is known and whose content fields are parsed on first access."""

    def __init__(self, role: str, item: Any, default_role: str) -> None:  # not the dataclass's
        self.role = role
        self._source = (item, default_role)

    def _load(self) -> None:
        parsed = parse_message(*self._source)
        assert parsed is not None and parsed.role == self.role
        self.__dict__.update(texts=parsed.texts, calls=parsed.calls, responses=parsed.responses,
                             reasoning=parsed.reasoning, unread=parsed.unread, _loaded=True)

    texts = _lazy_field("texts")  # type: ignore[assignment]
    calls = _lazy_field("calls")  # type: ignore[assignment]
    responses = _lazy_field("responses")  # type: ignore[assignment]
    reasoning = _lazy_field("reasoning")  # type: ignore[assignment]
    unread = _lazy_field("unread")  # type: ignore[assignment]


def unread_of(message: Message) -> Sequence[str]:
    """``message.unread``, without parsing a deferred message nobody read."""
    if type(message) is _LazyMessage and "_loaded" not in message.__dict__:
        return ()
    return message.unread


def parse_message(item: Any, default_role: str = "user") -> Optional[Message]:
    """One message in any shape the module docstring lists; None for None. A value no rule makes
    a message of is still a message, empty or with the value as text, its reason in ``unread``."""
    item = parse_json_maybe(item) if type(item) is str else item
    if type(item) is dict:
        quick = _plain_message(item, default_role)
        if quick is not None:
            return quick
    try:
        role, body, form = _resolve(item, default_role)
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


def _plain_message(item: dict[str, Any], default_role: str) -> Optional[Message]:
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


# --- the general reader --------------------------------------------------------------------------

_TEXT_TYPES = frozenset({"text", "input_text", "output_text", "summary_text"})
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})
_CALL_TYPES = frozenset({"tool_call", "function_call", "tool_use", "server_tool_use", "function"})
_RESPONSE_TYPES = frozenset({"tool_call_response", "function_response", "tool_result", "function_call_output",
                             "tool_call_result"})
_MEDIA_TYPES = frozenset({"image", "image_url", "input_image", "image_file", "audio", "input_audio", "file",
                          "input_file", "document", "blob", "uri", "video", "media"})
_PART_TYPES = _TEXT_TYPES | _REASONING_TYPES | _CALL_TYPES | _RESPONSE_TYPES | _MEDIA_TYPES | {"refusal", "json"}
#: Responses API items: messages of their own in a list, with the role they imply.
_ITEM_ROLES = {"function_call": "assistant", "function_call_output": "tool"}
#: Untyped blocks (Bedrock Converse, Gemini parts) by their key.
_MEDIA_KEYS = ("image", "document", "video", "audio", "inline_data", "inlineData", "file_data", "fileData",
               "cachePoint", "guardContent", "executable_code", "executableCode", "code_execution_result",
               "codeExecutionResult", "citationsContent")
_BLOCK_KEYS = frozenset({"text", "toolUse", "toolResult", "function_call", "functionCall", "function_response",
                         "functionResponse", "reasoningContent", "json", *_MEDIA_KEYS})
_MESSAGE_KEYS = frozenset({"role", "parts", "content", "message", "tool_calls", "function_call"})
#: Keys of a message or choice that carry no content: a dict of only these is an empty message.
_METADATA_KEYS = frozenset({"role", "index", "finish_reason", "id", "name", "type", "status", "tool_call_id",
                            "call_id", "logprobs", "annotations", "refusal", "audio", "model", "usage",
                            "stop_reason", "created", "object"})
#: LangChain's serialized messages: ``{"type": ..., "data": {...}}`` / ``{"lc": 1, "id": [..., class]}``.
_LANGCHAIN_TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "chat": None,
                    "generic": None}
_LANGCHAIN_CLASSES = {"HumanMessage": "user", "HumanMessageChunk": "user", "AIMessage": "assistant",
                      "AIMessageChunk": "assistant", "SystemMessage": "system", "SystemMessageChunk": "system",
                      "ToolMessage": "tool", "ToolMessageChunk": "tool", "FunctionMessage": "tool",
                      "FunctionMessageChunk": "tool", "ChatMessage": None, "ChatMessageChunk": None}
_MAX_DEPTH = 6
_JSON_FIRST = frozenset("[{ \t\r\n")
_JSON_LOOKING = re.compile(r'\s*(\[\s*[{\["\]]|\{\s*")')
"""Text that means to be JSON content: an array of objects, arrays or strings, ``[]``, or an object."""


def is_part(item: Mapping[str, Any]) -> bool:
    """Is this dict a content block / part rather than a message?"""
    if "role" in item or "parts" in item or "message" in item:
        return False
    kind = item.get("type")
    if type(kind) is str and kind:
        return kind.lower() in _PART_TYPES and kind not in _ITEM_ROLES
    return not _BLOCK_KEYS.isdisjoint(item.keys())


def _resolve(item: Any, default_role: str, depth: int = 0) -> tuple[Optional[str], Any, str]:
    """``(role, body, form)`` of a message: ``form`` says how ``body`` is read ("text": a string;
    "content": content blocks or a value; "part": one part; "message": a message dict; "empty":
    nothing to read). Role None: no message."""
    if item is None:
        return None, None, "empty"
    if type(item) is str:
        return normalise_role(default_role), item, "text"
    if isinstance(item, (list, tuple)):
        return normalise_role(default_role), item, "content"
    if not _is_map(item):
        return normalise_role(default_role), item, "content"  # a bare number: its text
    if "role" in item and "message" not in item and "lc" not in item:  # the usual message: at once
        return normalise_role(item["role"] or default_role), item, "message"
    if item.get("lc") == 1 and _is_map(item.get("kwargs")):
        ident = item.get("id")
        cls = str(ident[-1]) if isinstance(ident, (list, tuple)) and ident else ""
        body = item["kwargs"]
        role = _LANGCHAIN_CLASSES.get(cls, cls.lower() or None) or body.get("role")
        return normalise_role(role or default_role), body, "message"
    kind = item.get("type")
    if type(kind) is str and kind in _LANGCHAIN_TYPES and _is_map(item.get("data")):
        body = item["data"]
        return normalise_role(_LANGCHAIN_TYPES[kind] or body.get("role") or default_role), body, "message"
    if "message" in item and "parts" not in item and "content" not in item:
        inner = item["message"]
        inner = parse_json_maybe(inner) if type(inner) is str else inner
        if _is_map(inner) and depth < _MAX_DEPTH:  # a choice: {"index", "finish_reason", "message": {...}}
            role, body, form = _resolve(inner, default_role, depth + 1)
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
        if lowered in _ITEM_ROLES:
            return _ITEM_ROLES[lowered], item, "part"
        if kind in _LANGCHAIN_TYPES and "content" in item:
            return normalise_role(_LANGCHAIN_TYPES[kind] or default_role), item, "message"
        if lowered in _PART_TYPES:
            return normalise_role(default_role), item, "part"
    if not _MESSAGE_KEYS.isdisjoint(item.keys()):
        return normalise_role(item.get("role") or default_role), item, "message"
    if not _BLOCK_KEYS.isdisjoint(item.keys()):
        return normalise_role(default_role), item, "part"
    return normalise_role(default_role), item, "empty"


def _read_message(message: Message, body: Any, form: str) -> None:
    if form == "text":
        _add_content(message, body, 0)
    elif form == "content":
        _add_content(message, body, 0)
    elif form == "part":
        _add_part(message, body, 0)
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
        source = body if _is_map(body) else {}
        message.responses.append(ToolResponse(_call_id(source), str_or_none(source.get("name")),
                                              parse_json_maybe(value), _failed(source)))


def _read_body(message: Message, body: Mapping[str, Any]) -> None:
    parts = body.get("parts")
    if parts is not None:
        parts = parse_json_maybe(parts) if type(parts) is str else parts
        if isinstance(parts, (list, tuple)):
            for part in parts:
                _add_part(message, part, 1)
        elif parts is not None:
            _add_part(message, parts, 1)
    content = body.get("content")
    if content is not None:
        if message.role == "tool" and not _content_is_parts(content):
            # a tool's result as it is (an object, a list, a string): no blocks to read
            message.responses.append(ToolResponse(_call_id(body), str_or_none(body.get("name")),
                                                  result_value(content), _failed(body)))
        else:
            _add_content(message, content, 0)
    tool_calls = body.get("tool_calls")
    if tool_calls is not None:
        for call in _call_list(tool_calls):
            _add_call(message, call, "tool call")
    function_call = body.get("function_call")
    if function_call is not None:
        _add_call(message, function_call, "function_call")
    if "reasoning_content" in body or "reasoning" in body:
        for key in ("reasoning_content", "reasoning"):
            if isinstance(body.get(key), str) and body[key]:
                message.think(body[key])
    if message.role == "tool" and message.responses and _failed(body):
        for response in message.responses:
            response.is_error = True


def _content_is_parts(content: Any) -> bool:
    """Is a tool message's content blocks (read as parts) rather than the result itself?"""
    if type(content) is str:
        parsed = _json_blocks(content)
        return parsed is not None and not isinstance(parsed, str)
    if isinstance(content, (list, tuple)):
        return all_parts(content)
    return _is_map(content) and is_part(content)


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
    if _is_map(parsed) and is_part(parsed):
        return parsed
    return None


def _add_content(message: Message, content: Any, depth: int) -> None:
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
        if depth > _MAX_DEPTH:
            message.texts.append(as_text(content) or "")
            message.note("content nested too deep")
            return
        for block in content:
            _add_part(message, block, depth + 1)
    elif _is_map(content):
        _add_part(message, content, depth + 1)
    else:
        message.texts.append(as_text(content) or "")


def _add_part(message: Message, part: Any, depth: int) -> None:
    if part is None:
        return
    if type(part) is str:
        parsed = _json_blocks(part)
        if _is_map(parsed):
            part = parsed
        else:
            if part:
                message.texts.append(part)
            return
    if isinstance(part, (list, tuple)):
        _add_content(message, part, depth)
        return
    if not _is_map(part):
        message.texts.append(as_text(part) or "")  # a number, a boolean
        return
    kind = part.get("type")
    if kind is not None and kind != "":
        if type(kind) is not str:
            _unknown(message, part, f"content part whose type is not text ({as_text(kind)})")
            return
        _add_typed_part(message, part, kind if kind in _PART_TYPES else kind.lower(), depth)
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
        _add_call(message, part["toolUse"], "toolUse block")
    elif "toolResult" in part:
        _add_response(message, part["toolResult"], "toolResult block")
    elif "function_call" in part or "functionCall" in part:
        _add_call(message, part.get("function_call", part.get("functionCall")), "function_call part")
    elif "function_response" in part or "functionResponse" in part:
        _add_response(message, part.get("function_response", part.get("functionResponse")), "function_response part")
    elif "reasoningContent" in part:
        _add_reasoning(message, part["reasoningContent"])
    elif "json" in part:
        message.texts.append(as_text(part["json"]) or "")
    elif "content" in part and depth <= _MAX_DEPTH:  # an untyped text part
        _add_content(message, part["content"], depth + 1)
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
            if _is_map(text) or isinstance(text, (list, tuple)):
                _unknown(message, part, f"{kind} part whose content is not text")
                return
            text = as_text(text) or ""
        if part.get("thought") is True:
            if text:
                message.think(text)
        elif text:
            message.texts.append(text)
    elif kind in _CALL_TYPES:
        _add_call(message, part, f"{kind} part")
    elif kind in _RESPONSE_TYPES:
        _add_response(message, part, f"{kind} part")
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
    elif kind == "message" and depth <= _MAX_DEPTH:  # a Responses message item among parts
        _add_content(message, part.get("content"), depth + 1)
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
    if not _is_map(part):
        return
    for key in ("content", "thinking", "text", "reasoningText", "summary"):
        value = part.get(key)
        if isinstance(value, str):
            if value:
                message.think(value)
            return
        if _is_map(value) and isinstance(value.get("text"), str):  # Bedrock {"reasoningText": {"text"}}
            message.think(value["text"])
            return
        if isinstance(value, (list, tuple)):  # Responses {"summary": [{"type": "summary_text", "text"}]}
            texts = [item.get("text") for item in value if _is_map(item) and isinstance(item.get("text"), str)]
            if texts:
                message.think("\n".join(texts))
            return
    # redacted / encrypted reasoning: nothing readable, and nothing a reader misses


def _call_list(value: Any) -> list[Any]:
    value = parse_json_maybe(value) if type(value) is str else value
    if value is None:
        return []
    if _is_map(value):
        if value and all(type(key) is str and key.isdigit() for key in value):  # flattened tool_calls.N.*
            return [value[key] for key in sorted(value, key=int)]
        return [value]
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _add_call(message: Message, call: Any, what: str) -> None:
    requested = _requested_call(call)
    if requested is not None:
        message.calls.append(requested)
    elif call is not None:
        message.note(f"{what} without a tool name")


def _add_response(message: Message, part: Any, what: str) -> None:
    part = parse_json_maybe(part) if type(part) is str else part
    if not _is_map(part):
        message.responses.append(ToolResponse(None, None, result_value(part)))
        return
    value = None
    for key in ("response", "result", "output", "content"):
        if key in part:
            value = part[key]
            break
    message.responses.append(ToolResponse(_call_id(part), str_or_none(part.get("name")), result_value(value),
                                          _failed(part)))


def _call_id(source: Mapping[str, Any]) -> Optional[str]:
    for key in _ID_KEYS:
        if key in source:
            value = source[key]
            if value is not None and value != "":
                return value if type(value) is str else str(value)
    return None


_ID_KEYS = ("call_id", "tool_call_id", "tool_use_id", "toolUseId", "id")
"""Where a call's id may be, most specific first (a Responses item's ``id`` is the item's own)."""


def _failed(source: Mapping[str, Any]) -> bool:
    if "status" not in source and "is_error" not in source and "isError" not in source:
        return False
    status = source.get("status")
    return (source.get("is_error") is True or source.get("isError") is True
            or (type(status) is str and status.lower() == "error"))


def _requested_call(call: Any) -> Optional[RequestedToolCall]:
    call = parse_json_maybe(call) if type(call) is str else call
    if not _is_map(call):
        return None
    function = call.get("function")
    function = parse_json_maybe(function) if type(function) is str else function
    source = function if _is_map(function) else call
    name = source.get("name")
    if name in (None, ""):
        return None
    arguments = source.get("arguments", source.get("args", source.get("input")))
    return RequestedToolCall(str(name), as_arguments(arguments), _call_id(call))


def result_value(value: Any) -> Any:
    """A tool's result as the shapes carry it, unwrapped: JSON text parsed, and content blocks
    that only carry text or a JSON value (Bedrock ``[{"text": ...}]`` / ``[{"json": ...}]``,
    Anthropic / MCP ``[{"type": "text", "text": ...}]``) reduced to that text or value."""
    value = parse_json_maybe(value)
    if _is_map(value):
        single = _block_value(value)
        return value if single is _NOT_A_BLOCK else single
    if isinstance(value, list) and value:
        pieces = [_block_value(item) if _is_map(item) else _NOT_A_BLOCK for item in value]
        if any(piece is _NOT_A_BLOCK for piece in pieces):
            return value
        if len(pieces) == 1:
            return pieces[0]
        if all(type(piece) is str for piece in pieces):
            return parse_json_maybe("\n".join(pieces))
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


def read_content(content: Any, role: str = "user") -> Message:
    """A message's ``content`` alone (text, parts or content blocks) as a :class:`Message`."""
    message = Message(normalise_role(role), [], [], [])
    try:
        _add_content(message, content, 0)
    except Exception as error:
        message.note(f"content not read ({type(error).__name__})")
    return message


def as_list(value: Any) -> list[Any]:
    value = parse_json_maybe(value)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def str_or_none(value: Any) -> Optional[str]:
    return None if value in (None, "") else str(value)


def instructions_text(value: Any) -> Optional[str]:
    """``gen_ai.system_instructions`` (a part list or plain text) as one string."""
    if isinstance(value, str):
        return _instructions_of_text(value)  # the same prompt on every LLM span: parse it once
    return _instructions_text(value)


@functools.lru_cache(maxsize=256)
def _instructions_of_text(value: str) -> Optional[str]:
    return _instructions_text(value)


def _instructions_text(value: Any) -> Optional[str]:
    parsed = parse_json_maybe(value)
    if parsed in (None, "", []):
        return None
    if isinstance(parsed, str):
        return parsed
    message = Message(role="system")
    for part in parsed if isinstance(parsed, list) else [parsed]:
        _add_part(message, part, 0)
    return message.text


def last_user_text(messages: Sequence[Message]) -> Optional[str]:
    """The last user message that says something (tool results sent as role ``user`` do not count)."""
    for message in reversed(messages):
        if message.role == "user" and message.texts:
            return message.text
    return None


def system_text(messages: Sequence[Message]) -> Optional[str]:
    texts = [m.text for m in messages if m.role == "system" and m.texts]
    return "\n".join(t for t in texts if t) or None


def output_text(messages: Sequence[Message]) -> Optional[str]:
    """The answer: the first output message with text (further messages are alternative choices)."""
    for message in messages:
        if message.role != "user" and message.texts:
            return message.text
    return None


def output_calls(messages: Sequence[Message]) -> list[RequestedToolCall]:
    # Each reading gets calls of its own, built directly: copy.copy's generic path costs ~1 µs a call.
    return [RequestedToolCall(call.name, call.args, call.call_id)
            for message in messages if message.role != "user" for call in message.calls]


def fill_from_messages(
    reading: Reading,
    inputs: Sequence[Message] = (),
    outputs: Sequence[Message] = (),
    system: Optional[str] = None,
    *,
    input_source: str = "",
    output_source: str = "",
    system_source: str = "",
    with_calls: bool = True,
) -> None:
    """Fill the reading's empty content fields from parsed messages (never overwrites)."""
    if reading.user_input is None:
        text = last_user_text(inputs)
        if text is not None:
            reading.user_input = text
            reading.sources.setdefault("agent_task", input_source)
    if reading.system_prompt is None:
        text = system if system is not None else system_text(inputs)
        if text is not None:
            reading.system_prompt = text
            reading.sources.setdefault("system_prompt", system_source if system is not None else input_source)
    if reading.response is None:
        text = output_text(outputs)
        if text is not None:
            reading.response = text
            reading.sources.setdefault("agent_response", output_source)
    if with_calls and not reading.requested_calls:
        calls = output_calls(outputs)
        if calls:
            reading.requested_calls = calls
            reading.sources.setdefault("tool_calls", output_source)
    note_unread_messages(reading, inputs, input_source)
    note_unread_messages(reading, outputs, output_source)


def note_unread_messages(reading: Reading, messages: Sequence[Message], source: str) -> None:
    """What the messages could not read, in ``reading.unread``, named by where they came from
    (messages deferred and never read are not looked at)."""
    for message in messages:
        for reason in unread_of(message):
            note_unread(reading, f"{source}: {reason}" if source else reason)


# --- flattened gen_ai.prompt.N / gen_ai.completion.N ---------------------------------------------

def indexed_messages(attributes: Mapping[str, Any], which: str) -> list[Message]:
    """Messages from the flattened ``gen_ai.prompt.N.*`` (``which="prompt"``) or
    ``gen_ai.completion.N.*`` attributes (OpenLLMetry and the pre-1.28 semconv)."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _PROMPT_KEY.match(key)
        if match is None or match.group(1) != which:
            continue
        set_path(found.setdefault(int(match.group(2)), {}), match.group(3).split("."), value)
    messages = []
    default_role = "user" if which == "prompt" else "assistant"
    for index in sorted(found):
        raw = found[index]
        if _is_map(raw.get("tool_calls")):
            raw["tool_calls"] = [raw["tool_calls"][k] for k in sorted(raw["tool_calls"], key=_int_key)]
        message = parse_message(raw, default_role)
        if message is not None:
            messages.append(message)
    return messages


def set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    for step in path[:-1]:
        nxt = target.get(step)
        if not isinstance(nxt, dict):
            nxt = target[step] = {}
        target = nxt
    target[path[-1]] = value


def _int_key(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)


# --- tools, errors, usage ----------------------------------------------------------------------

def tool_schemas(value: Any) -> list[ToolSchema]:
    """``gen_ai.tool.definitions`` (semconv ``{type,name,description,parameters}`` or OpenAI
    ``{type:function, function:{...}}``) as ToolSchemas; malformed entries are skipped."""
    if isinstance(value, str):
        # Every LLM span of an agent sends the same definitions: parse and validate them once.
        return list(_tool_schemas_of_text(value))
    return _tool_schemas(value)


@functools.lru_cache(maxsize=256)
def _tool_schemas_of_text(value: str) -> tuple[ToolSchema, ...]:
    return tuple(_tool_schemas(value))


def _tool_schemas(value: Any) -> list[ToolSchema]:
    out = []
    for item in as_list(value):
        item = parse_json_maybe(item)
        if not _is_map(item):
            continue
        source = item.get("function") if _is_map(item.get("function")) else item
        if not source.get("name"):
            continue
        parameters = parse_json_maybe(source.get("parameters", source.get("parameters_json_schema")))
        out.append(tool_schema(source["name"], source.get("description"), parameters))
    return out


def indexed_tool_schemas(attributes: Mapping[str, Any], prefix: str = "llm.request.functions") -> list[ToolSchema]:
    """OpenLLMetry's ``llm.request.functions.N.{name,description,parameters}``."""
    found: dict[int, dict[str, Any]] = {}
    pattern = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.(name|description|parameters)$")
    for key, value in attributes.items():
        match = pattern.match(key)
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return tool_schemas([found[i] for i in sorted(found)])


def token_count(attributes: Mapping[str, Any], *keys: str) -> Optional[int]:
    for key in keys:
        value = attributes.get(key)
        if value in (None, ""):
            continue
        try:
            return int(value)
        except (TypeError, ValueError):
            continue
    return None


def first_text(attributes: Mapping[str, Any], *keys: str) -> tuple[Optional[str], str]:
    for key in keys:
        value = attributes.get(key)
        if value not in (None, ""):
            return str(value), key
    return None, ""
