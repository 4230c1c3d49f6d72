"""Reading a test_config.json as google-adk reads it, in ADK's two steps: the file as ADK's
``EvalConfig`` (a criterion is a number or an object with a ``threshold``), then each metric's
criterion as the type its evaluator validates it with. Every problem is collected, with its JSON
path, before the file is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from pydantic import ValidationError

from ..criteria.registry import REGISTRY
from ..criteria_file import ConfigError
from ..errors import InputError
from ..models.evalset import CriterionConfig, EvalConfig
from ..models.suggest import unknown_name
from .models import CRITERION_TYPES, AdkEvalConfig, BaseCriterion
from .problems import (
    criterion_key_problems,
    path_in_file,
    threshold_problem,
    top_level_key_problems,
    validation_problems,
)
from .translate import adk_criterion_config, custom_metric_config, own_criterion_config

TEST_CONFIG = "test_config.json"


class TestConfig(NamedTuple):
    """A test_config.json read: otel-eval's criteria and what the file said that otel-eval ignores."""

    config: EvalConfig
    warnings: list[str]


def read_test_config(text: str, source: str = TEST_CONFIG) -> TestConfig:
    """A test_config.json's text as otel-eval criteria. Raises :class:`ConfigError` (every problem
    with its JSON path) for a file google-adk would refuse, and for otel-eval's stricter checks."""
    from ..scoring import config_problems  # the scorer knows which criteria and options exist

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    problems, warnings = top_level_key_problems(data)
    try:
        adk = AdkEvalConfig.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(source, problems + validation_problems(exc, data)) from None
    raw_criteria = data.get("criteria") or {}
    custom = adk.custom_metrics or {}
    criteria: dict[str, CriterionConfig] = {}
    # otel-eval's own criteria, which a test_config.json may name too (health, reported for every
    # session, is configured in otel-eval's TOML only)
    otel_eval_names = [c.kind for c in REGISTRY if c.adk in (None, "deterministic") and not c.reference_free]
    informational = REGISTRY.adk_metrics("informational")
    for name, criterion in adk.criteria.items():
        value = raw_criteria.get(name)
        where = f"$.criteria.{name}"
        if name in informational:
            problems.append(
                (
                    where,
                    f"{name} does not support a threshold: it reports a value and never passes or "
                    "fails. Remove it from criteria; it is reported automatically (google-adk refuses "
                    "it too)",
                )
            )
            continue
        if name in custom:
            threshold = criterion if isinstance(criterion, float) else criterion.threshold
            problem = threshold_problem(name, value, threshold)
            if problem:
                problems.append(problem)
                continue
            criteria[name] = custom_metric_config(threshold, custom[name].code_config.name)
            continue
        model = CRITERION_TYPES.get(name)
        if model is None:
            if name in otel_eval_names:
                try:
                    criteria[name] = own_criterion_config(value)
                except (ValidationError, ValueError) as exc:
                    if isinstance(exc, ValidationError):
                        problems += [(path_in_file(value, e["loc"], where), e["msg"]) for e in exc.errors()]
                    else:
                        problems.append((where, str(exc)))
                continue
            problems.append((where, unknown_name("metric", name, [*REGISTRY.adk_metrics(), *otel_eval_names])))
            continue
        base = criterion if isinstance(criterion, BaseCriterion) else BaseCriterion(threshold=criterion)
        try:  # ADK's second step: the evaluator validates the criterion as its own type
            typed = model.model_validate(base.model_dump())
        except ValidationError as exc:
            problems += validation_problems(exc, value, where)
            continue
        if isinstance(value, dict):
            extra_problems, extra_warnings = criterion_key_problems(name, value, model)
            problems += extra_problems
            warnings += extra_warnings
        problem = threshold_problem(name, value, typed.threshold)
        if problem:
            problems.append(problem)
            continue
        if typed.include_intermediate_responses_in_final and name in REGISTRY.adk_metrics("deterministic"):
            warnings.append(
                f"at {where}.include_intermediate_responses_in_final: has no effect on {name} "
                "(google-adk ignores it there too)"
            )
        criteria[name] = adk_criterion_config(name, typed)
    if adk.user_simulator_config is not None:
        warnings.append(
            "at $.user_simulator_config: ignored; otel-eval scores the conversations your agent had and "
            "runs no user simulator"
        )
    if adk.live_model_config is not None:
        warnings.append("at $.live_model_config: ignored; otel-eval does not run the agent")
    for name in informational:  # reported for every case, as google-adk does
        criteria.setdefault(name, CriterionConfig(threshold=REGISTRY[name].default_threshold))
    config = EvalConfig(criteria=criteria)
    if not problems:
        problems += config_problems(config)
    if problems:
        order = {name: i for i, name in enumerate(raw_criteria)} if isinstance(raw_criteria, dict) else {}

        def in_file_order(problem: tuple[str, str]) -> int:
            parts = problem[0].split(".")
            return order.get(parts[2], -1) if len(parts) > 2 and parts[1] == "criteria" else -1

        raise ConfigError(source, sorted(problems, key=in_file_order))
    return TestConfig(config, warnings)


def load_test_config(path: str | Path) -> TestConfig:
    """:func:`read_test_config` of a file; a file that cannot be read is an :class:`InputError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a test_config.json") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    return read_test_config(text, str(path))
