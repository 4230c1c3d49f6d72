"""The GenAI conventions' *event* form: content in ``gen_ai.{system,user,assistant,tool}.message``
and ``gen_ai.choice`` span events or OTLP log records instead of attributes (Strands Agents'
default telemetry, the v1.36 semconv, instrumentations that log their content). Spans are made
with the real OpenTelemetry SDK, mapped and built into trajectories, and the user must see the
question, every call with its arguments, result and error, and the final answer; then the same on
the real Strands Agents captures."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval.conventions import genai
from otel_eval.mapping import map_spans
from otel_eval.otlp_json import read_trace_file
from otel_eval.session_evaluation import apply_logs
from otel_eval.spans import LogEvent, SpanEvent, SpanRecord, from_otlp, from_sdk_span
from otel_eval.trajectory import Trajectory, build_trajectory

CAPTURES = Path(__file__).parent / "data" / "captures"
SYSTEM = "You are a helpful assistant."


class Recorder:
    """A TracerProvider whose finished spans are kept, as SpanRecords."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests.genai_events")

    def spans(self) -> list[SpanRecord]:
        self.provider.force_flush()
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


def trajectory_of(spans: list[SpanRecord], session: str, events: list[LogEvent] | None = None) -> Trajectory:
    mapped = [m for m in map_spans(spans) if m.session_id == session]
    assert mapped, session
    if events:
        apply_logs(mapped, events)
    return build_trajectory(session, mapped)


def calls_of(trajectory: Trajectory, turn: int = 0) -> list[tuple[str, dict[str, Any], Any, str | None]]:
    return [(c.name, c.args, c.result, c.error) for c in trajectory.turns[turn].calls]


# --- Strands Agents' default telemetry (v1.36 events, Bedrock content blocks) --------------------


