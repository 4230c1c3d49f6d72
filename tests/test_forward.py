"""Span forwarding: a collector passes every accepted span on, unchanged, to another real OTLP
endpoint (a second otel-eval collector, over gRPC and over HTTP), without ever waiting for it —
a slow endpoint makes the bounded queue drop, and the drops are counted."""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from otel_eval.export.otel import SpanForwarder
from tests.conftest import ids_of, sdk_spans, stored_span_ids
from tests.polling import wait_until


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_accepted_spans_reach_the_second_collector_unchanged(start_collector, tmp_path, protocol):
    second = start_collector(db=str(tmp_path / "second.db"))
    target = f"grpc://127.0.0.1:{second.grpc_port}" if protocol == "grpc" else f"http://127.0.0.1:{second.http_port}"
    first = start_collector(db=str(tmp_path / "first.db"), forward_spans=target)
    assert any(target in line for line in first.banner())

    spans = sdk_spans(traces=3, session_id="fwd")
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{first.http_port}/v1/traces")
    assert exporter.export(spans).name == "SUCCESS"
    exporter.shutdown()

    expected = ids_of(spans)
    assert stored_span_ids(tmp_path / "first.db") == expected
    assert wait_until(lambda: stored_span_ids(tmp_path / "second.db") == expected)
    # Unchanged: the second collector stored the same raw spans (names, attributes, resource).
    import json
    import sqlite3

    def raw(db):
        conn = sqlite3.connect(db)
        try:
            return {(t, s): json.loads(r) for t, s, r in conn.execute("SELECT trace_id, span_id, raw FROM spans")}
        finally:
            conn.close()

    assert raw(tmp_path / "second.db") == raw(tmp_path / "first.db")
    # The counter moves when the export call returns, just after the second collector committed.
    assert wait_until(lambda: first.forwarding.stats()["forward_spans"] == 9)


class BlockingSink(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self):
        self.release = threading.Event()
        self.received = []

    def Export(self, request, context):
        self.received.append(request)
        self.release.wait(10)
        return trace_service_pb2.ExportTraceServiceResponse()


def test_a_slow_endpoint_never_blocks_submit_and_overflow_is_counted():
    sink = BlockingSink()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(sink, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    forwarder = SpanForwarder(f"grpc://127.0.0.1:{port}", max_queue=1)
    try:
        requests = [encode_spans(sdk_spans(traces=1)) for _ in range(5)]  # 3 spans each
        assert forwarder.submit(requests[0])
        assert wait_until(lambda: len(sink.received) == 1)  # the sender is now stuck in Export
        accepted = [forwarder.submit(r) for r in requests[1:]]
        assert accepted == [True, False, False, False]  # one fits in the queue, the rest are dropped
        # Every submit returned while the sink still holds the first request: none waited for the sender.
        assert not sink.release.is_set() and len(sink.received) == 1
        assert forwarder.stats.spans_dropped == 9
        sink.release.set()
        forwarder.close(timeout=5)
        assert (forwarder.stats.requests_forwarded, forwarder.stats.spans_forwarded) == (2, 6)
        assert not forwarder.submit(requests[0])  # closed: dropped, counted
        assert forwarder.stats.spans_dropped == 12
    finally:
        sink.release.set()
        server.stop(0)


def test_an_unreachable_endpoint_counts_failures_after_retries():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    forwarder = SpanForwarder(f"http://127.0.0.1:{port}", retries=1, backoff=0.01, timeout=1.0)
    forwarder.submit(encode_spans(sdk_spans(traces=1)))
    assert wait_until(lambda: forwarder.stats.spans_failed == 3)
    forwarder.close()
    assert forwarder.stats.spans_forwarded == 0


def test_forward_when_sends_only_the_sessions_whose_outcome_is_listed(start_collector, tmp_path):
    """Tail sampling by verdict: the failed and the unmatched session reach the second collector,
    whole and as stored; the passing one does not. Counted in /metrics."""
    import json
    import sqlite3

    import httpx
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from examples.weather_agent import agent_resource, run_session
    from tests.test_compare import GOLDEN_FILES

    second = start_collector(db=str(tmp_path / "second.db"))
    first = start_collector(
        db=str(tmp_path / "first.db"),
        golden=[str(p) for p in GOLDEN_FILES],
        forward_spans=f"http://127.0.0.1:{second.http_port}",
        forward_when=["failed", "unmatched"],
    )
    assert any("after scoring, for sessions failed or unmatched" in line for line in first.banner())
    for version, session_id, query in (
        ("1.0.0", "passes", "What's the weather in Tokyo?"),
        ("2.0.0", "fails", "What's the weather in Tokyo?"),  # 2.0.0's mistake
        ("1.0.0", "unmatched", "Tell me a joke"),
    ):
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{first.http_port}/v1/traces"))
        )
        run_session(provider, session_id, [query], version=version, mark_end=True)
        provider.shutdown()

    def forwarded():
        metrics = httpx.get(f"http://127.0.0.1:{first.http_port}/metrics").text.splitlines()
        return (
            "otel_eval_forward_sessions_total 2" in metrics and "otel_eval_forward_sessions_filtered_total 1" in metrics
        )

    wait_until(forwarded, timeout=30)

    def spans(db, session_id):
        conn = sqlite3.connect(db)
        try:
            return {
                (t, s): json.loads(r)
                for t, s, r in conn.execute(
                    "SELECT trace_id, span_id, raw FROM spans WHERE trace_id IN"
                    " (SELECT trace_id FROM traces WHERE session_id = ?)",
                    (session_id,),
                )
            }
        finally:
            conn.close()

    for session_id in ("fails", "unmatched"):
        sent = spans(tmp_path / "first.db", session_id)
        assert sent and wait_until(lambda: spans(tmp_path / "second.db", session_id) == sent)
    assert spans(tmp_path / "second.db", "passes") == {}


def test_forward_when_needs_forward_spans_and_known_outcomes(tmp_path):
    from collector.config import load_config
    from otel_eval.errors import InputError

    with pytest.raises(InputError, match="give --forward-spans URL too"):
        load_config(["--db", str(tmp_path / "x.db"), "--forward-when", "failed"], environ={})
    with pytest.raises(InputError, match="unknown outcome 'faild'.*failed"):
        load_config(
            ["--db", str(tmp_path / "x.db"), "--forward-spans", "http://127.0.0.1:1", "--forward-when", "faild"],
            environ={},
        )
    config = load_config(
        [
            "--db",
            str(tmp_path / "x.db"),
            "--forward-spans",
            "http://127.0.0.1:1",
            "--forward-when",
            "failed, unmatched",
        ],
        environ={},
    )
    assert config.forward_when == ["failed", "unmatched"]
