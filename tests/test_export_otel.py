"""Evaluations as OTLP ``gen_ai.evaluation.result`` log records, received by a second, real OTLP
receiver on loopback (a minimal gRPC LogsService server, and a minimal HTTP /v1/logs server):
attributes, event name, and the session's trace and root span ids."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk.trace import TracerProvider

from examples.weather_agent import agent_resource, run_session
from otel_eval.export.otel import EVENT_NAME, ResultForwarder, forward_results
from otel_eval.models.results import CriterionResult, EvalCaseResult
from otel_eval.processor import EvalSpanProcessor
from otel_eval.spans import any_value
from tests.test_export_evalset import GOLDEN


class LogSink(logs_service_pb2_grpc.LogsServiceServicer):
    """The second receiver: keeps every record it is sent."""

    def __init__(self):
        self.records = []
        self.lock = threading.Lock()

    def Export(self, request, context):  # noqa: N802 - gRPC method name
        self.take(request)
        return logs_service_pb2.ExportLogsServiceResponse()

    def take(self, request):
        with self.lock:
            for rl in request.resource_logs:
                resource = {kv.key: any_value(kv.value) for kv in rl.resource.attributes}
                for sl in rl.scope_logs:
                    for rec in sl.log_records:
                        self.records.append((resource, sl.scope.name, rec))

    def wait_for(self, count, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.records) >= count:
                    return list(self.records)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} log records, got {len(self.records)}")


@pytest.fixture
def grpc_sink():
    sink = LogSink()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(sink, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield sink, f"grpc://127.0.0.1:{port}"
    server.stop(0)


@pytest.fixture
def http_sink():
    sink = LogSink()
    paths = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            paths.append((self.path, self.headers["Content-Type"]))
            sink.take(ExportLogsServiceRequest.FromString(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()
            self.wfile.write(logs_service_pb2.ExportLogsServiceResponse().SerializeToString())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield sink, f"http://127.0.0.1:{server.server_address[1]}", paths
    server.shutdown()
    server.server_close()


def attrs(rec):
    return {kv.key: any_value(kv.value) for kv in rec.attributes}


def result_with_every_kind() -> EvalCaseResult:
    return EvalCaseResult(eval_id="weather_tokyo", passed=False, session_id="s-x", score=0.5, criterion_results=[
        CriterionResult(criterion="trajectory_match", score=1.0, passed=True, threshold=0.8),
        CriterionResult(criterion="response_match", score=0.25, passed=False, threshold=0.7),
        CriterionResult(criterion="llm_judge", score=0.0, passed=False, threshold=0.7, skipped=True,
                        details={"reason": "no judge endpoint configured"}),
        CriterionResult(criterion="no_apology", score=0.0, passed=False, threshold=1.0,
                        error="options.regex: invalid regular expression '['"),
    ])


def test_one_record_per_criterion_with_semconv_attributes_over_grpc(grpc_sink):
    sink, url = grpc_sink
    forwarder = ResultForwarder(url, locate=lambda sid: ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"),
                                schedule_delay_millis=50)
    forwarder(result_with_every_kind())
    records = sink.wait_for(4)
    forwarder.shutdown()

    assert [r[2].event_name for r in records] == [EVENT_NAME] * 4
    assert {r[1] for r in records} == {"otel_eval"}
    assert records[0][0]["service.name"] == "otel-eval"
    for _, _, rec in records:
        assert rec.trace_id.hex() == "0af7651916cd43dd8448eb211c80319c"
        assert rec.span_id.hex() == "b7ad6b7169203331"
    got = [attrs(r[2]) for r in records]
    assert got[0] == {"gen_ai.evaluation.name": "trajectory_match", "gen_ai.evaluation.score.value": 1.0,
                      "gen_ai.evaluation.score.label": "pass",
                      "gen_ai.evaluation.explanation": "score 1 >= threshold 0.8",
                      "otel_eval.criterion.threshold": 0.8, "otel_eval.case.passed": False,
                      "otel_eval.case.verdict": "failed",
                      "otel_eval.case.score": 0.5, "session.id": "s-x", "gen_ai.conversation.id": "s-x",
                      "otel_eval.case_id": "weather_tokyo"}
    assert (got[1]["gen_ai.evaluation.score.label"], got[1]["gen_ai.evaluation.explanation"]) == (
        "fail", "score 0.25 < threshold 0.7")
    assert got[2]["gen_ai.evaluation.score.label"] == "skipped"
    assert "gen_ai.evaluation.score.value" not in got[2]
    assert got[2]["gen_ai.evaluation.explanation"] == "no judge endpoint configured"
    assert got[3]["error.type"] == "otel_eval.criterion_error"
    assert got[3]["gen_ai.evaluation.score.label"] == "error"
    assert records[3][2].severity_text == "WARN" and records[0][2].severity_text == "INFO"


def test_engine_listener_links_records_to_the_sessions_first_trace_over_http(http_sink, tmp_path):
    sink, url, paths = http_sink
    db = tmp_path / "live.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600)
    forwarder = forward_results(processor.engine, url, schedule_delay_millis=50)
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(processor)
    session = run_session(provider, "s-follow", ["What's the weather in Paris?", "What about tomorrow?"],
                          )
    processor.end_session("s-follow")
    processor.engine.wait_idle(10)
    records = sink.wait_for(1)
    forwarder.force_flush()
    processor.shutdown()
    forwarder.shutdown()

    records = sink.records
    assert {p for p in paths} == {("/v1/logs", "application/x-protobuf")}
    names = [attrs(r[2])["gen_ai.evaluation.name"] for r in records]
    assert {"trajectory_match", "response_match", "health"} <= set(names)
    first_trace = session.turns[0].trace_id
    for _, _, rec in records:
        a = attrs(rec)
        assert rec.trace_id.hex() == first_trace
        assert a["session.id"] == "s-follow" and a["otel_eval.case_id"] == "paris_followup"
    # The root span of the first trace: the agent span, whose parent is empty.
    import sqlite3

    conn = sqlite3.connect(db)
    root = conn.execute("SELECT span_id FROM spans WHERE trace_id = ? AND parent_span_id IS NULL",
                        (first_trace,)).fetchone()[0]
    conn.close()
    assert {rec.span_id.hex() for _, _, rec in records} == {root}
    trajectory = next(attrs(r[2]) for r in records if attrs(r[2])["gen_ai.evaluation.name"] == "trajectory_match")
    assert (trajectory["gen_ai.evaluation.score.value"], trajectory["gen_ai.evaluation.score.label"]) == (1.0, "pass")


def test_collector_forwards_results_when_configured(grpc_sink, start_collector):
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    sink, url = grpc_sink
    collector = start_collector(forward_results=url, golden=[str(GOLDEN)])
    assert any("gen_ai.evaluation.result" in line and url in line for line in collector.banner())
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)))
    session = run_session(provider, "s-tokyo", ["What's the weather in Tokyo?"], mark_end=True)
    provider.shutdown()
    records = sink.wait_for(3)  # trajectory, response, health at least; flushed within ~1 s
    tokyo = [r for r in records if attrs(r[2]).get("session.id") == "s-tokyo"]
    assert tokyo and {r[2].trace_id.hex() for r in tokyo} == {session.turns[0].trace_id}
    assert {attrs(r[2])["otel_eval.case_id"] for r in tokyo} == {"weather_tokyo"}
