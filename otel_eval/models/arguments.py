"""Do two tool calls carry the same arguments?

Agents and golden files disagree about representation more often than about meaning: the agent
sends ``{"limit": "10"}`` as a JSON string, the golden file says ``{"limit": 10}``. Values of the
same JSON type compare with Python's ``==``, exactly as google-adk compares arguments; equality
is widened only where types differ and the text leaves no doubt:

* a string equals a number only when it is written in canonical decimal form (a JSON number
  without exponent: ``"10"``, ``"-3"``, ``"10.5"``) and, read as JSON, equals it. ``"02139"`` is
  not 2139 and ``"1e3"`` is not 1000: leading zeros and notation carry meaning (zip codes,
  account numbers).
* a string equals a boolean only when it is ``"true"``/``"false"`` (any case); never 1 or ``"1"``.
* a string holding a JSON object or array is parsed when the other side is an object or array.
* an expected ``"IGNORE"`` matches anything.

Configuration (``CriterionConfig.options``) may pick a mode, the keys to compare and, per key, a
comparator *name* from :data:`COMPARATORS`. Config never carries code.

Part of the models because a golden tool call (``ExpectedToolCall.matches``) compares by these rules;
the trajectory metric uses them too. It imports nothing of otel-eval.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping  # not typing's: its isinstance checks cost three times as much
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

#: Argument value that matches anything (Big Sky's ``"IGNORE"``).
IGNORE = "IGNORE"

MODES = ("exact", "ignore", "subset")
"""exact: same keys, equal values. ignore: arguments are not compared. subset: every expected key
is present and equal; the actual call may carry extra keys."""

_CANONICAL_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
"""JSON's number grammar without the exponent: no sign ``+``, no leading zeros, no spaces."""
_BOOLEAN_TEXT = {"true": True, "false": False}
_SPACES = re.compile(r"\s+")


