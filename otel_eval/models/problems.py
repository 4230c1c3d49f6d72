"""What is wrong with a golden file, and where: every parser reports into one :class:`ProblemLog`.

Parsers never stop at the first mistake; they log it with its JSON path, skip the bad part and go
on, so ``otel-eval golden validate`` can list every problem of a file in one run. Loading raises
only afterwards, with all of them (:class:`GoldenFileError`, see :func:`otel_eval.golden.load.load_golden`).
A warning (a case with nothing to check) is shown by ``validate`` but does not stop loading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import InputError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Problem:
    """One problem in a golden file: which file, where (a JSON path such as
    ``$.data[3].outputs.message.tool_calls[0].function.arguments``) and what is wrong."""

    source: str
    location: str
    reason: str
    severity: str = "error"
    """"error": the file cannot be used; "warning": it loads, but probably not as meant."""

    def __str__(self) -> str:
        label = "warning: " if self.severity == "warning" else ""
        return f"{self.source}: at {self.location}: {label}{self.reason}"


class GoldenFileError(InputError):
    """A golden file that cannot be used, with every problem found in it (``problems``).

    As an :class:`InputError` it names the first problem; its reason says how many more there
    are. Commands print :meth:`lines`, one per problem.
    """

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        first, more = self.problems[0], len(self.problems) - 1
        reason = first.reason
        if more:
            reason += f" (and {more} more problem{'s' if more > 1 else ''}; `otel-eval golden validate` lists them all)"
        super().__init__(first.source, reason, first.location)

    def lines(self) -> list[str]:
        """Every problem as one printable line (``file: $.path: reason``)."""
        return [str(p) for p in self.problems]


def child(path: str, key: str | int) -> str:
    """The JSON path of ``key`` under ``path``; keys that are not identifiers are quoted."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{escaped}"]'


def type_name(value: Any) -> str:
    """JSON's name for a Python value's type, for messages a JSON author understands."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


@dataclass
class ProblemLog:
    """Problems found in one source, in the order they were found (document order)."""

    source: str
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    case_paths: list[str] = field(default_factory=list)
    """The JSON path of each case a parser produced, in the order of ``EvalSet.eval_cases``."""

    def add(self, location: str, reason: str) -> None:
        """Record a problem at a JSON path: the file is refused once reading ends."""
        self.problems.append(Problem(self.source, location, reason))

    def warn(self, location: str, reason: str) -> None:
        """Record a warning at a JSON path: shown, but the file is still used."""
        self.warnings.append(Problem(self.source, location, reason, severity="warning"))

    def __bool__(self) -> bool:
        return bool(self.problems)

    # --- typed reads: each logs a problem and returns None when the value is unusable ---

    def object(self, value: Any, path: str, what: str = "an object") -> dict[str, Any] | None:
        """``value`` if it is a JSON object, else None with a problem at ``path``."""
        if isinstance(value, dict):
            return value
        self.add(path, f"expected {what}, got {type_name(value)}")
        return None

    def array(self, value: Any, path: str, what: str = "an array") -> list[Any] | None:
        """``value`` if it is a JSON array, else None with a problem at ``path``."""
        if isinstance(value, list):
            return value
        self.add(path, f"expected {what}, got {type_name(value)}")
        return None

    def string(self, value: Any, path: str, required: bool = True, non_empty: bool = False) -> str | None:
        """``value`` if it is a string (non-empty when asked), else None with a problem; None is allowed
        when not ``required``."""
        if value is None and not required:
            return None
        if not isinstance(value, str):
            self.add(path, f"expected a string, got {type_name(value)}")
            return None
        if non_empty and not value.strip():
            self.add(path, "must not be empty")
            return None
        return value

    def required(self, obj: dict[str, Any], key: str, path: str) -> Any:
        """``obj[key]``, or None with a 'missing required field' problem."""
        if key not in obj:
            self.add(child(path, key), f"missing required field '{key}'")
            return None
        return obj[key]


def log_validation_errors(data: Any, exc: ValidationError, log: ProblemLog) -> None:
    """Each error of a pydantic validation of ``data`` as a problem at its JSON path: one problem
    a location, a union's alternatives at one place one 'or' reason."""
    by_path: dict[str, list[str]] = {}
    for err in exc.errors():
        if err["type"] == "extra_forbidden":  # the key check before validation named it, with a suggestion
            continue
        path = _error_path(data, err["loc"], err["type"])
        reason = "missing required field" if err["type"] == "missing" else err["msg"]
        reasons = by_path.setdefault(path, [])
        if reason not in reasons:
            reasons.append(reason)
    for path, reasons in by_path.items():
        log.add(path, " or ".join(reasons))


def _error_path(data: Any, loc: tuple[int | str, ...], err_type: str) -> str:
    """Pydantic's location as a JSON path into ``data``.

    Locations of union members carry the member type as an extra element (``..., 'content', 'str'``);
    walking the actual data drops those, so the path names only keys the file really has.
    """
    path, node = "$", data
    for n, part in enumerate(loc):
        last = n == len(loc) - 1
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            path, node = child(path, part), node[part]
        elif isinstance(part, str) and isinstance(node, dict) and part in node:
            path, node = child(path, part), node[part]
        elif isinstance(part, str) and isinstance(node, dict) and last and err_type == "missing":
            path = child(path, part)
        else:
            break
    return path
