"""An agent written by hand, traced only by its model client's instrumentation: nothing encloses
its tool loop, so every model call is a trace of its own, and a call's result is recorded only in
the next model call's input. Such a session must still read as one turn per user message, with
every call's result and failure, and score as the agent behaved.

The spans are made with the real OpenTelemetry SDK in the GenAI conventions' form (what
``opentelemetry-instrumentation-openai-v2`` and other client instrumentations write); the
Anthropic capture (``anthropic_openinference``: openinference-instrumentation-anthropic over a
hand-written Messages loop) is the same case as a real package records it.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import evaluate
from otel_eval.mapping import map_spans
from otel_eval.models import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent
from otel_eval.readers import read_spans
from otel_eval.spans import SpanRecord, from_sdk_span
from otel_eval.trajectory import Trajectory, build_trajectory

CAPTURES = Path(__file__).parent / "data" / "captures"
SESSION = "hand-1"


class Client:
    """A hand-written Chat Completions loop's model client, traced the GenAI way: one ``chat``
    span per request, each the root of its own trace (no span encloses the loop)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests.hand_written")
        self.ids = itertools.count(1)

    def chat(self, history: list[dict[str, Any]], reply: dict[str, Any], with_ids: bool = True) -> dict[str, Any]:
        """One model request: ``history`` as ``gen_ai.input.messages``, ``reply`` the model's message;
        returns the reply with call ids given to its tool calls."""
        parts = reply.get("parts", [])
        for part in parts:
            if part["type"] == "tool_call" and with_ids:
                part["id"] = f"call_{next(self.ids)}"
        with self.tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "session.id": SESSION,
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
            },
        ):
            pass
        return {"role": "assistant", "parts": parts}

    def spans(self) -> list[SpanRecord]:
        self.provider.force_flush()
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": args}


def result_of(request: dict[str, Any], result: str) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": request.get("id"), "response": result}]}


def run_turn(client: Client, history: list[dict[str, Any]], question: str, steps, answer: str, with_ids=True) -> None:
    """A user message, then per step the model's calls and their results sent back, then the answer."""
    history.append(user(question))
    for step in steps:
        reply = client.chat(history, {"parts": [call(name, **args) for name, args, _ in step]}, with_ids)
        history.append(reply)
        for part, (_, _, result) in zip(reply["parts"], step):
            history.append(result_of(part, result))
    history.append(client.chat(history, {"parts": [{"type": "text", "content": answer}]}))


def trajectory(spans: list[SpanRecord]) -> Trajectory:
    mapped = [m for m in map_spans(spans) if m.session_id]
    return build_trajectory(mapped[0].session_id or "", mapped)


def test_a_model_call_sent_the_results_is_the_same_turn_and_the_results_reach_the_calls():
    client, history = Client(), []
    run_turn(
        client,
        history,
        "Compare the weather in Paris and London",
        [[("get_weather", {"city": "Paris"}, "18°C, cloudy"), ("get_weather", {"city": "London"}, "15°C, rain")]],
        "Paris is warmer.",
    )
    run_turn(client, history, "And tomorrow in Paris?", [[("get_forecast", {"city": "Paris"}, "20°C")]], "20°C.")
    spans = client.spans()
    assert len({s.trace_id for s in spans}) == 4  # one trace per model call

    turns = trajectory(spans).turns
    assert [t.user_input for t in turns] == ["Compare the weather in Paris and London", "And tomorrow in Paris?"]
    assert [t.final_response for t in turns] == ["Paris is warmer.", "20°C."]
    assert [(c.name, c.args, c.result, c.error) for c in turns[0].calls] == [
        ("get_weather", {"city": "Paris"}, "18°C, cloudy", None),
        ("get_weather", {"city": "London"}, "15°C, rain", None),
    ]
    assert [(c.name, c.result) for c in turns[1].calls] == [("get_forecast", "20°C")]
    assert [t.llm_calls for t in turns] == [2, 2]


