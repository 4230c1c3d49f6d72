"""The judge's circuit breaker, as pure state transitions: every call takes ``now`` (seconds on
any monotonic clock), so tests drive it without sleeping.

closed ──N consecutive failures──▶ open (calls refused until ``now >= until``)
open ──cooldown over──▶ half_open (one probe call allowed)
half_open ──probe succeeds──▶ closed;  ──probe fails──▶ open again for another cooldown
"""

from __future__ import annotations

from dataclasses import dataclass, replace

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
STATE_NUMBERS = {CLOSED: 0, HALF_OPEN: 1, OPEN: 2}
"""The value of the ``otel_eval_judge_circuit_state`` gauge."""


@dataclass(frozen=True)
class Breaker:
    """The judge's circuit breaker: stops calling a judge that keeps failing, so a dead endpoint costs
    one cooldown, not a timeout per job. Immutable: each event returns the next breaker."""

    threshold: int = 5
    """Consecutive failures that open the circuit."""
    cooldown: float = 30.0
    """Seconds the circuit stays open before one probe call is let through."""
    state: str = CLOSED
    failures: int = 0
    until: float = 0.0
    probing: bool = False
    """In half_open: the probe call is out."""

    def allows(self, now: float) -> tuple[bool, Breaker]:
        """May a call start now? (and the breaker after asking: a probe marks itself out)."""
        if self.state == CLOSED:
            return True, self
        if self.state == OPEN:
            if now < self.until:
                return False, self
            return True, replace(self, state=HALF_OPEN, probing=True)
        if self.probing:  # half_open: one probe at a time
            return False, self
        return True, replace(self, probing=True)

    def succeeded(self) -> Breaker:
        """The breaker after a successful call: closed, the failure count reset."""
        return replace(self, state=CLOSED, failures=0, until=0.0, probing=False)

    def failed(self, now: float) -> Breaker:
        """The breaker after a failed call: open once failures reach the threshold, or at once if the
        failed call was the half-open probe."""
        failures = self.failures + 1
        if self.state == HALF_OPEN or failures >= self.threshold:
            return replace(self, state=OPEN, failures=failures, until=now + self.cooldown, probing=False)
        return replace(self, failures=failures)

    def reason(self) -> str:
        """Why calls are refused, as the criterion's not-evaluated reason says it."""
        return (
            f"judge circuit open after {self.failures} consecutive failure(s); "
            f"calls resume after a {self.cooldown:g} s cooldown"
        )
