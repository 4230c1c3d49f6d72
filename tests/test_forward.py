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
    target = (f"grpc://127.0.0.1:{second.grpc_port}" if protocol == "grpc"
              else f"http://127.0.0.1:{second.http_port}")
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

    def Export(self, request, context):  # noqa: N802
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