def strands_turn(
    recorder: Recorder, session: str, question: str, steps: list[list[tuple[str, dict, str, bool]]], answer: str
) -> None:
    """One agent turn the way Strands Agents records it by default: the agent span with the
    system prompt, the user's message and the answer as events; per model call a chat span whose
    history and response are events; per tool call an ``execute_tool`` span whose input is a
    ``gen_ai.tool.message`` event and whose result is a ``gen_ai.choice`` event. Each step is the
    model's parallel calls as (tool, arguments, result text, failed)."""
    tracer = recorder.tracer
    ids = itertools.count(1)
    common = {"gen_ai.system": "strands-agents", "session.id": session}
    history: list[tuple[str, list[dict[str, Any]]]] = [("user", [{"text": question}])]

    def history_events(span: Any) -> None:
        span.add_event("gen_ai.system.message", {"content": json.dumps([{"text": SYSTEM}])})
        for role, content in history:
            name = (
                "gen_ai.tool.message" if any("toolResult" in block for block in content) else f"gen_ai.{role}.message"
            )
            span.add_event(name, {"content": json.dumps(content)})

    with tracer.start_as_current_span(
        "invoke_agent assistant",
        attributes={**common, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant"},
    ) as agent:
        agent.add_event("gen_ai.system.message", {"content": json.dumps([{"text": SYSTEM}])})
        agent.add_event("gen_ai.user.message", {"content": json.dumps([{"text": question}])})
        for step in steps:
            uses = [
                {"toolUse": {"toolUseId": f"tooluse_{next(ids)}", "name": name, "input": args}}
                for name, args, _, _ in step
            ]
            with tracer.start_as_current_span(
                "execute_event_loop_cycle", attributes={**common, "gen_ai.operation.name": "execute_event_loop_cycle"}
            ):
                with tracer.start_as_current_span(
                    "chat", attributes={**common, "gen_ai.operation.name": "chat"}
                ) as chat:
                    history_events(chat)
                    chat.add_event("gen_ai.choice", {"finish_reason": "tool_use", "message": json.dumps(uses)})
                results = []
                for use, (name, args, result, failed) in zip(uses, step):
                    call_id = use["toolUse"]["toolUseId"]
                    with tracer.start_as_current_span(
                        f"execute_tool {name}",
                        attributes={
                            **common,
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": name,
                            "gen_ai.tool.call.id": call_id,
                        },
                    ) as tool:
                        tool.add_event(
                            "gen_ai.tool.message", {"role": "tool", "content": json.dumps(args), "id": call_id}
                        )
                        tool.add_event("gen_ai.choice", {"message": json.dumps([{"text": result}]), "id": call_id})
                        if failed:
                            tool.set_status(Status(StatusCode.ERROR, result))
                    results.append(
                        {
                            "toolResult": {
                                "toolUseId": call_id,
                                "status": "error" if failed else "success",
                                "content": [{"text": result}],
                            }
                        }
                    )
                history.extend([("assistant", uses), ("user", results)])
        with tracer.start_as_current_span("chat", attributes={**common, "gen_ai.operation.name": "chat"}) as chat:
            history_events(chat)
            chat.add_event("gen_ai.choice", {"finish_reason": "end_turn", "message": json.dumps([{"text": answer}])})
        agent.add_event("gen_ai.choice", {"message": answer + "\n", "finish_reason": "end_turn"})


def test_strands_style_events_give_the_question_calls_results_and_answer():
    recorder = Recorder()
    strands_turn(
        recorder,
        "s1",
        "Compare Paris and London",
        [
            [
                ("get_weather", {"city": "Paris"}, "18°C and cloudy", False),
                ("get_weather", {"city": "London"}, "15°C and rainy", False),
            ]
        ],
        "Paris is warmer.",
    )
    trajectory = trajectory_of(recorder.spans(), "s1")
    assert len(trajectory.turns) == 1
    turn = trajectory.turns[0]
    assert turn.user_input == "Compare Paris and London"
    assert calls_of(trajectory) == [
        ("get_weather", {"city": "Paris"}, "18°C and cloudy", None),
        ("get_weather", {"city": "London"}, "15°C and rainy", None),
    ]
    assert turn.calls[0].group is not None and turn.calls[0].group == turn.calls[1].group  # one parallel request
    assert turn.final_response.strip() == "Paris is warmer."


def test_strands_style_failed_call_then_retry():
    recorder = Recorder()
    strands_turn(
        recorder,
        "s5",
        "Weather in Berlin?",
        [
            [("get_weather", {"city": "Berln"}, "Error: Unknown city: Berln", True)],
            [("get_weather", {"city": "Berlin"}, "12°C and windy", False)],
        ],
        "It is 12°C in Berlin.",
    )
    trajectory = trajectory_of(recorder.spans(), "s5")
    (first, second) = calls_of(trajectory)
    assert first[:2] == ("get_weather", {"city": "Berln"}) and "Unknown city" in first[3]
    assert second == ("get_weather", {"city": "Berlin"}, "12°C and windy", None)
    assert trajectory.turns[0].final_response.strip() == "It is 12°C in Berlin."


def test_strands_style_json_results_are_values():
    recorder = Recorder()
    rows = {"sql": "SELECT 1", "rows": [{"n": 1}]}
    strands_turn(
        recorder, "s4", "Run the query", [[("call_db_agent", {"question": "q"}, json.dumps(rows), False)]], "Done."
    )
    assert calls_of(trajectory_of(recorder.spans(), "s4")) == [("call_db_agent", {"question": "q"}, rows, None)]


def test_a_tool_span_whose_events_carry_tool_use_and_tool_result_blocks():
    recorder = Recorder()
    with recorder.tracer.start_as_current_span(
        "execute_tool get_weather",
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "session.id": "b"},
    ) as tool:
        tool.add_event(
            "gen_ai.tool.message",
            {
                "content": json.dumps(
                    [{"toolUse": {"toolUseId": "t9", "name": "get_weather", "input": {"city": "Tokyo"}}}]
                )
            },
        )
        tool.add_event(
            "gen_ai.choice",
            {
                "message": json.dumps(
                    [{"toolResult": {"toolUseId": "t9", "status": "error", "content": [{"text": "service down"}]}}]
                )
            },
        )
    (call,) = trajectory_of(recorder.spans(), "b").turns[0].calls
    # the call failed by what its result says, though the span's status does not
    assert (call.name, call.args, call.call_id, call.result, call.error) == (
        "get_weather",
        {"city": "Tokyo"},
        "t9",
        "service down",
        "service down",
    )


# --- the v1.36 semconv events as OpenAI instrumentations write them ------------------------------