def test_the_same_question_asked_again_is_a_new_turn():
    client, history = Client(), []
    run_turn(client, history, "What's the weather in Tokyo?", [[("get_weather", {"city": "Tokyo"}, "22°C")]], "22°C.")
    run_turn(client, history, "What's the weather in Tokyo?", [], "Still 22°C.")
    turns = trajectory(client.spans()).turns
    assert [(t.user_input, t.final_response, len(t.calls)) for t in turns] == [
        ("What's the weather in Tokyo?", "22°C.", 1),
        ("What's the weather in Tokyo?", "Still 22°C.", 0),
    ]


def test_results_without_call_ids_join_the_turn_of_the_same_user_message():
    client, history = Client(), []
    run_turn(
        client,
        history,
        "What's the weather in Tokyo?",
        [[("get_weather", {"city": "Tokyo"}, "22°C")]],
        "22°C.",
        with_ids=False,
    )
    turns = trajectory(client.spans()).turns
    assert len(turns) == 1
    assert (turns[0].user_input, turns[0].final_response) == ("What's the weather in Tokyo?", "22°C.")
    assert [(c.name, c.args) for c in turns[0].calls] == [("get_weather", {"city": "Tokyo"})]


def test_a_loop_that_opens_a_span_per_step_keeps_one_turn_per_user_message():
    """A trace per step (the model call and its tools under a span of the application's): the
    step whose model call is sent the results of the step before continues its turn; a step that
    starts from a new user message does not."""
    client = Client()
    history = [user("What's the weather in Tokyo?")]
    with client.tracer.start_as_current_span("step", attributes={"session.id": SESSION}):
        reply = client.chat(history, {"parts": [call("get_weather", city="Tokyo")]})
    history += [reply, result_of(reply["parts"][0], "22°C")]
    with client.tracer.start_as_current_span("step", attributes={"session.id": SESSION}):
        history.append(client.chat(history, {"parts": [{"type": "text", "content": "22°C."}]}))
    history.append(user("Thanks! And in Paris?"))
    with client.tracer.start_as_current_span("step", attributes={"session.id": SESSION}):
        client.chat(history, {"parts": [{"type": "text", "content": "18°C."}]})
    turns = trajectory(client.spans()).turns
    assert [(t.user_input, t.final_response, [c.result for c in t.calls]) for t in turns] == [
        ("What's the weather in Tokyo?", "22°C.", ["22°C"]),
        ("Thanks! And in Paris?", "18°C.", []),
    ]


def test_anthropic_capture_reads_one_turn_per_user_message_with_results_and_the_failed_try():
    spans = read_spans(CAPTURES / "anthropic_openinference.traces.pb")
    by_session: dict[str, list[Any]] = {}
    for m in map_spans(spans):
        by_session.setdefault(m.session_id or "", []).append(m)

    retried = build_trajectory("s5", by_session["anthropic_openinference-s5-tool-error"])
    assert len(retried.turns) == 1
    assert [(c.name, c.args, c.error is not None) for c in retried.turns[0].calls] == [
        ("get_weather", {"city": "Berln"}, True),  # is_error, kept whole only in the request's input.value
        ("get_weather", {"city": "Berlin"}, False),
    ]
    assert retried.turns[0].final_response == "It is 12°C and windy in Berlin."

    follow_up = build_trajectory("s3", by_session["anthropic_openinference-s3-followup"])
    assert [t.user_input for t in follow_up.turns] == ["What's the weather in Paris?", "What about tomorrow?"]
    sql = build_trajectory("s4", by_session["anthropic_openinference-s4-sql"]).turns[0].calls[0]
    assert sql.name == "call_db_agent" and "SELECT user_id" in json.dumps(sql.result)


def test_a_hand_written_session_scores_as_the_agent_behaved(tmp_path):
    client, history = Client(), []
    run_turn(client, history, "What's the weather in Tokyo?", [[("get_weather", {"city": "Tokyo"}, "22°C")]], "22°C.")

    def golden(city: str) -> EvalSet:
        turn = Invocation(
            invocation_id="t0",
            user_content=MessageContent.user("What's the weather in Tokyo?"),
            expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": city})],
            expected_final_response=MessageContent.assistant("22°C."),
        )
        return EvalSet(eval_set_id="hand", eval_cases=[EvalCase(eval_id="tokyo", conversation=[turn])])

    right = evaluate(client.spans(), golden=[golden("Tokyo")], db=tmp_path / "right.db")
    wrong = evaluate(client.spans(), golden=[golden("Kyoto")], db=tmp_path / "wrong.db")
    assert [r.passed for r in right] == [True]
    assert [r.passed for r in wrong] == [False]


