"""The real-size benchmark's load (benchmarks/realsize.py) is what it says: real captures replayed
with fresh ids, each copy a session of its own that the collector reads as the framework's
session, scored against the golden set the captures were made for, and no copy sharing a trace,
a session or a span time with the capture it came from."""

from __future__ import annotations

import collections

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks import realsize
from benchmarks.ingest_parts.captures import captured_sessions
from otel_eval import evaluate
from otel_eval.mapping import session_id_of
from otel_eval.models import EvalSet
from otel_eval.spans import from_otlp


def _replayed(tmp_path, captures: str, epoch: int):
    args = realsize.parse_args(["--captures", captures, "--golden-cases", "50", "--templates", "2"])
    workload, pool = realsize.build_workload(args, tmp_path)
    request = ExportTraceServiceRequest.FromString(workload.templates[0].render(epoch))
    return workload, pool, from_otlp(request.resource_spans).spans


def test_every_copy_of_a_captured_session_is_a_session_of_its_own(tmp_path):
    workload, pool, spans = _replayed(tmp_path, "langgraph_openllmetry,crewai_openinference", epoch=5)
    template = workload.templates[0]
    traces_of: dict[str, set[str]] = collections.defaultdict(set)
    for span in spans:
        named = session_id_of(span)
        if named is not None:
            traces_of[named].add(span.trace_id)
    assert len(traces_of) == template.sessions  # one session id per copy, none left as captured
    assert all(sid.startswith("bench-00000005-") for sid in traces_of)
    traces = [t for members in traces_of.values() for t in members]
    assert len(traces) == len(set(traces))  # no trace in two sessions
    captured_ids = {span.trace_id.hex() for s in pool for _, span in s.spans}
    assert not captured_ids & {span.trace_id for span in spans}
    assert len(spans) == template.spans
    captured_size = sum(s.encoded_bytes for s in pool) / sum(len(s.spans) for s in pool)
    assert len(template.data) / template.spans > 0.8 * captured_size  # the spans keep their size


def test_the_replayed_sessions_pass_the_golden_set_they_were_captured_for(tmp_path):
    workload, _, spans = _replayed(tmp_path, "langgraphjs_openinference,pydantic_ai_native", epoch=9)
    golden = EvalSet.model_validate_json(workload.golden_path.read_text())
    results = [r for r in evaluate(spans, golden=[golden], db=tmp_path / "replayed.db") if r.session_id]
    assert len(results) == workload.templates[0].sessions
    assert {r.eval_id for r in results} <= {"S1", "S2", "S3", "S4", "S5", "S6"}
    assert all(r.verdict == "passed" for r in results), [(r.session_id, r.eval_id, r.verdict) for r in results]


def test_an_unknown_capture_name_is_refused_with_the_known_ones(capsys):
    try:
        realsize.parse_args(["--captures", "langgraph_openllmetry,no_such_framework"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("an unknown capture was accepted")
    err = capsys.readouterr().err
    assert "no capture named no_such_framework" in err and "crewai_openinference" in err


def test_traces_that_name_no_session_are_left_out():
    # LangGraph through OpenLLMetry sends a setup trace of its own; only the six conversations count.
    sessions = captured_sessions("langgraph_openllmetry")
    assert sorted(s.session_id.removeprefix("langgraph_openllmetry-")[:2] for s in sessions) == [
        "s1",
        "s2",
        "s3",
        "s4",
        "s5",
        "s6",
    ]
