"""The collector's TOML settings file: its keys checked against the settings table, paths
taken relative to the file, and its ``[criteria.*]`` tables or ``criteria_file`` read."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from otel_eval.adk_config.resolve import is_test_config
from otel_eval.errors import InputError
from otel_eval.models.evalset import EvalConfig, json_path

from .settings import PATH_SETTINGS, SETTINGS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def read_settings_file(path: str) -> tuple[dict[str, tuple[Any, str]], EvalConfig | None]:
    """The file's settings as ``{name: (raw value, "file: at $.key")}`` for the converters, and its
    criteria; an unknown key is refused with the known ones, so a misspelling is not ignored."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(path, "config file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read config file: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"invalid TOML: {exc}") from None
    base = Path(path).resolve().parent
    values: dict[str, tuple[Any, str]] = {}
    eval_config = None
    for key, raw in data.items():
        name = key.replace("-", "_")
        if name == "criteria":
            eval_config = _criteria(raw, path)
            continue
        if name == "criteria_file":  # google-adk's test_config.json, relative to this file
            if not isinstance(raw, str) or not raw:
                raise InputError(path, f"expected the path of a test_config.json, got {raw!r}", f"$.{key}")
            if not is_test_config(raw):
                raise InputError(
                    path,
                    f"criteria_file names google-adk's test_config.json (a .json file), got {raw!r}; "
                    "write otel-eval criteria as [criteria.NAME] tables in this file",
                    f"$.{key}",
                )
            values["criteria_file"] = (_relative_to(raw, base), f"{path}: at $.{key}")
            continue
        if name == "alerts":
            if not (isinstance(raw, list) and all(isinstance(r, dict) for r in raw)):
                raise InputError(path, "alerts must be an array of [[alerts]] tables", "$.alerts")
            values["alerts"] = (raw, f"{path}: at $.alerts")
            continue
        if name not in SETTINGS:
            known = ", ".join(sorted(list(SETTINGS) + ["criteria", "criteria_file", "alerts"]))
            raise InputError(path, f"unknown setting {key!r} (known: {known})", f"$.{key}")
        source = f"{path}: at $.{key}"
        if name in PATH_SETTINGS:
            # Paths in a config file are relative to the file, so it works from any directory.
            raw = _relative_to(raw, base)
        values[name] = (raw, source)
    if eval_config is not None and "criteria_file" in values:
        raise InputError(
            path, "give the criteria either as [criteria.NAME] tables or as criteria_file, not both", "$.criteria_file"
        )
    return values, eval_config


def _relative_to(value: Any, base: Path) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str(base / value)
    if isinstance(value, list):
        return [_relative_to(v, base) for v in value]
    return value


def _criteria(raw: Any, path: str) -> EvalConfig:
    """``[criteria.NAME]`` tables on top of the default criteria: a file that only sets the trajectory
    threshold keeps every other default; ``enabled = false`` turns one off."""
    if not isinstance(raw, dict):
        raise InputError(path, "criteria must be a table of [criteria.NAME] tables", "$.criteria")
    merged = EvalConfig.default().model_dump(mode="json")
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise InputError(
                path, f"expected a [criteria.{name}] table, got {type(table).__name__}", f"$.criteria.{name}"
            )
        merged["criteria"].setdefault(name, {}).update(table)
    try:
        config = EvalConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(path, err["msg"], json_path(tuple(err["loc"]))) from None
    from otel_eval.scoring import config_problems  # an unknown criterion or option: refused at start, not per session

    problems = config_problems(config)
    if problems:
        location, reason = problems[0]
        raise InputError(path, reason, location)
    return config
