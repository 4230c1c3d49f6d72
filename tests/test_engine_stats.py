"""Engine.stats() is what its type (EngineStatsReport) says: /metrics, /stats and the tests read
it by key, so a key the type promises must be there and a key it does not name must not be."""

from otel_eval import Engine
from otel_eval.engine.stats import COUNTERS, EngineStatsReport
from otel_eval.spans import SpanRecord
from tests.polling import wait_until


def test_stats_hold_exactly_the_keys_their_type_names(tmp_path):
    engine = Engine(tmp_path / "e.db", trace_quiet=3600, session_idle=3600)
    before = engine.stats()  # not started: no judge pool yet
    assert set(before) == EngineStatsReport.__required_keys__
    engine.start()
    try:
        spans = [SpanRecord("41" * 16, f"{i:016x}", None, "s", 1, 2, attributes={"session.id": "s1"}) for i in (1, 2)]
        assert engine.ingest(spans).stored == 2
        assert engine.end_session("s1")
        wait_until(lambda: engine.stats()["sessions_scored"] == 1, timeout=30)
        stats = engine.stats()
    finally:
        engine.close()
    assert set(stats) == EngineStatsReport.__required_keys__ | EngineStatsReport.__optional_keys__
    assert set(COUNTERS) <= set(stats) and all(isinstance(stats[name], float) for name in COUNTERS)
    assert (stats["spans_received"], stats["spans_stored"], stats["sessions_open"]) == (2.0, 2.0, 0)
    bounds = [bound for bound, _ in stats["ingest_latency_buckets"]]
    assert bounds == sorted(bounds) and bounds[-1] == float("inf")
    assert stats["ingest_latency_buckets"][-1][1] == stats["ingest_seconds_count"]
    assert stats["judge"]["pending_jobs"] == 0
