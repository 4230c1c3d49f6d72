"""Message lists: a JSON text, a list, a batch of lists, or one message where a list belongs; and
an LLM span's history, whose messages are read only when a reader asks for their content."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...json_text import json_value, parse_json_maybe
from .envelopes import parse_message, plain_message, resolve_message
from .model import Message, is_mapping, normalise_role
from .parts import all_parts, is_part


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
        message = plain_message(item, default_role) if type(item) is dict else None
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
        if type(item) is list and not all_parts(item) and any(is_mapping(x) and not is_part(x) for x in item):
            out.extend(item)
        else:
            out.append(item)
    return out


def _role_of(item: Any, default_role: str) -> str | None:
    """The role :func:`parse_message` gives ``item`` (None where it gives no message), without
    reading the content."""
    try:
        return resolve_message(parse_json_maybe(item), default_role)[0]
    except Exception:  # the general reader's own safety net gives this role too
        return normalise_role(default_role)


def _lazy_field(name: str) -> property:
    def get(self: _LazyMessage) -> Any:
        if "_loaded" not in self.__dict__:
            self._load()
        return self.__dict__[name]

    def set(self: _LazyMessage, value: Any) -> None:
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
        self.__dict__.update(
            texts=parsed.texts,
            calls=parsed.calls,
            responses=parsed.responses,
            reasoning=parsed.reasoning,
            unread=parsed.unread,
            _loaded=True,
        )

    texts = _lazy_field("texts")
    calls = _lazy_field("calls")
    responses = _lazy_field("responses")
    reasoning = _lazy_field("reasoning")
    unread = _lazy_field("unread")


def unread_of(message: Message) -> Sequence[str]:
    """``message.unread``, without parsing a deferred message nobody read."""
    if type(message) is _LazyMessage and "_loaded" not in message.__dict__:
        return ()
    return message.unread


def state_messages(value: Any) -> list[Any] | None:
    """The messages of a conversation state, unread: ``{"messages": [...]}`` (of a batch of lists,
    as LangChain passes a model its input, the last), or a list of messages (objects with a role,
    or LangChain's serialized forms). None: the value holds no message list."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        messages = value["messages"]
        if messages and isinstance(messages[0], list):
            messages = messages[-1]
        return messages
    if (
        isinstance(value, list)
        and value
        and isinstance(value[0], dict)
        and ("role" in value[0] or "lc" in value[0] or "data" in value[0])
    ):
        return value
    return None


def last_text_from(items: Sequence[Any], role: str) -> str | None:
    """The text of the last of ``items`` (messages, unread) from ``role`` that has text: a state's
    latest user turn, or its answer. Items are read from the last, and only until one is found;
    an item that is not an object, or a message that names no role, is nobody's."""
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        # The role first, as parse_message finds it: a LangGraph state's tool results and
        # tool-calling turns after the last user message are not read in full only to be passed over.
        if _role_of(item, _NO_ROLE) != role:
            continue
        message = parse_message(item, _NO_ROLE)
        if message is not None and message.role == role and message.text:
            return message.text
    return None


_NO_ROLE = "(no role)"
"""The default role of an item that names none: no role a caller asks for."""
