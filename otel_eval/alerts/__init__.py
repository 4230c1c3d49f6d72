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

One module a job: :mod:`.rules` (the tables validated), :mod:`.evaluation` (values over windows,
firing state), :mod:`.events` (what an event says), :mod:`.delivery` (log and webhooks),
:mod:`.monitor` (the collector's driver). Every public name is importable from here.
"""

from .delivery import Notifier
from .evaluation import AlertEvaluator, drift_values, row_from_result, rule_values
from .events import FIRING, RESOLVED, AlertEvent
from .monitor import AlertMonitor
from .rules import (
    DEFAULT_MIN_SESSIONS,
    DEFAULT_WINDOW_MINUTES,
    DRIFT,
    EACH,
    HEALTH_METRICS,
    METRICS,
    PASS_RATE,
    UNMATCHED_SHARE,
    AlertRule,
    load_rules,
)

__all__ = [
    "DEFAULT_MIN_SESSIONS",
    "DEFAULT_WINDOW_MINUTES",
    "DRIFT",
    "EACH",
    "FIRING",
    "HEALTH_METRICS",
    "METRICS",
    "PASS_RATE",
    "RESOLVED",
    "UNMATCHED_SHARE",
    "AlertEvaluator",
    "AlertEvent",
    "AlertMonitor",
    "AlertRule",
    "Notifier",
    "drift_values",
    "load_rules",
    "row_from_result",
    "rule_values",
]
