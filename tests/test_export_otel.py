"""Evaluations as OTLP ``gen_ai.evaluation.result`` log records, received by a second, real OTLP
receiver on loopback (a minimal gRPC LogsService server, and a minimal HTTP /v1/logs server):
attributes, event name, and the session's trace and root span ids."""

from __future__ import annotations

import threading
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
from tests.polling import wait_until
from tests.test_export_evalset import GOLDEN


class LogSink(logs_service_pb2_grpc.LogsServiceServicer):
    """The second receiver: keeps every record it is sent."""

    def __init__(self):
        self.records = []
        self.lock = threading.Lock()

    def Export(self, request, context):
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
        def enough():
            with self.lock:
                return list(self.records) if len(self.records) >= count else None

        return wait_until(enough, timeout=timeout, what=lambda: f"{count} log records, got {len(self.records)}")


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
        def do_POST(self):
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
    return EvalCaseResult(
        eval_id="weather_tokyo",
        passed=False,
        session_id="s-x",
        score=0.5,
        criterion_results=[
            CriterionResult(criterion="trajectory_match", score=1.0, passed=True, threshold=0.8),
            CriterionResult(criterion="response_match", score=0.25, passed=False, threshold=0.7),
            CriterionResult(
                criterion="llm_judge",
                score=0.0,
                passed=False,
                threshold=0.7,
                skipped=True,
                details={"reason": "no judge endpoint configured"},
            ),
            CriterionResult(
                criterion="no_apology",
                score=0.0,
                passed=False,
                threshold=1.0,
                error="options.regex: invalid regular expression '['",
            ),
        ],
    )


def test_one_record_per_criterion_with_semconv_attributes_over_grpc(grpc_sink):
    sink, url = grpc_sink
    forwarder = ResultForwarder(
        url,
        locate=lambda sid: ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"),
        schedule_delay_millis=50,
        forward_skipped=True,
    )
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
    assert got[0] == {
        "gen_ai.evaluation.name": "trajectory_match",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "score 1 >= threshold 0.8",
        "otel_eval.criterion.threshold": 0.8,
        "otel_eval.case.passed": False,
        "otel_eval.case.verdict": "failed",
        "otel_eval.case.score": 0.5,
        "session.id": "s-x",
        "gen_ai.conversation.id": "s-x",
        "otel_eval.case_id": "weather_tokyo",
    }
    assert (got[1]["gen_ai.evaluation.score.label"], got[1]["gen_ai.evaluation.explanation"]) == (
        "fail",
        "score 0.25 < threshold 0.7",
    )
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
    session = run_session(
        provider,
        "s-follow",
        ["What's the weather in Paris?", "What about tomorrow?"],
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
        assert "gen_ai.response.id" not in a  # the example agent's spans record none
        assert a["session.id"] == "s-follow" and a["otel_eval.case_id"] == "paris_followup"
    # The root span of the first trace: the agent span, whose parent is empty.
    import sqlite3

    conn = sqlite3.connect(db)
    root = conn.execute(
        "SELECT span_id FROM spans WHERE trace_id = ? AND parent_span_id IS NULL", (first_trace,)
    ).fetchone()[0]
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
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True))
    )
    session = run_session(provider, "s-tokyo", ["What's the weather in Tokyo?"], mark_end=True)
    provider.shutdown()
    records = sink.wait_for(3)  # trajectory, response, health at least; flushed within ~1 s
    tokyo = [r for r in records if attrs(r[2]).get("session.id") == "s-tokyo"]
    assert tokyo and {r[2].trace_id.hex() for r in tokyo} == {session.turns[0].trace_id}
    assert {attrs(r[2])["otel_eval.case_id"] for r in tokyo} == {"weather_tokyo"}


