"""Evaluation criteria from a TOML file::

    [criteria.trajectory_match]
    threshold = 0.8
    match_type = "IN_ORDER"

    [criteria.llm_judge]
    enabled = false
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Union

from pydantic import ValidationError

from .errors import InputError
from .models.evalset import EvalConfig, json_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def read_toml(path: Union[str, Path]) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), f"invalid TOML: {exc}") from None


def eval_config_from_dict(data: Mapping[str, Any], source: str = "<config>") -> EvalConfig:
    """Criteria given in a file are merged over the defaults, so a file can tune one criterion."""
    merged = EvalConfig.default().model_dump()
    for name, values in (data.get("criteria") or {}).items():
        if not isinstance(values, Mapping):
            raise InputError(source, "expected a table of settings", f"$.criteria.{name}")
        merged["criteria"][name] = {**merged["criteria"].get(name, {}), **values}
    try:
        return EvalConfig.model_validate({**merged, **{k: v for k, v in data.items() if k != "criteria"}})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(source, first["msg"], json_path(first["loc"])) from None


def load_eval_config(path: Union[str, Path]) -> EvalConfig:
    data = read_toml(path)
    return eval_config_from_dict(data.get("evaluation", data), str(path))