def test_a_model_call_traced_by_the_client_library_and_an_instrumentation_counts_once():
    """anthropic's SDK traces its own requests (``anthropic.messages.create``) beside OpenLLMetry's
    span of the same call (``anthropic.chat``): one response id, one model call, its tokens once."""
    spans = read_spans(CAPTURES / "traceloop_anthropic.traces.pb")
    session = "traceloop_anthropic-s1-weather"
    mine = {s.trace_id for s in spans if s.attributes.get("traceloop.association.properties.session_id") == session}
    mapped = [m for m in map_spans([s for s in spans if s.trace_id in mine])]
    model_spans = [m for m in mapped if m.reading.span_type == "llm"]
    assert sorted(m.span.name for m in model_spans) == ["anthropic.chat"] * 2 + ["anthropic.messages.create"] * 2
    turn = build_trajectory(session, mapped).turns[0]
    assert (turn.llm_calls, turn.input_tokens, turn.output_tokens) == (2, 84, 14)


def test_without_a_session_id_each_step_says_it_is_part_of_a_loop(tmp_path):
    """No session id: every trace is a session of its own, and a hand-written loop's steps come
    apart. Each such session says so, and how to tie them (the verdicts cannot be right)."""
    import sqlite3

    from otel_eval.read.evaluations import match_evidence

    client, history = Client(), []
    run_turn(client, history, "What's the weather in Tokyo?", [[("get_weather", {"city": "Tokyo"}, "22°C")]], "22°C.")
    bare = [
        SpanRecord(
            s.trace_id,
            s.span_id,
            s.parent_span_id,
            s.name,
            s.start_ns,
            s.end_ns,
            s.kind,
            s.status,
            "",
            {k: v for k, v in s.attributes.items() if k != "session.id"},
            s.events,
            s.resource,
            s.scope,
        )
        for s in client.spans()
    ]
    results = evaluate(bare, golden=[], db=tmp_path / "e.db")
    assert len(results) == 2  # the two model calls' traces
    with sqlite3.connect(tmp_path / "e.db") as conn:
        notes = [match_evidence(conn, row[0]).note for row in conn.execute("SELECT id FROM evaluations")]
    assert len(notes) == 2 and all(n and "Set session.id" in n for n in notes)
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_eval.cli",
            "report",
            "--db",
            str(tmp_path / "e.db"),
            "--session",
            results[0].session_id,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "note: this session is one trace of a tool loop" in " ".join(shown.split())

    # With the session id, one session and no note.
    results = evaluate(client.spans(), golden=[], db=tmp_path / "f.db")
    with sqlite3.connect(tmp_path / "f.db") as conn:
        notes = [match_evidence(conn, row[0]).note for row in conn.execute("SELECT id FROM evaluations")]
    assert len(results) == 1 and notes == [None]


def test_a_failure_told_only_in_the_result_text_makes_the_call_a_retried_attempt(tmp_path):
    """OpenAI's tool messages have no error field: a loop reports a failed call in the text it
    sends back. Retried with the right argument, the failed try is set aside, as with a tool span."""
    client, history = Client(), []
    run_turn(
        client,
        history,
        "What's the weather in Berlin?",
        [
            [("get_weather", {"city": "Berln"}, "Error: Unknown city: Berln")],
            [("get_weather", {"city": "Berlin"}, "12°C")],
        ],
        "12°C in Berlin.",
    )
    calls = trajectory(client.spans()).turns[0].calls
    assert [(c.args, c.error) for c in calls] == [
        ({"city": "Berln"}, "Error: Unknown city: Berln"),
        ({"city": "Berlin"}, None),
    ]
    turn = Invocation(
        invocation_id="t0",
        user_content=MessageContent.user("What's the weather in Berlin?"),
        expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": "Berlin"})],
        expected_final_response=MessageContent.assistant("12°C in Berlin."),
    )
    golden = EvalSet(eval_set_id="hand", eval_cases=[EvalCase(eval_id="berlin", conversation=[turn])])
    assert [r.passed for r in evaluate(client.spans(), golden=[golden], db=tmp_path / "e.db")] == [True]