def test_skipped_criteria_are_not_forwarded_unless_asked(grpc_sink):
    sink, url = grpc_sink
    forwarder = ResultForwarder(url, schedule_delay_millis=50)
    assert forwarder.emit(result_with_every_kind()) == 3
    sink.wait_for(3)
    forwarder.force_flush()
    forwarder.shutdown()
    labels = [attrs(r[2])["gen_ai.evaluation.score.label"] for r in sink.records]
    assert labels == ["pass", "fail", "error"]  # a criterion that failed to run is still sent
    assert (forwarder.emitted, forwarder.skipped) == (3, 1)


def replay_capture(path, grpc_port):
    """Send a capture's ExportTraceServiceRequests, as the real exporter sent them, over OTLP/gRPC."""
    import struct

    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as trace_grpc

    data = path.read_bytes()
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        stub = trace_grpc.TraceServiceStub(channel)
        offset = 0
        while offset < len(data):
            (size,) = struct.unpack(">I", data[offset : offset + 4])
            stub.Export(
                trace_pb2.ExportTraceServiceRequest.FromString(data[offset + 4 : offset + 4 + size]), timeout=10
            )
            offset += 4 + size


def last_response_ids(otlp_json_path) -> dict[str, str]:
    """session.id -> gen_ai.response.id of its latest-ending span that has one, read from the capture."""
    import json

    latest: dict[str, tuple[int, str]] = {}
    for request in json.loads(otlp_json_path.read_text()):
        for rs in request["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    a = {kv["key"]: next(iter(kv["value"].values())) for kv in span.get("attributes", [])}
                    if "gen_ai.response.id" in a:
                        end = int(span["endTimeUnixNano"])
                        if end > latest.get(a["session.id"], (0, ""))[0]:
                            latest[a["session.id"]] = (end, a["gen_ai.response.id"])
    return {sid: rid for sid, (_, rid) in latest.items()}


@pytest.mark.parametrize("forward_skipped", [False, True])
def test_real_openai_sessions_forward_the_response_id_and_skips_only_when_asked(
    grpc_sink, start_collector, forward_skipped
):
    from tests.paths import FIXTURES

    capture = FIXTURES / "realclients" / "openai_otel_genai"
    expected = last_response_ids(capture.with_suffix(".otlp.json"))
    assert len(expected) == 6 and len(set(expected.values())) == 6
    sink, url = grpc_sink
    collector = start_collector(forward_results=url, golden=[str(GOLDEN)], forward_skipped=forward_skipped)
    replay_capture(capture.with_suffix(".requests.pb"), collector.grpc_port)

    def per_session():
        with sink.lock:
            got: dict[str, list[dict]] = {}
            for _, _, rec in sink.records:
                a = attrs(rec)
                got.setdefault(a["session.id"], []).append(a)
        return got

    wait_until(
        lambda: (
            len(per_session()) >= 6
            and collector.forwarding.results.emitted <= sum(len(v) for v in per_session().values())
        ),
        timeout=30,
        what="every forwarded record of the six sessions at the sink",
    )
    got = per_session()
    assert set(got) == set(expected)
    for session_id, records in got.items():
        assert {a["gen_ai.response.id"] for a in records} == {expected[session_id]}, session_id
    labels = [a["gen_ai.evaluation.score.label"] for records in got.values() for a in records]
    stats = collector.forwarding.stats()
    if forward_skipped:
        assert "skipped" in labels and stats["forward_evaluation_skipped"] == 0
    else:
        assert "skipped" not in labels and stats["forward_evaluation_skipped"] > 0


def test_forward_skipped_comes_from_the_flag_the_environment_or_the_file(tmp_path):
    from collector.config import load_config

    toml = tmp_path / "c.toml"
    toml.write_text("forward_skipped = true\n")
    assert load_config([], environ={}).forward_skipped is False
    assert load_config(["--forward-skipped"], environ={}).forward_skipped is True
    assert load_config([], environ={"OTEL_EVAL_FORWARD_SKIPPED": "1"}).forward_skipped is True
    assert load_config(["--config", str(toml)], environ={}).forward_skipped is True
