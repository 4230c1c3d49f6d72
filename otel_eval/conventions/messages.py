"""Chat messages and tool definitions as LLM instrumentations write them: the helpers every
dialect built on OpenAI-style messages shares (OTel GenAI, Pydantic AI, ADK, Traceloop).

Messages come as JSON part lists (``gen_ai.input.messages``), OpenAI chat (``content`` +
``tool_calls``), Gemini contents (``parts`` with ``function_call`` / ``function_response``),
choice wrappers, or flattened ``gen_ai.prompt.N.*`` attributes; tool definitions as OpenAI
function schemas, Gemini declarations or flattened ``llm.request.functions.N.*``. Anything
unrecognisable is skipped, never raised.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ..models.agent_data import ToolSchema
from .base import Reading, RequestedToolCall, as_arguments, parse_json_maybe, tool_schema

_ROLE_ALIASES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system", "function": "tool"}
_PROMPT_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


# --- messages ----------------------------------------------------------------------------------

@dataclass
class ToolResponse:
    call_id: Optional[str]
    name: Optional[str]
    value: Any


@dataclass
class Message:
    """One chat message, whatever dialect it was written in."""

    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[RequestedToolCall] = field(default_factory=list)
    responses: list[ToolResponse] = field(default_factory=list)

    @property
    def text(self) -> Optional[str]:
        return "\n".join(self.texts) if self.texts else None


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
    """Messages from a JSON string or list in any of the shapes GenAI instrumentations write:
    semconv parts (``{"role", "parts": [...]}``), OpenAI chat (``content`` + ``tool_calls``),
    Gemini contents (``parts`` with ``text`` / ``function_call`` / ``function_response``) and
    choice wrappers (``{"message": {...}}``). Anything unrecognisable is skipped, never raised."""
    parsed = parse_json_maybe(value)
    if _is_map(parsed):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    out = []
    for item in parsed:
        message = parse_message(item, default_role)
        if message is not None:
            out.append(message)
    return out


def parse_history(value: Any, default_role: str = "user") -> list[Message]:
    """:func:`parse_messages`, with each message's content parsed only when first read. An LLM
    span's input is the whole conversation so far, of which a reading needs only the last user
    turn and the system messages: only their roles are read up front, except in messages of the
    commonest shape (texts and tool calls as semconv parts), which cost no more to read whole."""
    parsed = parse_json_maybe(value)
    if _is_map(parsed):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    out: list[Message] = []
    for item in parsed:
        # Deferring costs ~1 µs a message (the wrapper, then the first read through __getattr__).
        message = _plain_message(item, default_role) if type(item) is dict else None
        if message is None:
            role = _role_of(item, default_role)
            if role is not None:
                message = _LazyMessage(role, item, default_role)
        if message is not None:
            out.append(message)
    return out


def _role_of(item: Any, default_role: str) -> Optional[str]:
    """The role :func:`parse_message` gives ``item`` (None where it gives no message), without
    reading the content."""
    item = parse_json_maybe(item)
    if isinstance(item, str):
        return normalise_role(default_role)
    if not _is_map(item):
        return None
    if "message" in item and "parts" not in item:
        inner = parse_json_maybe(item["message"])
        if _is_map(inner):
            return _role_of(inner, default_role)
    return normalise_role(item.get("role") or default_role)


class _LazyMessage(Message):
    """A message whose role is known and whose content fields are parsed on first access."""

    def __init__(self, role: str, item: Any, default_role: str) -> None:  # not the dataclass's
        self.role = role
        self._source = (item, default_role)

    def __getattr__(self, name: str) -> Any:
        # Called only for attributes not set yet: the content fields, until the first access.
        if name not in ("texts", "calls", "responses"):
            raise AttributeError(name)
        parsed = parse_message(*self._source)
        assert parsed is not None and parsed.role == self.role
        self.texts, self.calls, self.responses = parsed.texts, parsed.calls, parsed.responses
        return self.__dict__[name]


def parse_message(item: Any, default_role: str = "user") -> Optional[Message]:
    item = parse_json_maybe(item)
    if type(item) is dict:
        quick = _plain_message(item, default_role)
        if quick is not None:
            return quick
    if isinstance(item, str):
        return Message(role=normalise_role(default_role), texts=[item] if item else [])
    if not _is_map(item):
        return None
    if "message" in item and _is_map(parse_json_maybe(item["message"])) and "parts" not in item:
        return parse_message(item["message"], default_role)  # gen_ai.choice body
    message = Message(role=normalise_role(item.get("role") or default_role))
    for part in as_list(item.get("parts")):
        _add_part(message, part)
    if "content" in item:
        _add_content(message, item.get("content"))
    for call in as_list(item.get("tool_calls")):
        requested = _requested_call(call)
        if requested is not None:
            message.calls.append(requested)
    function_call = parse_json_maybe(item.get("function_call"))
    if _is_map(function_call) and function_call.get("name"):
        message.calls.append(RequestedToolCall(str(function_call["name"]), as_arguments(function_call.get("arguments"))))
    if message.role == "tool" and not message.responses:
        # OpenAI tool message / gen_ai.tool.message body: the content is the tool's result.
        value = message.texts.pop() if message.texts else None
        message.responses.append(
            ToolResponse(str_or_none(item.get("tool_call_id") or item.get("id")), str_or_none(item.get("name")),
                         parse_json_maybe(value))
        )
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


def _add_part(message: Message, part: Any) -> None:
    part = parse_json_maybe(part)
    if isinstance(part, str):
        if part:
            message.texts.append(part)
        return
    if not _is_map(part) or part.get("thought") is True:
        return
    kind = str(part.get("type") or "").lower()
    if kind in ("text", "") and isinstance(part.get("content", part.get("text")), str):
        text = part.get("content", part.get("text"))
        if text:
            message.texts.append(text)
        return
    if kind in ("tool_call", "function_call", "tool_use"):
        requested = _requested_call(part)
        if requested is not None:
            message.calls.append(requested)
        return
    if kind in ("tool_call_response", "function_response", "tool_result"):
        value = part["response"] if "response" in part else part.get("result", part.get("content"))
        message.responses.append(
            ToolResponse(str_or_none(part.get("id") or part.get("tool_use_id")), str_or_none(part.get("name")),
                         parse_json_maybe(value))
        )
        return
    if _is_map(part.get("function_call")):  # Gemini content part
        call = part["function_call"]
        message.calls.append(
            RequestedToolCall(str(call.get("name") or ""), as_arguments(call.get("args", call.get("arguments"))),
                          str_or_none(call.get("id")))
        )
        return
    if _is_map(part.get("function_response")):
        response = part["function_response"]
        message.responses.append(
            ToolResponse(str_or_none(response.get("id")), str_or_none(response.get("name")),
                         parse_json_maybe(response.get("response")))
        )


def _add_content(message: Message, content: Any) -> None:
    content = parse_json_maybe(content) if isinstance(content, str) and content.strip()[:1] == "[" else content
    if isinstance(content, str):
        if content:
            message.texts.append(content)
    elif isinstance(content, list):  # OpenAI / Anthropic content blocks
        for block in content:
            if _is_map(block) and "type" in block and block.get("type") not in ("text", "tool_use",
                                                                                         "tool_result"):
                continue
            _add_part(message, block)
    elif _is_map(content):
        _add_part(message, content)


def _requested_call(call: Any) -> Optional[RequestedToolCall]:
    call = parse_json_maybe(call)
    if not _is_map(call):
        return None
    function = parse_json_maybe(call.get("function"))
    source = function if _is_map(function) else call
    name = source.get("name")
    if not name:
        return None
    arguments = source.get("arguments", source.get("args", source.get("input")))
    return RequestedToolCall(str(name), as_arguments(arguments), str_or_none(call.get("id")))


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
        _add_part(message, part)
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
    return [RequestedToolCall(call.name, call.arguments, call.call_id)
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
