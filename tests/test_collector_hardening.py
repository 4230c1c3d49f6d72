"""Attacks from issue 12 against real servers on 127.0.0.1: poison bodies next to well-behaved SDK
exporters, DNS rebinding Host headers, slow sockets, a client that hangs up mid-body, the body
budget. (Start-up refusals and a disk that fills up: test_collector_startup.py.)"""

from __future__ import annotations

import logging
import socket
import threading
import time

import grpc
import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.conftest import ids_of, request_with, sdk_spans, stored_span_ids
from tests.polling import wait_until

PB = {"Content-Type": "application/x-protobuf"}
JSON_CT = {"Content-Type": "application/json"}
TRACE_ID = "5b8efff798038103d269b633813fc60c"
TOO_LATE = 2**64 - 1  # a valid fixed64, but SQLite integers stop at 2^63 - 1


def url(collector, path: str) -> str:
    return f"http://127.0.0.1:{collector.http_port}{path}"


def poison_request(span_id: str = "00000000000000aa"):
    """One good span and one whose end time cannot be stored."""
    request = request_with(
        [
            (bytes.fromhex(TRACE_ID), bytes.fromhex("00000000000000a1"), "good"),
            (bytes.fromhex(TRACE_ID), bytes.fromhex(span_id), "poison"),
        ]
    )
    request.resource_spans[0].scope_spans[0].spans[1].end_time_unix_nano = TOO_LATE
    return request


def json_trace(kind: str = "1", start: str = "1700000000000000000") -> bytes:
    text = (
        f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{TRACE_ID}","spanId":"00000000000000b1",'
        f'"name":"j","kind":{kind},"startTimeUnixNano":"{start}","endTimeUnixNano":"1700000000000000001"}}]}}]}}]}}'
    )
    return text.encode()


# --- 1. poison isolation ---------------------------------------------------------------------


def test_a_span_with_an_unstorable_timestamp_is_rejected_through_partial_success(start_collector, channel_to):
    collector = start_collector()
    response = httpx.post(url(collector, "/v1/traces"), content=poison_request().SerializeToString(), headers=PB)
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert answer.partial_success.error_message == (
        f"span 'poison': end_time_unix_nano {TOO_LATE} is out of range (at most 2^63-1 ns, i.e. before the year 2262)"
    )

    stub = TraceServiceStub(channel_to(collector))
    request = poison_request("00000000000000bb")
    request.resource_spans[0].scope_spans[0].spans[1].events.add(name="late", time_unix_nano=TOO_LATE)
    request.resource_spans[0].scope_spans[0].spans[1].end_time_unix_nano = 1
    answer = stub.Export(request, timeout=10)
    assert answer.partial_success.rejected_spans == 1
    assert "events[0].time_unix_nano" in answer.partial_success.error_message
    assert stored_span_ids(collector.config.db) == {(TRACE_ID, "00000000000000a1")}


def test_json_numbers_that_overflow_an_enum_or_timestamp_are_400_with_a_reason(start_collector):
    collector = start_collector(grpc=None)
    for body, where in ((json_trace(kind="1e400"), "kind"), (json_trace(start='18446744073709551616'), "Nano")):
        response = httpx.post(url(collector, "/v1/traces"), content=body, headers=JSON_CT)
        assert response.status_code == 400, response.text
        status = response.json()
        assert status["code"] == 3 and where in status["message"]

    logs = (
        f'{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{{"traceId":"{TRACE_ID}","spanId":"00000000000000b1",'
        '"severityNumber":1e400,"body":{"stringValue":"x"}}]}]}]}'
    ).encode()
    response = httpx.post(url(collector, "/v1/logs"), content=logs, headers=JSON_CT)
    assert response.status_code == 400
    assert "severityNumber" in response.json()["message"]
    assert httpx.post(url(collector, "/v1/traces"), content=json_trace(), headers=JSON_CT).status_code == 200


def test_a_log_record_with_an_unstorable_time_is_rejected_and_counted(start_collector):
    collector = start_collector(grpc=None)
    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    for span_id, when in (("00000000000000c1", 1_700_000_000_000_000_000), ("00000000000000c2", TOO_LATE)):
        record = records.add(trace_id=bytes.fromhex(TRACE_ID), span_id=bytes.fromhex(span_id), time_unix_nano=when)
        record.body.string_value = "hello"
    response = httpx.post(url(collector, "/v1/logs"), content=request.SerializeToString(), headers=PB)
    assert response.status_code == 200
    answer = ExportLogsServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_log_records == 1
    assert "time_unix_nano" in answer.partial_success.error_message


def test_a_poison_sender_costs_well_behaved_exporters_nothing(start_collector):
    """One client sends an unstorable body every few ms on both protocols; two real SDK exporters
    (gRPC and HTTP) export all the while and every one of their spans is stored."""
    collector = start_collector()
    stop = threading.Event()
    poison_answers: list[str] = []

    def poison() -> None:
        channel = grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}")
        raw = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with httpx.Client() as client:
            n = 0
            while not stop.is_set():
                n += 1
                body = poison_request(f"{n:016x}").SerializeToString()
                answer = client.post(url(collector, "/v1/traces"), content=body, headers=PB)
                poison_answers.append(f"http {answer.status_code}")
                answer = client.post(url(collector, "/v1/traces"), content=json_trace(kind="1e400"), headers=JSON_CT)
                poison_answers.append(f"http {answer.status_code}")
                try:
                    ExportTraceServiceResponse.FromString(raw(body, timeout=10))
                    poison_answers.append("grpc OK")
                except grpc.RpcError as exc:
                    poison_answers.append(f"grpc {exc.code().name}")
                time.sleep(0.003)
        channel.close()

    poisoner = threading.Thread(target=poison)
    poisoner.start()
    exporters = [
        GrpcSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=10),
        HttpSpanExporter(endpoint=url(collector, "/v1/traces"), timeout=10),
    ]
    sent, results = set(), []
    try:
        # poison flows before good clients start
        wait_until(lambda: len(poison_answers) >= 30, timeout=30, what="30 answers to the poison sender")
        for _ in range(10):
            for exporter in exporters:
                spans = sdk_spans(traces=2)
                results.append(exporter.export(spans))
                sent |= ids_of(spans)
    finally:
        stop.set()
        poisoner.join(30)
        for exporter in exporters:
            exporter.shutdown()
    assert results == [SpanExportResult.SUCCESS] * 20
    assert sent <= stored_span_ids(collector.config.db)
    assert set(poison_answers) <= {"http 200", "http 400", "grpc OK"}