def test_openai_style_events_with_tool_calls_and_a_linked_tool_message():
    recorder = Recorder()
    tracer = recorder.tracer
    session = {"session.id": "oa"}
    calls = [{"id": "call_1", "type": "function", "function": {"name": "book", "arguments": '{"people": 2}'}}]
    with tracer.start_as_current_span(
        "invoke_agent planner", attributes={"gen_ai.operation.name": "invoke_agent", **session}
    ) as agent:
        agent.add_event("gen_ai.user.message", {"content": "Book a table for two"})
        with tracer.start_as_current_span(
            "chat gpt-4o", attributes={"gen_ai.operation.name": "chat", **session}
        ) as chat:
            chat.add_event("gen_ai.system.message", {"content": "You book restaurants."})
            chat.add_event("gen_ai.user.message", {"content": "Book a table for two"})
            chat.add_event(
                "gen_ai.choice",
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message.role": "assistant",
                    "message.tool_calls": json.dumps(calls),
                },
            )
        with tracer.start_as_current_span(
            "execute_tool book",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "book",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"people": 2}',
                "gen_ai.tool.call.result": '{"ok": true}',
                **session,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o", attributes={"gen_ai.operation.name": "chat", **session}
        ) as chat:
            chat.add_event("gen_ai.user.message", {"content": "Book a table for two"})
            chat.add_event("gen_ai.assistant.message", {"tool_calls": json.dumps(calls)})
            chat.add_event("gen_ai.tool.message", {"content": '{"ok": true}', "id": "call_1"})
            chat.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message.content": "Booked for two."})
    spans = recorder.spans()
    trajectory = trajectory_of(spans, "oa")
    turn = trajectory.turns[0]
    assert turn.user_input == "Book a table for two"
    assert calls_of(trajectory) == [("book", {"people": 2}, {"ok": True}, None)]
    assert turn.calls[0].call_id == "call_1"
    assert turn.final_response == "Booked for two."
    chat = next(m for m in map_spans(spans) if m.span.name.startswith("chat") and m.reading.requested_calls)
    assert chat.reading.system_prompt == "You book restaurants."


# --- the same content only in OTLP log records ---------------------------------------------------


def test_log_records_fill_chat_and_tool_spans_that_carry_no_content():
    recorder = Recorder()
    tracer = recorder.tracer
    session = {"session.id": "logs"}
    with tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", **session}
    ):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat", **session}):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", **session},
        ):
            pass
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat", **session}):
            pass
    spans = recorder.spans()
    first_chat, tool, last_chat = [
        s for s in sorted(spans, key=lambda s: s.start_ns) if not s.name.startswith("invoke")
    ]

    def log(span: SpanRecord, name: str, body: Any, t: int) -> LogEvent:
        return LogEvent(span.trace_id, span.span_id, span.start_ns + t, name, body)

    events = [
        log(first_chat, "gen_ai.user.message", {"content": [{"type": "text", "text": "Find order 7"}]}, 1),
        log(
            first_chat,
            "gen_ai.choice",
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_7", "name": "lookup", "input": {"order": 7}}],
                },
            },
            2,
        ),
        log(tool, "gen_ai.tool.message", {"role": "tool", "content": {"order": 7}, "id": "toolu_7"}, 1),
        log(tool, "gen_ai.choice", {"message": "shipped", "id": "toolu_7"}, 2),
        log(last_chat, "gen_ai.user.message", {"content": "Find order 7"}, 1),
        log(last_chat, "gen_ai.choice", {"message": [{"text": "Order 7 has shipped."}]}, 2),
    ]
    trajectory = trajectory_of(spans, "logs", events)
    turn = trajectory.turns[0]
    assert turn.user_input == "Find order 7"
    assert calls_of(trajectory) == [("lookup", {"order": 7}, "shipped", None)]
    assert turn.calls[0].call_id == "toolu_7"
    assert turn.final_response == "Order 7 has shipped."


# --- bad input -------------------------------------------------------------------------------------


def test_malformed_event_bodies_leave_the_field_empty_and_say_why():
    recorder = Recorder()
    tracer = recorder.tracer
    session = {"session.id": "bad"}
    with tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", **session}
    ) as agent:
        agent.add_event("gen_ai.user.message", {"content": "Hello"})
        with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat", **session}) as chat:
            chat.add_event("gen_ai.user.message", {"content": "Hello"})
            chat.add_event("gen_ai.choice", {"message": '[{"text": "cut off mid'})
        with tracer.start_as_current_span(
            "execute_tool f", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", **session}
        ) as tool:
            tool.add_event("gen_ai.tool.message", {"content": '{"x": '})
            tool.add_event("gen_ai.choice", {"message": json.dumps([{"hologram": {"x": 1}}])})
        agent.add_event("gen_ai.choice", {"message": json.dumps([{"type": "sparkles", "n": 3}, {"text": "Hi!"}])})
    spans = recorder.spans()
    readings = {m.span.name: m.reading for m in map_spans(spans)}
    chat, tool, agent_reading = readings["chat"], readings["execute_tool f"], readings["invoke_agent a"]
    assert chat.response is None and any("does not parse" in reason for reason in chat.unread)
    assert tool.tool.args == {} and any("does not parse" in reason for reason in tool.unread)
    # a result of no known block shape is the result as it came, not dropped
    assert tool.tool.result == [{"hologram": {"x": 1}}]
    # an unknown block among an answer's blocks is kept as text, and named
    assert "Hi!" in agent_reading.response and any("sparkles" in reason for reason in agent_reading.unread)
    turn = trajectory_of(spans, "bad").turns[0]
    assert turn.user_input == "Hello" and [c.name for c in turn.calls] == ["f"]


