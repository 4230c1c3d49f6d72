"""The Vercel AI SDK's own telemetry (``ai.*`` attributes), built with the real OpenTelemetry SDK the
way AI SDK 4, 6 and 7's legacy integration write it, and the real captures of AI SDK 6 and 7
(``tests/data/captures/vercel_ai_sdk*.traces.pb``) read end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from captures.scenarios import SCENARIOS
from otel_eval.conventions import DETECTION_ORDER, vercel_ai
from otel_eval.mapping import map_spans, read_span
from otel_eval.spans import from_sdk_span
from otel_eval.trajectory import Trajectory, build_trajectory

SYSTEM = "You are a helpful weather assistant."
TOOL_DEFS = [
    json.dumps(
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    )
]
CAPTURES = Path(__file__).parent / "data" / "captures"


class Recorder:
    """A tracer named "ai" (the AI SDK's) whose finished spans come back as SpanRecords."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "weather-service"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("ai")

    def span(self, name: str, **attributes: Any):
        return self.tracer.start_as_current_span(name, attributes={"ai.operationId": name, **attributes})

    def spans(self):
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


def base(metadata: dict[str, str], function_id: str = "weather-agent") -> dict[str, Any]:
    return {
        "operation.name": f"x {function_id}",
        "resource.name": function_id,
        "ai.telemetry.functionId": function_id,
        "ai.model.provider": "openai.chat",
        "ai.model.id": "gpt-4o-mini",
        **{f"ai.telemetry.metadata.{k}": v for k, v in metadata.items()},
    }


def v6_turn(rec: Recorder, history: list[dict[str, Any]], question: str, metadata: dict[str, str]) -> None:
    """One generateText call as AI SDK 6 records it: a parallel pair of calls (one fails), then the
    answer. ``history`` is the conversation before this turn, in the SDK's ModelMessage form."""
    common = base(metadata)
    prompt = {"system": SYSTEM, "messages": [*history, {"role": "user", "content": question}]}
    sent = [
        {"role": "system", "content": SYSTEM},
        *history,
        {"role": "user", "content": [{"type": "text", "text": question}]},
    ]
    calls = [("call_1", {"city": "Paris"}), ("call_2", {"city": "Atlantis"})]
    with rec.span("ai.generateText", **common, **{"ai.prompt": json.dumps(prompt)}) as run:
        with rec.span(
            "ai.generateText.doGenerate",
            **common,
            **{
                "ai.prompt.messages": json.dumps(sent),
                "ai.prompt.tools": TOOL_DEFS,
                "gen_ai.system": "openai.chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "ai.response.finishReason": "tool-calls",
                "ai.response.toolCalls": json.dumps(
                    [{"toolCallId": cid, "toolName": "get_weather", "input": json.dumps(args)} for cid, args in calls]
                ),
                "ai.usage.inputTokens": 40,
                "ai.usage.outputTokens": 9,
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 9,
            },
        ):
            pass
        for cid, args in calls:
            with rec.span(
                "ai.toolCall",
                **common,
                **{"ai.toolCall.name": "get_weather", "ai.toolCall.id": cid, "ai.toolCall.args": json.dumps(args)},
            ) as tool:
                if args["city"] == "Atlantis":
                    error = ValueError("Unknown city: Atlantis")
                    tool.record_exception(error)
                    tool.set_status(Status(StatusCode.ERROR, str(error)))
                else:
                    tool.set_attribute("ai.toolCall.result", json.dumps("It is 18°C and cloudy in Paris."))
        results = [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool-call", "toolCallId": cid, "toolName": "get_weather", "input": args}
                    for cid, args in calls
                ],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "call_1",
                        "toolName": "get_weather",
                        "output": {"type": "text", "value": "It is 18°C and cloudy in Paris."},
                    },
                    {
                        "type": "tool-result",
                        "toolCallId": "call_2",
                        "toolName": "get_weather",
                        "output": {"type": "error-text", "value": "Unknown city: Atlantis"},
                    },
                ],
            },
        ]
        with rec.span(
            "ai.generateText.doGenerate",
            **common,
            **{
                "ai.prompt.messages": json.dumps([*sent, *results]),
                "ai.prompt.tools": TOOL_DEFS,
                "gen_ai.request.model": "gpt-4o-mini",
                "ai.response.finishReason": "stop",
                "ai.response.text": "Paris is 18°C and cloudy; I know no Atlantis.",
                "ai.usage.inputTokens": 80,
                "ai.usage.outputTokens": 12,
            },
        ):
            pass
        run.set_attribute("ai.response.text", "Paris is 18°C and cloudy; I know no Atlantis.")
        run.set_attribute("ai.usage.inputTokens", 120)


