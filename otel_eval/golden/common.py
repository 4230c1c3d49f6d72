"""Helpers every golden format shares: ids, eval set ids from file names, tool arguments."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from ..models.evalset import ExpectedToolCall
from ..models.keys import Obj
from ..models.problems import ProblemLog, child, type_name

#: ``{tool_name, tool_input}``: an expected tool use of trajectory-golden and old ADK test files.
TOOL_USE_KEYS = Obj({"tool_name": None, "tool_input": None})

#: Second suffixes that name a golden format rather than the data set (``weather.trajectory.json``).
FORMAT_SUFFIXES = (".evalset", ".test", ".trajectory", ".golden", ".bigsky", ".dataset")


def eval_set_id_from_source(source: str, default: str = "golden") -> str:
    """``examples/golden/weather.trajectory.json`` → ``weather``: the file name without ``.json``
    and without a format suffix. Sources that are not file names (``<data>``) give ``default``."""
    if not source or source.startswith("<"):
        return default
    name = PurePath(source).name
    for ext in (".jsonl", ".json"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
            break
    for suffix in FORMAT_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name or default


def slug_id(text: str, max_len: int = 40) -> str:
    """A stable, readable eval id for a case that has none: slug of the query + 8 hex of its SHA-1.

    The hash keeps two queries that slug alike apart; the same query always gets the same id, so
    results stored under it stay comparable across runs and file edits that do not touch the query.
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")[:max_len].rstrip("_")
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else f"case-{digest}"


def parse_arguments(value: Any, log: ProblemLog, path: str) -> dict[str, Any] | None:
    """Tool arguments given as an object or as a JSON string holding an object (OpenAI style).

    ``None`` and ``""`` mean no arguments. Anything else that is not an object is a problem.
    """
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            log.add(path, f"arguments string is not valid JSON: {exc.msg} (column {exc.colno})")
            return None
        if not isinstance(parsed, dict):
            log.add(path, f"arguments string must hold a JSON object, got {type_name(parsed)}")
            return None
        return parsed
    log.add(path, f"expected an object or a JSON string of one, got {type_name(value)}")
    return None


def check_unique_ids(ids: Iterable[tuple[str, str]], log: ProblemLog) -> None:
    """Each eval_id once per set: results, stored evaluations and case hints are keyed by it.

    ``ids`` pairs each item's eval_id (whether or not the item has other problems) with the JSON
    path of the field it came from.
    """
    seen: dict[str, str] = {}
    for eval_id, path in ids:
        if eval_id in seen:
            log.add(path, f"duplicate eval_id '{eval_id}' (first used at {seen[eval_id]})")
        else:
            seen[eval_id] = path


def raw_id(item: Any) -> str | None:
    """An item's own ``id`` when it is usable (string or integer), for duplicate checks."""
    value = item.get("id") if isinstance(item, dict) else None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        return None
    return str(value)


def parse_tool_uses(value: Any, path: str, log: ProblemLog) -> list[ExpectedToolCall] | None:
    """``expected_tool_use: [{tool_name, tool_input?}]`` (trajectory-golden and old ADK test files).

    ``None`` (the key absent, or null) → ``None``: tool use is not checked. ``[]`` → ``[]``: the
    agent must call no tool. A call given without ``tool_input`` names the tool only: it gets
    ``check_args=False``, so scoring does not hold the agent to empty arguments.
    """
    if value is None:
        return None
    uses = log.array(value, path)
    calls: list[ExpectedToolCall] = []
    for j, use in enumerate(uses or []):
        use_path = child(path, j)
        use = log.object(use, use_path, "a tool use object")
        if use is None:
            continue
        name = log.required(use, "tool_name", use_path)
        if "tool_name" in use:
            name = log.string(name, child(use_path, "tool_name"), non_empty=True)
        if "tool_input" in use:
            args = parse_arguments(use["tool_input"], log, child(use_path, "tool_input"))
        else:
            args = {}
        if isinstance(name, str) and args is not None:
            # Without tool_input the golden names the tool only: its arguments are not checked.
            calls.append(ExpectedToolCall(name=name, args=args, check_args=False if "tool_input" not in use else None))
    return calls


def content_text(content: Any) -> str | None:
    """Text of a chat message ``content``: a string, or OpenAI/ADK style parts with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


__all__ = [
    "eval_set_id_from_source",
    "slug_id",
    "parse_arguments",
    "parse_tool_uses",
    "check_unique_ids",
    "content_text",
    "child",
    "TOOL_USE_KEYS",
]
