"""Vertex-native export (seed vertex-export-schema.md): turn merging, 1-based ``turn`` indexes into
request.contents, LLM texts between tool calls as model messages, the legacy fields, and the
``otel-eval export --format vertex`` command end to end on a real database."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.errors import InputError
from otel_eval.export import add_export_arguments, export_main
from otel_eval.mapping import map_spans
from otel_eval.spans import from_sdk_span
from otel_eval.trajectory import ActualToolCall, Trajectory, Turn, build_trajectory
from otel_eval.vertex_record import intermediate_texts, vertex_record
from tests.test_export_evalset import record_sessions


def turn(index, user, final, calls=(), start=0):
    return Turn(
        index=index,
        trace_id=f"t{index}",
        user_input=user,
        final_response=final,
        calls=[ActualToolCall(name=n, args=a, result=r, error=e, turn=index) for n, a, r, e in calls],
        start_ns=start,
    )


def test_consecutive_same_role_messages_merge_and_turn_indexes_follow_the_merge():
    trajectory = Trajectory(
        session_id="s1",
        turns=[
            # The agent said nothing in turn 1, so the two user messages become one content.
            turn(
                0,
                "Weather in Oslo?",
                None,
                [("get_weather", {"city": "Oslo"}, {"temp": 3}, None)],
                start=1_700_000_000_123_000_000,
            ),
            turn(
                1,
                "Hello?",
                "It is 3°C in Oslo.",
                [("get_forecast", {"city": "Oslo"}, "rain", None), ("get_alerts", {"city": "Oslo"}, None, "timeout")],
            ),
            turn(2, "Thanks", "You're welcome."),
        ],
    )
    record = vertex_record(trajectory, {"t1": ["Let me look that up."]})

    assert record["request"]["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Oslo?\n\nHello?"}]},
        {"role": "model", "parts": [{"text": "Let me look that up.\n\nIt is 3°C in Oslo."}]},
        {"role": "user", "parts": [{"text": "Thanks"}]},
        {"role": "model", "parts": [{"text": "You're welcome."}]},
    ]
    assert [e["turn"] for e in record["intermediate_events"]] == [1, 2, 2]
    assert record["intermediate_events"][0] == {
        "function_call": {"name": "get_weather", "args": {"city": "Oslo"}},
        "function_response": {"name": "get_weather", "response": {"temp": 3}},
        "turn": 1,
    }
    assert record["intermediate_events"][1]["function_response"]["response"] == {"output": "rain"}
    assert record["intermediate_events"][2]["function_response"]["response"] == {"error": "timeout"}
    assert record["response"] == {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "You're welcome."}]}}]
    }
    assert record["prompt"] == "Thanks"
    assert record["prompt_concat"] == "Weather in Oslo?\n\nHello?\n\nThanks"
    assert record["response_concat"] == "Let me look that up.\n\nIt is 3°C in Oslo.\n\nYou're welcome."
    assert record["conversation_history"] == record["request"]["contents"][:2]
    assert record["generated_trajectory"] == [
        {"tool": "get_weather", "args": {"city": "Oslo"}, "output": '{"temp": 3}', "turn": 1},
        {"tool": "get_forecast", "args": {"city": "Oslo"}, "output": "rain", "turn": 2},
        {"tool": "get_alerts", "args": {"city": "Oslo"}, "output": "error: timeout", "turn": 2},
    ]
    assert {k: record["metadata"][k] for k in ("total_turns", "total_tools", "user_turns", "model_turns")} == {
        "total_turns": 4,
        "total_tools": 3,
        "user_turns": 2,
        "model_turns": 2,
    }
    assert record["session_id"] == "s1"
    assert record["title"] == "Weather in Oslo?"
    assert record["created"] == "2023-11-14T22:13:20.123Z"


def test_a_session_without_an_answer_has_no_candidates():
    record = vertex_record(Trajectory(session_id="s", turns=[turn(0, "hi", None)]))
    assert record["response"] == {"candidates": []}
    assert record["response_concat"] == ""
    assert record["conversation_history"] == []


def _llm_span(tracer, text, calls):
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "m",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Weather in Rome?",
        "llm.output_messages.0.message.role": "assistant",
    }
    if text is not None:
        attributes["llm.output_messages.0.message.content"] = text
    for i, (name, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{i}.tool_call"
        attributes[f"{prefix}.id"] = f"call_{i}"
        attributes[f"{prefix}.function.name"] = name
        attributes[f"{prefix}.function.arguments"] = json.dumps(args)
    with tracer.start_as_current_span("ChatCompletion", attributes=attributes):
        pass


def test_llm_text_said_alongside_tool_calls_is_a_model_message():
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "t"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span(
        "agent",
        attributes={"openinference.span.kind": "AGENT", "input.value": "Weather in Rome?", "session.id": "rome"},
    ):
        _llm_span(tracer, "Let me check Rome.", [("get_weather", {"city": "Rome"})])
        with tracer.start_as_current_span(
            "get_weather",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": '{"city": "Rome"}',
                "output.value": '{"temp": 25}',
            },
        ):
            pass
        _llm_span(tracer, '{"tool_calls": []}', [("noop", {})])  # a JSON dump is not something said
        _llm_span(tracer, "25°C in Rome.", [])
    provider.shutdown()
    spans = [from_sdk_span(s) for s in memory.get_finished_spans()]
    mapped = map_spans(spans)
    trace_id = spans[0].trace_id
    assert intermediate_texts(mapped) == {trace_id: ["Let me check Rome."]}

    record = vertex_record(build_trajectory("rome", mapped), intermediate_texts(mapped))
    assert record["request"]["contents"][1] == {
        "role": "model",
        "parts": [{"text": "Let me check Rome.\n\n25°C in Rome."}],
    }
    assert [e["turn"] for e in record["intermediate_events"]] == [2]


def _parse(argv):
    parser = argparse.ArgumentParser(prog="otel-eval export")
    add_export_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def small_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("vertex") / "v.db"
    record_sessions(
        db,
        [
            ("s-follow", ["What's the weather in Paris?", "What about tomorrow?"], "1.0.0"),
            ("s-tokyo", ["What's the weather in Tokyo?"], "1.0.0"),
        ],
    )
    return db


def test_export_command_writes_json_lines_and_a_json_summary(small_db, tmp_path, capsys):
    out = tmp_path / "sessions.jsonl"
    code = export_main(_parse(["--format", "vertex", "--db", str(small_db), "-o", str(out), "--json"]))
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {
        "format": "vertex",
        "output": str(out),
        "dbs": [str(small_db)],
        "sessions": ["s-follow", "s-tokyo"],
        "count": 2,
        "records": 2,
        "skipped": [],
    }
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    follow = records[0]
    assert follow["session_id"] == "s-follow"
    assert [c["role"] for c in follow["request"]["contents"]] == ["user", "model", "user", "model"]
    assert [(e["function_call"]["name"], e["turn"]) for e in follow["intermediate_events"]] == [
        ("get_weather", 2),
        ("get_forecast", 4),
    ]
    assert follow["prompt"] == "What about tomorrow?"
    assert follow["response"]["candidates"][0]["content"]["parts"][0]["text"] == "Tomorrow in Paris: 20°C and sunny."
    assert follow["metadata"]["agent_version"] == "1.0.0"


def test_export_command_selects_sessions_and_reports_bad_input(small_db, tmp_path, capsys):
    out = tmp_path / "one.jsonl"
    assert (
        export_main(_parse(["--format", "vertex", "--db", str(small_db), "--session", "s-tokyo", "-o", str(out)])) == 0
    )
    assert [json.loads(l)["session_id"] for l in out.read_text().splitlines()] == ["s-tokyo"]
    assert "exported 1 session(s) as vertex" in capsys.readouterr().err

    with pytest.raises(InputError) as err:
        export_main(_parse(["--format", "vertex", "--db", str(tmp_path / "missing.db"), "-o", str(out)]))
    assert err.value.reason == "database file not found"
    with pytest.raises(InputError) as err:
        export_main(_parse(["--format", "vertex", "--db", str(small_db), "--since", "yesterday", "-o", str(out)]))
    assert err.value.location == "--since"
    with pytest.raises(InputError):
        export_main(_parse(["--format", "vertex", "--db", str(small_db), "--json"]))
    assert [json.loads(l)["session_id"] for l in out.read_text().splitlines()] == ["s-tokyo"]  # untouched
