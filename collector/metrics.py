"""The collector's own counters and the Prometheus text rendering of them plus the engine's stats.

The receivers run on several threads (gRPC's pool, uvicorn's loop, the executor that waits for
commits), so every update takes one lock; the numbers are few and the lock is held for nanoseconds.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from typing import Mapping, Optional

#: Ingest latency buckets (seconds): a commit normally takes milliseconds; the tail shows a busy disk.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# Engine stats → (metric name, type, help).  Names follow Prometheus conventions (_total on counters).
_ENGINE_METRICS = (
    ("spans_received", "otel_eval_spans_received_total", "counter", "Spans handed to the engine."),
    ("spans_stored", "otel_eval_spans_stored_total", "counter", "Spans committed to the database."),
    ("spans_duplicate", "otel_eval_spans_duplicate_total", "counter",
     "Spans received again (a retried export) and not stored twice."),
    ("spans_dropped", "otel_eval_spans_dropped_total", "counter", "Spans the engine dropped."),
    ("queue_depth", "otel_eval_queue_depth", "gauge", "Spans waiting to be committed."),
    ("sessions_open", "otel_eval_sessions_open", "gauge", "Sessions receiving spans, not yet ended."),
    ("sessions_scored", "otel_eval_sessions_scored_total", "counter", "Sessions ended and scored."),
    ("evaluations_total", "otel_eval_evaluations_total", "counter", "Evaluations stored."),
    ("evaluations_passed", "otel_eval_evaluations_passed_total", "counter", "Evaluations that passed."),
)


class Histogram:
    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)  # last slot: above the largest bucket
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as Prometheus wants them: each bucket counts everything at or below it."""
        out = []
        running = 0
        for bound, n in zip(self.buckets, self.counts):
            running += n
            out.append((_number(bound), running))
        out.append(("+Inf", self.count))
        return out


class CollectorMetrics:
    """Counts what only the receivers see: requests by outcome, spans rejected for bad ids, latency."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = {}
        self.spans_rejected = 0
        self.log_records_received = 0
        self.log_records_ignored = 0
        self.ingest_latency = Histogram()

    def request(self, protocol: str, signal: str, outcome: str) -> None:
        """One export request finished; ``outcome`` is a short code such as ``ok``, ``invalid``,
        ``unauthenticated``, ``too_large``, ``queue_full`` or ``unsupported_media_type``."""
        key = (protocol, signal, outcome)
        with self._lock:
            self.requests[key] = self.requests.get(key, 0) + 1

    def rejected(self, spans: int) -> None:
        with self._lock:
            self.spans_rejected += spans

    def logs(self, kept: int, ignored: int) -> None:
        with self._lock:
            self.log_records_received += kept
            self.log_records_ignored += ignored

    def ingest_seconds(self, seconds: float) -> None:
        with self._lock:
            self.ingest_latency.observe(seconds)

    def render(self, engine_stats: Optional[Mapping[str, float]] = None) -> str:
        with self._lock:
            return render_prometheus(self, engine_stats or {})


def render_prometheus(metrics: CollectorMetrics, engine_stats: Mapping[str, float]) -> str:
    """Prometheus text exposition format 0.0.4."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    for key, name, kind, help_text in _ENGINE_METRICS:
        family(name, kind, help_text)
        lines.append(f"{name} {_number(engine_stats.get(key, 0))}")

    total = engine_stats.get("evaluations_total", 0) or 0
    passed = engine_stats.get("evaluations_passed", 0) or 0
    family("otel_eval_pass_rate", "gauge", "Share of evaluations that passed (NaN before the first one).")
    lines.append(f"otel_eval_pass_rate {_number(passed / total if total else math.nan)}")

    family("otel_eval_spans_rejected_total", "counter",
           "Spans refused through OTLP partial_success (invalid trace or span id).")
    lines.append(f"otel_eval_spans_rejected_total {metrics.spans_rejected}")

    family("otel_eval_log_records_received_total", "counter", "Log records tied to a span, handed to the engine.")
    lines.append(f"otel_eval_log_records_received_total {metrics.log_records_received}")
    family("otel_eval_log_records_ignored_total", "counter",
           "Log records without a trace and span id (they cannot be attached to a span).")
    lines.append(f"otel_eval_log_records_ignored_total {metrics.log_records_ignored}")

    family("otel_eval_export_requests_total", "counter", "OTLP export requests by protocol, signal and outcome.")
    for (protocol, signal, outcome), count in sorted(metrics.requests.items()):
        lines.append(
            f'otel_eval_export_requests_total{{protocol="{protocol}",signal="{signal}",outcome="{outcome}"}} {count}'
        )

    hist = metrics.ingest_latency
    family("otel_eval_ingest_duration_seconds", "histogram",
           "Time from a decoded request to its commit (what an exporter waits for).")
    for le, count in hist.cumulative():
        lines.append(f'otel_eval_ingest_duration_seconds_bucket{{le="{le}"}} {count}')
    lines.append(f"otel_eval_ingest_duration_seconds_sum {_number(hist.sum)}")
    lines.append(f"otel_eval_ingest_duration_seconds_count {hist.count}")

    if "ingest_seconds_count" in engine_stats:
        family("otel_eval_engine_ingest_seconds", "summary", "Engine-side commit time of span batches.")
        lines.append(f"otel_eval_engine_ingest_seconds_sum {_number(engine_stats.get('ingest_seconds_sum', 0))}")
        lines.append(f"otel_eval_engine_ingest_seconds_count {_number(engine_stats['ingest_seconds_count'])}")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)
