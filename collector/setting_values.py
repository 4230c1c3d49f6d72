"""Setting converters: a raw value from a flag, an ``OTEL_EVAL_*`` variable or the TOML file,
and where it came from, to the value the collector uses.

Each raises :class:`~otel_eval.errors.InputError` naming that source, so a bad value is reported
as "--flag: reason" or "file: at $.key: reason", never as a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from otel_eval.errors import InputError
from otel_eval.listen_address import host_problem
from otel_eval.models.suggest import unknown_name

LOG_LEVELS = ("debug", "info", "warning", "error")


def positive_float(text: Any, source: str) -> float:
    """A number above 0 (seconds, thresholds): text from a flag or variable, or a TOML number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(source, f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise InputError(source, f"must be greater than 0, got {text!r}")
    return value


def positive_int(text: Any, source: str) -> int:
    """A whole number above 0 (sizes, counts); a TOML ``true`` is refused, not read as 1."""
    if isinstance(text, bool):
        raise InputError(source, f"expected a whole number, got {text!r}")
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise InputError(source, f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise InputError(source, f"must be greater than 0, got {text!r}")
    return value


def non_negative_int(text: Any, source: str) -> int:
    """A whole number, 0 allowed: for the settings where 0 means "none" or "the default"."""
    if text in (0, "0"):
        return 0
    return positive_int(text, source)


def log_level(text: Any, source: str) -> str:
    """One of :data:`LOG_LEVELS`, in any case."""
    value = str(text).lower()
    if value not in LOG_LEVELS:
        raise InputError(source, f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return value


def nonempty_text(text: Any, source: str) -> str:
    """Text that is not empty: an empty value is a mistake, not a way to turn a setting off."""
    if not isinstance(text, str) or not text:
        raise InputError(source, f"expected a non-empty string, got {text!r}")
    return text


def boolean(value: Any, source: str) -> bool:
    """A switch: a TOML boolean, or 1/true/yes/on and 0/false/no/off in a variable."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise InputError(source, f"expected true or false, got {value!r}")


def host_list(value: Any, source: str) -> list[str]:
    """Host names for the Host check: a list (TOML, repeated flag) or comma-separated text (env)."""
    items = _listed(value, source, "a host name or a list of them")
    names = []
    for item in (v.strip() for v in items):
        if not item:
            continue
        if item != "*":
            host = (
                item[1 : item.index("]")]
                if item.startswith("[") and "]" in item
                else item.rsplit(":", 1)[0]
                if item.count(":") == 1
                else item
            )
            problem = host_problem(host)
            if problem:
                raise InputError(source, problem)
        names.append(item)
    return names


def otlp_url(value: Any, source: str) -> str:
    """An OTLP endpoint to forward to; the scheme chooses the protocol (``grpc://`` or HTTP)."""
    text = nonempty_text(value, source)
    if not text.startswith(("http://", "https://", "grpc://")):
        raise InputError(source, f"expected an OTLP endpoint URL (http://, https:// or grpc://HOST:PORT), got {text!r}")
    return text


def http_url(value: Any, source: str) -> str:
    """An http:// or https:// base URL (the embeddings endpoint)."""
    text = nonempty_text(value, source)
    if not text.startswith(("http://", "https://")):
        raise InputError(source, f"expected an http:// or https:// URL, got {text!r}")
    return text


def key_list(value: Any, source: str) -> list[str]:
    """Attribute keys: a list (TOML, repeated flag) or comma-separated text (env)."""
    items = _listed(value, source, "an attribute key or a list of them")
    keys = [item.strip() for item in items if item.strip()]
    for key in keys:
        if any(c.isspace() for c in key):
            raise InputError(source, f"an attribute key has no spaces: {key!r}")
    return keys


def model_map(value: Any, source: str) -> dict[str, str]:
    """NAME=MODEL pairs: a TOML table, a repeated flag, or comma-separated text (env)."""
    if isinstance(value, dict):
        pairs = list(value.items())
    else:
        items = _listed(value, source, "NAME=MODEL pairs")
        pairs = []
        for item in (v.strip() for v in items if v.strip()):
            name, sep, model = item.partition("=")
            if not sep:
                raise InputError(source, f"expected NAME=MODEL (e.g. gemini-2.5-flash=gpt-4o-mini), got {item!r}")
            pairs.append((name.strip(), model.strip()))
    out = {}
    for name, model in pairs:
        if not isinstance(name, str) or not name or not isinstance(model, str) or not model:
            raise InputError(source, f"expected a judge model name and an endpoint model, got {name!r} = {model!r}")
        out[name] = model
    return out


def golden_list(value: Any, source: str) -> list[str]:
    """Golden set paths: a TOML list, a repeated flag, or one variable separated like PATH."""
    if isinstance(value, str):
        # One variable holds several paths the way PATH does.
        return [p for p in value.split(os.pathsep) if p]
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise InputError(source, f"expected a path or a list of paths, got {value!r}")


def fraction(low_open: bool) -> Callable[[Any, str], float]:
    """The converter of a number in [0, 1) (``low_open``: in (0, 1)): the gate's margin may be 0,
    its confidence may not."""

    def convert(text: Any, source: str) -> float:
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise InputError(source, f"expected a number between 0 and 1, got {text!r}") from None
        if not ((0.0 < value) if low_open else (0.0 <= value)) or not value < 1.0:
            raise InputError(source, f"expected a number {'above' if low_open else 'from'} 0 and below 1, got {text!r}")
        return value

    return convert


def outcome_list(value: Any, source: str) -> list[str]:
    """Session outcomes (``--forward-when``), comma-separated or a list, each one forward.py knows."""
    items = _listed(value, source, "outcomes separated by commas")
    from .forward import OUTCOMES

    outcomes = [v.strip() for v in items if v.strip()]
    for outcome in outcomes:
        if outcome not in OUTCOMES:
            raise InputError(source, unknown_name("outcome", outcome, OUTCOMES))
    return outcomes


def _listed(value: Any, source: str, expected: str) -> list[str]:
    """The strings of a list (TOML, a repeated flag) or of comma-separated text (a variable)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise InputError(source, f"expected {expected}, got {value!r}")
    return items
