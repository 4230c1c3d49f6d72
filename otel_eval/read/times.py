"""Times as the read side takes and stores them: ``--since`` and the store's ``created_at``."""

from __future__ import annotations

import calendar
import re
import time
from datetime import datetime, timezone

from ..errors import InputError

#: What ``--since`` accepts: a date, or a date and a time to the minute (seconds and up to six
#: decimals optional), ``T`` or a space between them, then ``Z`` or an offset ``+HH:MM``; no
#: offset means UTC. Nothing else: not Unix seconds, not the other forms ISO-8601 allows.
SINCE_FORMAT = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:[Zz]|[+-]\d{2}:\d{2})?)?"
)
SINCE_EXAMPLES = "e.g. 2025-01-31 or 2025-01-31T12:00:00Z"
_NS_MIN, _NS_MAX = -(2**63), 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_since(value: str | datetime | None, source: str = "--since") -> int | None:
    """``--since`` (of ``export`` and ``rescore``) as epoch nanoseconds; None when not given.

    The rules are :data:`SINCE_FORMAT`. Anything else is an :class:`InputError` naming ``source``
    and the value with an example, never a guess: ``1700000000`` could be seconds or
    milliseconds, ``yesterday`` has no zone. A ``datetime`` is taken as is (naive = UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        text = str(value).strip()
        if not SINCE_FORMAT.fullmatch(text):
            raise InputError(source, f"not an ISO-8601 time: {value!r} ({SINCE_EXAMPLES})", source)
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text)
        except ValueError as exc:  # the shape is right, the values are not (month 13, 25:00)
            raise InputError(source, f"not an ISO-8601 time: {value!r} ({exc})", source) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    # Integer arithmetic: a float of epoch seconds would lose the microseconds. SQLite integers are
    # 64-bit, so a time past 2262 (or before 1677) is clamped rather than overflowing.
    since_epoch = moment - _EPOCH
    ns = (since_epoch.days * 86_400 + since_epoch.seconds) * 1_000_000_000 + since_epoch.microseconds * 1000
    return max(_NS_MIN, min(_NS_MAX, ns))


def iso_utc(epoch_s: float) -> str:
    """The store's ``created_at`` format, so window bounds compare as strings."""
    millis = int(round(epoch_s * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"


def parse_iso(text: str) -> float:
    """``2026-01-02T03:04:05.678Z`` (fraction optional) → epoch seconds."""
    base = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    fraction = text[19:].rstrip("Z")
    return base + (float("0" + fraction) if fraction.startswith(".") else 0.0)