def _parse_json_text(value: Any) -> Any:
    """A string holding a JSON object or array, parsed; anything else unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                return value
    return value


def _as_args(value: Any) -> dict[str, Any]:
    parsed = _parse_json_text(value)
    if parsed is None:
        return {}
    if isinstance(parsed, Mapping):
        return dict(parsed)
    return {"input": parsed}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _spells(text: str, number: int | float) -> bool:
    """Does the string spell the number in canonical decimal form? ``"10"`` spells 10 and 10.0,
    ``"10.5"`` spells 10.5; ``"02139"``, ``"1e3"``, ``"+5"`` and ``" 10"`` spell nothing. The text
    is read as the number's own type reads it (a float by ``float``, an int as JSON reads it), so
    the shortest text of a float spells it."""
    if not _CANONICAL_DECIMAL.fullmatch(text):
        return False
    try:
        value = float(text) if isinstance(number, float) else json.loads(text)
    except ValueError:  # more digits than Python converts to int
        return False
    return value == number


def _decoded_against(value: Any, other: Any) -> Any:
    """A string holding JSON text, parsed when the other side is an object or array."""
    if isinstance(value, str) and isinstance(other, (Mapping, list, tuple)):
        return _parse_json_text(value)
    return value


def _number(value: Any) -> Decimal | None:
    """The value as an exact decimal when it is a number or a canonical numeric string (bools are not numbers)."""
    if isinstance(value, str):
        return Decimal(value) if _CANONICAL_DECIMAL.fullmatch(value) else None
    if not _is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def _fold(text: str, fold_case: bool, fold_whitespace: bool) -> str:
    if fold_whitespace:
        text = _SPACES.sub(" ", text).strip()
    if fold_case:
        text = text.casefold()
    return text


def values_equal(
    expected: Any, actual: Any, mode: str = "exact", fold_case: bool = False, fold_whitespace: bool = False
) -> bool:
    """Equality by meaning; ``mode`` applies to nested objects too (subset: extra nested keys allowed).

    Values of one JSON type compare as Python's ``==`` does (google-adk's rule), folding aside;
    only a string against a number, boolean, object or array is read for what it spells."""
    if isinstance(expected, str) and expected == IGNORE:
        return True
    expected, actual = _decoded_against(expected, actual), _decoded_against(actual, expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        if isinstance(expected, bool) and isinstance(actual, bool):
            return expected == actual
        other, flag = (actual, expected) if isinstance(expected, bool) else (expected, actual)
        return isinstance(other, str) and _BOOLEAN_TEXT.get(other.lower()) is flag
    if _is_number(expected) and _is_number(actual):
        return bool(expected == actual)
    if _is_number(expected) and isinstance(actual, str):
        return _spells(actual, expected)
    if isinstance(expected, str) and _is_number(actual):
        return _spells(expected, actual)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return not _mismatches(
            diff_mappings(expected, actual, mode=mode, fold_case=fold_case, fold_whitespace=fold_whitespace), mode
        )
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(
            values_equal(e, a, mode, fold_case, fold_whitespace) for e, a in zip(expected, actual)
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return _fold(expected, fold_case, fold_whitespace) == _fold(actual, fold_case, fold_whitespace)
    return bool(expected == actual)


# --- comparators: the only per-key behaviours a config may name -------------------------------


def _cmp_exact(e: Any, a: Any) -> bool:
    return values_equal(e, a)


def _cmp_ignore(e: Any, a: Any) -> bool:
    return True


def _cmp_casefold(e: Any, a: Any) -> bool:
    return values_equal(e, a, fold_case=True)


def _cmp_whitespace(e: Any, a: Any) -> bool:
    return values_equal(e, a, fold_whitespace=True)


def _cmp_text(e: Any, a: Any) -> bool:
    return values_equal(e, a, fold_case=True, fold_whitespace=True)


def _cmp_contains(e: Any, a: Any) -> bool:
    """The expected text occurs in the actual text (case- and whitespace-folded)."""
    if e == IGNORE:
        return True

    def text(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)

    return _fold(text(e), True, True) in _fold(text(a), True, True)


def _cmp_unordered(e: Any, a: Any) -> bool:
    """Lists compared as multisets: ``["a", "b"]`` equals ``["b", "a"]``."""
    e, a = _parse_json_text(e), _parse_json_text(a)
    if not (isinstance(e, list) and isinstance(a, list)):
        return values_equal(e, a)
    if len(e) != len(a):
        return False
    remaining = list(a)
    for item in e:
        for i, candidate in enumerate(remaining):
            if values_equal(item, candidate):
                del remaining[i]
                break
        else:
            return False
    return True


def _cmp_numeric_close(e: Any, a: Any) -> bool:
    """Numbers within a relative tolerance of 1e-6 (floats that went through text and back)."""
    left, right = _number(_parse_json_text(e)), _number(_parse_json_text(a))
    if left is None or right is None:
        return values_equal(e, a)
    return abs(left - right) <= Decimal("1e-6") * max(abs(left), abs(right), Decimal(1))


def _cmp_subset(e: Any, a: Any) -> bool:
    return values_equal(e, a, mode="subset")


COMPARATORS: dict[str, Callable[[Any, Any], bool]] = {
    "exact": _cmp_exact,
    "ignore": _cmp_ignore,
    "casefold": _cmp_casefold,
    "whitespace": _cmp_whitespace,
    "text": _cmp_text,
    "contains": _cmp_contains,
    "unordered": _cmp_unordered,
    "numeric_close": _cmp_numeric_close,
    "subset": _cmp_subset,
}
"""Comparator names a config may use per argument key (``options.tools.<tool>.comparators``)."""


# --- per-argument diff ----------------------------------------------------------------------


def diff_mappings(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    mode: str = "exact",
    keys: Iterable[str] | None = None,
    fold_case: bool = False,
    fold_whitespace: bool = False,
    comparators: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One entry per key of either side: ``{key, expected, actual, status}``, status one of
    equal / different / missing (expected, not sent) / extra (sent, not expected) / ignored."""
    if mode not in MODES:
        raise ValueError(f"unknown argument mode {mode!r}; expected one of {', '.join(MODES)}")
    comparators = dict(comparators or {})
    for key, name in comparators.items():
        if name not in COMPARATORS:
            raise ValueError(
                f"unknown comparator {name!r} for argument {key!r}; expected one of {', '.join(sorted(COMPARATORS))}"
            )
    selected = set(keys) if keys is not None else None
    out: list[dict[str, Any]] = []
    ordered_keys = list(expected) + [k for k in actual if k not in expected]
    for key in ordered_keys:
        in_e, in_a = key in expected, key in actual
        e, a = expected.get(key), actual.get(key)
        entry: dict[str, Any] = {"key": key}
        if in_e:
            entry["expected"] = e
        if in_a:
            entry["actual"] = a
        if mode == "ignore" or (selected is not None and key not in selected):
            status = "ignored"
        elif in_e and isinstance(e, str) and e == IGNORE:
            status = "ignored"
        elif in_e and comparators.get(key) == "ignore":
            status = "ignored"
        elif not in_a:
            status = "missing"
        elif not in_e:
            status = "extra"
        else:
            comparator = comparators.get(key)
            same = COMPARATORS[comparator](e, a) if comparator else values_equal(e, a, mode, fold_case, fold_whitespace)
            status = "equal" if same else "different"
        entry["status"] = status
        out.append(entry)
    return out


