"""OTLP/HTTP receiver against a real Engine, a real uvicorn server and a real SQLite file."""

from __future__ import annotations

import gzip
import json
import sqlite3
import threading

import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.conftest import ids_of, request_with, sdk_spans, stored_span_ids
from tests.polling import wait_until

PB = {"Content-Type": "application/x-protobuf"}
TRACE_ID = "5b8efff798038103d269b633813fc60c"


def url(collector, path: str) -> str:
    return f"http://127.0.0.1:{collector.http_port}{path}"


def test_real_exporter_spans_are_committed_and_a_resend_is_not_stored_twice(start_collector):
    collector = start_collector()
    spans = sdk_spans(traces=2)
    exporter = OTLPSpanExporter(endpoint=url(collector, "/v1/traces"), timeout=10)

    assert exporter.export(spans) == SpanExportResult.SUCCESS
    # Ack after commit: the spans are in the file the moment export() returns.
    assert stored_span_ids(collector.config.db) == ids_of(spans)

    assert exporter.export(spans) == SpanExportResult.SUCCESS
    conn = sqlite3.connect(collector.config.db)
    assert conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 6
    assert collector.engine.stats()["spans_duplicate"] == 6
    exporter.shutdown()


def test_gzip_protobuf_body_is_accepted(start_collector):
    collector = start_collector()
    request = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "root")])
    response = httpx.post(
        url(collector, "/v1/traces"),
        content=gzip.compress(request.SerializeToString()),
        headers={**PB, "Content-Encoding": "gzip"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    assert ExportTraceServiceResponse.FromString(response.content) == ExportTraceServiceResponse()
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "eee19b7ec3c1b174")}


def test_otlp_json_with_hex_ids_is_stored_and_answered_in_json(start_collector):
    collector = start_collector()
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": TRACE_ID,
                                "spanId": "eee19b7ec3c1b174",
                                "name": "root",
                                "kind": 2,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                                "status": {"code": 1},
                            }
                        ]
                    }
                ],
            }
        ]
    }
    response = httpx.post(url(collector, "/v1/traces"), json=body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {}
    conn = sqlite3.connect(collector.config.db)
    assert conn.execute("SELECT trace_id, span_id, kind, status FROM spans").fetchall() == [
        (TRACE_ID, "eee19b7ec3c1b174", "server", "ok")
    ]


def test_spans_with_invalid_ids_are_rejected_through_partial_success_and_the_rest_stored(start_collector):
    collector = start_collector()
    request = request_with(
        [
            (bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "good"),
            (b"\x01\x02\x03\x04", bytes.fromhex("eee19b7ec3c1b175"), "short trace id"),
            (bytes(16), bytes.fromhex("eee19b7ec3c1b176"), "zero trace id"),
        ]
    )
    response = httpx.post(url(collector, "/v1/traces"), content=request.SerializeToString(), headers=PB)
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 2
    assert answer.partial_success.error_message == (
        "span 'short trace id': trace_id has 4 bytes, expected 16; span 'zero trace id': trace_id is all zeros"
    )
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "eee19b7ec3c1b174")}
    metrics = httpx.get(url(collector, "/metrics")).text
    assert "otel_eval_spans_rejected_total 2\n" in metrics


def test_malformed_bodies_get_400_with_a_reason_and_the_server_keeps_serving(start_collector):
    collector = start_collector()
    good = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "root")]).SerializeToString()

    garbage = httpx.post(url(collector, "/v1/traces"), content=b"\xff\xff\xff\xff not protobuf", headers=PB)
    assert garbage.status_code == 400
    status = Status.FromString(garbage.content)
    assert status.code == 3  # INVALID_ARGUMENT
    assert status.message.startswith("body is not a valid ExportTraceServiceRequest protobuf")

    truncated = httpx.post(url(collector, "/v1/traces"), content=good[:-7], headers=PB)
    assert truncated.status_code == 400

    bad_json = httpx.post(
        url(collector, "/v1/traces"), content=b'{"resourceSpans": [', headers={"Content-Type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert bad_json.json()["message"].startswith("body is not valid JSON")

    wrong_shape = httpx.post(url(collector, "/v1/traces"), json={"resourceSpans": "nope"})
    assert wrong_shape.status_code == 400
    assert "ExportTraceServiceRequest" in wrong_shape.json()["message"]

    bad_gzip = httpx.post(
        url(collector, "/v1/traces"), content=b"not gzip at all", headers={**PB, "Content-Encoding": "gzip"}
    )
    assert bad_gzip.status_code == 400
    assert Status.FromString(bad_gzip.content).message.startswith("body is not valid gzip")

    assert stored_span_ids(collector.config.db) == set()
    ok = httpx.post(url(collector, "/v1/traces"), content=good, headers=PB)
    assert ok.status_code == 200
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "eee19b7ec3c1b174")}


