"""The engine's counters, as ``Engine.stats()`` reports them (and /metrics exports them).

Written by the writer thread after a commit (so they count only what was stored) and by the
notifier; read by anyone. A lock, not atomics: every update is a handful of additions."""

from __future__ import annotations

import threading
from typing import Any

COUNTERS = (
    "spans_received",
    "spans_stored",
    "spans_duplicate",
    "spans_dropped",
    "logs_stored",
    "sessions_scored",
    "evaluations_total",
    "evaluations_passed",
    "evaluations_matched",
    "evaluations_not_evaluated",
    "ingest_seconds_sum",
    "ingest_seconds_count",
    "score_seconds_sum",
    "score_seconds_count",
    "commit_failures",
    "evaluations_judge_pending",
    "evaluations_judge_completed",
)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class EngineStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        self._latency_counts = [0] * (len(LATENCY_BUCKETS) + 1)

    def add(self, **amounts: float) -> None:
        with self._lock:
            for key, amount in amounts.items():
                self._values[key] += amount

    def observe_ingest(self, seconds: float) -> None:
        with self._lock:
            self._values["ingest_seconds_sum"] += seconds
            self._values["ingest_seconds_count"] += 1
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    self._latency_counts[i] += 1
                    break
            else:
                self._latency_counts[-1] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = dict(self._values)
            counts = list(self._latency_counts)
        total, cumulative = 0, []
        for c in counts:
            total += c
            cumulative.append(total)
        out["ingest_latency_buckets"] = list(zip(LATENCY_BUCKETS + (float("inf"),), cumulative))
        return out
