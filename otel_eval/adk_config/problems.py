"""What is wrong in a test_config.json, each problem as (JSON path, reason) in the file's own key
spelling: pydantic's errors on the ADK mirrors, said the way a user fixes them, and otel-eval's
stricter checks (near-miss keys, thresholds outside 0-1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from ..models.suggest import closest_key
from .models import (
    AdkEvalConfig,
    AdkRubric,
    AdkRubricContent,
    CodeConfig,
    GenerateContentConfig,
    Interval,
    JudgeModelOptions,
    MetricInfo,
    MetricValueInfo,
)

_UNION_TAGS = {"float", "BaseCriterion", "llm_backed", "llm_audio", "function-after[_coerce_match_type()]"}


def _keys_of(model: type[BaseModel]) -> list[str]:
    return [k for name, f in model.model_fields.items() for k in (name, f.alias or name)]


def path_in_file(data: Any, loc: Sequence[Any], prefix: str = "$") -> str:
    """Pydantic's location as a JSON path with the keys the file spelled (camelCase or snake_case)."""
    out, node = prefix, data
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or part.startswith("function-")):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        key = str(part)
        if isinstance(node, dict) and key not in node:
            for spelling in (to_snake(key), to_camel(key)):
                if spelling in node:
                    key = spelling
                    break
        out += f".{key}"
        node = node.get(key) if isinstance(node, dict) else None
    return out


def _node(data: Any, loc: Sequence[Any]) -> Any:
    """The value at pydantic's location ``loc`` in ``data`` (either key spelling), or None."""
    node = data
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or part.startswith("function-")):
            continue
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        elif isinstance(node, dict):
            node = next((node[k] for k in (part, to_snake(part), to_camel(part)) if k in node), None)
        else:
            return None
    return node


def validation_problems(exc: ValidationError, data: Any, prefix: str = "$") -> list[tuple[str, str]]:
    """Pydantic's errors on ``data`` as (JSON path under ``prefix``, reason), each said once."""
    found: list[tuple[str, str]] = []
    errors = exc.errors()
    for err in errors:
        loc = tuple(err["loc"])
        # A criterion is a number or an object: when it is an object, only the object's errors say
        # what is wrong; when it is neither, say so once.
        if len(loc) >= 3 and loc[0] == "criteria" and loc[2] == "float":
            value = data.get("criteria", {}).get(loc[1]) if isinstance(data, dict) else None
            if isinstance(value, dict):
                continue
            found.append(
                (
                    path_in_file(data, loc[:2], prefix),
                    f"expected a number (the threshold) or an object with a threshold, got {json.dumps(value)}",
                )
            )
            continue
        if len(loc) >= 3 and loc[0] == "criteria" and loc[2] == "BaseCriterion":
            value = data.get("criteria", {}).get(loc[1]) if isinstance(data, dict) else None
            if not isinstance(value, dict):
                continue
        reason = err["msg"]
        if err["type"] == "missing":
            reason = "required, missing"
            parent = _node(data, loc[:-1])
            written = closest_key(str(loc[-1]), [str(k) for k in parent]) if isinstance(parent, dict) else None
            if written is not None:
                reason += f" (the file has '{written}': did you mean '{_spelled_like(written, str(loc[-1]))}'?)"
        elif err["type"] == "extra_forbidden":
            parent = err["loc"][:-1]
            reason = f"unknown key '{loc[-1]}'"
            known = _known_at(parent)
            guess = _spelled_like(str(loc[-1]), closest_key(str(loc[-1]), known) if known else None)
            reason += f" (did you mean '{guess}'?)" if guess else ""
            reason += "; google-adk refuses it too"
        elif err["type"] == "enum" and loc and loc[-1] in ("match_type", "matchType"):
            reason = "expected EXACT, IN_ORDER or ANY_ORDER (or 0, 1, 2), got " + json.dumps(err.get("input"))
        found.append((path_in_file(data, loc, prefix), reason))
    return list(dict.fromkeys(found))


_KNOWN_AT: dict[str, type[BaseModel]] = {
    "judge_model_options": JudgeModelOptions,
    "judgeModelOptions": JudgeModelOptions,
    "judge_model_config": GenerateContentConfig,
    "judgeModelConfig": GenerateContentConfig,
    "rubric_content": AdkRubricContent,
    "rubricContent": AdkRubricContent,
    "metric_info": MetricInfo,
    "metricInfo": MetricInfo,
    "metric_value_info": MetricValueInfo,
    "metricValueInfo": MetricValueInfo,
    "interval": Interval,
    "code_config": CodeConfig,
    "codeConfig": CodeConfig,
    "rubrics": AdkRubric,
}


def _spelled_like(key: str, guess: str | None) -> str | None:
    """The suggestion in the file's spelling: snake_case unless the key has a capital."""
    if guess is None or any(c.isupper() for c in key):
        return guess
    return to_snake(guess)


def _known_at(loc: Sequence[Any]) -> list[str]:
    for part in reversed(loc):
        if isinstance(part, str) and part in _KNOWN_AT:
            return _keys_of(_KNOWN_AT[part])
    return []


_TOP_LEVEL = _keys_of(AdkEvalConfig)


def top_level_key_problems(data: Any) -> tuple[list[tuple[str, str]], list[str]]:
    """Top-level keys google-adk ignores: a near miss of a known one is a problem, any other a warning."""
    problems: list[tuple[str, str]] = []
    warnings: list[str] = []
    if isinstance(data, dict):
        for key in data:
            if key in _TOP_LEVEL:
                continue
            guess = closest_key(str(key), _TOP_LEVEL)
            if guess is not None:
                problems.append(
                    (f"$.{key}", f"unknown key '{key}' (did you mean '{guess}'?); google-adk would ignore it silently")
                )
            else:
                warnings.append(f"at $.{key}: not a test_config.json key; ignored, as google-adk ignores it")
    return problems, warnings


def criterion_key_problems(name: str, value: Mapping[str, Any], model: type[BaseModel]) -> tuple[list, list]:
    """Keys of a criterion object its type does not define (google-adk keeps and ignores them):
    a near miss of a known key is a problem, any other a warning."""
    known = _keys_of(model)
    problems, warnings = [], []
    for key in value:
        if key in known:
            continue
        guess = _spelled_like(str(key), closest_key(str(key), known))
        where = f"$.criteria.{name}.{key}"
        if guess is not None:
            problems.append(
                (
                    where,
                    f"unknown key '{key}' (did you mean '{guess}'?); google-adk would ignore it "
                    "silently and use the default",
                )
            )
        else:
            warnings.append(f"at {where}: '{key}' is no setting of {name}; ignored, as google-adk ignores it")
    return problems, warnings


def threshold_problem(name: str, value: Any, threshold: float) -> tuple[str, str] | None:
    """A threshold outside 0-1 (google-adk accepts it, and every case then passes or every one fails)."""
    if 0.0 <= threshold <= 1.0:
        return None
    where = f"$.criteria.{name}" + (".threshold" if isinstance(value, dict) else "")
    return where, (
        f"threshold must be between 0 and 1 (every score is 0-1), got {threshold:g}; google-adk would "
        "accept it and pass or fail every case"
    )
