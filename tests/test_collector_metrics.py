"""Prometheus rendering of the collector's counters and the engine's stats."""

from __future__ import annotations

from collector.prometheus import CollectorCounters, Histogram


def test_histogram_buckets_are_cumulative_and_inclusive():
    hist = Histogram((0.01, 0.1, 1.0))
    for value in (0.005, 0.01, 0.05, 2.0):
        hist.observe(value)
    assert hist.cumulative() == [("0.01", 2), ("0.1", 3), ("1", 3), ("+Inf", 4)]
    assert hist.count == 4
    assert round(hist.sum, 6) == 2.065


def test_render_includes_engine_stats_pass_rate_and_request_outcomes():
    metrics = CollectorCounters()
    metrics.request("grpc", "traces", "ok")
    metrics.request("grpc", "traces", "ok")
    metrics.request("http", "logs", "invalid")
    metrics.rejected(3)
    metrics.ingest_seconds(0.02)
    text = metrics.render(
        {
            "spans_received": 10.0,
            "spans_stored": 8.0,
            "spans_duplicate": 2.0,
            "queue_depth": 0,
            "sessions_open": 1,
            "sessions_scored": 4.0,
            "evaluations_total": 4.0,
            "evaluations_passed": 3.0,
        }
    )
    lines = text.splitlines()
    assert "otel_eval_spans_stored_total 8" in lines
    assert "otel_eval_sessions_open 1" in lines
    assert "otel_eval_pass_rate 0.75" in lines
    assert "otel_eval_spans_rejected_total 3" in lines
    assert 'otel_eval_export_requests_total{protocol="grpc",signal="traces",outcome="ok"} 2' in lines
    assert 'otel_eval_export_requests_total{protocol="http",signal="logs",outcome="invalid"} 1' in lines
    assert 'otel_eval_ingest_duration_seconds_bucket{le="0.01"} 0' in lines
    assert 'otel_eval_ingest_duration_seconds_bucket{le="0.025"} 1' in lines
    assert "otel_eval_ingest_duration_seconds_count 1" in lines
    # Every sample line belongs to a family declared with # TYPE before it.
    declared = {line.split()[2] for line in lines if line.startswith("# TYPE")}
    for line in lines:
        if not line.startswith("#"):
            name = line.split("{")[0].split(" ")[0]
            assert name in declared or name.rsplit("_", 1)[0] in declared, name
    assert text.endswith("\n")


def test_pass_rate_is_nan_before_the_first_evaluation():
    assert "otel_eval_pass_rate NaN" in CollectorCounters().render({}).splitlines()
