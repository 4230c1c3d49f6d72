"""Judge spend caps: calls and tokens per hour and per day, as pure functions of a ledger.

The ledger is the list of ``(time, calls, tokens)`` of judgments made (rebuilt from the database
at start, so a restart does not reset the caps). A call is *reserved* when it starts (so the calls
in flight count) and *settled* with its tokens when its answer comes: a cap is never exceeded by
more than the calls in flight, whose tokens are not known in advance. Windows are sliding: the
last 3600 s and the last 86400 s before ``now``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

HOUR, DAY = 3600.0, 86400.0

LIMIT_OPTIONS = {
    "max_calls_per_hour": ("calls", HOUR),
    "max_calls_per_day": ("calls", DAY),
    "max_tokens_per_hour": ("tokens", HOUR),
    "max_tokens_per_day": ("tokens", DAY),
}
"""Criterion option → (what it counts, window seconds)."""

EXHAUSTED = "judge budget exhausted"


@dataclass(frozen=True)
class Limits:
    """A criterion's judge spend caps; None leaves that cap off."""

    calls_per_hour: int | None = None
    calls_per_day: int | None = None
    tokens_per_hour: int | None = None
    tokens_per_day: int | None = None

    @classmethod
    def from_options(cls, options: dict) -> Limits:
        """The caps a criterion's options set (``max_calls_per_hour`` and so on)."""

        def get(name: str) -> int | None:
            value = options.get(name)
            return None if value is None else int(value)

        return cls(
            get("max_calls_per_hour"), get("max_calls_per_day"), get("max_tokens_per_hour"), get("max_tokens_per_day")
        )

    @property
    def unlimited(self) -> bool:
        """No cap is set: nothing to check before a call, nothing to report as left."""
        return all(
            v is None for v in (self.calls_per_hour, self.calls_per_day, self.tokens_per_hour, self.tokens_per_day)
        )


def used(ledger: Iterable[tuple[float, int, int]], now: float, window: float) -> tuple[int, int]:
    """(calls, tokens) spent in the ``window`` seconds before ``now``."""
    calls = tokens = 0
    for at, c, t in ledger:
        if now - at < window:
            calls += c
            tokens += t
    return calls, tokens


def exhausted(limits: Limits, ledger: Iterable[tuple[float, int, int]], now: float, in_flight: int = 0) -> str | None:
    """Why one more call must not start now, or None. ``in_flight``: calls reserved, unanswered."""
    ledger = list(ledger)
    hour_calls, hour_tokens = used(ledger, now, HOUR)
    day_calls, day_tokens = used(ledger, now, DAY)
    checks = (
        (limits.calls_per_hour, hour_calls + in_flight, "calls per hour"),
        (limits.calls_per_day, day_calls + in_flight, "calls per day"),
        (limits.tokens_per_hour, hour_tokens, "tokens per hour"),
        (limits.tokens_per_day, day_tokens, "tokens per day"),
    )
    for limit, spent, what in checks:
        if limit is not None and spent >= limit:
            return f"{EXHAUSTED} ({spent} of {limit} {what})"
    return None


def left(limits: Limits, ledger: Iterable[tuple[float, int, int]], now: float, in_flight: int = 0) -> dict[str, int]:
    """What is left of each configured cap (for /metrics)."""
    ledger = list(ledger)
    hour_calls, hour_tokens = used(ledger, now, HOUR)
    day_calls, day_tokens = used(ledger, now, DAY)
    out = {}
    for key, limit, spent in (
        ("calls_per_hour", limits.calls_per_hour, hour_calls + in_flight),
        ("calls_per_day", limits.calls_per_day, day_calls + in_flight),
        ("tokens_per_hour", limits.tokens_per_hour, hour_tokens),
        ("tokens_per_day", limits.tokens_per_day, day_tokens),
    ):
        if limit is not None:
            out[key] = max(0, limit - spent)
    return out


@dataclass
class Budget:
    """One judge criterion's caps and ledger (the pool's only mutable budget state)."""

    limits: Limits = field(default_factory=Limits)
    ledger: deque = field(default_factory=deque)
    in_flight: int = 0

    def try_reserve(self, now: float) -> str | None:
        """Reserve one call, or say why not."""
        self._forget(now)
        reason = exhausted(self.limits, self.ledger, now, self.in_flight)
        if reason is None:
            self.in_flight += 1
        return reason

    def settle(self, now: float, tokens: int, called: bool = True) -> None:
        """The reserved call is over: charge it (``called``) with its tokens, or release it."""
        self.in_flight = max(0, self.in_flight - 1)
        if called:
            self.ledger.append((now, 1, int(tokens)))

    def charge(self, at: float, calls: int, tokens: int) -> None:
        """A judgment made earlier (the ledger rebuilt from the database)."""
        self.ledger.append((at, calls, tokens))

    def left(self, now: float) -> dict[str, int]:
        """What each cap has left now (the calls in flight counted), for the pool's stats."""
        self._forget(now)
        return left(self.limits, self.ledger, now, self.in_flight)

    def _forget(self, now: float) -> None:
        while self.ledger and now - self.ledger[0][0] >= DAY:
            self.ledger.popleft()
