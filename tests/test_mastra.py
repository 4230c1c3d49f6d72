"""Mastra's tracing as ``@mastra/otel-exporter`` writes it (GenAI attributes plus ``mastra.*``), built
with the real OpenTelemetry SDK, and the real capture ``tests/data/captures/mastra.traces.pb``."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from captures.scenarios import SCENARIOS
from otel_eval.conventions import DETECTION_ORDER, mastra
from otel_eval.mapping import map_spans, read_span
from otel_eval.spans import from_sdk_span
from otel_eval.trajectory import build_trajectory
from tests.test_vercel_ai import capture_spans, sessions_of

SYSTEM = "You are a helpful assistant. Use the tools to answer."
CAPTURE = Path(__file__).parent / "data" / "captures" / "mastra.traces.pb"


class Recorder:
    def __init__(self, session: str = "chat-1", user: str = "user-alice", thread: str | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("@mastra/otel-exporter", "1.4.0")
        self.metadata = {
            "mastra.metadata.sessionId": session,
            "mastra.metadata.userId": user,
            "mastra.metadata.runId": "run-1",
        }
        if thread is not None:
            self.metadata.update(
                {
                    "mastra.metadata.threadId": thread,
                    "mastra.metadata.resourceId": user,
                    "gen_ai.conversation.id": thread,
                }
            )

    @contextmanager
    def span(self, name: str, mastra_type: str, operation: str, kind: SpanKind = SpanKind.INTERNAL, **attributes: Any):
        with self.tracer.start_as_current_span(
            name,
            kind=kind,
            attributes={
                "gen_ai.operation.name": operation,
                "mastra.span.type": mastra_type,
                **attributes,
                **self.metadata,
            },
        ) as span:
            yield span

    def spans(self):
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


def step(
    rec: Recorder,
    index: int,
    messages: list[dict[str, Any]],
    text: str,
    calls: list[tuple[str, dict]],
    results: dict[str, Any],
) -> None:
    """One model step: the step span (its request and response), the model call under it (model,
    usage, text), then the tools it asked for (a result, or an exception)."""
    tool_calls = [{"toolCallId": cid, "toolName": "get_weather", "args": args} for cid, args in calls]
    with rec.span(
        "agent_step Assistant",
        "model_step",
        "agent_step",
        **{
            "mastra.model_step.input": json.dumps(messages),
            "mastra.model_step.output": json.dumps({"text": text, "toolCalls": tool_calls}),
            "mastra.model_step.step_index": index,
        },
    ):
        with rec.span(
            "chat gpt-4o-mini",
            "model_inference",
            "chat",
            SpanKind.CLIENT,
            **{
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
                ),
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.provider.name": "openai.chat",
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 8,
                "gen_ai.agent.id": "assistant",
                "gen_ai.agent.name": "Assistant",
            },
        ):
            with rec.span(
                "model_chunk Assistant",
                "model_chunk",
                "model_chunk",
                **{"mastra.model_chunk.output": json.dumps({"text": text})},
            ):
                pass
        for cid, args in calls:
            with rec.span(
                "execute_tool get_weather",
                "tool_call",
                "execute_tool",
                **{
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": cid,
                    "gen_ai.tool.type": "tool",
                    "gen_ai.tool.call.arguments": json.dumps(args),
                    **(
                        {"gen_ai.tool.call.result": results[cid]}
                        if isinstance(results[cid], str)
                        else {"error.type": "unknown", "error.message": str(results[cid])}
                    ),
                },
            ) as tool:
                if not isinstance(results[cid], str):
                    tool.add_event("exception", {"exception.message": str(results[cid]), "exception.type": "Error"})
                    tool.set_status(Status(StatusCode.ERROR, str(results[cid])))


def run(
    rec: Recorder, question: Any = "Compare the weather in Paris and Atlantis", answer: str = "Paris: 18°C."
) -> None:
    """One agent.generate(): a parallel pair of calls (Atlantis fails), then the answer."""
    calls = [("call_1", {"city": "Paris"}), ("call_2", {"city": "Atlantis"})]
    results = {"call_1": "It is 18°C and cloudy in Paris.", "call_2": ValueError("Unknown city: Atlantis")}
    user_text = question if isinstance(question, str) else "Compare the weather in Paris and Atlantis"
    sent = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user_text}]
    with rec.span(
        "invoke_agent Assistant",
        "agent_run",
        "invoke_agent",
        **{
            "mastra.agent_run.input": question if isinstance(question, str) else json.dumps(question),
            "gen_ai.agent.id": "assistant",
            "gen_ai.agent.name": "Assistant",
            "gen_ai.system_instructions": SYSTEM,
            "gen_ai.tool.definitions": json.dumps(["get_weather", "get_forecast"]),
        },
    ) as agent:
        with rec.span(
            "processor_run MemoryInputFilter",
            "processor_run",
            "processor_run",
            **{"mastra.processor_run.input": json.dumps({"messages": []}), "mastra.processor_run.output": "{}"},
        ):
            pass
        with rec.span(
            "model_generation gpt-4o-mini",
            "model_generation",
            "model_generation",
            **{"mastra.model_generation.input": json.dumps({"messages": sent})},
        ) as generation:
            step(rec, 0, sent, "", calls, results)
            step(
                rec,
                1,
                [
                    *sent,
                    {"role": "assistant", "content": "[tool: get_weather]"},
                    {"role": "tool", "content": "[tool-result: get_weather]"},
                ],
                answer,
                [],
                {},
            )
            generation.set_attribute("mastra.model_generation.output", json.dumps({"text": answer, "toolCalls": []}))
        agent.set_attribute("mastra.agent_run.output", json.dumps({"text": answer, "files": []}))


def trajectory_of(rec: Recorder, session: str):
    mapped = [m for m in map_spans(rec.spans()) if m.session_id == session]
    return build_trajectory(session, mapped)


# --- detection and span types ----------------------------------------------------------------------


def test_mastra_spans_are_read_by_their_own_dialect_ahead_of_genai():
    assert DETECTION_ORDER.index("mastra") < DETECTION_ORDER.index("genai")
    rec = Recorder()
    run(rec)
    assert {read_span(s).convention for s in rec.spans()} == {"mastra"}
    kinds = {}
    for s in rec.spans():
        kinds.setdefault(s.attributes["mastra.span.type"], set()).add(read_span(s).span_type)
        assert mastra.quick_span_type(s) == mastra.read(s).span_type
    # one model call per step: the chat span; the step and the generation group it
    assert kinds == {
        "agent_run": {"agent"},
        "model_generation": {"chain"},
        "model_step": {"chain"},
        "model_inference": {"llm"},
        "model_chunk": {"chain"},
        "tool_call": {"tool"},
        "processor_run": {"chain"},
    }


def test_with_no_inference_spans_the_generation_is_the_model_call():
    """Exporters paired with a Mastra that emits no model_inference spans make model_generation the
    ``chat`` span, with the GenAI messages."""
    rec = Recorder()
    with rec.span(
        "chat gpt-4o-mini",
        "model_generation",
        "chat",
        SpanKind.CLIENT,
        **{
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Hello"}]}]
            ),
            "gen_ai.request.model": "gpt-4o-mini",
        },
    ):
        pass
    reading = read_span(rec.spans()[0])
    assert (reading.span_type, reading.user_input, reading.response) == ("llm", "Hi", "Hello")


# --- a run -------------------------------------------------------------------------------------------


def test_a_run_reads_with_session_user_query_calls_error_and_answer():
    rec = Recorder(session="chat-1", user="user-alice")
    run(rec)
    trajectory = trajectory_of(rec, "chat-1")
    assert trajectory.user_id == "user-alice"
    (turn,) = trajectory.turns
    assert turn.user_input == "Compare the weather in Paris and Atlantis"
    assert turn.final_response == "Paris: 18°C."
    assert [(c.name, c.args, c.call_id) for c in turn.calls] == [
        ("get_weather", {"city": "Paris"}, "call_1"),
        ("get_weather", {"city": "Atlantis"}, "call_2"),
    ]
    paris, atlantis = turn.calls
    assert paris.result == "It is 18°C and cloudy in Paris." and paris.succeeded
    assert atlantis.error == "Unknown city: Atlantis"  # no "unknown:" (Mastra's missing error id)
    assert turn.llm_calls == 2 and turn.input_tokens == 80 and turn.output_tokens == 16


def test_the_agent_span_shows_its_system_prompt_tools_and_where_each_field_came_from():
    rec = Recorder()
    run(rec)
    agent = next(read_span(s) for s in rec.spans() if s.name.startswith("invoke_agent"))
    assert agent.agent_name == "Assistant" and agent.system_prompt == SYSTEM
    assert [t.name for t in agent.tools_available] == ["get_weather", "get_forecast"]
    assert agent.sources["agent_task"] == "mastra.agent_run.input"
    assert agent.sources["agent_response"] == "mastra.agent_run.output"
    assert agent.sources["session_id"] == "mastra.metadata.sessionId"
    assert agent.sources["user_id"] == "mastra.metadata.userId"


def test_a_step_shows_the_request_and_the_calls_it_asked_for():
    rec = Recorder()
    run(rec)
    first = next(read_span(s) for s in rec.spans() if s.attributes.get("mastra.model_step.step_index") == 0)
    assert first.user_input == "Compare the weather in Paris and Atlantis" and first.system_prompt == SYSTEM
    assert [(c.name, c.args, c.call_id) for c in first.requested_calls] == [
        ("get_weather", {"city": "Paris"}, "call_1"),
        ("get_weather", {"city": "Atlantis"}, "call_2"),
    ]


def test_with_memory_the_thread_names_the_session():
    rec = Recorder(user="user-alice", thread="thread-9")  # memory: {thread, resource}, no tracing metadata
    del rec.metadata["mastra.metadata.sessionId"], rec.metadata["mastra.metadata.userId"]
    run(rec)
    trajectory = trajectory_of(rec, "thread-9")
    assert trajectory.user_id == "user-alice"  # the thread's resource: whoever owns it
    assert trajectory.turns[0].user_input == "Compare the weather in Paris and Atlantis"


def test_an_input_of_messages_gives_the_last_user_text():
    stored = [  # Mastra's stored message format (content format 2) and an AI SDK message
        {"role": "user", "content": {"format": 2, "parts": [{"type": "text", "text": "Hi"}], "content": "Hi"}},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
        {"role": "user", "content": {"format": 2, "parts": [{"type": "text", "text": "Weather in Oslo?"}]}},
    ]
    rec = Recorder()
    run(rec, question=stored)
    agent = next(read_span(s) for s in rec.spans() if s.name.startswith("invoke_agent"))
    assert agent.user_input == "Weather in Oslo?"


def test_a_structured_output_answers_with_its_object():
    rec = Recorder()
    with rec.span(
        "invoke_agent Assistant",
        "agent_run",
        "invoke_agent",
        **{"mastra.agent_run.input": "A city?", "mastra.agent_run.output": json.dumps({"object": {"city": "Lima"}})},
    ):
        pass
    reading = read_span(rec.spans()[0])
    assert reading.user_input == "A city?" and json.loads(reading.response) == {"city": "Lima"}


@pytest.mark.parametrize(
    "attributes",
    [
        {"mastra.agent_run.input": "{bad", "mastra.agent_run.output": "[1, 2"},
        {"mastra.agent_run.input": json.dumps({"messages": "x"}), "mastra.agent_run.output": json.dumps([{"text": 3}])},
        {
            "mastra.model_step.input": json.dumps([None, 4, {"role": "user", "content": {"parts": "x"}}]),
            "mastra.model_step.output": json.dumps({"toolCalls": [None, {"toolName": ""}, "x"]}),
        },
        {"gen_ai.tool.definitions": json.dumps([None, 3, {"name": "t"}])},
    ],
)
def test_malformed_values_never_raise(attributes):
    rec = Recorder()
    for mastra_type, operation in (
        ("agent_run", "invoke_agent"),
        ("model_step", "agent_step"),
        ("tool_call", "execute_tool"),
    ):
        with rec.span(f"{operation} x", mastra_type, operation, **attributes):
            pass
    for span in rec.spans():
        reading = mastra.read(span)  # directly: read_span would hide an exception
        assert reading.convention == "mastra"
        if span.attributes.get("mastra.agent_run.input") == "{bad" and reading.span_type == "agent":
            assert reading.user_input is None and reading.response is None
            assert "mastra.agent_run.input looks like JSON but does not parse" in reading.unread


# --- the real capture ------------------------------------------------------------------------------------


def test_the_mastra_capture_is_here():
    assert CAPTURE.exists()


def test_every_scenario_of_the_real_capture_reads_right():
    mapped = map_spans(capture_spans(CAPTURE))
    assert {m.reading.convention for m in mapped} == {"mastra"}
    sessions = sessions_of(mapped)
    assert sorted(sessions) == sorted(f"mastra-{s.session}" for s in SCENARIOS)
    for scenario in SCENARIOS:
        session = f"mastra-{scenario.session}"
        trajectory = build_trajectory(session, sessions[session])
        assert trajectory.user_id == scenario.user, session
        assert [t.user_input for t in trajectory.turns] == list(scenario.turns), session
        for turn, text in zip(trajectory.turns, scenario.turns):
            steps = scenario.steps[text]
            expected = [(n, a) for s in steps for n, a in s.calls]
            assert [(c.name, c.args) for c in turn.calls] == expected, session
            assert turn.final_response == next(s.answer for s in steps if s.answer), session
            assert turn.llm_calls == len(steps), session
            assert turn.input_tokens > 0 and turn.output_tokens > 0, session
            for call in turn.calls:
                assert call.call_id, session
                if call.args.get("city") == "Berln":  # S5's failed first call
                    assert call.error == "Unknown city: Berln" and call.result is None
                else:
                    assert call.succeeded and call.result not in (None, ""), (session, call)
        if scenario.id == "S5":
            failed, retried = trajectory.turns[0].calls
            assert failed.step is None or retried.step is None or retried.step > failed.step
