"""OpenInference: the real LangGraph capture, and spec attributes the capture lacks (made with a
real SDK TracerProvider and InMemorySpanExporter)."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval.conventions import openinference
from otel_eval.mapping import map_span, read_span
from otel_eval.otlp_json import read_trace_file
from otel_eval.spans import from_otlp, from_sdk_span
from tests.paths import FIXTURES

CAPTURE = FIXTURES / "realclients/langgraph_openinference.otlp.json"


@pytest.fixture(scope="module")
def spans():
    return [s for r in read_trace_file(str(CAPTURE)) for s in from_otlp(r.resource_spans).spans]


def _one(spans, name, trace_prefix=None, index=0):
    found = [s for s in spans if s.name == name and (trace_prefix is None or s.trace_id.startswith(trace_prefix))]
    return sorted(found, key=lambda s: s.start_ns)[index]


def test_every_captured_span_is_openinference(spans):
    assert len(spans) == 116
    readings = [read_span(s) for s in spans]
    assert {r.convention for r in readings} == {"openinference"}
    counts = {}
    for r in readings:
        counts[r.span_type] = counts.get(r.span_type, 0) + 1
    assert counts == {"agent": 22, "chain": 69, "llm": 15, "tool": 9, "retriever": 1}


def test_root_agent_reads_user_text_and_final_answer_from_message_state(spans):
    root = _one(spans, "assistant_agent", "e500bda0")
    reading = read_span(root)
    assert (reading.span_type, reading.agent_name) == ("agent", "assistant_agent")
    assert reading.user_input == "What's the weather in Tokyo?"
    assert reading.response == "It's currently 22°C and sunny in Tokyo."
    assert (reading.session_id, reading.user_id) == ("langgraph_openinference-s1-weather", "user-alice")


def test_llm_span_messages_tools_tokens(spans):
    llm = _one(spans, "ChatOpenAI", "e500bda0")
    reading = read_span(llm)
    assert reading.system_prompt == (
        "You are a helpful assistant. Use the tools to answer questions about weather, forecasts, company data and support policies."
    )
    assert reading.user_input == "What's the weather in Tokyo?"
    assert reading.response is None
    assert [(c.name, c.args, c.call_id) for c in reading.requested_calls] == [
        ("get_weather", {"city": "Tokyo"}, "call_dad3c5cf233d87f80e761a3f")
    ]
    assert [t.name for t in reading.tools_available] == ["get_weather", "get_forecast", "call_db_agent", "search_docs"]
    assert reading.tools_available[0].description == "Get the current weather for a city."
    assert reading.tools_available[0].args_schema["properties"] == {"city": {"type": "string"}}
    assert (reading.model, reading.input_tokens, reading.output_tokens) == ("gpt-4o-mini-2024-07-18", 310, 13)


def test_bare_tool_input_and_tool_message_output(spans):
    reading = read_span(_one(spans, "get_weather", "e500bda0"))
    assert reading.span_type == "tool"
    tool = reading.tool
    assert (tool.name, tool.args, tool.call_id, tool.error) == (
        "get_weather",
        {"input": "Tokyo"},
        "call_dad3c5cf233d87f80e761a3f",
        None,
    )
    assert tool.result == {"city": "Tokyo", "temperature_c": 22, "condition": "sunny"}
    data = map_span(_one(spans, "get_weather", "e500bda0"))
    assert data.agent_role == "tool"
    assert data.tool_call_results[0].model_dump() == {
        "call_id": "call_dad3c5cf233d87f80e761a3f",
        "result": {"city": "Tokyo", "temperature_c": 22, "condition": "sunny"},
        "success": True,
        "error_message": None,
    }


def test_json_tool_input_is_the_arguments(spans):
    tool = read_span(_one(spans, "get_forecast")).tool
    assert tool.args == {"city": "Paris", "days": 1}
    assert tool.result["forecast"] == [{"day": "tomorrow", "temperature_c": 20, "condition": "sunny"}]


def test_agent_kind_with_tool_name_is_a_tool(spans):
    span = _one(spans, "call_db_agent")
    assert span.attributes["openinference.span.kind"] == "AGENT"
    reading = read_span(span)
    assert reading.span_type == "tool"
    assert reading.tool.name == "call_db_agent"
    assert reading.tool.result["sql"] == (
        "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10"
    )


def test_failed_tool_span_gives_one_line_error(spans):
    span = _one(spans, "get_weather", "db765060", 0)
    reading = read_span(span)
    assert reading.tool.error == "ValueError: Unknown city: 'Berln'. Check the spelling and try again."
    assert reading.tool.result is None and reading.tool.args == {"input": "Berln"}
    assert map_span(span).tool_call_results[0].success is False


def test_retriever_documents(spans):
    reading = read_span(_one(spans, "PolicyRetriever"))
    assert reading.span_type == "retriever"
    assert reading.retrieval_query == ["refund policy"]
    assert reading.retrieved_documents == [
        "Refunds are available within 30 days of purchase for unused items with proof of purchase.",
        "Digital products are refundable only if they have not been downloaded. Refunds go to the original payment method within 5-7 business days.",
    ]
    assert map_span(_one(spans, "PolicyRetriever")).retrieved_context == [reading.retrieved_documents]


# --- spec attributes, through a real SDK ---------------------------------------------------------


@pytest.fixture()
def tracer():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("spec-test"), exporter
    provider.shutdown()


def _records(exporter):
    return {s.name: from_sdk_span(s) for s in exporter.get_finished_spans()}


def test_spec_llm_contents_parts_and_tool_definitions(tracer):
    tracer, exporter = tracer
    with tracer.start_as_current_span("llm") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "claude-x",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Be brief.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.contents.0.message_content.type": "text",
                "llm.input_messages.1.message.contents.0.message_content.text": "What is in this image?",
                "llm.input_messages.1.message.contents.1.message_content.type": "image",
                "llm.input_messages.1.message.contents.1.message_content.image.image.url": "https://x/y.png",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.contents.0.message_content.type": "text",
                "llm.output_messages.0.message.contents.0.message_content.text": "Checking.",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"q": "cat"}',
                "llm.output_messages.0.message.tool_calls.1.tool_call.id": "c2",
                "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "lookup",
                "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"q": "dog"}',
                "llm.tools.0.tool.json_schema": json.dumps(
                    {
                        "name": "lookup",
                        "description": "Find.",
                        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                    }
                ),
                "llm.token_count.prompt": 12,
                "llm.token_count.completion": 4,
                "session.id": "sess-9",
                "user.id": "u-9",
            }
        )
    reading = read_span(_records(exporter)["llm"])
    assert (reading.system_prompt, reading.user_input, reading.response) == (
        "Be brief.",
        "What is in this image?",
        "Checking.",
    )
    assert [(c.name, c.args, c.call_id) for c in reading.requested_calls] == [
        ("lookup", {"q": "cat"}, "c1"),
        ("lookup", {"q": "dog"}, "c2"),
    ]
    assert [t.model_dump() for t in reading.tools_available] == [
        {
            "name": "lookup",
            "description": "Find.",
            "args_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "return_schema": None,
        }
    ]
    assert (reading.model, reading.input_tokens, reading.output_tokens) == ("claude-x", 12, 4)
    assert (reading.session_id, reading.user_id) == ("sess-9", "u-9")


def test_spec_tool_span_with_tool_id_and_parameters_definition(tracer):
    tracer, exporter = tracer
    with tracer.start_as_current_span("tool") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "tool.id": "c7",
                "tool.description": "Find.",
                "tool.parameters": json.dumps({"type": "object", "properties": {"q": {"type": "string"}}}),
                "input.value": '{"q": "cat"}',
                "input.mime_type": "application/json",
                "output.value": "a small feline",
                "output.mime_type": "text/plain",
            }
        )
    with tracer.start_as_current_span("broken") as span:
        span.set_attributes({"openinference.span.kind": "TOOL", "tool.name": "lookup", "tool_call.id": "c8"})
        span.record_exception(TimeoutError("upstream timed out"))
        span.set_status(Status(StatusCode.ERROR, "TimeoutError: upstream timed out"))
    records = _records(exporter)
    reading = read_span(records["tool"])
    tool = reading.tool
    assert (tool.name, tool.args, tool.call_id, tool.result, tool.error) == (
        "lookup",
        {"q": "cat"},
        "c7",
        "a small feline",
        None,
    )
    assert reading.tools_available[0].args_schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    broken = read_span(records["broken"]).tool
    assert (broken.call_id, broken.error, broken.args) == ("c8", "TimeoutError: upstream timed out", {})


def test_spec_retriever_reranker_and_other_kinds(tracer):
    tracer, exporter = tracer
    with tracer.start_as_current_span("retrieve") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "RETRIEVER",
                "input.value": "refunds",
                "retrieval.documents.0.document.id": "d1",
                "retrieval.documents.0.document.content": "Refunds in 30 days.",
                "retrieval.documents.0.document.score": 0.9,
                "retrieval.documents.0.document.metadata": '{"source": "a.md"}',
                "retrieval.documents.1.document.id": "d2",
                "retrieval.documents.1.document.content": "No refunds on sale items.",
            }
        )
    with tracer.start_as_current_span("rerank") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "RERANKER",
                "reranker.query": "refunds",
                "reranker.output_documents.0.document.content": "No refunds on sale items.",
            }
        )
    for kind in ("EMBEDDING", "GUARDRAIL", "EVALUATOR", "CHAIN"):
        with tracer.start_as_current_span(kind.lower()) as span:
            span.set_attributes({"openinference.span.kind": kind, "input.value": "text in", "output.value": "text out"})
    with tracer.start_as_current_span("agent") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "AGENT",
                "agent.name": "planner",
                "input.value": "plan a trip",
                "output.value": '{"output": "Go to Rome."}',
                "output.mime_type": "application/json",
            }
        )
    records = _records(exporter)
    retrieve = read_span(records["retrieve"])
    assert (retrieve.retrieval_query, retrieve.retrieved_documents) == (
        ["refunds"],
        ["Refunds in 30 days.", "No refunds on sale items."],
    )
    assert openinference.documents_with_ids(records["retrieve"].attributes) == [
        {"id": "d1", "content": "Refunds in 30 days.", "score": 0.9, "metadata": {"source": "a.md"}},
        {"id": "d2", "content": "No refunds on sale items."},
    ]
    rerank = read_span(records["rerank"])
    assert (rerank.span_type, rerank.retrieval_query, rerank.retrieved_documents) == (
        "retriever",
        ["refunds"],
        ["No refunds on sale items."],
    )
    for name in ("embedding", "guardrail", "evaluator", "chain"):
        reading = read_span(records[name])
        assert (reading.span_type, reading.user_input, reading.response) == ("chain", "text in", "text out")
    agent = read_span(records["agent"])
    assert (agent.span_type, agent.agent_name, agent.user_input, agent.response) == (
        "agent",
        "planner",
        "plan a trip",
        "Go to Rome.",
    )


def test_unparseable_values_do_not_raise(tracer):
    tracer, exporter = tracer
    with tracer.start_as_current_span("odd") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "t",
                "input.value": "{not json",
                "input.mime_type": "application/json",
                "output.value": "[1, 2",
                "output.mime_type": "application/json",
                "llm.input_messages.x.message.role": "user",
            }
        )
    tool = read_span(_records(exporter)["odd"]).tool
    assert (tool.args, tool.result) == ({"input": "{not json"}, "[1, 2")
