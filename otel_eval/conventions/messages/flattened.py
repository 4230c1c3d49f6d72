"""Messages flattened into attributes, one key per field: ``gen_ai.prompt.N.*`` /
``gen_ai.completion.N.*`` (OpenLLMetry and the pre-1.28 semconv), and OpenInference's
``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..base import RequestedToolCall, as_arguments
from .envelopes import parse_message
from .model import Message, ToolResponse, is_mapping, str_or_none

_PROMPT_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


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
        if is_mapping(raw.get("tool_calls")):
            raw["tool_calls"] = [raw["tool_calls"][k] for k in sorted(raw["tool_calls"], key=_int_key)]
        message = parse_message(raw, default_role)
        if message is not None:
            messages.append(message)
    return messages


def set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``value`` at ``path`` in nested dicts, making the dicts on the way: flattened attributes
    (``gen_ai.prompt.0.content``) back into the objects they were flattened from."""
    for step in path[:-1]:
        nxt = target.get(step)
        if not isinstance(nxt, dict):
            nxt = target[step] = {}
        target = nxt
    target[path[-1]] = value


def _int_key(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)


# --- OpenInference: <prefix>.N.message.{role, content, contents.M.*, tool_calls.M.*} ---------------


class IndexedGroups:
    """Groups the ``prefix.N.rest`` keys of a fixed set of prefixes (OpenInference's
    ``llm.input_messages.N.message.role``, ...) in one pass over the keys, as ``{prefix: {N:
    {rest: value}}}``. Which keys match, and how they split, is remembered per key sequence."""

    _MAX_REMEMBERED = 1024
    """Attribute names are the sender's choice: past this many key sequences, start afresh."""

    def __init__(self, *prefixes: str) -> None:
        self._match = re.compile(rf"({'|'.join(map(re.escape, prefixes))})\.(\d+)\.(.+)$").match
        self._plans: dict[tuple[str, ...], list[tuple[str, list[tuple[int, list[tuple[str, str]]]]]]] = {}

    def __call__(self, attrs: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
        """``{prefix: {N: {rest: value}}}``."""
        # Plain loops, not nested comprehensions: each comprehension is a call of its own (before
        # Python 3.12), one per prefix and per index, which cost more than the dicts they fill.
        out: dict[str, dict[int, dict[str, Any]]] = {}
        group: dict[int, dict[str, Any]]
        found: dict[str, Any]
        for prefix, indexes in self._plan(attrs):
            out[prefix] = group = {}
            for index, fields in indexes:
                group[index] = found = {}
                for rest, key in fields:
                    found[rest] = attrs[key]
        return out

    def _plan(self, attrs: Mapping[str, Any]) -> list[tuple[str, list[tuple[int, list[tuple[str, str]]]]]]:
        """The shape of the result: ``[(prefix, [(N, [(rest, key), ...]), ...]), ...]`` in the order
        the keys come. Spans of one kind carry the same keys in the same order, so the shape is
        remembered per key sequence."""
        keys = tuple(attrs)
        plan = self._plans.get(keys)
        if plan is None:
            shape: dict[str, dict[int, list[tuple[str, str]]]] = {}
            for key in keys:
                found = self._match(key)
                if found is not None:
                    fields = shape.setdefault(found.group(1), {}).setdefault(int(found.group(2)), [])
                    fields.append((found.group(3), key))
            plan = [(prefix, list(indexes.items())) for prefix, indexes in shape.items()]
            if len(keys) <= 256:  # a span with more attributes than that is not worth remembering
                if len(self._plans) >= self._MAX_REMEMBERED:
                    self._plans.clear()
                self._plans[keys] = plan
        return plan


_message_groups = IndexedGroups("message.contents", "message.tool_calls")
#: OpenInference keeps a role as the instrumented library wrote it: these three are its spellings
#: of the user and the model (and, unlike the general reader, nothing else is renamed).
_OPENINFERENCE_ROLES = {"human": "user", "ai": "assistant", "model": "assistant"}
_FLAT_MESSAGE_KEYS = frozenset(
    {
        "message.role",
        "message.content",
        "message.name",
        "message.tool_call_id",
        "message.function_call_name",
        "message.function_call_arguments_json",
    }
)
_NOTHING_NESTED: dict[str, dict[int, dict[str, Any]]] = {}


def openinference_messages(grouped: dict[int, dict[str, Any]], with_calls: bool = True) -> list[Message]:
    """The messages of one OpenInference message list (``{N: {rest: value}}``, a prefix's group
    from :class:`IndexedGroups`), in index order. The text is ``message.content``, else the text
    ``message.contents``; the calls are ``message.tool_calls`` (or the legacy
    ``message.function_call_*``). A message that names no role has the role ``""``.
    ``with_calls=False``: a message with a ``message.content`` is read no further (an input
    history, of which only roles and texts are wanted)."""
    messages = []
    for _, fields in sorted(grouped.items()):
        role = str(fields.get("message.role") or "").lower()
        role = _OPENINFERENCE_ROLES.get(role, role)
        text = fields.get("message.content")
        if role == "tool":  # a tool's result sent back to the model, named by the call's id
            value = text if text not in (None, "") else "\n".join(_texts_of_contents(_nested(fields))) or None
            name = str_or_none(fields.get("message.name"))
            response = ToolResponse(str_or_none(fields.get("message.tool_call_id")), name, value)  # parsed when read
            messages.append(Message(role, [str(value)] if value else [], [], [response]))
            continue
        if not with_calls and text not in (None, ""):
            messages.append(Message(role, [str(text)], []))
            continue
        nested = _nested(fields)
        texts = [str(text)] if text not in (None, "") else _texts_of_contents(nested)
        messages.append(Message(role, texts, _openinference_calls(fields, nested) if with_calls else []))
    return messages


def _texts_of_contents(nested: dict[str, dict[int, dict[str, Any]]]) -> list[str]:
    """The text items of a message's ``message.contents``, in index order."""
    return [
        str(c["message_content.text"])
        for _, c in sorted(nested.get("message.contents", {}).items())
        if c.get("message_content.text") not in (None, "") and str(c.get("message_content.type") or "text") == "text"
    ]


def _nested(fields: dict[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """A message's indexed groups (``message.contents``, ``message.tool_calls``). Most messages
    are a role and a text: nothing to group."""
    return _NOTHING_NESTED if fields.keys() <= _FLAT_MESSAGE_KEYS else _message_groups(fields)


def _openinference_calls(
    fields: dict[str, Any], nested: dict[str, dict[int, dict[str, Any]]]
) -> list[RequestedToolCall]:
    calls = []
    for _, call in sorted(nested.get("message.tool_calls", {}).items()):
        name = call.get("tool_call.function.name")
        if name:
            calls.append(
                RequestedToolCall(
                    str(name),
                    as_arguments(call.get("tool_call.function.arguments")),
                    str_or_none(call.get("tool_call.id")),
                )
            )
    if not calls and fields.get("message.function_call_name"):
        calls.append(
            RequestedToolCall(
                str(fields["message.function_call_name"]),
                as_arguments(fields.get("message.function_call_arguments_json")),
            )
        )
    return calls