@pytest.mark.parametrize(
    "attributes",
    [
        {"content": 5},
        {"content": json.dumps([[[[{"text": 1}]]]])},
        {"message": '{"role": 7, "content": {}}'},
        {"message.tool_calls": "not json", "message.content": 3},
        {"id": "x", "content": "[{]"},
        {},
        {"gen_ai.event.content": '{"message": [null, 1, "a"]}'},
    ],
)
def test_odd_event_attributes_never_stop_a_span_from_reading(attributes):
    recorder = Recorder()
    for operation in ("chat", "execute_tool", "invoke_agent"):
        with recorder.tracer.start_as_current_span(
            f"{operation} x", attributes={"gen_ai.operation.name": operation, "session.id": "odd"}
        ) as span:
            for name in ("gen_ai.user.message", "gen_ai.tool.message", "gen_ai.choice", "gen_ai.assistant.message"):
                span.add_event(name, attributes)
    mapped = map_spans(recorder.spans())
    assert len(mapped) == 3 and all(m.reading.convention == "genai" for m in mapped)
    build_trajectory("odd", mapped)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=6)
    | st.sampled_from(["text", "toolUse", "toolResult", "role", "content", "message", "[{", '{"', "error"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "text",
                    "toolUse",
                    "toolResult",
                    "toolUseId",
                    "name",
                    "input",
                    "content",
                    "status",
                    "json",
                    "role",
                    "message",
                    "tool_calls",
                    "function",
                    "arguments",
                    "id",
                    "type",
                    "parts",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)
_attribute = st.one_of(st.text(max_size=6), st.integers(), st.builds(json.dumps, _json))
_event = st.builds(
    lambda name, attributes: SpanEvent(name, 1, attributes),
    st.sampled_from(
        [
            "gen_ai.system.message",
            "gen_ai.user.message",
            "gen_ai.assistant.message",
            "gen_ai.tool.message",
            "gen_ai.choice",
            "gen_ai.client.inference.operation.details",
        ]
    ),
    st.dictionaries(
        st.sampled_from(
            [
                "content",
                "message",
                "id",
                "role",
                "tool_calls",
                "message.content",
                "message.tool_calls",
                "gen_ai.event.content",
                "gen_ai.input.messages",
                "gen_ai.output.messages",
            ]
        ),
        _attribute,
        max_size=3,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_event, max_size=4), operation=st.sampled_from(["chat", "execute_tool", "invoke_agent"]), body=_json
)
def test_property_any_event_content_reads_without_raising(events, operation, body):
    span = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        f"{operation} x",
        1,
        2,
        attributes={"gen_ai.operation.name": operation, "gen_ai.tool.name": "x"},
        events=tuple(events),
    )
    reading = genai.read(span)
    assert reading.convention == "genai" and all(isinstance(reason, str) for reason in reading.unread)
    logs = [LogEvent(span.trace_id, span.span_id, 3, e.name, body, e.attributes) for e in events]
    assert genai.apply_log_events(reading, logs).convention == "genai"


# --- the real Strands Agents captures ----------------------------------------------------------------


def _capture(name: str) -> list[SpanRecord]:
    path = CAPTURES / f"{name}.traces.pb"
    if not path.exists():
        pytest.skip(f"{path.name} not captured")
    return [s for r in read_trace_file(path) for s in from_otlp(r.resource_spans).spans]


@pytest.mark.parametrize("capture", ["strands_default", "strands_latest"])
def test_strands_captures_read_every_scenario_right(capture):
    from captures.scenarios import SCENARIOS, run_tool

    spans = _capture(capture)
    for scenario in SCENARIOS:
        trajectory = trajectory_of(spans, f"{capture}-{scenario.session}")
        assert [t.user_input for t in trajectory.turns] == list(scenario.turns), scenario.id
        for turn, text in zip(trajectory.turns, scenario.turns):
            steps = scenario.steps[text]
            expected = [call for step in steps for call in step.calls]
            assert [(c.name, c.args) for c in turn.calls] == [(n, a) for n, a in expected], scenario.id
            for call in turn.calls:
                try:
                    result = run_tool(call.name, call.args)
                except ValueError as error:  # the scenario's failing call
                    assert call.error is not None and str(error) in call.error, scenario.id
                else:
                    assert call.error is None and call.result == result, scenario.id
            assert " ".join(turn.final_response.split()) == steps[-1].answer, scenario.id