def test_wrong_content_type_gets_415(start_collector):
    collector = start_collector()
    response = httpx.post(url(collector, "/v1/traces"), content=b"hello", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert "unsupported Content-Type 'text/plain'" in response.json()["message"]
    brotli = httpx.post(url(collector, "/v1/traces"), content=b"x", headers={**PB, "Content-Encoding": "br"})
    assert brotli.status_code == 415


def test_oversized_body_and_gzip_bomb_get_413(start_collector):
    collector = start_collector(max_request_bytes=64 * 1024)
    big = httpx.post(url(collector, "/v1/traces"), content=b"\x00" * (100 * 1024), headers=PB)
    assert big.status_code == 413
    assert Status.FromString(big.content).message == "body of 102400 bytes exceeds the limit of 65536"

    bomb = gzip.compress(b"\x00" * (10 * 1024 * 1024))  # 10 MiB of zeros in about 10 KiB
    assert len(bomb) < 64 * 1024
    response = httpx.post(url(collector, "/v1/traces"), content=bomb, headers={**PB, "Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert Status.FromString(response.content).message == "decompressed body exceeds 65536 bytes"

    assert httpx.get(url(collector, "/healthz")).status_code == 200


def test_unknown_path_and_wrong_method(start_collector):
    collector = start_collector()
    assert httpx.post(url(collector, "/v1/metrics"), content=b"", headers=PB).status_code == 404
    response = httpx.get(url(collector, "/v1/traces"))
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_bearer_token_is_required_when_configured(start_collector):
    collector = start_collector(auth_token="s3cret")
    body = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174"), "root")]).SerializeToString()

    missing = httpx.post(url(collector, "/v1/traces"), content=body, headers=PB)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(url(collector, "/v1/traces"), content=body, headers={**PB, "Authorization": "Bearer guess"})
    assert wrong.status_code == 401
    assert httpx.get(url(collector, "/metrics")).status_code == 401
    assert httpx.get(url(collector, "/healthz")).status_code == 200
    assert stored_span_ids(collector.config.db) == set()

    exporter = OTLPSpanExporter(endpoint=url(collector, "/v1/traces"), headers={"Authorization": "Bearer s3cret"})
    spans = sdk_spans()
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert stored_span_ids(collector.config.db) == ids_of(spans)
    assert httpx.get(url(collector, "/metrics"), headers={"Authorization": "Bearer s3cret"}).status_code == 200
    exporter.shutdown()


def test_logs_tied_to_spans_are_stored_and_others_reported_as_a_warning(start_collector):
    collector = start_collector()
    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    tied = records.add()
    tied.trace_id, tied.span_id = bytes.fromhex(TRACE_ID), bytes.fromhex("eee19b7ec3c1b174")
    tied.time_unix_nano = 1_700_000_000_000_000_000
    tied.event_name = "gen_ai.user.message"
    tied.body.string_value = "What is the weather in Paris?"
    records.add().body.string_value = "a log line without a span"

    response = httpx.post(url(collector, "/v1/logs"), content=request.SerializeToString(), headers=PB)
    assert response.status_code == 200
    answer = ExportLogsServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_log_records == 0
    assert answer.partial_success.error_message == "1 log record(s) without a trace and span id were ignored"
    conn = sqlite3.connect(collector.config.db)
    assert conn.execute("SELECT trace_id, span_id, event_name FROM log_events").fetchall() == [
        (TRACE_ID, "eee19b7ec3c1b174", "gen_ai.user.message")
    ]


def test_full_queue_gets_503_with_retry_after_then_recovers(start_collector):
    collector = start_collector(queue_spans=1)
    first = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("0000000000000001"), "first")])
    second = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("0000000000000002"), "second")])
    # Hold the database's write lock so the engine's writer cannot commit the first batch:
    # it stays queued, and the one-span queue has no room for the second.
    blocker = sqlite3.connect(collector.config.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    results = {}
    sender = threading.Thread(
        target=lambda: results.setdefault(
            "first", httpx.post(url(collector, "/v1/traces"), content=first.SerializeToString(), headers=PB, timeout=30)
        )
    )
    sender.start()
    wait_until(lambda: collector.engine.stats()["queue_depth"] >= 1, what="the first batch queued")

    full = httpx.post(url(collector, "/v1/traces"), content=second.SerializeToString(), headers=PB)
    assert full.status_code == 503
    assert full.headers["retry-after"] == "1"
    assert Status.FromString(full.content).code == 14  # UNAVAILABLE

    blocker.execute("ROLLBACK")
    blocker.close()
    sender.join(10)
    assert results["first"].status_code == 200
    retried = httpx.post(url(collector, "/v1/traces"), content=second.SerializeToString(), headers=PB)
    assert retried.status_code == 200
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "0000000000000001"), (TRACE_ID, "0000000000000002")}


def test_metrics_report_spans_requests_and_latency_in_prometheus_format(start_collector):
    collector = start_collector()
    exporter = OTLPSpanExporter(endpoint=url(collector, "/v1/traces"))
    assert exporter.export(sdk_spans()) == SpanExportResult.SUCCESS
    httpx.post(url(collector, "/v1/traces"), content=b"\xff\xff", headers=PB)

    response = httpx.get(url(collector, "/metrics"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    lines = set(response.text.splitlines())
    assert "otel_eval_spans_received_total 3" in lines
    assert "otel_eval_spans_stored_total 3" in lines
    assert "otel_eval_queue_depth 0" in lines
    assert "otel_eval_pass_rate NaN" in lines
    assert 'otel_eval_export_requests_total{protocol="http",signal="traces",outcome="ok"} 1' in lines
    assert 'otel_eval_export_requests_total{protocol="http",signal="traces",outcome="invalid"} 1' in lines
    assert 'otel_eval_ingest_duration_seconds_bucket{le="+Inf"} 1' in lines
    assert "otel_eval_ingest_duration_seconds_count 1" in lines
    assert "# TYPE otel_eval_ingest_duration_seconds histogram" in lines
    exporter.shutdown()


def test_healthz_reports_ok_as_json(start_collector):
    collector = start_collector(grpc=None)
    response = httpx.get(url(collector, "/healthz"))
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    assert collector.grpc_port is None


@pytest.mark.parametrize("encoding", ["application/json", "application/x-protobuf"])
def test_error_bodies_use_the_request_encoding(start_collector, encoding):
    collector = start_collector()
    response = httpx.post(url(collector, "/v1/logs"), content=b"\xff{", headers={"Content-Type": encoding})
    assert response.status_code == 400
    assert response.headers["content-type"] == encoding
    if encoding == "application/json":
        assert json.loads(response.content)["code"] == 3
    else:
        assert Status.FromString(response.content).code == 3
