"""JSON text: what otel-eval stores (:func:`dumps` / :func:`loads`), and the JSON that spans carry
in their attributes (:func:`parse_json_maybe`, :func:`json_value`, :func:`as_text`).

Storing: orjson where it can, the standard library where it cannot.

Every span's raw copy is encoded once at ingest and decoded at every scoring, so this is on both
hot paths; orjson does a span-sized document about five times faster than ``json``. It refuses a
few things ``json`` accepts: integers past 64 bits and strings holding lone surrogates (raised as
TypeError) and, when reading, the ``NaN``/``Infinity`` tokens earlier versions wrote. Those fall
back to ``json``, so nothing that could be stored before is refused now; a text ``json`` wrote
starts with a space, so that it is read back by ``json`` as well (orjson would read a 100-bit
integer as a float). Unlike ``json``, orjson
writes NaN and ±Infinity as ``null``: the stored text stays valid JSON for SQLite's ``json_*``
functions and for Datasette.

Reading attributes: an instrumentation may put JSON text in any string attribute, or text that
only looks like JSON; :func:`parse_json_maybe` parses the one and keeps the other as it is, with
the standard library's rules (a span's ``NaN`` or 100-bit integer reads as ``json.loads`` reads it).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS
"""int, float, bool and None keys become text, as json does. Asked for only when a dict holds
such a key: it costs orjson a fifth more on every dict (0.5 µs a span's raw JSON)."""
_fallback_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""``json.dumps(value, ensure_ascii=False, default=str)`` without building an encoder per call."""


#: Leads the text the standard library wrote: JSON allows whitespace before a value, and orjson
#: never writes it. orjson *reads* an integer past 64 bits without complaint, as a float that has
#: lost its last digits, so such a text must be read back by the standard library too.
_WRITTEN_BY_JSON = " "


def dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``; compact where orjson writes it."""
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:  # a key that is not a string, or what orjson cannot write at all (see above)
        pass
    try:
        return orjson.dumps(value, default=str, option=_NON_STR_KEYS).decode()
    except TypeError:
        return _WRITTEN_BY_JSON + _fallback_encode(value)


def loads(text: str | bytes) -> Any:
    """Reads text :func:`dumps` wrote (or any JSON): with orjson for speed, but with the standard
    library when the standard library wrote it or orjson cannot read it, so both read alike."""
    if text[:1] in (_WRITTEN_BY_JSON, b" "):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def parse_json_maybe(value: Any) -> Any:
    """A JSON string parsed, anything else unchanged; text that is not JSON stays text."""
    if value is None or type(value) is dict or type(value) is list:  # already parsed: the usual case
        return value
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"') or text in ("true", "false", "null") or _looks_numeric(text):
            try:
                return json_value(text)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than Python can go
                return value
    return value


def json_value(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same error. The C scanner is called
    directly; ``json.loads``'s Python wrapping costs about as much as decoding a short value."""
    if not text or text[0] in _JSON_SPACE or text[-1] in _JSON_SPACE:
        return json.loads(text)
    try:
        value, end = _scan_once(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)  # raises what json.loads raises
    if end != len(text):
        return json.loads(text)
    return value


_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, not declared
_JSON_SPACE = frozenset(" \t\n\r")


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def as_text(value: Any) -> str | None:
    """A value as display text: strings unchanged, structures as compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _fallback_encode(value)
