"""Tool definitions (semconv, OpenAI function schemas, Gemini declarations, OpenLLMetry's flattened
``llm.request.functions.N.*``) and the token counts of an LLM call."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ...json_text import parse_json_maybe
from ...models.agent_data import ToolSchema
from ..base import tool_schema
from .model import as_list, is_mapping


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
        if not is_mapping(item):
            continue
        source = item.get("function") if is_mapping(item.get("function")) else item
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


def token_count(attributes: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` whose value is a whole number; None when none is (a bad count is skipped,
    not an error)."""
    for key in keys:
        value = attributes.get(key)
        if value in (None, ""):
            continue
        try:
            return int(value)
        except (TypeError, ValueError):
            continue
    return None


def first_text(attributes: Mapping[str, Any], *keys: str) -> tuple[str | None, str]:
    """The first of ``keys`` with a non-empty value, as text, and that key (the reading's source);
    ``(None, "")`` when none has one."""
    for key in keys:
        value = attributes.get(key)
        if value not in (None, ""):
            return str(value), key
    return None, ""