def trajectory_of(spans, session: str | None = None) -> Trajectory:
    mapped = map_spans(spans)
    if session is not None:
        mapped = [m for m in mapped if m.session_id == session]
    return build_trajectory(session or "s", mapped)


# --- detection and span types ----------------------------------------------------------------------


def test_the_dialect_is_tried_before_genai_so_its_own_keys_win():
    assert DETECTION_ORDER.index("vercel_ai") < DETECTION_ORDER.index("genai")
    rec = Recorder()
    v6_turn(rec, [], "What's the weather in Paris and Atlantis?", {"sessionId": "chat-1"})
    readings = {s.span_id: read_span(s) for s in rec.spans()}
    assert {r.convention for r in readings.values()} == {"vercel_ai"}
    kinds = sorted((s.name, readings[s.span_id].span_type) for s in rec.spans())
    assert kinds == [
        ("ai.generateText", "agent"),
        ("ai.generateText.doGenerate", "llm"),
        ("ai.generateText.doGenerate", "llm"),
        ("ai.toolCall", "tool"),
        ("ai.toolCall", "tool"),
    ]


@pytest.mark.parametrize(
    "operation, kind",
    [
        ("ai.streamText", "agent"),
        ("ai.generateObject", "agent"),
        ("ai.streamObject", "agent"),
        ("ai.streamText.doStream", "llm"),
        ("ai.streamObject.doStream", "llm"),
        ("ai.embed.doEmbed", "llm"),
        ("ai.embed", "chain"),
        ("ai.embedMany", "chain"),
        ("ai.toolCall", "tool"),
    ],
)
def test_each_operation_is_typed_by_what_it_does(operation, kind):
    rec = Recorder()
    with rec.span(operation, **base({})):
        pass
    span = rec.spans()[0]
    assert vercel_ai.read(span).span_type == kind
    assert vercel_ai.quick_span_type(span) == kind


# --- one turn ----------------------------------------------------------------------------------------


def test_a_turn_reads_with_its_session_user_query_calls_errors_and_answer():
    rec = Recorder()
    v6_turn(rec, [], "What's the weather in Paris and Atlantis?", {"sessionId": "chat-1", "userId": "u-7"})
    trajectory = trajectory_of(rec.spans(), "chat-1")
    assert trajectory.user_id == "u-7"
    (turn,) = trajectory.turns
    assert turn.user_input == "What's the weather in Paris and Atlantis?"
    assert turn.final_response == "Paris is 18°C and cloudy; I know no Atlantis."
    assert [(c.name, c.args, c.call_id) for c in turn.calls] == [
        ("get_weather", {"city": "Paris"}, "call_1"),
        ("get_weather", {"city": "Atlantis"}, "call_2"),
    ]
    paris, atlantis = turn.calls
    assert paris.result == "It is 18°C and cloudy in Paris." and paris.succeeded
    assert "Unknown city: Atlantis" in atlantis.error
    assert paris.group is not None and paris.group == atlantis.group  # asked for in one response
    assert turn.llm_calls == 2 and turn.input_tokens == 120 and turn.output_tokens == 21


def test_model_calls_show_the_prompt_system_tools_and_model():
    rec = Recorder()
    v6_turn(rec, [], "What's the weather in Paris and Atlantis?", {"sessionId": "chat-1"})
    llm = next(read_span(s) for s in rec.spans() if s.name.endswith("doGenerate"))
    assert llm.user_input == "What's the weather in Paris and Atlantis?"
    assert llm.system_prompt == SYSTEM
    assert [t.name for t in llm.tools_available] == ["get_weather"]
    assert llm.tools_available[0].args_schema["properties"] == {"city": {"type": "string"}}
    assert llm.model == "gpt-4o-mini"
    assert llm.sources["agent_task"] == "ai.prompt.messages"
    assert llm.sources["tool_calls"] == "ai.response.toolCalls"
    run = next(read_span(s) for s in rec.spans() if s.name == "ai.generateText")
    assert run.agent_name == "weather-agent" and run.system_prompt == SYSTEM
    assert run.sources["session_id"] == "ai.telemetry.metadata.sessionId"
    assert run.sources["agent_response"] == "ai.response.text"


