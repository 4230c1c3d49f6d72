"""The one way a test waits for something another thread or process does."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    what: str | Callable[[], str] | None = None,
    interval: float = 0.02,
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that value.

    If it has not by ``timeout`` seconds, the test fails saying what it waited for (``what``, or a
    callable giving it, evaluated then so it can show the state at the time; by default the
    predicate's source) and the last value the predicate returned. ``timeout`` only turns a hang
    into a failure: it is generous, and how long the wait took is never asserted. An exception from
    the predicate is not swallowed: it fails the test at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    awaited = what() if callable(what) else what or _source_of(predicate)
    raise AssertionError(f"waited {timeout:g} s for {awaited}; last value seen: {value!r}")


def _source_of(predicate: Callable[..., object]) -> str:
    try:
        return " ".join(inspect.getsource(predicate).split())  # a lambda's whole statement, on one line
    except (OSError, TypeError):
        return repr(predicate)
