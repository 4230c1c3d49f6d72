"""Traceloop / OpenLLMetry spans built with the real SDK the way traceloop-sdk writes them."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_eval.conventions import traceloop
from otel_eval.conventions.base import RequestedToolCall
from otel_eval.mapping import map_span, map_spans, read_span
from otel_eval.spans import SpanRecord, from_sdk_span

ASSOC = {
    "traceloop.association.properties.session_id": "tl-sess-1",
    "traceloop.association.properties.user_id": "user-erin",
}


@pytest.fixture()
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("traceloop.tracer")
    wf = {"traceloop.workflow.name": "weather_flow", **ASSOC}
    with tracer.start_as_current_span(
        "weather_flow.workflow",
        attributes={
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "weather_flow",
            **wf,
            "traceloop.entity.input": json.dumps({"args": ["What's the weather in Oslo?"], "kwargs": {}}),
        },
    ) as root:
        with tracer.start_as_current_span(
            "openai.chat",
            kind=SpanKind.CLIENT,
            attributes={
                "llm.request.type": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o",
                **wf,
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "What's the weather in Oslo?",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.finish_reason": "tool_calls",
                "gen_ai.completion.0.tool_calls.0.id": "call_o",
                "gen_ai.completion.0.tool_calls.0.name": "get_weather",
                "gen_ai.completion.0.tool_calls.0.arguments": "{\"city\": \"Oslo\"}",
                "llm.request.functions.0.name": "get_weather",
                "llm.request.functions.0.description": "Weather for a city",
                "llm.request.functions.0.parameters": "{\"type\": \"object\"}",
                "gen_ai.usage.prompt_tokens": 30,
                "gen_ai.usage.completion_tokens": 8,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "get_weather.tool",
            attributes={
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "get_weather",
                **wf,
                "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"city": "Oslo"}}),
                "traceloop.entity.output": json.dumps({"city": "Oslo", "temperature_c": 4}),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "get_forecast.tool",
            attributes={
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "get_forecast",
                **wf,
                "traceloop.entity.input": json.dumps({"args": ["Oslo"], "kwargs": {}}),
            },
        ) as failing:
            failing.set_status(Status(StatusCode.ERROR, "service down"))
        root.set_attribute("traceloop.entity.output", json.dumps("It's 4°C in Oslo."))
    out = {s.name: from_sdk_span(s) for s in exporter.get_finished_spans()}
    provider.shutdown()
    return out


def test_each_span_is_traceloop_with_its_type(spans):
    assert {n: (read_span(s).convention, read_span(s).span_type) for n, s in spans.items()} == {
        "weather_flow.workflow": ("traceloop", "chain"),
        "openai.chat": ("traceloop", "llm"),
        "get_weather.tool": ("traceloop", "tool"),
        "get_forecast.tool": ("traceloop", "tool"),
    }


def test_workflow_input_output_and_association_properties(spans):
    reading = read_span(spans["weather_flow.workflow"])
    assert reading.agent_name == "weather_flow"
    assert reading.user_input == "What's the weather in Oslo?"
    assert reading.response == "It's 4°C in Oslo."
    assert (reading.session_id, reading.user_id) == ("tl-sess-1", "user-erin")
    assert reading.sources["session_id"] == "traceloop.association.properties.session_id"


def test_llm_span_reads_indexed_prompts_completions_and_functions(spans):
    reading = read_span(spans["openai.chat"])
    assert reading.user_input == "What's the weather in Oslo?"
    assert reading.requested_calls == [RequestedToolCall("get_weather", {"city": "Oslo"}, "call_o")]
    assert [(t.name, t.description, t.args_schema) for t in reading.tools_available] == [
        ("get_weather", "Weather for a city", {"type": "object"})
    ]
    assert (reading.input_tokens, reading.output_tokens) == (30, 8)


def test_tool_spans_arguments_results_and_errors(spans):
    ok = read_span(spans["get_weather.tool"]).tool
    assert (ok.name, ok.args, ok.result, ok.error) == (
        "get_weather",
        {"city": "Oslo"},
        {"city": "Oslo", "temperature_c": 4},
        None,
    )
    failed = map_span(spans["get_forecast.tool"])
    assert failed.parameters_passed == {"input": "Oslo"}
    assert (failed.tool_call_results[0].success, failed.tool_call_results[0].error_message) == (False, "service down")
    assert {m.session_id for m in map_spans(spans.values())} == {"tl-sess-1"}
    assert {m.data.user_id for m in map_spans(spans.values())} == {"user-erin"}


@pytest.mark.parametrize(
    "entity_input,expected",
    [
        (
            {"inputs": {"city": "Paris", "days": 2}, "tags": [], "metadata": {}, "kwargs": {}},
            {"city": "Paris", "days": 2},
        ),
        ({"input_str": "Paris", "tags": [], "metadata": {}, "inputs": None, "kwargs": {}}, {"input": "Paris"}),
        ({"args": [{"city": "Rome"}], "kwargs": {}}, {"city": "Rome"}),
        ({"args": ["a", "b"], "kwargs": {"k": 1}}, {"k": 1, "0": "a", "1": "b"}),
        ({"args": [], "kwargs": {"city": "Oslo"}}, {"city": "Oslo"}),
        ({"kwargs": {"city": "Oslo"}}, {"city": "Oslo"}),
        ({"city": "Lima"}, {"city": "Lima"}),
        ("not json", {"input": "not json"}),
    ],
)
def test_entity_input_shapes(entity_input, expected):
    raw = entity_input if isinstance(entity_input, str) else json.dumps(entity_input)
    assert traceloop.entity_arguments(raw) == expected


def test_langchain_agent_entity_input_and_output():
    span = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        "AgentExecutor.agent",
        1,
        2,
        attributes={
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": "AgentExecutor",
            "traceloop.entity.input": json.dumps({"inputs": {"input": "Top customers?"}, "tags": [], "kwargs": {}}),
            "traceloop.entity.output": json.dumps({"outputs": {"output": "Alice and Bob."}, "kwargs": {}}),
        },
    )
    reading = read_span(span)
    assert (reading.span_type, reading.user_input, reading.response, reading.agent_exit) == (
        "agent",
        "Top customers?",
        "Alice and Bob.",
        True,
    )


def test_odd_values_never_raise():
    span = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        "x.tool",
        1,
        2,
        attributes={
            "traceloop.span.kind": "tool",
            "traceloop.entity.input": "{\"args\": 5, \"kwargs\": null}",
            "traceloop.entity.output": "[",
            "gen_ai.completion.0.tool_calls": "oops",
        },
    )
    reading = read_span(span)
    assert (reading.tool.name, reading.tool.result) == ("x", "[")