def test_a_second_turn_is_asked_the_new_question_not_the_first_one():
    rec = Recorder()
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello! How can I help?"}]},
    ]
    v6_turn(rec, history, "And the weather in Paris?", {"session_id": "chat-2"})
    (turn,) = trajectory_of(rec.spans(), "chat-2").turns
    assert turn.user_input == "And the weather in Paris?"


# --- other releases -----------------------------------------------------------------------------------


def test_ai_sdk_4_names_args_result_and_prompt_tokens():
    """AI SDK 4: ``args`` / ``result`` in parts and in ai.toolCall.*, usage in promptTokens, and a
    plain ``prompt`` string in ai.prompt."""
    rec = Recorder()
    common = base({"sessionId": "v4"})
    with rec.span("ai.generateText", **common, **{"ai.prompt": json.dumps({"prompt": "Weather in Rome?"})}) as run:
        with rec.span(
            "ai.generateText.doGenerate",
            **common,
            **{
                "ai.prompt.format": "prompt",
                "ai.prompt.messages": json.dumps(
                    [{"role": "user", "content": [{"type": "text", "text": "Weather in Rome?"}]}]
                ),
                "ai.response.toolCalls": json.dumps(
                    [
                        {
                            "toolCallType": "function",
                            "toolCallId": "c1",
                            "toolName": "get_weather",
                            "args": "{\"city\":\"Rome\"}",
                        }
                    ]
                ),
                "ai.usage.promptTokens": 11,
                "ai.usage.completionTokens": 3,
            },
        ):
            pass
        with rec.span(
            "ai.toolCall",
            **common,
            **{
                "ai.toolCall.name": "get_weather",
                "ai.toolCall.id": "c1",
                "ai.toolCall.args": "{\"city\":\"Rome\"}",
                "ai.toolCall.result": json.dumps({"temp_c": 25}),
            },
        ):
            pass
        with rec.span(
            "ai.generateText.doGenerate",
            **common,
            **{
                "ai.prompt.messages": json.dumps(
                    [
                        {"role": "user", "content": [{"type": "text", "text": "Weather in Rome?"}]},
                        {
                            "role": "assistant",
                            "content": [
                                {
                                    "type": "tool-call",
                                    "toolCallId": "c1",
                                    "toolName": "get_weather",
                                    "args": {"city": "Rome"},
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "content": [
                                {
                                    "type": "tool-result",
                                    "toolCallId": "c1",
                                    "toolName": "get_weather",
                                    "result": {"temp_c": 25},
                                }
                            ],
                        },
                    ]
                ),
                "ai.response.text": "25°C in Rome.",
                "ai.usage.promptTokens": 20,
                "ai.usage.completionTokens": 5,
            },
        ):
            pass
        run.set_attribute("ai.response.text", "25°C in Rome.")
    (turn,) = trajectory_of(rec.spans(), "v4").turns
    assert turn.user_input == "Weather in Rome?"
    assert [(c.name, c.args, c.result) for c in turn.calls] == [("get_weather", {"city": "Rome"}, {"temp_c": 25})]
    assert turn.final_response == "25°C in Rome."
    assert (turn.input_tokens, turn.output_tokens) == (31, 8)


def test_ai_sdk_7_legacy_names_input_output_and_the_call_context():
    """AI SDK 7's legacy integration: ``ai.toolCall.input`` / ``.output``, ``instructions`` in
    ai.prompt, and the session and user in the call's context (``ai.settings.context.*``)."""
    rec = Recorder()
    common = {**base({}), "ai.settings.context.sessionId": "v7-chat", "ai.settings.context.userId": "u-9"}
    with rec.span(
        "ai.streamText",
        **common,
        **{
            "ai.prompt": json.dumps(
                {"instructions": SYSTEM, "messages": [{"role": "user", "content": [{"type": "text", "text": "Oslo?"}]}]}
            )
        },
    ) as run:
        with rec.span(
            "ai.streamText.doStream",
            **common,
            **{
                "ai.response.toolCalls": json.dumps(
                    [{"type": "tool-call", "toolCallId": "t1", "toolName": "get_weather", "input": {"city": "Oslo"}}]
                )
            },
        ):
            pass
        with rec.span(
            "ai.toolCall",
            **common,
            **{
                "ai.toolCall.name": "get_weather",
                "ai.toolCall.id": "t1",
                "ai.toolCall.input": "{\"city\":\"Oslo\"}",
                "ai.toolCall.output": "\"Snowing in Oslo.\"",
            },
        ):
            pass
        run.set_attribute("ai.response.text", "It is snowing in Oslo.")
    trajectory = trajectory_of(rec.spans(), "v7-chat")
    assert trajectory.user_id == "u-9"
    (turn,) = trajectory.turns
    assert turn.user_input == "Oslo?"
    assert [(c.name, c.args, c.result) for c in turn.calls] == [("get_weather", {"city": "Oslo"}, "Snowing in Oslo.")]
    assert turn.final_response == "It is snowing in Oslo."
    run_reading = next(read_span(s) for s in rec.spans() if s.name == "ai.streamText")
    assert run_reading.system_prompt == SYSTEM


def test_a_structured_output_run_answers_with_its_object():
    rec = Recorder()
    with rec.span(
        "ai.generateObject",
        **base({"sessionId": "o"}),
        **{"ai.prompt": json.dumps({"prompt": "Give me a city"}), "ai.response.object": json.dumps({"city": "Lima"})},
    ):
        pass
    reading = read_span(rec.spans()[0])
    assert reading.user_input == "Give me a city"
    assert json.loads(reading.response) == {"city": "Lima"}


@pytest.mark.parametrize(
    "attributes",
    [
        {"ai.prompt": "{not json"},
        {"ai.prompt": json.dumps({"messages": "oops", "prompt": 42})},
        {"ai.prompt.messages": json.dumps([{"role": "user", "content": [{"type": "image", "image": "..."}, 7, None]}])},
        {"ai.response.toolCalls": json.dumps([{"toolName": ""}, "x", {"toolName": "t", "input": "{bad"}])},
        {"ai.prompt.tools": ["{bad", json.dumps({"name": "t", "inputSchema": "nope"})]},
        {"ai.toolCall.args": "{bad", "ai.toolCall.result": "{bad"},
    ],
)
def test_malformed_values_leave_fields_empty_and_never_raise(attributes):
    rec = Recorder()
    for operation in ("ai.generateText", "ai.generateText.doGenerate", "ai.toolCall"):
        with rec.span(operation, **attributes):
            pass
    for span in rec.spans():
        reading = vercel_ai.read(span)  # directly: read_span would hide an exception
        assert reading.convention == "vercel_ai"


def test_what_was_not_read_is_named_and_the_rest_still_reads():
    rec = Recorder()
    with rec.span("ai.generateText", **{"ai.prompt": "{\"messages\": [", "ai.response.text": "Hi"}):
        with rec.span(
            "ai.generateText.doGenerate",
            **{
                "ai.prompt.messages": json.dumps(
                    [
                        {
                            "role": "user",
                            "content": [
                                {"type": "image", "image": "aGk="},
                                {"type": "text", "text": "What is in this picture?"},
                            ],
                        }
                    ]
                ),
                "ai.response.toolCalls": "[{oops",
                "ai.response.text": "A cat.",
            },
        ):
            pass
    model_call, run = (read_span(s) for s in rec.spans())
    assert run.user_input is None and run.response == "Hi"
    assert any("ai.prompt" in reason and "does not parse" in reason for reason in run.unread)
    assert model_call.user_input == "What is in this picture?" and model_call.response == "A cat."
    assert any("ai.prompt.messages" in reason and "image" in reason for reason in model_call.unread)
    assert any("ai.response.toolCalls" in reason for reason in model_call.unread)


def test_a_failed_tool_result_in_the_history_reads_as_failed():
    messages = vercel_ai.messages_of(
        [
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "c1",
                        "toolName": "get_weather",
                        "output": {"type": "error-text", "value": "Unknown city: Atlantis"},
                    },
                    {
                        "type": "tool-result",
                        "toolCallId": "c2",
                        "toolName": "get_weather",
                        "output": {"type": "json", "value": {"temp_c": 18}},
                    },
                ],
            }
        ]
    )
    (message,) = messages
    failed, ok = message.responses
    assert (failed.call_id, failed.value) == ("c1", "Unknown city: Atlantis") and failed.is_error
    assert (ok.call_id, ok.value) == ("c2", {"temp_c": 18}) and not ok.is_error


