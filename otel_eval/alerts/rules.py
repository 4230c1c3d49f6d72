"""Alert rules: the ``[[alerts]]`` tables of the collector's TOML file, validated into
:class:`AlertRule` values, each error naming the file and the key's JSON path."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..metrics.health import LIMITS

PASS_RATE = "pass_rate"
DRIFT = "drift"
UNMATCHED_SHARE = "unmatched_share"
HEALTH_METRICS = tuple(dict.fromkeys(LIMITS.values()))
METRICS = (PASS_RATE, UNMATCHED_SHARE, *HEALTH_METRICS)
EACH = "*"

DEFAULT_WINDOW_MINUTES = 15.0
DEFAULT_MIN_SESSIONS = 5

_KEYS = ("name", "metric", "below", "above", "case", "version", "window_minutes", "min_sessions", "webhook")
_DRIFT_KEYS = ("name", "kind", "baseline", "case", "version", "window_minutes", "min_sessions", "fdr", "webhook")


@dataclass(frozen=True)
class AlertRule:
    """One ``[[alerts]]`` table, validated. ``comparison`` is ``below`` (pass rate) or ``above``."""

    name: str
    metric: str
    threshold: float
    comparison: str
    case: str | None = None
    version: str | None = None
    window_s: float = DEFAULT_WINDOW_MINUTES * 60
    min_sessions: int = DEFAULT_MIN_SESSIONS
    webhook: str | None = None
    baseline: str | None = None
    """``kind = "drift"``: the version whose paths the others are compared with."""

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], source: str = "alerts", location: str = "$.alerts[0]") -> AlertRule:
        """Validate one table; errors name ``source`` (the TOML file) and the key's JSON path."""
        if not isinstance(table, Mapping):
            raise InputError(source, f"expected an [[alerts]] table, got {type(table).__name__}", location)
        kind = table.get("kind", "threshold")
        if kind not in ("threshold", DRIFT):
            raise InputError(source, f"unknown alert kind {kind!r} (known: threshold, drift)", f"{location}.kind")
        known = _DRIFT_KEYS if kind == DRIFT else _KEYS
        for key in table:
            if key not in known and not (key == "kind" and kind == "threshold"):
                raise InputError(
                    source,
                    f"unknown {'drift ' if kind == DRIFT else ''}alert key {key!r} (known: {', '.join(known)})",
                    f"{location}.{key}",
                )
        read = _TableReader(table, source, location)
        if kind == DRIFT:
            return cls._drift(read)
        metric = read.required_text("metric")
        if metric not in METRICS:
            raise read.error(f"unknown metric {metric!r} (known: {', '.join(METRICS)})", "metric")
        below, above = table.get("below"), table.get("above")
        if (below is None) == (above is None):
            raise read.error("give exactly one of 'below' or 'above'")
        if metric == PASS_RATE and below is None:
            raise read.error("a pass_rate rule fires when the rate drops: use 'below'", "above")
        if metric != PASS_RATE and above is None:
            raise read.error(f"a {metric} rule fires when the value grows: use 'above'", "below")
        comparison = "below" if below is not None else "above"
        ratio = metric in (PASS_RATE, UNMATCHED_SHARE, "tool_error_rate")
        threshold = read.required_number(comparison, 0.0, 1.0 if ratio else math.inf)
        case = read.text("case")
        if case is not None and metric == UNMATCHED_SHARE:
            raise read.error("an unmatched session has no case: unmatched_share takes 'version' only", "case")
        version = read.text("version")
        window_s = read.window_s()
        min_sessions = read.min_sessions(DEFAULT_MIN_SESSIONS)
        webhook = read.webhook()
        scope = [f"case={case}" if case else "", f"version={version}" if version else ""]
        default_name = " ".join([metric, *[s for s in scope if s]])
        return cls(
            name=read.text("name") or default_name,
            metric=metric,
            threshold=threshold,
            comparison=comparison,
            case=case,
            version=version,
            window_s=window_s,
            min_sessions=min_sessions,
            webhook=webhook,
        )

    @classmethod
    def _drift(cls, read: _TableReader) -> AlertRule:
        from ..drift import DEFAULT_FDR
        from ..drift import DEFAULT_MIN_SESSIONS as DRIFT_MIN_SESSIONS

        baseline = read.required_text("baseline")
        window_s = read.window_s()
        fdr = read.number("fdr", 0.0, 1.0)
        min_sessions = read.min_sessions(DRIFT_MIN_SESSIONS)
        webhook = read.webhook()
        version = read.text("version") or EACH
        case = read.text("case") or EACH
        return cls(
            name=read.text("name") or f"drift against {baseline}",
            metric=DRIFT,
            threshold=DEFAULT_FDR if fdr is None else fdr,
            comparison="above",
            case=case,
            version=version,
            window_s=window_s,
            min_sessions=min_sessions,
            webhook=webhook,
            baseline=baseline,
        )

    def breached(self, value: float) -> bool:
        """Whether ``value`` (from :func:`~otel_eval.alerts.evaluation.rule_values`) is on the firing side
        of the threshold."""
        if self.metric == DRIFT:  # value: 1.0 when the case's change is significant (drift_values)
            return value > 0.5
        return value < self.threshold if self.comparison == "below" else value > self.threshold


