"""What a rule's state change says: the log line and the webhook's JSON body of one event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..read.times import iso_utc
from .rules import DRIFT, AlertRule

FIRING, RESOLVED = "firing", "resolved"


@dataclass(frozen=True)
class AlertEvent:
    """One state change of a rule in one scope: it started firing or resolved, with the value and
    sessions that decided it and when (``at``, epoch seconds)."""

    rule: AlertRule
    status: str
    """``firing`` or ``resolved``."""
    scope: dict[str, str]
    value: float
    sessions: int
    at: float

    @property
    def message(self) -> str:
        """The one line logged and sent: which alert, in which scope, the value against the threshold
        over which window."""
        where = ", ".join(f"{k} {v}" for k, v in self.scope.items()) or "all sessions"
        minutes = f"{self.rule.window_s / 60:g} min"
        if self.rule.metric == DRIFT:
            what = (
                f"tool paths of {where} differ from version {self.rule.baseline}'s"
                if self.status == FIRING
                else f"tool paths of {where} no longer differ significantly from version {self.rule.baseline}'s"
            )
            return f"alert {self.rule.name!r} {self.status}: {what} over the last {minutes} ({self.sessions} sessions)"
        if self.status == FIRING:
            return (
                f"alert {self.rule.name!r} firing: {self.rule.metric} of {where} is {self.value:.4g}, "
                f"{self.rule.comparison} {self.rule.threshold:g} over the last {minutes} ({self.sessions} sessions)"
            )
        return (
            f"alert {self.rule.name!r} resolved: {self.rule.metric} of {where} is {self.value:.4g} "
            f"over the last {minutes} ({self.sessions} sessions)"
        )

    def payload(self) -> dict[str, Any]:
        """The webhook's JSON body."""
        return {
            "status": self.status,
            "alert": self.rule.name,
            "metric": self.rule.metric,
            "scope": self.scope,
            "value": round(self.value, 6),
            "comparison": self.rule.comparison,
            "threshold": self.rule.threshold,
            "window_s": self.rule.window_s,
            "sessions": self.sessions,
            "at": iso_utc(self.at),
            "message": self.message,
            **({"baseline": self.rule.baseline} if self.rule.metric == DRIFT else {}),
        }