# --- the real captures -----------------------------------------------------------------------------------

#: AI SDK 6, AI SDK 7's legacy integration (``ai.*``) and AI SDK 7's GenAI integration, whose
#: ``invoke_agent`` / ``agent_step`` spans carry the call context (``ai.settings.context.*``) next to
#: GenAI attributes.
REAL = sorted(CAPTURES.glob("vercel_ai_sdk*.traces.pb"))


def capture_spans(path: Path):
    from otel_eval.otlp_json import read_trace_file
    from otel_eval.spans import from_otlp

    return [s for request in read_trace_file(path) for s in from_otlp(request.resource_spans).spans]


def sessions_of(mapped) -> dict[str, list]:
    """Mapped spans by session, a trace belonging to the session named nearest its root (the
    AI SDK puts the session on its own spans only, not on the GenAI children of AI SDK 7)."""
    by_trace: dict[str, list] = {}
    for m in mapped:
        by_trace.setdefault(m.span.trace_id, []).append(m)
    sessions: dict[str, list] = {}
    for trace_id, members in by_trace.items():
        parents = {m.span.span_id: m.span.parent_span_id for m in members}

        def depth(span_id: str) -> int:
            steps = 0
            while parents.get(span_id) in parents and steps < len(parents):
                span_id, steps = parents[span_id], steps + 1
            return steps

        named = sorted((depth(m.span.span_id), m.span.start_ns, m.session_id) for m in members if m.session_id)
        sessions.setdefault(named[0][2] if named else trace_id, []).extend(members)
    return sessions


