"""The Langfuse Python SDK's own spans (``langfuse.observation.*``), read by :mod:`otel_eval.conventions.langfuse`."""

from __future__ import annotations

import json

from otel_eval.conventions import CONVENTIONS, langfuse
from otel_eval.spans import SpanRecord

TRACE = "cd" * 16


def span(span_id: str, name: str, status: str = "unset", **attributes) -> SpanRecord:
    return SpanRecord(TRACE, span_id, None, name, 1, 2, attributes=attributes, status=status)


def observation(kind: str, input=None, output=None, **extra) -> dict:
    attrs = {"langfuse.observation.type": kind, "session.id": "s-1", "user.id": "alice", **extra}
    if input is not None:
        attrs["langfuse.observation.input"] = input if isinstance(input, str) else json.dumps(input)
    if output is not None:
        attrs["langfuse.observation.output"] = output if isinstance(output, str) else json.dumps(output)
    return attrs


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def test_detected_ahead_of_the_general_readers():
    record = span("0000000000000001", "chat_turn", **observation("agent", "hi", "hello"))
    assert next(c for c in CONVENTIONS if c.detect(record)) is langfuse


def test_agent_span_reads_the_lone_positional_question_and_the_answer():
    reading = langfuse.read(
        span(
            "0000000000000001",
            "chat_turn",
            **observation("agent", {"args": ["What's the weather in Tokyo?"], "kwargs": {}}, "It is 22°C in Tokyo."),
        )
    )
    assert reading.span_type == "agent"
    assert reading.user_input == "What's the weather in Tokyo?"
    assert reading.response == "It is 22°C in Tokyo."
    assert reading.agent_exit
    assert reading.session_id == "s-1" and reading.user_id == "alice"
    assert reading.sources["agent_task"] == "langfuse.observation.input"


def test_agent_span_reads_a_question_key_and_plain_text():
    reading = langfuse.read(span("0000000000000001", "run", **observation("agent", {"question": "Why?"})))
    assert reading.user_input == "Why?"
    reading = langfuse.read(span("0000000000000001", "run", **observation("agent", "plain words")))
    assert reading.user_input == "plain words"


def test_generation_reads_messages_tools_calls_model_and_usage():
    reading = langfuse.read(
        span(
            "0000000000000002",
            "OpenAI-generation",
            **observation(
                "generation",
                {
                    "tools": TOOLS,
                    "messages": [
                        {"role": "system", "content": "Be brief."},
                        {"role": "user", "content": "Weather in Tokyo?"},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                        }
                    ],
                },
                **{
                    "langfuse.observation.model.name": "gpt-4o-mini",
                    "langfuse.observation.usage_details": json.dumps({"prompt_tokens": 42, "completion_tokens": 7}),
                },
            ),
        )
    )
    assert reading.span_type == "llm"
    assert reading.user_input == "Weather in Tokyo?"
    assert reading.system_prompt == "Be brief."
    assert [t.name for t in reading.tools_available] == ["get_weather"]
    assert [(c.name, c.args, c.call_id) for c in reading.requested_calls] == [
        ("get_weather", {"city": "Tokyo"}, "call_1")
    ]
    assert reading.model == "gpt-4o-mini"
    assert (reading.input_tokens, reading.output_tokens) == (42, 7)


def test_generation_answer_is_the_content():
    reading = langfuse.read(
        span(
            "0000000000000003",
            "OpenAI-generation",
            **observation(
                "generation",
                {"messages": [{"role": "user", "content": "Hi"}]},
                {"role": "assistant", "content": "It is sunny."},
                **{"langfuse.observation.usage_details": json.dumps({"input": 3, "output": 4})},
            ),
        )
    )
    assert reading.response == "It is sunny."
    assert reading.requested_calls == []
    assert (reading.input_tokens, reading.output_tokens) == (3, 4)


def test_tool_span_reads_name_arguments_and_result():
    reading = langfuse.read(
        span(
            "0000000000000004",
            "get_weather",
            **observation("tool", {"args": [], "kwargs": {"city": "Tokyo"}}, "It is 22°C and sunny in Tokyo."),
        )
    )
    assert reading.span_type == "tool"
    assert reading.tool.name == "get_weather"
    assert reading.tool.args == {"city": "Tokyo"}
    assert reading.tool.result == "It is 22°C and sunny in Tokyo."
    assert reading.tool.error is None


def test_failed_tool_span_reads_the_error():
    attrs = observation(
        "tool",
        {"args": [], "kwargs": {"city": "Berln"}},
        **{"langfuse.observation.level": "ERROR", "langfuse.observation.status_message": "Unknown city: Berln"},
    )
    reading = langfuse.read(span("0000000000000005", "get_weather", "error", **attrs))
    assert reading.tool.error and "Unknown city: Berln" in reading.tool.error
    reading = langfuse.read(span("0000000000000005", "get_weather", **attrs))  # level only, status unset
    assert reading.tool.error == "Unknown city: Berln"


def test_malformed_attributes_never_raise():
    for value in ("{not json", "[1, 2", "", "null", "42"):
        for kind in ("agent", "generation", "tool", "span", "retriever", "nonsense"):
            langfuse.read(
                span(
                    "0000000000000006",
                    "x",
                    **observation(kind, value, value, **{"langfuse.observation.usage_details": value}),
                )
            )
