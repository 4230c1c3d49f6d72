"""Pydantic AI spans, built with the real SDK the way its Instrumentation capability writes them
(data format v5 names, and the v2 ``agent run`` / ``running tool`` names)."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from otel_eval.conventions.base import RequestedToolCall
from otel_eval.mapping import map_span, map_spans, read_span, session_id_of

SYSTEM = "You answer weather questions."
ALL_MESSAGES = [
    # an earlier run of the same conversation (message_history)
    {"role": "user", "parts": [{"type": "text", "content": "Hi"}]},
    {"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}], "finish_reason": "stop"},
    # this run: new_message_index = 2
    {"role": "user", "parts": [{"type": "text", "content": "What's the weather in Berlin?"}]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_a", "name": "get_weather", "arguments": "{\"city\": \"Berln\"}"}],
        "finish_reason": "tool_call",
    },
    {
        "role": "user",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "call_a",
                "name": "get_weather",
                "result": "Unknown city: 'Berln'\n\nFix the errors and try again.",
            }
        ],
    },
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_b", "name": "get_weather", "arguments": "{\"city\": \"Berlin\"}"}],
        "finish_reason": "tool_call",
    },
    {
        "role": "user",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "call_b",
                "name": "get_weather",
                "result": {"city": "Berlin", "temperature_c": 16},
            }
        ],
    },
    {"role": "assistant", "parts": [{"type": "text", "content": "It's 16°C in Berlin."}], "finish_reason": "stop"},
]


@pytest.fixture()
def tracer():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("pydantic-ai", "2.68.0")
    from otel_eval.spans import from_sdk_span

    tracer.finished = lambda: {s.name: from_sdk_span(s) for s in exporter.get_finished_spans()}
    yield tracer
    provider.shutdown()


def run_agent(tracer, conversation_id: str = "") -> dict:
    """One agent run with a ModelRetry on the first tool call, as pydantic-ai records it."""
    baggage = {
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.agent.call.id": "run-1",
        "gen_ai.conversation.id": conversation_id,
    }
    with tracer.start_as_current_span(
        "invoke_agent weather_agent",
        attributes={
            "model_name": "gpt-4o-mini",
            "agent_name": "weather_agent",
            **baggage,
            "gen_ai.operation.name": "invoke_agent",
            "logfire.msg": "weather_agent run",
        },
    ) as agent:
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "model_request_parameters": "{}",
                **baggage,
                "gen_ai.tool.definitions": json.dumps(
                    [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "Weather for a city.",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                        }
                    ]
                ),
                "gen_ai.input.messages": json.dumps(ALL_MESSAGES[:3]),
                "gen_ai.output.messages": json.dumps(ALL_MESSAGES[3:4]),
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_a",
                "gen_ai.tool.call.arguments": "{\"city\":\"Berln\"}",
                **baggage,
                "logfire.msg": "running tool: get_weather",
            },
            record_exception=False,
            set_status_on_exception=False,
        ) as tool:
            tool.set_attribute("gen_ai.tool.call.result", "Unknown city: 'Berln'\n\nFix the errors and try again.")
            tool.record_exception(
                RuntimeError("Unknown city: 'Berln'"),
                attributes={"exception.type": "pydantic_ai.exceptions.ToolRetryError"},
            )
            tool.set_status(StatusCode.ERROR)
        with tracer.start_as_current_span(
            "execute_tool get_weather#2",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_b",
                "gen_ai.tool.call.arguments": "{\"city\":\"Berlin\"}",
                **baggage,
                "gen_ai.tool.call.result": "{\"city\":\"Berlin\",\"temperature_c\":16}",
            },
        ):
            pass
        agent.set_attributes(
            {
                "gen_ai.usage.input_tokens": 150,
                "gen_ai.usage.output_tokens": 30,
                "pydantic_ai.all_messages": json.dumps(ALL_MESSAGES),
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
                "pydantic_ai.new_message_index": 2,
                "final_result": "It's 16°C in Berlin.",
            }
        )
    return tracer.finished()


def test_every_span_is_pydantic_ai_with_its_type(tracer):
    spans = run_agent(tracer)
    assert {name: (read_span(s).convention, read_span(s).span_type) for name, s in spans.items()} == {
        "invoke_agent weather_agent": ("pydantic_ai", "agent"),
        "chat gpt-4o-mini": ("pydantic_ai", "llm"),
        "execute_tool get_weather": ("pydantic_ai", "tool"),
        "execute_tool get_weather#2": ("pydantic_ai", "tool"),
    }


def test_agent_span_reads_this_runs_prompt_and_final_result(tracer):
    reading = read_span(run_agent(tracer)["invoke_agent weather_agent"])
    assert reading.agent_name == "weather_agent"
    assert reading.user_input == "What's the weather in Berlin?"  # not "Hi" from the history
    assert reading.response == "It's 16°C in Berlin."
    assert reading.system_prompt == SYSTEM
    assert reading.agent_exit is True
    assert reading.sources["agent_task"] == "pydantic_ai.all_messages"
    assert reading.sources["agent_response"] == "final_result"


def test_chat_span_tool_call_arguments_are_json_inside_json(tracer):
    reading = read_span(run_agent(tracer)["chat gpt-4o-mini"])
    assert reading.requested_calls == [RequestedToolCall("get_weather", {"city": "Berln"}, "call_a")]
    assert reading.user_input == "What's the weather in Berlin?"
    assert reading.system_prompt == SYSTEM
    assert [t.name for t in reading.tools_available] == ["get_weather"]
    assert (reading.input_tokens, reading.output_tokens) == (50, 12)


def test_model_retry_is_a_failed_call_with_the_retry_prompt_as_result(tracer):
    spans = run_agent(tracer)
    failed = read_span(spans["execute_tool get_weather"]).tool
    assert failed.args == {"city": "Berln"}
    assert failed.call_id == "call_a"
    assert failed.error == "pydantic_ai.exceptions.ToolRetryError: Unknown city: 'Berln'"
    assert failed.result == "Unknown city: 'Berln'\n\nFix the errors and try again."
    assert map_span(spans["execute_tool get_weather"]).tool_call_results[0].success is False
    ok = read_span(spans["execute_tool get_weather#2"]).tool
    assert (ok.args, ok.result, ok.error) == ({"city": "Berlin"}, {"city": "Berlin", "temperature_c": 16}, None)


def test_empty_conversation_id_means_no_session(tracer):
    mapped = map_spans(run_agent(tracer).values())
    assert [m.session_id for m in mapped] == [None, None, None, None]


def test_conversation_id_names_the_session_on_every_span(tracer):
    mapped = map_spans(run_agent(tracer, "conv-42").values())
    assert {m.session_id for m in mapped} == {"conv-42"}
    assert all(m.reading.session_id == "conv-42" for m in mapped)


def test_data_format_v2_span_names_and_tool_attributes(tracer):
    with tracer.start_as_current_span(
        "agent run",
        attributes={
            "agent_name": "agent",
            "logfire.msg": "agent run",
            "model_name": "test",
            "pydantic_ai.all_messages": json.dumps(
                [
                    {"role": "user", "parts": [{"type": "text", "content": "hello"}]},
                    {"role": "assistant", "parts": [{"type": "text", "content": "hi"}]},
                ]
            ),
        },
    ):
        with tracer.start_as_current_span(
            "running tool",
            attributes={
                "gen_ai.tool.name": "echo",
                "gen_ai.tool.call.id": "t1",
                "tool_arguments": "{\"text\":\"x\"}",
                "tool_response": "x",
                "logfire.msg": "running tool: echo",
            },
        ):
            pass
    spans = tracer.finished()
    agent = read_span(spans["agent run"])
    assert (agent.convention, agent.span_type, agent.agent_name) == ("pydantic_ai", "agent", "agent")
    assert (agent.user_input, agent.response) == ("hello", "hi")
    tool = read_span(spans["running tool"])
    assert (tool.span_type, tool.tool.name, tool.tool.args, tool.tool.result) == ("tool", "echo", {"text": "x"}, "x")
    assert tool.sources["parameters_passed"] == "tool_arguments"
    assert session_id_of(spans["agent run"], agent) is None