def test_which_results_read_as_a_failure():
    from otel_eval.trajectory.calls import failure_of

    failed = {
        "Error: Unknown city: Berln": "Error: Unknown city: Berln",
        "Error executing tool 'get_weather': boom": "Error executing tool 'get_weather': boom",
        "ERROR: 500": "ERROR: 500",
    }
    assert {v: failure_of(v) for v in failed} == failed
    assert failure_of({"error": "Unknown city: Berln"}) == "Unknown city: Berln"  # Gemini's functionResponse
    assert failure_of("city not found", flagged=True) == "city not found"  # Anthropic's is_error
    fine = ["Error rate is 5% today", "22°C", "No errors: all good", "", {"error": None, "output": 1}, None, 3]
    assert [failure_of(v) for v in fine] == [None] * len(fine)


def test_a_result_sent_back_is_cut_to_the_value_limit_like_a_tool_span_result():
    client, history = Client(), []
    huge = "x" * 5000
    run_turn(client, history, "Fetch the log", [[("fetch_log", {"day": "today"}, huge)]], "Done.")
    mapped = map_spans(client.spans(), max_value_chars=1000)
    result = build_trajectory(SESSION, mapped).turns[0].calls[0].result
    assert result.startswith("x" * 1000) and len(result) < 1100 and "5000" in result


def test_gemini_calls_without_ids_take_their_results_by_name_and_order():
    """Gemini's functionCall / functionResponse carry no ids: the n-th response named X answers
    the n-th call of X. A failure is the response's ``error`` (google-genai's own convention)."""
    spans = read_spans(CAPTURES / "google_genai_openinference.traces.pb")
    by_session: dict[str, list[Any]] = {}
    for m in map_spans(spans):
        by_session.setdefault(m.session_id or "", []).append(m)
    retried = build_trajectory("s5", by_session["google_genai_openinference-s5-tool-error"]).turns
    assert len(retried) == 1
    assert [(c.call_id, c.args, c.error, c.result) for c in retried[0].calls] == [
        (None, {"city": "Berln"}, "Unknown city: Berln", {"error": "Unknown city: Berln"}),
        (None, {"city": "Berlin"}, None, {"result": "It is 12°C and windy in Berlin."}),
    ]
    parallel = build_trajectory("s2", by_session["google_genai_openinference-s2-multi-tool"]).turns[0].calls
    assert [(c.args["city"], c.result) for c in parallel] == [
        ("Paris", {"result": "It is 18°C and cloudy in Paris."}),
        ("London", {"result": "It is 15°C and rainy in London."}),
    ]


def test_litellm_calls_recorded_without_ids_take_the_results_sent_back_by_name():
    """LiteLLM's own OTel logger writes the calls a response asks for without their ids
    (``gen_ai.completion.0.function_call.*``); the next request's history names them
    (``tool_calls`` ids, then the role-tool results by id). The loop still reads as one turn per
    user message, each call with its result, and S5's failed try as failed."""
    spans = read_spans(CAPTURES / "litellm_otel.traces.pb")
    by_session: dict[str, list[Any]] = {}
    for m in map_spans(spans):
        by_session.setdefault(m.session_id or "", []).append(m)
    follow_up = build_trajectory("s3", by_session["litellm_otel-s3-followup"]).turns
    assert [t.user_input for t in follow_up] == ["What's the weather in Paris?", "What about tomorrow?"]
    retried = build_trajectory("s5", by_session["litellm_otel-s5-tool-error"]).turns
    assert len(retried) == 1
    assert [(c.call_id, c.args, c.error is not None, c.result) for c in retried[0].calls] == [
        (None, {"city": "Berln"}, True, "Error: Unknown city: Berln"),
        (None, {"city": "Berlin"}, False, "It is 12°C and windy in Berlin."),
    ]