def test_the_ai_sdk_captures_are_here():
    names = {p.name for p in REAL}
    assert {"vercel_ai_sdk6.traces.pb", "vercel_ai_sdk7_legacy.traces.pb"} <= names


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_scenario_of_a_real_capture_reads_right(path):
    name = path.name[: -len(".traces.pb")]
    mapped = map_spans(capture_spans(path))
    assert "vercel_ai" in {m.reading.convention for m in mapped}
    sessions = sessions_of(mapped)
    assert sorted(sessions) == sorted(f"{name}-{s.session}" for s in SCENARIOS)
    for scenario in SCENARIOS:
        session = f"{name}-{scenario.session}"
        trajectory = build_trajectory(session, sessions[session])
        assert trajectory.user_id == scenario.user, session
        assert [t.user_input for t in trajectory.turns] == list(scenario.turns), session
        for turn, text in zip(trajectory.turns, scenario.turns):
            steps = scenario.steps[text]
            expected = [(n, a) for step in steps for n, a in step.calls]
            assert [(c.name, c.args) for c in turn.calls] == expected, session
            assert turn.final_response == next(s.answer for s in steps if s.answer), session
            assert turn.llm_calls == len(steps), session
            for call in turn.calls:
                assert call.call_id, session
                if call.args.get("city") == "Berln":  # S5's failed first call
                    assert "Unknown city: Berln" in call.error and call.result is None
                else:
                    assert call.succeeded and call.result not in (None, ""), (session, call)
        if scenario.id == "S2":
            first, second = trajectory.turns[0].calls
            assert first.group is not None and first.group == second.group
        if scenario.id == "S5":
            failed, retried = trajectory.turns[0].calls
            assert failed.step != retried.step


@pytest.mark.parametrize("path", [p for p in REAL if "genai" not in p.name], ids=lambda p: p.name)
def test_the_sdk_own_spans_of_a_capture_all_read_as_this_dialect(path):
    readings = [read_span(s) for s in capture_spans(path)]
    assert {r.convention for r in readings} == {"vercel_ai"}
    tools = [r for r in readings if r.span_type == "tool"]
    assert tools and all(r.sources["parameters_passed"] == "ai.toolCall.args" for r in tools)
    runs = [r for r in readings if r.span_type == "agent"]
    assert runs and all(r.sources["agent_task"] == "ai.prompt" and r.agent_name == "weather-agent" for r in runs)
    assert not [r.unread for r in readings if r.unread]  # every message part of the capture was read


def test_ingest_names_the_session_from_the_sdk_metadata_before_reading_a_span():
    from otel_eval.mapping import session_id_of, user_id_of

    rec = Recorder()
    with rec.span("ai.generateText", **base({"sessionId": "chat-1", "userId": "u-1"})):
        pass
    with rec.span("ai.generateText", **{"ai.settings.context.sessionId": "chat-2"}):
        pass
    first, second = rec.spans()
    assert (session_id_of(first), user_id_of(first), session_id_of(second)) == ("chat-1", "u-1", "chat-2")
