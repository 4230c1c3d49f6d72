"""Evaluation criteria from a TOML file::

    [criteria.trajectory_match]
    threshold = 0.8
    match_type = "IN_ORDER"

    [criteria.llm_judge]
    enabled = false

A config file is strict, as golden files are: an unknown criterion, setting or option is an error
naming the file, the TOML path and the closest known name (:class:`ConfigError`), because a
misspelled ``threshhold`` or ``args_mod`` would otherwise be dropped and the defaults would judge.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import InputError
from .models.evalset import CriterionConfig, EvalConfig, Rubric, json_path, unknown_settings
from .models.suggest import closest_key, unknown_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_TOP_LEVEL = ("criteria", "user_simulator_config")
"""What a config file says about evaluation. Other top-level keys may be the collector's settings
(one file can serve ``otel-eval collect`` and ``evaluate``); only near-misses of these are errors."""


class ConfigError(InputError):
    """A config file that cannot be used, with every problem in it (``problems``: (path, reason))."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.problems = problems
        location, reason = problems[0]
        more = len(problems) - 1
        super().__init__(
            source, reason + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""), location
        )

    def lines(self) -> list[str]:
        """Every problem as one printable line (``file: at location: reason``)."""
        return [f"{self.source}: at {location}: {reason}" for location, reason in self.problems]


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's contents; a missing or malformed file is an :class:`InputError` naming it."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), f"invalid TOML: {exc}") from None


def _pydantic_problems(exc: ValidationError, prefix: tuple = ()) -> list[tuple[str, str]]:
    return [(json_path((*prefix, *e["loc"])), e["msg"]) for e in exc.errors()]


def _table_problems(name: str, values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Unknown keys of one ``[criteria.NAME]`` table (and of its rubrics), each at its own path."""
    where = f"$.criteria.{name}"
    problems = [
        (f"{where}.{key}", reason)
        for key, reason in unknown_settings(CriterionConfig, dict(values), CriterionConfig.also_known)
    ]
    rubrics = values.get("rubrics")
    for i, rubric in enumerate(rubrics if isinstance(rubrics, list) else []):
        problems += [(f"{where}.rubrics[{i}].{key}", reason) for key, reason in unknown_settings(Rubric, rubric)]
    return problems


def eval_config_from_dict(data: Mapping[str, Any], source: str = "<config>") -> EvalConfig:
    """Criteria given in a file are merged over the defaults, so a file can tune one criterion.
    Raises :class:`ConfigError` listing every problem, in file order."""
    from .scoring import config_problems  # the scorer knows which criteria and options exist

    problems: list[tuple[str, str]] = []
    for key in data:
        if key not in _TOP_LEVEL and closest_key(str(key), _TOP_LEVEL):
            problems.append((f"$.{key}", unknown_name("key", str(key), _TOP_LEVEL)))
    merged = EvalConfig.default().model_dump()
    criteria = data.get("criteria") or {}
    if not isinstance(criteria, Mapping):
        raise ConfigError(source, [("$.criteria", "expected a table of [criteria.NAME] tables")])
    for name, values in criteria.items():
        if not isinstance(values, Mapping):
            problems.append((f"$.criteria.{name}", "expected a table of settings"))
            continue
        table_problems = _table_problems(str(name), values)
        problems += table_problems
        known = {k: v for k, v in values.items() if f"$.criteria.{name}.{k}" not in dict(table_problems)}
        merged["criteria"][name] = {**merged["criteria"].get(name, {}), **known}
    try:
        config = EvalConfig.model_validate({**merged, **{k: v for k, v in data.items() if k in _TOP_LEVEL[1:]}})
    except ValidationError as exc:
        problems += _pydantic_problems(exc)
    else:
        problems += config_problems(config)
    if problems:
        order = {f"$.criteria.{name}": i for i, name in enumerate(criteria)}

        def in_file_order(problem: tuple[str, str]) -> int:
            parts = problem[0].split(".")
            return order.get(".".join(parts[:3]), -1)

        raise ConfigError(source, sorted(problems, key=in_file_order))
    return config


def load_eval_config(path: str | Path) -> EvalConfig:
    """The criteria a ``criteria.toml`` sets (under ``[evaluation]`` or at the top), merged over the
    defaults; a bad criterion or option is a :class:`ConfigError` listing every problem."""
    data = read_toml(path)
    return eval_config_from_dict(data.get("evaluation", data), str(path))
