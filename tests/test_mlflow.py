"""MLflow tracing's OTLP export: mlflow.* attributes, every value JSON-encoded."""

import json

from otel_eval.conventions import mlflow
from otel_eval.mapping import convention_name, session_id_of, user_id_of
from otel_eval.spans import SpanEvent, SpanRecord


def _span(name, attributes, status="unset", events=()):
    attrs = {k: json.dumps(v) for k, v in attributes.items()}
    return SpanRecord("a" * 32, "b" * 16, None, name, 1, 2, status=status, attributes=attrs, events=events)


def test_agent_span_reads_question_answer_and_quoted_session():
    span = _span(
        "weather_agent",
        {
            "mlflow.spanType": "AGENT",
            "mlflow.spanInputs": {"question": "Weather in Oslo?"},
            "mlflow.spanOutputs": "Cold.",
            "session.id": "s-1",
            "user.id": "u-1",
        },
    )
    assert convention_name(span) == "mlflow"
    reading = mlflow.read(span)
    assert reading.span_type == "agent"
    assert reading.user_input == "Weather in Oslo?"
    assert reading.response == "Cold."
    assert reading.sources["agent_task"] == "mlflow.spanInputs"
    assert session_id_of(span) == "s-1"
    assert user_id_of(span) == "u-1"


def test_chat_model_span_reads_messages_and_requested_calls():
    completion = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                        }
                    ],
                }
            }
        ]
    }
    span = _span(
        "Completions",
        {
            "mlflow.spanType": "CHAT_MODEL",
            "mlflow.llm.model": "gpt-4o-mini",
            "mlflow.chat.tokenUsage": {"input_tokens": 3, "output_tokens": 4},
            "mlflow.spanInputs": {
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather in Oslo?"},
                ],
                "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
            },
            "mlflow.spanOutputs": completion,
        },
    )
    reading = mlflow.read(span)
    assert reading.span_type == "llm"
    assert reading.user_input == "Weather in Oslo?"
    assert reading.system_prompt == "Be brief."
    assert [t.name for t in reading.tools_available] == ["get_weather"]
    assert [(c.name, c.args, c.call_id) for c in reading.requested_calls] == [("get_weather", {"city": "Oslo"}, "c1")]
    assert (reading.model, reading.input_tokens, reading.output_tokens) == ("gpt-4o-mini", 3, 4)


def test_chat_model_answer_text():
    span = _span(
        "Completions",
        {"mlflow.spanType": "CHAT_MODEL", "mlflow.spanOutputs": {"choices": [{"message": {"content": "It is cold."}}]}},
    )
    assert mlflow.read(span).response == "It is cold."


def test_tool_span_reads_args_result_and_error():
    ok = mlflow.read(
        _span(
            "get_weather",
            {"mlflow.spanType": "TOOL", "mlflow.spanInputs": {"city": "Oslo"}, "mlflow.spanOutputs": "Cold."},
        )
    )
    assert ok.span_type == "tool"
    assert (ok.tool.name, ok.tool.args, ok.tool.result, ok.tool.error) == (
        "get_weather",
        {"city": "Oslo"},
        "Cold.",
        None,
    )
    failed = mlflow.read(
        _span(
            "get_weather",
            {"mlflow.spanType": "TOOL", "mlflow.spanInputs": {"city": "Berln"}},
            status="error",
            events=(SpanEvent("exception", 1, {"exception.type": "ValueError", "exception.message": "Unknown city"}),),
        )
    )
    assert failed.tool.error == "ValueError: Unknown city"


def test_malformed_values_never_raise():
    reading = mlflow.read(
        _span(
            "x",
            {"mlflow.spanType": "CHAT_MODEL", "mlflow.spanInputs": [1, 2], "mlflow.spanOutputs": {"choices": ["bad"]}},
        )
    )
    assert reading.span_type == "llm"
    assert mlflow.read(_span("x", {"mlflow.spanType": "UNKNOWN"})).span_type == "chain"
