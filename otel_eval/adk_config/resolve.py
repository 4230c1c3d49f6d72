"""Which test_config.json a run uses, as ``adk eval`` finds it.

Where a config goes (``evaluate --config``, ``rescore --config``, the collector's ``--config`` or
its TOML ``criteria_file``), a ``.json`` file is a test_config.json. With no config at all, a
``test_config.json`` beside an ``.evalset.json`` / ``.test.json`` given with ``--golden`` is used,
as ``adk eval`` does (:func:`resolve_config`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InputError
from ..models.evalset import EvalConfig
from .reading import TEST_CONFIG, load_test_config

log = logging.getLogger("otel_eval.criteria")

ADK_EVAL_SET_SUFFIXES = (".evalset.json", ".test.json")
"""Golden files beside which ``adk eval`` (and ``AgentEvaluator``) looks for a test_config.json."""

ADK_DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""google-adk's criteria when it finds no test_config.json (``_DEFAULT_EVAL_CONFIG``)."""


def is_test_config(path: str | Path) -> bool:
    """A config path that names a test_config.json (any ``.json`` file) rather than TOML."""
    return str(path).lower().endswith(".json")


def beside(golden: Sequence[str | Path]) -> list[tuple[Path, Path]]:
    """(test_config.json, the golden file it is beside) for each ``.evalset.json`` / ``.test.json``
    in ``golden`` that has one, once per test_config.json (paths as the golden paths were given)."""
    found: dict[Path, tuple[Path, Path]] = {}
    for item in golden:
        path = Path(item)
        if not path.name.lower().endswith(ADK_EVAL_SET_SUFFIXES) or not path.is_file():
            continue
        candidate = path.parent / TEST_CONFIG
        if candidate.is_file():
            found.setdefault(candidate.resolve(), (candidate, path))
    return list(found.values())


def _toml_table(path: str | Path) -> dict[str, Any]:
    """The part of a TOML config file that speaks about evaluation (its ``[evaluation]`` table, if any)."""
    from ..criteria_file import read_toml

    data = read_toml(path)
    return data["evaluation"] if isinstance(data.get("evaluation"), dict) else data


def _criteria_file_of_toml(path: str | Path) -> str | None:
    """The test_config.json a TOML file names with ``criteria_file`` (relative to the TOML file), if any."""
    table = _toml_table(path)
    named = table.get("criteria_file", table.get("criteria-file"))
    if named is None:
        return None
    if not isinstance(named, str) or not is_test_config(named):
        raise InputError(
            str(path),
            f"criteria_file names google-adk's test_config.json (a .json file), got {named!r}",
            "$.criteria_file",
        )
    if "criteria" in table:
        raise InputError(
            str(path),
            "give the criteria either as [criteria.NAME] tables or as criteria_file, not both",
            "$.criteria_file",
        )
    return named if Path(named).is_absolute() else str(Path(path).parent / named)


class Resolved(NamedTuple):
    """The criteria a run uses and where they came from (a criteria file, an ADK ``test_config.json``
    beside the golden files, or the defaults), said in one line."""

    config: EvalConfig | None
    """None: no file; the caller's defaults (``EvalConfig.default()``) apply."""
    source: str | None
    """The file the criteria came from, or None."""
    message: str
    """One line saying which criteria apply and why."""
    warnings: list[str]


def resolve_config(
    config_path: str | Path | None,
    golden: Sequence[str | Path] = (),
    toml_loader: Callable[[str | Path], EvalConfig] | None = None,
) -> Resolved:
    """The criteria a run uses: ``config_path`` (a ``.json`` test_config.json, else TOML read by
    ``toml_loader``), else the test_config.json beside a golden ``.evalset.json`` / ``.test.json``
    (as ``adk eval``), else none (otel-eval's defaults). Raises :class:`InputError` for a bad
    file, and when golden files in different folders each have a test_config.json."""
    if config_path:
        if is_test_config(config_path):
            read = load_test_config(config_path)
            return Resolved(read.config, str(config_path), f"criteria from {config_path}", read.warnings)
        named = _criteria_file_of_toml(config_path)
        if named is not None:  # a collector TOML file naming a test_config.json serves evaluate too
            read = load_test_config(named)
            return Resolved(
                read.config, named, f"criteria from {named} (criteria_file of {config_path})", read.warnings
            )
        if toml_loader is None:
            from ..criteria_file import load_eval_config

            toml_loader = load_eval_config
        config = toml_loader(config_path)
        if "criteria" in _toml_table(config_path) or not beside(golden):
            return Resolved(config, str(config_path), f"criteria from {config_path}", [])
        # A TOML file of settings only (a collector's): the criteria come from beside the golden
        # eval set, as they do for `collect` with the same file.
    found = beside(golden)
    if len(found) > 1:
        listed = "; ".join(f"{c} (beside {g})" for c, g in found)
        raise InputError(
            str(found[1][1]),
            f"the golden files have different {TEST_CONFIG} files: {listed}. Name the "
            "one to use with --config (adk eval reads one eval set's at a time)",
            "--golden",
        )
    if found:
        config_file, golden_file = found[0]
        shown = str(config_file)
        read = load_test_config(shown)
        return Resolved(
            read.config, shown, f"criteria from {shown} (found beside {golden_file}, as adk eval does)", read.warnings
        )
    adk_named = [str(g) for g in golden if str(g).lower().endswith(ADK_EVAL_SET_SUFFIXES)]
    if adk_named:
        message = (
            f"no {TEST_CONFIG} beside {adk_named[0]}: otel-eval's default criteria apply (not adk eval's "
            "tool_trajectory_avg_score 1.0 and response_match_score 0.8; see docs/adk.md)"
        )
    else:
        message = "otel-eval's default criteria apply (no --config)"
    return Resolved(None, None, message, [])


def config_for_command(config_path: str | None, golden: Sequence[str] = ()) -> EvalConfig | None:
    """:func:`resolve_config` for ``evaluate`` and ``rescore``: the criteria, with one line on
    stderr saying which test_config.json is used (and one per key it ignores)."""
    import sys

    resolved = resolve_config(config_path, golden)
    log.info("%s", resolved.message)
    if resolved.source and is_test_config(resolved.source):
        print(f"otel-eval: {resolved.message}", file=sys.stderr)
    for warning in resolved.warnings:
        print(f"otel-eval: warning: {resolved.source}: {warning}", file=sys.stderr)
    return resolved.config
