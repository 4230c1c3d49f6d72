"""OTLP/gRPC receiver against a real Engine, a real grpc server and a real SQLite file."""

from __future__ import annotations

import gzip
import sqlite3
import threading

import grpc
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.conftest import ids_of, request_with, sdk_spans, stored_span_ids
from tests.polling import wait_until

TRACE_ID = "5b8efff798038103d269b633813fc60c"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_real_exporter_spans_are_committed_and_a_resend_is_not_stored_twice(start_collector):
    collector = start_collector(http=None)
    spans = sdk_spans(traces=2)
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=10)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert stored_span_ids(collector.config.db) == ids_of(spans)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    conn = sqlite3.connect(collector.config.db)
    assert conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 6
    exporter.shutdown()


def test_gzip_compressed_export_is_accepted(start_collector):
    collector = start_collector(http=None)
    spans = sdk_spans()
    exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, compression=grpc.Compression.Gzip
    )
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert stored_span_ids(collector.config.db) == ids_of(spans)
    exporter.shutdown()


def test_malformed_protobuf_is_invalid_argument_and_the_server_keeps_serving(start_collector, channel_to):
    collector = start_collector(http=None)
    channel = channel_to(collector)
    raw_export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
    good = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "root")]).SerializeToString()

    for body in (b"\xff\xff\xff\xff garbage", good[:-7]):
        with pytest.raises(grpc.RpcError) as caught:
            raw_export(body, timeout=5)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.details().startswith("request is not a valid ExportTraceServiceRequest protobuf")

    answer = ExportTraceServiceResponse.FromString(raw_export(good, timeout=5))
    assert answer == ExportTraceServiceResponse()
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "eee19b7ec3c1b174")}


def test_invalid_ids_are_rejected_through_partial_success(start_collector, channel_to):
    collector = start_collector(http=None)
    stub = TraceServiceStub(channel_to(collector))
    request = request_with(
        [
            (bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "good"),
            (bytes.fromhex(TRACE_ID), bytes(8), "zero span id"),
        ]
    )
    answer = stub.Export(request, timeout=5)
    assert answer.partial_success.rejected_spans == 1
    assert answer.partial_success.error_message == "span 'zero span id': span_id is all zeros"
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "eee19b7ec3c1b174")}


def test_oversized_message_is_resource_exhausted(start_collector, channel_to):
    collector = start_collector(http=None, max_request_bytes=64 * 1024)
    stub = TraceServiceStub(channel_to(collector))
    request = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "x" * 100_000)])
    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(request, timeout=5)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Compression does not get around the limit: it applies to the decompressed message.
    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(request, timeout=5, compression=grpc.Compression.Gzip)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert len(gzip.compress(request.SerializeToString())) < 64 * 1024
    small = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "small")])
    assert stub.Export(small, timeout=5) == ExportTraceServiceResponse()


def test_bearer_token_is_required_when_configured(start_collector, channel_to):
    collector = start_collector(http=None, auth_token="s3cret")
    stub = TraceServiceStub(channel_to(collector))
    request = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "root")])
    for metadata in ((), (("authorization", "Bearer guess"),)):
        with pytest.raises(grpc.RpcError) as caught:
            stub.Export(request, timeout=5, metadata=metadata)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert stored_span_ids(collector.config.db) == set()

    spans = sdk_spans()
    exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, headers={"authorization": "Bearer s3cret"}
    )
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert stored_span_ids(collector.config.db) == ids_of(spans)
    exporter.shutdown()


def test_logs_service_stores_records_tied_to_spans(start_collector, channel_to):
    collector = start_collector(http=None)
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.trace_id, record.span_id = bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174")
    record.time_unix_nano = 1_700_000_000_000_000_000
    record.event_name = "gen_ai.choice"
    record.body.string_value = "Sunny"
    answer = LogsServiceStub(channel_to(collector)).Export(request, timeout=5)
    assert not answer.HasField("partial_success")
    conn = sqlite3.connect(collector.config.db)
    assert conn.execute("SELECT event_name, body FROM log_events").fetchall() == [("gen_ai.choice", '"Sunny"')]


def test_full_queue_is_unavailable_with_retry_info(start_collector, channel_to):
    collector = start_collector(http=None, queue_spans=1)
    stub = TraceServiceStub(channel_to(collector))
    first = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("0000000000000001"), "first")])
    second = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("0000000000000002"), "second")])
    blocker = sqlite3.connect(collector.config.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the engine's writer cannot commit: the first batch stays queued
    results = {}
    sender = threading.Thread(target=lambda: results.setdefault("first", stub.Export(first, timeout=30)))
    sender.start()
    wait_until(lambda: collector.engine.stats()["queue_depth"] >= 1, what="the first batch queued")

    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(second, timeout=5)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    trailers = dict(caught.value.trailing_metadata())
    assert RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay.seconds == 1

    blocker.execute("ROLLBACK")
    blocker.close()
    sender.join(10)
    assert results["first"] == ExportTraceServiceResponse()
    assert stub.Export(second, timeout=5) == ExportTraceServiceResponse()
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "0000000000000001"), (TRACE_ID, "0000000000000002")}
