"""Alert rules over live evaluations: a WARNING log line and an optional webhook when one fires.

A rule watches one number over a sliding window of current evaluations:

* ``pass_rate`` of matched sessions, optionally of one golden case or agent version, ``below`` X;
* ``unmatched_share`` of all sessions (optionally of one version) ``above`` X;
* a health metric (``tool_error_rate``, ``repeated_calls``, ``steps``, ...) ``above`` X:
  ``tool_error_rate`` is tool errors / tool calls over all sessions of the window, the others
  are the mean per session;
* ``kind = "drift"``: a version's tool paths through a golden case differ from the ``baseline``
  version's over the window (:mod:`otel_eval.drift`: chi-square per case, significant by
  Benjamini-Hochberg at ``fdr``); ``min_sessions`` is then per version and case.

``case = "*"`` / ``version = "*"`` evaluate the rule separately for every case / version seen.
A rule needs ``min_sessions`` sessions in its window before it decides anything; with fewer it
keeps its state (no data is not a recovery). It fires once, then stays quiet until the condition
clears, when it sends one ``resolved`` notification.

Delivery never blocks the scorer: :class:`Notifier` logs at once and posts webhooks from its own
thread through a bounded queue, with a timeout per attempt and a bounded number of retries.
:class:`AlertMonitor` is the collector's driver: it reads new evaluations from the database
(:class:`otel_eval.read.feed.EvaluationFeed`) when the engine reports a result and every few seconds.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .metrics.health import LIMITS
from .read.feed import HEALTH_CRITERION, HEALTH_KEYS, EvaluationFeed, EvaluationRow
from .read.times import iso_utc

log = logging.getLogger("otel_eval.alerts")

PASS_RATE = "pass_rate"
DRIFT = "drift"
UNMATCHED_SHARE = "unmatched_share"
HEALTH_METRICS = tuple(dict.fromkeys(LIMITS.values()))
METRICS = (PASS_RATE, UNMATCHED_SHARE, *HEALTH_METRICS)
EACH = "*"

DEFAULT_WINDOW_MINUTES = 15.0
DEFAULT_MIN_SESSIONS = 5
FIRING, RESOLVED = "firing", "resolved"

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
        from .drift import DEFAULT_FDR
        from .drift import DEFAULT_MIN_SESSIONS as DRIFT_MIN_SESSIONS

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


# --- evaluating rules ------------------------------------------------------------------------


@dataclass(frozen=True)
class AlertEvent:
    rule: AlertRule
    status: str
    """``firing`` or ``resolved``."""
    scope: dict[str, str]
    value: float
    sessions: int
    at: float

    @property
    def message(self) -> str:
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


def row_from_result(
    result: Any, agent_version: str | None = None, now: float | None = None, db: str = ""
) -> EvaluationRow:
    """An ``EvalCaseResult`` (an ``on_result`` callback's argument) as the row the evaluator reads."""
    failing: list[str] = []
    health: dict[str, Any] = {}
    health_failed = False
    reasons: list[str] = []
    for c in result.criterion_results:
        if c.skipped:
            continue
        if not c.passed or c.error:
            failing.append(c.criterion)
        if c.criterion == HEALTH_CRITERION or isinstance(c.details.get("violations"), list):
            health = {k: c.details[k] for k in HEALTH_KEYS if k in c.details}
            if not c.passed or c.error:
                health_failed = True
                reasons += [str(v.get("reason")) for v in c.details.get("violations") or [] if isinstance(v, dict)]
    return EvaluationRow(
        id=0,
        db=db,
        session_id=result.session_id or "",
        revision=0,
        case_id=result.eval_id or None,
        agent_version=agent_version,
        passed=result.passed,
        verdict=result.verdict,
        score=result.score,
        created_at=iso_utc(time.time() if now is None else now),
        error=result.error,
        failing=tuple(failing),
        health=health,
        health_failed=health_failed,
        health_reasons=tuple(reasons),
    )


def rule_values(
    rule: AlertRule, rows: Iterable[EvaluationRow], now: float
) -> dict[tuple[tuple[str, str], ...], tuple[float, int]]:
    """Per scope (``(("case", id), ("version", v))``): ``(value, sessions)`` over the rule's window.
    Scopes with fewer than ``min_sessions`` sessions are left out. Pure."""
    if rule.metric == DRIFT:
        return drift_values(rule, rows, now)
    cutoff = now - rule.window_s
    groups: dict[tuple[tuple[str, str], ...], list[EvaluationRow]] = {}
    for row in rows:
        if not cutoff <= row.created_s <= now:
            continue
        if rule.metric == PASS_RATE and not (row.matched and row.evaluated):
            continue  # a session where nothing was checked neither passes nor fails
        if rule.metric in HEALTH_METRICS and not row.health:
            continue
        scope: list[tuple[str, str]] = []
        for key, wanted, actual in (("case", rule.case, row.case_id), ("version", rule.version, row.agent_version)):
            if wanted is None:
                continue
            actual = actual or "unknown"
            if wanted != EACH and wanted != actual:
                break
            scope.append((key, actual))
        else:
            groups.setdefault(tuple(scope), []).append(row)
    out = {}
    for scope, members in groups.items():
        if len(members) < rule.min_sessions:
            continue
        out[scope] = (_value(rule.metric, members), len(members))
    return out


def drift_values(
    rule: AlertRule, rows: Iterable[EvaluationRow], now: float
) -> dict[tuple[tuple[str, str], ...], tuple[float, int]]:
    """``kind = "drift"``: per (case, candidate version) with ``min_sessions`` in both versions,
    1.0 when its tool-path change is significant across all of them (Benjamini-Hochberg at the
    rule's ``fdr``), else 0.0; with the sessions compared."""
    from .drift import benjamini_hochberg, compare_paths

    cutoff = now - rule.window_s
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        if not (cutoff <= row.created_s <= now and row.case_id and row.tool_path):
            continue
        if rule.case not in (None, EACH) and row.case_id != rule.case:
            continue
        version = row.agent_version or "unknown"
        if version != rule.baseline and rule.version not in (None, EACH) and version != rule.version:
            continue
        per = counts.setdefault((row.case_id, version), {})
        per[row.tool_path] = per.get(row.tool_path, 0) + 1
    tests = []
    for (case, version), candidate in counts.items():
        if version == rule.baseline or (case, rule.baseline) not in counts:
            continue
        result = compare_paths(case, counts[(case, rule.baseline)], candidate, rule.min_sessions)
        if result.dof or result.reason.startswith("one path"):  # one shared path: no difference (p = 1)
            tests.append(
                (
                    (("case", case), ("version", version)),
                    1.0 if result.p_value is None else result.p_value,
                    sum(candidate.values()) + sum(counts[(case, rule.baseline)].values()),
                )
            )
    flags = benjamini_hochberg([p for _, p, _ in tests], rule.threshold)
    return {scope: (1.0 if flagged else 0.0, sessions) for (scope, _, sessions), flagged in zip(tests, flags)}


def _value(metric: str, rows: list[EvaluationRow]) -> float:
    if metric == PASS_RATE:
        return sum(1 for r in rows if r.passed) / len(rows)
    if metric == UNMATCHED_SHARE:
        return sum(1 for r in rows if not r.matched) / len(rows)
    if metric == "tool_error_rate":
        calls = sum(r.health.get("tool_calls") or 0 for r in rows)
        return (sum(r.health.get("tool_errors") or 0 for r in rows) / calls) if calls else 0.0
    values = [float(r.health[metric]) for r in rows if r.health.get(metric) is not None]
    return sum(values) / len(values) if values else 0.0


class AlertEvaluator:
    """Holds the current evaluations of the longest window and each rule's firing state.

    Feed it rows (:meth:`observe`) from the database or from ``on_result`` callbacks
    (:func:`row_from_result`), then call :meth:`evaluate`: every state change goes to the notifier."""

    def __init__(self, rules: Sequence[AlertRule], notifier: Notifier | None = None):
        self.rules = list(rules)
        self.notifier = notifier
        self.horizon_s = max((r.window_s for r in self.rules), default=0.0)
        self._rows: dict[tuple[str, str], EvaluationRow] = {}
        self._firing: dict[tuple[str, tuple[tuple[str, str], ...]], AlertEvent] = {}
        self._lock = threading.Lock()

    def observe(self, row: EvaluationRow) -> None:
        """A session's latest evaluation replaces its earlier one (a re-scored revision)."""
        if row.superseded:
            return
        key = (row.db, row.session_id)
        with self._lock:
            known = self._rows.get(key)
            if known is None or (row.revision, row.id) >= (known.revision, known.id):
                self._rows[key] = row

    def observe_many(self, rows: Iterable[EvaluationRow]) -> None:
        for row in rows:
            self.observe(row)

    @property
    def firing(self) -> list[AlertEvent]:
        with self._lock:
            return list(self._firing.values())

    def evaluate(self, now: float | None = None) -> list[AlertEvent]:
        """State changes since the last call (each also sent to the notifier)."""
        now = time.time() if now is None else now
        events: list[AlertEvent] = []
        with self._lock:
            cutoff = now - self.horizon_s
            for key in [k for k, r in self._rows.items() if r.created_s < cutoff]:
                del self._rows[key]
            rows = list(self._rows.values())
            for rule in self.rules:
                for scope, (value, sessions) in rule_values(rule, rows, now).items():
                    state_key = (rule.name, scope)
                    breached = rule.breached(value)
                    if breached and state_key not in self._firing:
                        event = AlertEvent(rule, FIRING, dict(scope), value, sessions, now)
                        self._firing[state_key] = event
                        events.append(event)
                    elif not breached and state_key in self._firing:
                        del self._firing[state_key]
                        events.append(AlertEvent(rule, RESOLVED, dict(scope), value, sessions, now))
        if self.notifier is not None:
            for event in events:
                self.notifier.notify(event)
        return events


# --- delivery --------------------------------------------------------------------------------


class Notifier:
    """Logs every event at once; posts webhooks from one background thread.

    ``retries`` extra attempts (with doubling ``backoff_s``) follow a timeout, a connection error or
    a 5xx/408/429 answer; other 4xx answers are not retried (the request itself is wrong). At most
    ``max_pending`` posts wait; more are dropped and counted, so a dead endpoint costs bounded memory.
    """

    def __init__(
        self,
        timeout: float = 5.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_pending: int = 1000,
        default_webhook: str | None = None,
        post: Callable[[str, bytes, float], int] | None = None,
    ):
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.default_webhook = default_webhook
        self._post = post or _http_post
        self._queue: queue.Queue[tuple[str, AlertEvent] | None] = queue.Queue(maxsize=max_pending)
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._start_lock = threading.Lock()
        self.sent = 0
        self.failed = 0
        self.dropped = 0

    def notify(self, event: AlertEvent) -> None:
        if event.status == FIRING:
            log.warning("%s", event.message)
        else:
            log.info("%s", event.message)
        url = event.rule.webhook or self.default_webhook
        if not url or self._closing.is_set():
            return
        self._ensure_thread()
        try:
            self._queue.put_nowait((url, event))
        except queue.Full:
            self.dropped += 1
            log.warning("alert webhook queue full: dropped the %s notification of %r", event.status, event.rule.name)

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._deliver_loop, name="otel-eval-alerts", daemon=True)
                self._thread.start()

    def _deliver_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            url, event = item
            self._deliver(url, event)

    def _deliver(self, url: str, event: AlertEvent) -> bool:
        body = json.dumps(event.payload()).encode()
        reason = ""
        for attempt in range(self.retries + 1):
            if attempt:
                # Waits on the closing flag, so shutdown is not held up by a long backoff.
                if self._closing.wait(self.backoff_s * 2 ** (attempt - 1)):
                    break
            try:
                status = self._post(url, body, self.timeout)
            except (OSError, urllib.error.URLError) as exc:
                reason = str(getattr(exc, "reason", exc))
                continue
            if 200 <= status < 300:
                self.sent += 1
                return True
            reason = f"HTTP {status}"
            if 400 <= status < 500 and status not in (408, 429):
                break
        self.failed += 1
        log.error("alert webhook %s failed for %r (%s): %s", url, event.rule.name, event.status, reason)
        return False

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued (within ``timeout``), then stop the thread."""
        if self._thread is None:
            self._closing.set()
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        self._closing.set()


def _http_post(url: str, body: bytes, timeout: float) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": "otel-eval-alerts"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


# --- the collector's driver ------------------------------------------------------------------


class AlertMonitor:
    """Reads new evaluations from the database(s) and evaluates the rules, on its own thread.

    :meth:`wake` (an engine listener: it only sets a flag) makes it look at once; otherwise it looks
    every ``poll_s`` seconds, which also lets windows slide when no session is scored."""

    def __init__(self, evaluator: AlertEvaluator, db_paths: Sequence[str], poll_s: float = 5.0):
        self.evaluator = evaluator
        self.feeds = [EvaluationFeed(p) for p in db_paths]
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._positioned = False

    @classmethod
    def from_config(
        cls,
        tables: Sequence[Mapping[str, Any]],
        db_paths: Sequence[str],
        source: str = "alerts",
        poll_s: float = 5.0,
        notifier: Notifier | None = None,
    ) -> AlertMonitor:
        rules = load_rules(tables, source)
        return cls(AlertEvaluator(rules, notifier or Notifier()), db_paths, poll_s)

    def check(self, now: float | None = None) -> list[AlertEvent]:
        """Read what is new and evaluate once; returns the state changes."""
        now = time.time() if now is None else now
        with self._lock:
            if not self._positioned:
                for feed in self.feeds:
                    feed.seek(now - self.evaluator.horizon_s)
                self._positioned = True
            for feed in self.feeds:
                self.evaluator.observe_many(feed.poll())
            return self.evaluator.evaluate(now)

    def wake(self, *_: Any) -> None:
        self._wake.set()

    def start(self) -> AlertMonitor:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="otel-eval-alert-monitor", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception:  # a locked or broken database must not end alerting for good
                log.exception("alert check failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """A last check (so a final result still alerts), then stop and flush webhooks."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        try:
            self.check()
        except Exception:
            log.exception("final alert check failed")
        for feed in self.feeds:
            feed.close()
        if self.evaluator.notifier is not None:
            self.evaluator.notifier.close(timeout)
