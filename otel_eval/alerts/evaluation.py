"""Evaluating rules: each rule's value per scope over its sliding window of current evaluations,
and the firing state that turns a breach into one ``firing`` event and its end into one ``resolved``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..read.feed import HEALTH_CRITERION, HEALTH_KEYS, EvaluationRow
from ..read.times import iso_utc
from .delivery import Notifier
from .events import FIRING, RESOLVED, AlertEvent
from .rules import DRIFT, EACH, HEALTH_METRICS, PASS_RATE, UNMATCHED_SHARE, AlertRule


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
    return {
        group: (_value(rule.metric, members), len(members))
        for group, members in groups.items()
        if len(members) >= rule.min_sessions
    }


def drift_values(
    rule: AlertRule, rows: Iterable[EvaluationRow], now: float
) -> dict[tuple[tuple[str, str], ...], tuple[float, int]]:
    """``kind = "drift"``: per (case, candidate version) with ``min_sessions`` in both versions,
    1.0 when its tool-path change is significant across all of them (Benjamini-Hochberg at the
    rule's ``fdr``), else 0.0; with the sessions compared."""
    from ..drift import benjamini_hochberg, compare_paths

    baseline = rule.baseline
    if baseline is None:  # only a rule built by hand lacks one (from_dict requires it): nothing to compare with
        return {}
    cutoff = now - rule.window_s
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        if not (cutoff <= row.created_s <= now and row.case_id and row.tool_path):
            continue
        if rule.case not in (None, EACH) and row.case_id != rule.case:
            continue
        version = row.agent_version or "unknown"
        if version != baseline and rule.version not in (None, EACH) and version != rule.version:
            continue
        per = counts.setdefault((row.case_id, version), {})
        per[row.tool_path] = per.get(row.tool_path, 0) + 1
    tests: list[tuple[tuple[tuple[str, str], ...], float, int]] = []
    for (case, version), candidate in counts.items():
        if version == baseline or (case, baseline) not in counts:
            continue
        result = compare_paths(case, counts[(case, baseline)], candidate, rule.min_sessions)
        if result.dof or result.reason.startswith("one path"):  # one shared path: no difference (p = 1)
            tests.append(
                (
                    (("case", case), ("version", version)),
                    1.0 if result.p_value is None else result.p_value,
                    sum(candidate.values()) + sum(counts[(case, baseline)].values()),
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
        """:meth:`observe` each row, as a feed's :meth:`~otel_eval.read.feed.EvaluationFeed.poll` returns them."""
        for row in rows:
            self.observe(row)

    @property
    def firing(self) -> list[AlertEvent]:
        """The events of the alerts firing now, one per rule and scope: what is wrong at the moment."""
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