# --- 4. DNS rebinding --------------------------------------------------------------------------


def test_a_foreign_host_gets_403_everywhere_but_healthz(start_collector):
    collector = start_collector(grpc=None, ui=True)
    body = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex("00000000000000d1"), "x")]).SerializeToString()
    evil = {"Host": f"rebind.attacker.example:{collector.http_port}"}
    for method, path in (
        ("POST", "/v1/traces"),
        ("POST", "/v1/logs"),
        ("GET", "/metrics"),
        ("GET", "/ui/"),
        ("GET", "/ui/api/sessions"),
    ):
        response = httpx.request(method, url(collector, path), headers={**PB, **evil}, content=body)
        assert response.status_code == 403, path
        assert "rebind.attacker.example" in response.json()["error"]
        assert "--allowed-host" in response.json()["error"]
    assert stored_span_ids(collector.config.db) == set()
    assert httpx.get(url(collector, "/healthz"), headers=evil).status_code == 200

    for host in ("localhost", f"localhost:{collector.http_port}", "127.0.0.1", f"[::1]:{collector.http_port}"):
        response = httpx.post(url(collector, "/v1/traces"), headers={**PB, "Host": host}, content=body)
        assert response.status_code == 200, host


def test_allowed_host_adds_a_name(start_collector):
    collector = start_collector(grpc=None, allowed_host=["otel.internal"])
    assert httpx.get(url(collector, "/metrics"), headers={"Host": "otel.internal:4318"}).status_code == 200
    assert httpx.get(url(collector, "/metrics"), headers={"Host": "other.internal"}).status_code == 403


# --- 3. slow clients ---------------------------------------------------------------------------


def _trickle(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
        sockets.append(sock)
    return sockets


def test_sockets_trickling_headers_do_not_cost_anyone_service(start_collector):
    collector = start_collector(grpc=None)
    slow = _trickle(collector.http_port, 200)
    try:
        exporter = HttpSpanExporter(endpoint=url(collector, "/v1/traces"), timeout=10)
        spans = sdk_spans(traces=3)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
        assert ids_of(spans) <= stored_span_ids(collector.config.db)
        assert httpx.get(url(collector, "/healthz")).status_code == 200
        assert httpx.get(url(collector, "/metrics")).status_code == 200
    finally:
        for sock in slow:
            sock.close()


def test_headers_not_complete_within_the_header_timeout_lose_the_connection(start_collector):
    from collector.http_server import HttpServer

    collector = start_collector(grpc=None)
    server = HttpServer(collector.http.app, collector.config.http, header_timeout=0.3)
    port = server.start()
    try:
        sock = _trickle(port, 1)[0]
        sock.settimeout(20)
        assert sock.recv(100) == b""  # closed by the server, nothing answered
        sock.close()
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
    finally:
        server.stop(1)


def test_a_client_that_hangs_up_mid_body_is_one_info_line(start_collector, caplog):
    collector = start_collector(grpc=None)
    with caplog.at_level(logging.INFO, logger="otel_eval.collector"):
        sock = socket.create_connection(("127.0.0.1", collector.http_port))
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 1000\r\n\r\n" + b"\x0a" * 10
        )
        sock.close()
        wait_until(lambda: "disconnected after" in caplog.text, what="the disconnect logged")
    lines = [r for r in caplog.records if "disconnected" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in lines] == [("INFO", None)]
    assert "disconnected after 10 bytes of the body" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- 7. memory budget --------------------------------------------------------------------------


def test_bodies_past_the_byte_budget_are_told_to_retry_on_both_protocols(start_collector, channel_to):
    collector = start_collector(max_inflight_bytes=1_000_000)
    # A client that sent 900 kB of a 1 MB body and stalls holds 900 kB of the budget.
    hog = socket.create_connection(("127.0.0.1", collector.http_port))
    hog.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 1000000\r\n\r\n" + b"\x00" * 900_000
    )
    wait_until(lambda: collector.budget.in_use >= 900_000, what="900 kB of the budget held")
    assert collector.budget.in_use == 900_000

    request = request_with([(bytes.fromhex(TRACE_ID), bytes.fromhex(f"{i + 1:016x}"), "x" * 1000) for i in range(150)])
    response = httpx.post(url(collector, "/v1/traces"), content=request.SerializeToString(), headers=PB)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert Status.FromString(response.content).code == 14
    with pytest.raises(grpc.RpcError) as caught:
        TraceServiceStub(channel_to(collector)).Export(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE

    hog.close()  # the budget comes back; the same request goes through
    wait_until(lambda: collector.budget.in_use == 0, what="the budget given back")
    response = httpx.post(url(collector, "/v1/traces"), content=request.SerializeToString(), headers=PB)
    assert response.status_code == 200
    assert len(stored_span_ids(collector.config.db)) == 150
