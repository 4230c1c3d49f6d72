"""JSON text for what otel-eval stores: orjson where it can, the standard library where it cannot.

Every span's raw copy is encoded once at ingest and decoded at every scoring, so this is on both
hot paths; orjson does a span-sized document about five times faster than ``json``. It refuses a
few things ``json`` accepts: integers past 64 bits and strings holding lone surrogates (raised as
TypeError) and, when reading, the ``NaN``/``Infinity`` tokens earlier versions wrote. Those fall
back to ``json``, so nothing that could be stored before is refused now; a text ``json`` wrote
starts with a space, so that it is read back by ``json`` as well (orjson would read a 100-bit
integer as a float). Unlike ``json``, orjson
writes NaN and ±Infinity as ``null``: the stored text stays valid JSON for SQLite's ``json_*``
functions and for Datasette.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS
"""int, float, bool and None keys become text, as json does. Asked for only when a dict holds
such a key: it costs orjson a fifth more on every dict (0.5 µs a span's raw JSON)."""
_fallback_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


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
    if text[:1] in (_WRITTEN_BY_JSON, b" "):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
