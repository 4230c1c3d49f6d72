"""The engine's counters, as ``Engine.stats()`` reports them (and /metrics exports them).

Written by the writer thread after a commit (so they count only what was stored) and by the
notifier; read by anyone. A lock, not atomics: every update is a handful of additions."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from ..judging.pool import JudgePoolStats


class EngineCounters(TypedDict):
    """The engine's counters since it started; the ``*_sum``/``*_count`` pairs are seconds and
    occurrences, for a mean and Prometheus summaries."""

    spans_received: float
    spans_stored: float
    spans_duplicate: float
    spans_dropped: float
    logs_stored: float
    sessions_scored: float
    evaluations_total: float
    evaluations_passed: float
    evaluations_matched: float
    evaluations_not_evaluated: float
    ingest_seconds_sum: float
    ingest_seconds_count: float
    score_seconds_sum: float
    score_seconds_count: float
    commit_failures: float
    evaluations_judge_pending: float
    evaluations_judge_completed: float


COUNTERS = tuple(EngineCounters.__annotations__)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class CountersSnapshot(EngineCounters):
    """The counters at one moment, with the ingest latency histogram."""

    ingest_latency_buckets: list[tuple[float, int]]
    """(upper bound in seconds, batches committed within it), cumulative; the last bound is inf."""


class _JudgeStats(TypedDict, total=False):
    judge: JudgePoolStats
    """The judge pool's figures (:meth:`otel_eval.judging.pool.JudgePool.stats`) and its pending
    jobs; present once the engine has started."""


class EngineStatsReport(CountersSnapshot, _JudgeStats):
    """What ``Engine.stats()`` reports (and /metrics exports): the counters, and the engine's
    queues and sessions as they are now."""

    queue_depth: int
    """Spans and log records waiting for the writer."""
    sessions_open: int
    """Sessions receiving spans (not ended yet)."""
    sessions_awaiting_score: int
    """Sessions ended (or re-judged) whose evaluation is not announced yet."""
    sessions_scored_idle: int
    """Sessions this process scored while ingest was idle (``EngineSettings.score_when_idle``)."""


class EngineStats:
    """The counters, shared by the writer and the notifier threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        self._latency_counts = [0] * (len(LATENCY_BUCKETS) + 1)

    def add(self, **amounts: float) -> None:
        """Add to the named counters (names from :class:`EngineCounters`), as one step."""
        with self._lock:
            for key, amount in amounts.items():
                self._values[key] += amount

    def observe_ingest(self, seconds: float) -> None:
        """Count one committed ingest batch and the seconds it took, in the latency histogram."""
        with self._lock:
            self._values["ingest_seconds_sum"] += seconds
            self._values["ingest_seconds_count"] += 1
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    self._latency_counts[i] += 1
                    break
            else:
                self._latency_counts[-1] += 1

    def snapshot(self) -> CountersSnapshot:
        """A consistent copy of every counter, read under the lock."""
        with self._lock:
            v = dict(self._values)
            counts = list(self._latency_counts)
        total, cumulative = 0, []
        for c in counts:
            total += c
            cumulative.append(total)
        return CountersSnapshot(
            spans_received=v["spans_received"],
            spans_stored=v["spans_stored"],
            spans_duplicate=v["spans_duplicate"],
            spans_dropped=v["spans_dropped"],
            logs_stored=v["logs_stored"],
            sessions_scored=v["sessions_scored"],
            evaluations_total=v["evaluations_total"],
            evaluations_passed=v["evaluations_passed"],
            evaluations_matched=v["evaluations_matched"],
            evaluations_not_evaluated=v["evaluations_not_evaluated"],
            ingest_seconds_sum=v["ingest_seconds_sum"],
            ingest_seconds_count=v["ingest_seconds_count"],
            score_seconds_sum=v["score_seconds_sum"],
            score_seconds_count=v["score_seconds_count"],
            commit_failures=v["commit_failures"],
            evaluations_judge_pending=v["evaluations_judge_pending"],
            evaluations_judge_completed=v["evaluations_judge_completed"],
            ingest_latency_buckets=list(zip(LATENCY_BUCKETS + (float("inf"),), cumulative)),
        )