class _TableReader:
    """Reads the keys of one ``[[alerts]]`` table, the same checks for both kinds of rule; each
    error names the file and the key's JSON path."""

    def __init__(self, table: Mapping[str, Any], source: str, location: str):
        self.table, self.source, self.location = table, source, location

    def error(self, reason: str, key: str | None = None) -> InputError:
        return InputError(self.source, reason, f"{self.location}.{key}" if key else self.location)

    def text(self, key: str) -> str | None:
        value = self.table.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"expected a non-empty string, got {value!r}", key)
        return value.strip()

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if value is None:
            raise self.error(f"missing required key {key!r}", key)
        return value

    def number(self, key: str, minimum: float, maximum: float = math.inf) -> float | None:
        value = self.table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise self.error(f"expected a number, got {value!r}", key)
        if not minimum <= value <= maximum:
            bound = f"between {minimum:g} and {maximum:g}" if maximum != math.inf else f"at least {minimum:g}"
            raise self.error(f"must be {bound}, got {value!r}", key)
        return float(value)

    def required_number(self, key: str, minimum: float, maximum: float = math.inf) -> float:
        value = self.number(key, minimum, maximum)
        if value is None:
            raise self.error(f"missing required key {key!r}", key)
        return value

    def window_s(self) -> float:
        """``window_minutes`` in seconds (:data:`DEFAULT_WINDOW_MINUTES` when not given)."""
        minutes = self.number("window_minutes", 0.0)
        if minutes is None:
            return DEFAULT_WINDOW_MINUTES * 60.0
        if minutes <= 0:
            raise self.error(f"must be greater than 0, got {self.table['window_minutes']!r}", "window_minutes")
        return minutes * 60.0

    def min_sessions(self, default: int) -> int:
        value = self.table.get("min_sessions", default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(f"expected a whole number of at least 1, got {value!r}", "min_sessions")
        return value

    def webhook(self) -> str | None:
        url = self.text("webhook")
        if url is not None and not url.startswith(("http://", "https://")):
            raise self.error(f"expected an http:// or https:// URL, got {url!r}", "webhook")
        return url


def load_rules(tables: Sequence[Mapping[str, Any]], source: str = "alerts") -> list[AlertRule]:
    """``[[alerts]]`` tables → rules; names must be unique (they key the de-duplication)."""
    if not isinstance(tables, (list, tuple)):
        raise InputError(source, "alerts must be an array of [[alerts]] tables", "$.alerts")
    rules: list[AlertRule] = []
    seen: dict[str, int] = {}
    for i, table in enumerate(tables):
        rule = AlertRule.from_dict(table, source, f"$.alerts[{i}]")
        if rule.name in seen:
            raise InputError(
                source,
                f"alert name {rule.name!r} is already used by $.alerts[{seen[rule.name]}]",
                f"$.alerts[{i}].name",
            )
        seen[rule.name] = i
        rules.append(rule)
    return rules
