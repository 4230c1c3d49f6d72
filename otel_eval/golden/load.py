"""Golden files in any supported format → one :class:`EvalSet`; validation; conversion.

Every format's parser reports into a :class:`ProblemLog` and never stops early, so
:func:`validate_golden` lists every problem of a file, and :func:`load_golden` raises
:class:`GoldenFileError` with all of them (file, JSON path, reason). Golden files are strict: a
key the format does not define is a problem (see :mod:`otel_eval.models.keys`), because an
expectation under a misspelled key would silently not be checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models.evalset import EvalCase, EvalSet
from ..models.problems import GoldenFileError, Problem, ProblemLog
from ..models.suggest import closest_key
from . import adk_eval_set, bigsky, evalset_json, trajectory_golden
from .common import eval_set_id_from_source

FORMATS = ("evalset", "trajectory", "bigsky", "adk")

_PARSERS = {
    "evalset": evalset_json.parse_evalset_json,
    "trajectory": trajectory_golden.parse_trajectory_golden,
    "bigsky": bigsky.parse_bigsky,
    "adk": adk_eval_set.parse_adk_eval_set,
}

#: Keys that only trajectory-golden items carry.
_TRAJECTORY_KEYS = {"expected_trajectory", "expected_table", "expected_tables"}
#: Top-level keys that decide an object's format, for suggestions when none is found.
_TOP_LEVEL_KEYS = ("eval_cases", "evalCases", "data", "evaluators", *trajectory_golden.CONTAINER_KEYS)
#: Keys that only old ADK test-file items carry.
_ADK_LEGACY_KEYS = {"reference", "expected_intermediate_agent_responses"}


class UnknownFormat(InputError):
    """The data matches none of the golden formats."""


PathLike = str | Path


def detect_format(data: Any, source: str | None = None) -> str:
    """Which golden format ``data`` is in: "evalset" | "trajectory" | "bigsky" | "adk".

    Decided by shape, not by file name, except for one case the shapes share: a list of bare
    ``{query, expected_tool_use}`` items is an ADK test file (one multi-turn session) when
    ``source`` ends with ``.test.json``, else trajectory-golden (one case per item).
    Raises :class:`UnknownFormat` when nothing fits.
    """
    where = source or "<data>"
    if isinstance(data, dict):
        if "eval_cases" in data or "evalCases" in data:
            return "adk" if _looks_adk(data.get("eval_cases", data.get("evalCases"))) else "evalset"
        if "evaluators" in data or (
            isinstance(data.get("data"), list)
            and any(isinstance(x, dict) and ("inputs" in x or "outputs" in x) for x in data["data"])
        ):
            return "bigsky"
        items, _, _ = trajectory_golden.items_of(data)
        if items is not None:
            return "trajectory"
        guesses = [
            f"'{key}' (did you mean '{guess}'?)"
            for key in data
            if (guess := closest_key(str(key), list(_TOP_LEVEL_KEYS))) is not None and guess != key
        ]
        raise UnknownFormat(
            where,
            "unrecognised golden format: expected an EvalSet ('eval_cases'), a Big Sky "
            "dataset ('data' + 'evaluators'), or a list of test cases ('query', "
            "'expected_tool_use'); found keys "
            + ", ".join(sorted(map(str, data))[:10])
            + ("; " + ", ".join(guesses) if guesses else ""),
        )
    if isinstance(data, list):
        dicts = [x for x in data if isinstance(x, dict)]
        if adk_eval_set.is_old_eval_set(dicts):
            return "adk"  # old ADK eval set: [{name, data: [...], initial_session}]
        keys = set().union(*dicts) if dicts else set()
        if keys & _TRAJECTORY_KEYS:
            return "trajectory"
        if keys & _ADK_LEGACY_KEYS:
            return "adk"
        if source and source.lower().endswith(".test.json"):
            return "adk"
        return "trajectory"
    raise UnknownFormat(where, "unrecognised golden format: expected a JSON object or array at the top level")


def _looks_adk(cases: Any) -> bool:
    """ADK cases speak genai: ``parts`` in contents, ``intermediate_data``, scenarios, app/user ids."""
    if not isinstance(cases, list):
        return False
    for case in cases:
        if not isinstance(case, dict):
            continue
        if {"conversation_scenario", "conversationScenario", "evalId", "final_session_state"} & set(case):
            return True
        session = case.get("session_input") or case.get("sessionInput")
        if isinstance(session, dict) and ({"app_name", "appName", "user_id", "userId", "state"} & set(session)):
            return True
        for turn in case.get("conversation") or []:
            if not isinstance(turn, dict):
                continue
            if {"intermediate_data", "intermediateData", "final_response", "finalResponse", "userContent"} & set(turn):
                return True
            user = turn.get("user_content")
            if isinstance(user, dict) and "parts" in user:
                return True
    return False


def read_golden_file(path: PathLike, log: ProblemLog) -> Any:
    """The JSON of ``path`` (``.jsonl``: one item per line → a list); problems go to ``log``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        log.add("$", "file not found")
        return None
    except IsADirectoryError:
        log.add("$", "is a directory, not a golden file")
        return None
    except UnicodeDecodeError as exc:
        log.add("$", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        return None
    if path.suffix.lower() == ".jsonl":
        items = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                log.add(f"$[{len(items)}]", f"invalid JSON on line {lineno}: {exc.msg} (column {exc.colno})")
                items.append(None)
        return items
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        log.add("$", f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        return None


def _parse(data: Any, log: ProblemLog, fmt: str | None) -> EvalSet | None:
    if fmt is None:
        try:
            fmt = detect_format(data, log.source)
        except InputError as exc:
            log.add(exc.location, exc.reason)
            return None
    elif fmt not in _PARSERS:
        raise ValueError(f"unknown golden format {fmt!r}; expected one of {', '.join(FORMATS)}")
    eval_set = _PARSERS[fmt](data, log, eval_set_id_from_source(log.source))
    if fmt != "evalset":
        eval_set.metadata.setdefault("golden_format", fmt)
    _warn_nothing_to_check(eval_set, log)
    return eval_set


def expects_nothing(case: EvalCase) -> bool:
    """True when no turn of ``case`` says anything a criterion could compare with.

    An explicitly empty tool trajectory (``[]``: the agent must call no tool) is an expectation;
    an absent one (``None``) is not.
    """
    return not any(
        inv.expected_tool_trajectory is not None
        or inv.expected_final_response is not None
        or inv.expected_tool_selection is not None
        or inv.expected_sql is not None
        or inv.expected_tables
        for inv in case.conversation
    )


def _warn_nothing_to_check(eval_set: EvalSet, log: ProblemLog) -> None:
    paths = log.case_paths if len(log.case_paths) == len(eval_set.eval_cases) else []
    for n, case in enumerate(eval_set.eval_cases):
        if expects_nothing(case):
            log.warn(
                paths[n] if paths else "$",
                f"case '{case.eval_id}' has nothing to check: no turn gives an expected tool trajectory, "
                "response, tool selection, SQL expectation or table, so every criterion that compares a "
                "session with it is skipped (an explicitly empty tool list means 'must call no tool')",
            )


def load_golden_data(data: Any, source: str = "<data>", fmt: str | None = None) -> EvalSet:
    """Already-parsed JSON in any golden format → EvalSet. ``source`` names it in errors and gives
    the eval_set_id when the format has none (file stem). Raises :class:`GoldenFileError`."""
    log = ProblemLog(source)
    eval_set = _parse(data, log, fmt)
    if log.problems or eval_set is None:
        raise GoldenFileError(log.problems)
    return eval_set


def load_golden(path: PathLike, fmt: str | None = None) -> EvalSet:
    """A golden file in any supported format → EvalSet; any problem raises :class:`GoldenFileError`
    (an :class:`InputError` naming the first, with ``problems`` listing all)."""
    log = ProblemLog(str(path))
    data = read_golden_file(path, log)
    if log.problems:
        raise GoldenFileError(log.problems)
    return load_golden_data(data, str(path), fmt)


def load_golden_files(paths: Iterable[PathLike]) -> list[EvalSet]:
    """Every file loaded, or one :class:`GoldenFileError` with the problems of all of them, so a
    command that refuses to start names every mistake at once."""
    sets: list[EvalSet] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            sets.append(load_golden(path))
        except GoldenFileError as exc:
            problems.extend(exc.problems)
    if problems:
        raise GoldenFileError(problems)
    return sets


def validate_golden_data(
    data: Any, source: str = "<data>", fmt: str | None = None, *, warnings: bool = False
) -> list[Problem]:
    """Every problem of golden data (and its warnings when asked) as a list, where
    :func:`load_golden_data` raises: for a caller that shows them all. ``fmt`` None detects it."""
    log = ProblemLog(source)
    _parse(data, log, fmt)
    return log.problems + (log.warnings if warnings else [])


def validate_golden(path: PathLike, fmt: str | None = None, *, warnings: bool = False) -> list[Problem]:
    """Every problem of a golden file (empty when it loads cleanly); with ``warnings``, the
    warnings too (``severity == "warning"``, after the errors)."""
    log = ProblemLog(str(path))
    data = read_golden_file(path, log)
    if log.problems and not isinstance(data, list):
        return log.problems
    n_read = len(log.problems)
    read_errors = {p.location for p in log.problems}
    _parse(data, log, fmt)
    # A JSON-lines line that did not parse is read as null; its item problem would only repeat it.
    errors = [p for n, p in enumerate(log.problems) if n < n_read or p.location not in read_errors]
    return errors + (log.warnings if warnings else [])


def save_evalset(eval_set: EvalSet, path: PathLike) -> Path:
    """Write ``eval_set`` as otel-eval ``.evalset.json`` (what :meth:`EvalSet.load` reads back)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    eval_set.save(path)
    return path


def convert(path: PathLike, out_path: PathLike, fmt: str | None = None) -> EvalSet:
    """Any golden format → ``.evalset.json``. Returns the EvalSet written."""
    eval_set = load_golden(path, fmt)
    save_evalset(eval_set, out_path)
    return eval_set