def _mismatches(entries: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    bad = {"different", "missing"} if mode == "subset" else {"different", "missing", "extra"}
    return [e for e in entries if e["status"] in bad]


def argument_diff(
    expected: Any,
    actual: Any,
    mode: str = "exact",
    keys: Iterable[str] | None = None,
    fold_case: bool = False,
    fold_whitespace: bool = False,
    comparators: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Per-argument comparison of two calls' arguments (dicts or JSON strings)."""
    return diff_mappings(_as_args(expected), _as_args(actual), mode, keys, fold_case, fold_whitespace, comparators)


def arguments_equal(
    expected: Any,
    actual: Any,
    mode: str = "exact",
    keys: Iterable[str] | None = None,
    fold_case: bool = False,
    fold_whitespace: bool = False,
    comparators: Mapping[str, str] | None = None,
) -> bool:
    """True when the arguments agree under ``mode`` (see :data:`MODES`)."""
    if mode == "ignore":
        return True
    if (
        not comparators
        and mode in MODES
        and type(expected) is dict
        and type(actual) is dict
        and _same(expected, actual)
    ):
        return True  # the usual case, decided without building the per-key diff
    entries = argument_diff(expected, actual, mode, keys, fold_case, fold_whitespace, comparators)
    return not _mismatches(entries, mode)


_SCALARS = (str, int, float, bool, type(None))


def _same(expected: Any, actual: Any) -> bool:
    """Equal values of equal JSON types all the way down (``True`` is not ``1`` here, NaN is not
    NaN). Such arguments agree under every mode, key selection and folding; False only means
    "not decided this way"."""
    # Runs for every pair of calls aligned: scalars (most values) are asked first, and the
    # containers are walked by loops rather than all() over generators, which cost a frame each.
    kind = type(expected)
    if kind is not type(actual):
        return False
    if kind in _SCALARS:
        return bool(expected == actual)
    if kind is dict:
        if expected.keys() != actual.keys():
            return False
        for key, value in expected.items():
            if not _same(value, actual[key]):
                return False
        return True
    if kind is list:
        if len(expected) != len(actual):
            return False
        for e, a in zip(expected, actual):
            if not _same(e, a):
                return False
        return True
    return False


@dataclass(frozen=True)
class ArgumentPolicy:
    """How arguments are compared, for all tools and per tool.

    Read from criterion options::

        {"args_mode": "subset", "fold_case": true, "fold_whitespace": true,
         "tools": {"search": {"mode": "exact", "keys": ["query"], "comparators": {"query": "text"}}}}
    """

    mode: str = "exact"
    keys: tuple[str, ...] | None = None
    fold_case: bool = False
    fold_whitespace: bool = False
    comparators: Mapping[str, str] = field(default_factory=dict)
    tools: Mapping[str, ArgumentPolicy] = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> ArgumentPolicy:
        """Validate the options; a bad mode or comparator name raises ValueError naming the option."""
        options = options or {}
        base = cls._one(options, "options", mode_key="args_mode")
        tools_opt = options.get("tools") or {}
        if not isinstance(tools_opt, Mapping):
            raise ValueError("options.tools must be a table of tool name → settings")
        tools: dict[str, ArgumentPolicy] = {}
        for tool, settings in tools_opt.items():
            if not isinstance(settings, Mapping):
                raise ValueError(f"options.tools.{tool} must be a table of settings")
            merged = {
                "mode": base.mode,
                "fold_case": base.fold_case,
                "fold_whitespace": base.fold_whitespace,
                **settings,
            }
            tools[str(tool)] = cls._one(
                merged, f"options.tools.{tool}", mode_key="mode", inherit_comparators=base.comparators
            )
        return cls(base.mode, base.keys, base.fold_case, base.fold_whitespace, base.comparators, tools)

    @classmethod
    def _one(
        cls, opts: Mapping[str, Any], where: str, mode_key: str, inherit_comparators: Mapping[str, str] | None = None
    ) -> ArgumentPolicy:
        mode = opts.get(mode_key, "exact")
        if mode not in MODES:
            raise ValueError(f"{where}.{mode_key}: unknown argument mode {mode!r}; expected one of {', '.join(MODES)}")
        keys = opts.get("keys")
        if keys is not None:
            if isinstance(keys, str) or not isinstance(keys, Iterable):
                raise ValueError(f"{where}.keys must be a list of argument names")
            keys = tuple(str(k) for k in keys)
        comparators = dict(inherit_comparators or {})
        given = opts.get("comparators") or {}
        if not isinstance(given, Mapping):
            raise ValueError(f"{where}.comparators must be a table of argument name → comparator name")
        for key, name in given.items():
            if name not in COMPARATORS:
                raise ValueError(
                    f"{where}.comparators.{key}: unknown comparator {name!r}; "
                    f"expected one of {', '.join(sorted(COMPARATORS))}"
                )
            comparators[str(key)] = name
        return cls(
            mode, keys, bool(opts.get("fold_case", False)), bool(opts.get("fold_whitespace", False)), comparators
        )

    def for_tool(self, name: str) -> ArgumentPolicy:
        """The policy for one tool: its own under ``tools``, else the general one."""
        return self.tools.get(name, self)

    def equal(self, tool: str, expected: Any, actual: Any) -> bool:
        """Whether a call's arguments agree with the expected ones under the tool's policy."""
        p = self.for_tool(tool)
        return arguments_equal(expected, actual, p.mode, p.keys, p.fold_case, p.fold_whitespace, p.comparators)

    def diff(self, tool: str, expected: Any, actual: Any) -> list[dict[str, Any]]:
        """Per argument key, how the call's value compares with the expected one (for the details a
        failed match shows)."""
        p = self.for_tool(tool)
        return argument_diff(expected, actual, p.mode, p.keys, p.fold_case, p.fold_whitespace, p.comparators)
