"""The trajectory-golden format of the trajectory-evaluation seed.

A JSON list (or an object holding it under ``test_cases``/``cases``/``golden_dataset``/``examples``)
of items::

    {"id": "...", "query": "...", "expected_tool_use": [{"tool_name": "...", "tool_input": {...}}],
     "expected_table": "...", "expected_trajectory": ["tool_selection: call_db_agent",
     "sql_generation: yes"], "reference": "...", "tags": [...]}

Each item becomes one single-turn EvalCase. The trajectory lines become first-class Invocation
fields (``expected_tool_selection``, ``expected_sql``, ``expected_tables``), never metadata strings.
``expected_tool_use`` absent → ``expected_tool_trajectory = None`` (not checked); ``[]`` → the agent
must call no tool. Keys are strict (:data:`ITEM_KEYS`); free-form data goes under ``metadata``.
"""

from __future__ import annotations

from typing import Any

from ..models.evalset import EvalCase, EvalSet, Invocation, MessageContent
from ..models.keys import ListOf, Obj, Spec, check_keys
from ..models.problems import ProblemLog, child, type_name
from .common import TOOL_USE_KEYS, check_unique_ids, parse_tool_uses, raw_id, slug_id

#: Object keys under which a trajectory-golden list may sit.
CONTAINER_KEYS = ("test_cases", "cases", "golden_dataset", "examples")

#: The keys of one test case; ``metadata`` is free-form and becomes the case's metadata.
ITEM_KEYS = Obj(
    {
        "id": None,
        "eval_id": None,
        "name": None,
        "query": None,
        "expected_tool_use": ListOf(TOOL_USE_KEYS),
        "expected_table": None,
        "expected_tables": None,
        "expected_trajectory": None,
        "reference": None,
        "expected_response": None,
        "tags": None,
        "metadata": None,
    }
)

#: Values of ``sql_generation`` lines.
_YES = {"yes", "true", "y", "1"}
_NO = {"no", "false", "n", "0"}

#: Lines of ``expected_trajectory`` this loader understands.
TRAJECTORY_KEYS = ("tool_selection", "sql_generation", "table_usage")

#: ``expected_table`` values that mean "no table expected" (the seed compares against 'N/A').
_NO_TABLE = {"", "n/a", "na", "none"}


def items_of(data: Any) -> tuple[list | None, str, dict]:
    """The item list, its JSON path and the enclosing object (for name/description)."""
    if isinstance(data, list):
        return data, "$", {}
    if isinstance(data, dict):
        for key in CONTAINER_KEYS:
            if isinstance(data.get(key), list):
                return data[key], child("$", key), data
    return None, "$", {}


def key_spec(data: Any) -> Spec:
    """The keys of ``data``: a list of items, or an object holding one (plus name/description/metadata)."""
    items = ListOf(ITEM_KEYS)
    if not isinstance(data, dict):
        return items
    container = next(key for key in CONTAINER_KEYS if isinstance(data.get(key), list))
    return Obj({container: items, "name": None, "description": None, "metadata": None})


def parse_trajectory_golden(data: Any, log: ProblemLog, eval_set_id: str) -> EvalSet:
    """A list of test cases with expected tool trajectories (bare, or under a container key) as an
    :class:`EvalSet`; problems are logged with their JSON path, not raised."""
    items, base, container = items_of(data)
    if items is None:
        log.add(
            "$",
            "expected a JSON array of test cases (or an object with one under "
            + "/".join(f"'{k}'" for k in CONTAINER_KEYS)
            + f"), got {type_name(data)}",
        )
        return EvalSet(eval_set_id=eval_set_id)
    check_keys(data, key_spec(data), "$", log)
    cases: list[EvalCase] = []
    ids: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        path = child(base, i)
        case = _parse_item(item, path, log)
        if case is not None:
            cases.append(case)
            log.case_paths.append(path)
        item_id = raw_id(item)
        if item_id is not None:
            ids.append((item_id, child(path, "id")))
        elif case is not None:
            ids.append((case.eval_id, child(path, "query")))
    check_unique_ids(ids, log)
    name, description = container.get("name"), container.get("description")
    name = name if isinstance(name, str) else ""
    description = description if isinstance(description, str) else ""
    metadata = container.get("metadata", {})
    if log.object(metadata, "$.metadata") is None:
        metadata = {}
    return EvalSet(
        eval_set_id=eval_set_id, name=name, description=description, eval_cases=cases, metadata=dict(metadata)
    )


