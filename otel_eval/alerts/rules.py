"""Alert rules: the ``[[alerts]]`` tables of the collector's TOML file, validated into
:class:`AlertRule` values, each error naming the file and the key's JSON path."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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

        def text(key: str, required: bool = False) -> str | None:
            value = table.get(key)
            if value is None:
                if required:
                    raise InputError(source, f"missing required key {key!r}", f"{location}.{key}")
                return None
            if not isinstance(value, str) or not value.strip():
                raise InputError(source, f"expected a non-empty string, got {value!r}", f"{location}.{key}")
            return value.strip()

        def number(key: str, minimum: float, maximum: float = math.inf) -> float | None:
            value = table.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise InputError(source, f"expected a number, got {value!r}", f"{location}.{key}")
            if not minimum <= value <= maximum:
                bound = f"between {minimum:g} and {maximum:g}" if maximum != math.inf else f"at least {minimum:g}"
                raise InputError(source, f"must be {bound}, got {value!r}", f"{location}.{key}")
            return float(value)

        if kind == DRIFT:
            return cls._drift(table, text, number, source, location)
        metric = text("metric", required=True)
        assert metric is not None
        if metric not in METRICS:
            raise InputError(source, f"unknown metric {metric!r} (known: {', '.join(METRICS)})", f"{location}.metric")
        below, above = table.get("below"), table.get("above")
        if (below is None) == (above is None):
            raise InputError(source, "give exactly one of 'below' or 'above'", location)
        if metric == PASS_RATE and below is None:
            raise InputError(source, "a pass_rate rule fires when the rate drops: use 'below'", f"{location}.above")
        if metric != PASS_RATE and above is None:
            raise InputError(source, f"a {metric} rule fires when the value grows: use 'above'", f"{location}.below")
        comparison = "below" if below is not None else "above"
        ratio = metric in (PASS_RATE, UNMATCHED_SHARE, "tool_error_rate")
        threshold = number(comparison, 0.0, 1.0 if ratio else math.inf)
        assert threshold is not None
        case = text("case")
        if case is not None and metric == UNMATCHED_SHARE:
            raise InputError(
                source, "an unmatched session has no case: unmatched_share takes 'version' only", f"{location}.case"
            )
        version = text("version")
        window = number("window_minutes", 0.0)
        if window is not None and window <= 0:
            raise InputError(
                source, f"must be greater than 0, got {table['window_minutes']!r}", f"{location}.window_minutes"
            )
        min_sessions = table.get("min_sessions", DEFAULT_MIN_SESSIONS)
        if isinstance(min_sessions, bool) or not isinstance(min_sessions, int) or min_sessions < 1:
            raise InputError(
                source, f"expected a whole number of at least 1, got {min_sessions!r}", f"{location}.min_sessions"
            )
        webhook = text("webhook")
        if webhook is not None and not webhook.startswith(("http://", "https://")):
            raise InputError(source, f"expected an http:// or https:// URL, got {webhook!r}", f"{location}.webhook")
        scope = [f"case={case}" if case else "", f"version={version}" if version else ""]
        default_name = " ".join([metric, *[s for s in scope if s]])
        return cls(
            name=text("name") or default_name,
            metric=metric,
            threshold=threshold,
            comparison=comparison,
            case=case,
            version=version,
            window_s=(window if window is not None else DEFAULT_WINDOW_MINUTES) * 60.0,
            min_sessions=min_sessions,
            webhook=webhook,
        )

    @classmethod
    def _drift(
        cls,
        table: Mapping[str, Any],
        text: Callable[..., str | None],
        number: Callable[..., float | None],
        source: str,
        location: str,
    ) -> AlertRule:
        from ..drift import DEFAULT_FDR
        from ..drift import DEFAULT_MIN_SESSIONS as DRIFT_MIN_SESSIONS

        baseline = text("baseline", required=True)
        window = number("window_minutes", 0.0)
        if window is not None and window <= 0:
            raise InputError(
                source, f"must be greater than 0, got {table['window_minutes']!r}", f"{location}.window_minutes"
            )
        fdr = number("fdr", 0.0, 1.0)
        min_sessions = table.get("min_sessions", DRIFT_MIN_SESSIONS)
        if isinstance(min_sessions, bool) or not isinstance(min_sessions, int) or min_sessions < 1:
            raise InputError(
                source, f"expected a whole number of at least 1, got {min_sessions!r}", f"{location}.min_sessions"
            )
        webhook = text("webhook")
        if webhook is not None and not webhook.startswith(("http://", "https://")):
            raise InputError(source, f"expected an http:// or https:// URL, got {webhook!r}", f"{location}.webhook")
        version = text("version") or EACH
        case = text("case") or EACH
        return cls(
            name=text("name") or f"drift against {baseline}",
            metric=DRIFT,
            threshold=fdr if fdr is not None else DEFAULT_FDR,
            comparison="above",
            case=case,
            version=version,
            window_s=(window if window is not None else DEFAULT_WINDOW_MINUTES) * 60.0,
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
