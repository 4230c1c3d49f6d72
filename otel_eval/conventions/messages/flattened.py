"""Messages flattened into attributes, one key per field: ``gen_ai.prompt.N.*`` /
``gen_ai.completion.N.*`` (OpenLLMetry and the pre-1.28 semconv)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .envelopes import parse_message
from .model import Message, is_mapping

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
    for step in path[:-1]:
        nxt = target.get(step)
        if not isinstance(nxt, dict):
            nxt = target[step] = {}
        target = nxt
    target[path[-1]] = value


def _int_key(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)