def _parse_item(item: Any, path: str, log: ProblemLog) -> EvalCase | None:
    item = log.object(item, path, "a test case object")
    if item is None:
        return None
    before = len(log.problems)
    query = log.required(item, "query", path)
    if "query" in item:
        query = log.string(query, child(path, "query"), non_empty=True)

    eval_id = _eval_id(item, path, log, query)
    calls = parse_tool_uses(item.get("expected_tool_use"), child(path, "expected_tool_use"), log)
    tables = _tables(item, path, log)
    selection, expected_sql, line_tables = _trajectory_lines(
        item.get("expected_trajectory"), child(path, "expected_trajectory"), log
    )
    for table in line_tables:
        if table not in tables:
            tables.append(table)
    response = None
    for key in ("expected_response", "reference"):
        if key in item:
            text = log.string(item[key], child(path, key), required=False)
            if text:
                response = MessageContent.assistant(text)
                break
    if calls == [] and selection is not None:
        log.add(
            child(path, "expected_trajectory"),
            f"'tool_selection: {selection}' contradicts 'expected_tool_use: []' (the agent must call no tool)",
        )
    tags = item.get("tags", [])
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        log.add(child(path, "tags"), "expected an array of strings")
        tags = []
    metadata = item.get("metadata", {})
    if log.object(metadata, child(path, "metadata")) is None:
        metadata = {}
    if len(log.problems) > before or not isinstance(query, str) or eval_id is None:
        return None

    invocation = Invocation(
        invocation_id=f"{eval_id}-1",
        user_content=MessageContent.user(query),
        expected_tool_trajectory=calls,
        expected_final_response=response,
        expected_tool_selection=selection or (calls[0].name if calls else None),
        expected_sql=expected_sql,
        expected_tables=tables,
    )
    name = item.get("name") if isinstance(item.get("name"), str) else ""
    return EvalCase(eval_id=eval_id, name=name, conversation=[invocation], tags=list(tags), metadata=dict(metadata))


def _eval_id(item: dict, path: str, log: ProblemLog, query: Any) -> str | None:
    for key in ("id", "eval_id"):
        if key in item:
            value = item[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, (str, int))
                or (isinstance(value, str) and not value.strip())
            ):
                log.add(child(path, key), f"expected a non-empty string or an integer, got {type_name(value)}")
                return None
            return str(value)
    return slug_id(query) if isinstance(query, str) else None


def _tables(item: dict, path: str, log: ProblemLog) -> list[str]:
    tables: list[str] = []
    for key in ("expected_table", "expected_tables"):
        if key not in item or item[key] is None:
            continue
        value = item[key]
        values = value if isinstance(value, list) else [value]
        for k, table in enumerate(values):
            table_path = child(child(path, key), k) if isinstance(value, list) else child(path, key)
            if not isinstance(table, str):
                log.add(table_path, f"expected a table name (string), got {type_name(table)}")
            elif table.strip().lower() not in _NO_TABLE and table.strip() not in tables:
                tables.append(table.strip())
    return tables


def _trajectory_lines(value: Any, path: str, log: ProblemLog) -> tuple[str | None, bool | None, list[str]]:
    """``["tool_selection: X", "sql_generation: yes", "table_usage: T"]`` → (X, True, [T]).

    A line this loader does not understand is a problem: dropping it would silently weaken the test.
    """
    selection: str | None = None
    expected_sql: bool | None = None
    tables: list[str] = []
    if value is None:
        return selection, expected_sql, tables
    lines = log.array(value, path)
    if lines is None:
        return selection, expected_sql, tables
    seen: dict[str, str] = {}
    for k, line in enumerate(lines):
        line_path = child(path, k)
        if not isinstance(line, str):
            log.add(line_path, f"expected a 'key: value' string, got {type_name(line)}")
            continue
        key, sep, raw = line.partition(":")
        key, raw = key.strip().lower(), raw.strip()
        if not sep or key not in TRAJECTORY_KEYS:
            log.add(
                line_path,
                f"unknown trajectory line {line!r}: expected one of "
                + ", ".join(f"'{k}: ...'" for k in TRAJECTORY_KEYS),
            )
            continue
        if not raw:
            log.add(line_path, f"'{key}' has no value")
            continue
        if key in seen and key != "table_usage" and seen[key].lower() != raw.lower():
            log.add(line_path, f"conflicting '{key}' lines: {seen[key]!r} and {raw!r}")
            continue
        seen[key] = raw
        if key == "tool_selection":
            selection = raw
        elif key == "sql_generation":
            if raw.lower() in _YES:
                expected_sql = True
            elif raw.lower() in _NO:
                expected_sql = False
            else:
                log.add(line_path, f"sql_generation must be yes/no/true/false, got {raw!r}")
        elif raw.lower() not in _NO_TABLE and raw not in tables:
            tables.append(raw)
    return selection, expected_sql, tables
