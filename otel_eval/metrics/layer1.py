"""Layer-1 checks: fast regex / substring tests over the flat text fields of the Vertex record
(seed ``vertex-export-schema.md``: ``prompt``, ``prompt_concat``, ``response_concat``, ...).

Usable on exported JSON lines directly (:func:`check_record`) and live as a criterion::

    [criteria.no_apology]
    options = { kind = "layer1", field = "response_concat", regex = "(?i)sorry", expect = false }

``expect = true`` (the default): the pattern must be found; ``false``: it must not be. The score is
1.0 when the expectation holds, else 0.0. A bad option (unknown field, no or two patterns, an
invalid regex) is a ``ValueError``, which the scorer reports as the criterion's error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FIELDS = ("prompt", "prompt_concat", "response_concat", "response", "title")
DEFAULT_FIELD = "response_concat"
_SHOWN = 120


def field_text(record: Mapping[str, Any], name: str) -> str:
    """A text field of a Vertex record; ``response`` is the final answer's text."""
    if name not in FIELDS:
        raise ValueError(f"options.field: unknown field {name!r}; expected one of {', '.join(FIELDS)}")
    if name == "response":
        candidates = (record.get("response") or {}).get("candidates") or []
        parts = candidates[0].get("content", {}).get("parts", []) if candidates else []
        return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))
    value = record.get(name)
    return value if isinstance(value, str) else ""


def check_text(text: str, options: Mapping[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(expectation held, details) for one of ``regex`` / ``contains`` against ``text``."""
    regex, contains = options.get("regex"), options.get("contains")
    if (regex is None) == (contains is None):
        raise ValueError("layer1 needs exactly one of options.regex or options.contains")
    expect = options.get("expect", True)
    if not isinstance(expect, bool):
        raise ValueError(f"options.expect: expected true or false, got {expect!r}")
    ignore_case = bool(options.get("ignore_case", False))
    details: dict[str, Any] = {"expect": expect}
    if regex is not None:
        if not isinstance(regex, str):
            raise ValueError(f"options.regex: expected a string, got {regex!r}")
        try:
            pattern = re.compile(regex, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ValueError(f"options.regex: invalid regular expression {regex!r}: {exc}") from None
        found = pattern.search(text)
        details.update(regex=regex, found=found is not None, match=found.group(0)[:_SHOWN] if found else None)
        hit = found is not None
    else:
        if not isinstance(contains, str) or not contains:
            raise ValueError(f"options.contains: expected a non-empty string, got {contains!r}")
        hit = (contains.casefold() in text.casefold()) if ignore_case else (contains in text)
        details.update(contains=contains, found=hit)
    passed = hit == expect
    details["passed"] = passed
    return passed, details


def check_record(record: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    """One layer-1 check on a Vertex record: (1.0 or 0.0, details naming the field and the match)."""
    name = options.get("field", DEFAULT_FIELD)
    passed, details = check_text(field_text(record, name), options)
    return float(passed), {"field": name, **details}
