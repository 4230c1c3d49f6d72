"""Google ADK telemetry: the real legacy-schema capture, and v2-schema spans built with the SDK."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval.conventions.base import RequestedToolCall
from otel_eval.mapping import aggregate_trace, map_span, map_spans, read_span, session_id_of
from otel_eval.otlp_json import read_trace_file
from otel_eval.spans import SpanRecord, from_otlp, from_sdk_span
from tests.paths import FIXTURES

CAPTURE = FIXTURES / "realclients/google_adk_legacy.otlp.json"
SYSTEM_PROMPT = (
    "You are a helpful assistant. Use the tools to answer questions about weather, forecasts, company data and "
    "support policies.\n\nYou are an agent. Your internal name is \"assistant_agent\". The description about you is "
    "\"Answers weather, company-data and support-policy questions.\"."
)


@lru_cache(maxsize=1)
def capture() -> tuple[SpanRecord, ...]:
    spans = [s for r in read_trace_file(str(CAPTURE)) for s in from_otlp(r.resource_spans).spans]
    return tuple(sorted(spans, key=lambda s: s.start_ns))


def spans_of(scenario: str) -> list[SpanRecord]:
    return [s for s in capture() if s.attributes.get("session.id") == f"google_adk_legacy-{scenario}"]


def tool_calls(scenario: str) -> list[tuple]:
    return [
        (m.reading.tool.name, m.reading.tool.args, m.reading.tool.call_id, m.reading.tool.error)
        for m in map_spans(spans_of(scenario))
        if m.reading.tool is not None and not m.reading.is_wrapper
    ]


def test_every_span_is_read_as_adk_with_its_span_type():
    expected = {
        "invocation": "chain",
        "invoke_agent": "agent",
        "call_llm": "llm",
        "generate_content": "llm",
        "execute_tool": "tool",
    }
    counts: dict[str, int] = {}
    for span in capture():
        reading = read_span(span)
        assert reading.convention == "adk", span.name
        assert reading.span_type == expected[span.name.split(" ")[0]], span.name
        counts[span.name.split(" ")[0]] = counts.get(span.name.split(" ")[0], 0) + 1
    assert counts == {"invocation": 7, "invoke_agent": 7, "call_llm": 15, "generate_content": 15, "execute_tool": 10}


def test_tool_sequences_of_every_scenario():
    assert tool_calls("s1-weather") == [("get_weather", {"city": "Tokyo"}, "call_e2067eb3a067b7b3448bce86", None)]
    assert tool_calls("s2-multi-tool") == [
        ("get_weather", {"city": "Paris"}, "call_a6fc1a214764e9906d586c1f", None),
        ("get_weather", {"city": "London"}, "call_8de7f3f0d5dcea6fa53a3023", None),
    ]
    assert tool_calls("s3-followup") == [
        ("get_weather", {"city": "Paris"}, "call_d74c4534b880601d965fb9cc", None),
        ("get_forecast", {"city": "Paris", "days": 1}, "call_19c22a0ed0620a40f20b3a83", None),
    ]
    assert tool_calls("s4-sql") == [
        ("call_db_agent", {"question": "Show me the top 10 users by revenue"}, "call_bc808b8610122e3dd99a3f84", None)
    ]
    assert tool_calls("s6-retrieval") == [
        ("search_docs", {"query": "refund policy"}, "call_5ba9ccc808091f837a10a9b5", None)
    ]


def test_s2_merged_tools_span_is_a_wrapper_and_never_a_call():
    merged = [s for s in spans_of("s2-multi-tool") if s.name == "execute_tool (merged)"]
    assert len(merged) == 1
    reading = read_span(merged[0])
    assert (reading.span_type, reading.is_wrapper, reading.tool) == ("tool", True, None)
    assert map_span(merged[0]).tool_call_results == []
    trace = map_spans([s for s in spans_of("s2-multi-tool")])
    assert [c.tool_name for c in aggregate_trace(trace).tool_calls] == ["get_weather", "get_weather"]


def test_s2_parallel_calls_come_from_one_llm_response():
    first_llm = [s for s in spans_of("s2-multi-tool") if s.name == "call_llm"][0]
    assert read_span(first_llm).requested_calls == [
        RequestedToolCall("get_weather", {"city": "Paris"}, "call_a6fc1a214764e9906d586c1f"),
        RequestedToolCall("get_weather", {"city": "London"}, "call_8de7f3f0d5dcea6fa53a3023"),
    ]


def test_s5_error_comes_from_the_error_dict_not_the_status_code():
    assert tool_calls("s5-tool-error") == [
        (
            "get_weather",
            {"city": "Berln"},
            "call_d415a12e306a1d3b91c6fa19",
            "ValueError: Unknown city: 'Berln'. Check the spelling and try again.",
        ),
        ("get_weather", {"city": "Berlin"}, "call_4657259cd42790149519c7cd", None),
    ]
    failed = [s for s in spans_of("s5-tool-error") if s.status == "error"][0]
    result = map_span(failed).tool_call_results[0]
    assert (result.success, result.error_message) == (
        False,
        "ValueError: Unknown city: 'Berln'. Check the spelling and try again.",
    )


def test_s6_non_dict_result_is_unwrapped_from_adk_result_envelope():
    tool = [s for s in spans_of("s6-retrieval") if s.name == "execute_tool search_docs"][0]
    result = read_span(tool).tool.result
    assert [doc["id"] for doc in result] == ["policy-001", "policy-002"]


@pytest.mark.parametrize(
    "scenario,question,answer",
    [
        ("s1-weather", "What's the weather in Tokyo?", "It's currently 22°C and sunny in Tokyo."),
        ("s3-followup", "What about tomorrow?", "Tomorrow in Paris it should be 20°C and sunny."),
        (
            "s5-tool-error",
            "What's the weather in Berlin?",
            "Sorry about the hiccup - it's 16°C and windy in Berlin right now.",
        ),
    ],
)
def test_last_call_llm_has_the_user_input_and_final_answer(scenario, question, answer):
    last_llm = [s for s in spans_of(scenario) if s.name == "call_llm"][-1]
    reading = read_span(last_llm)
    assert (reading.user_input, reading.response) == (question, answer)
    assert reading.system_prompt == SYSTEM_PROMPT
    assert [t.name for t in reading.tools_available] == ["get_weather", "get_forecast", "call_db_agent", "search_docs"]
    assert reading.tools_available[1].args_schema["properties"]["days"] == {
        "default": 1,
        "title": "Days",
        "type": "integer",
    }
    assert reading.sources["agent_task"] == "gcp.vertex.agent.llm_request"


def test_trace_aggregate_takes_task_and_answer_from_the_llm_spans():
    record = aggregate_trace(map_spans(spans_of("s1-weather")))
    assert record.agent_task == "What's the weather in Tokyo?"
    assert record.agent_response == "It's currently 22°C and sunny in Tokyo."
    assert record.system_prompt == SYSTEM_PROMPT


def test_session_id_of_call_llm_comes_from_vertex_attribute():
    call_llm = [s for s in spans_of("s4-sql") if s.name == "call_llm"][0]
    stripped = SpanRecord(
        **{
            **{f: getattr(call_llm, f) for f in call_llm.__dataclass_fields__},
            "attributes": {k: v for k, v in call_llm.attributes.items() if k != "session.id"},
        }
    )
    reading = read_span(stripped)
    assert reading.session_id == "google_adk_legacy-s4-sql"
    assert reading.sources["session_id"] == "gcp.vertex.agent.session_id"
    assert session_id_of(stripped, reading) == "google_adk_legacy-s4-sql"


def test_tool_spans_placeholder_llm_request_does_not_make_them_llm_spans():
    tool = [s for s in spans_of("s1-weather") if s.name.startswith("execute_tool")][0]
    assert tool.attributes["gcp.vertex.agent.llm_request"] == "{}"
    reading = read_span(tool)
    assert (reading.span_type, reading.user_input, reading.agent_name) == ("tool", None, "assistant_agent")


# --- v2 schema, built with the SDK as ADK 2.x emits it ---------------------------------------


@pytest.fixture()
def adk_tracer():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("gcp.vertex.agent")
    tracer.finished = lambda: [from_sdk_span(s) for s in exporter.get_finished_spans()]
    yield tracer
    provider.shutdown()


def test_v2_schema_workflow_agent_generate_content_and_tools(adk_tracer):
    conv = {"gen_ai.conversation.id": "sess-7"}
    with adk_tracer.start_as_current_span(
        "invoke_workflow assistant_app", attributes={"gen_ai.operation.name": "invoke_workflow", **conv}
    ):
        with adk_tracer.start_as_current_span(
            "invoke_agent assistant_agent",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant_agent", **conv},
        ):
            with adk_tracer.start_as_current_span(
                "generate_content gemini-2.0-flash",
                attributes={
                    "gen_ai.operation.name": "generate_content",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    **conv,
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "What's the weather in Berlin?"}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {
                                        "type": "tool_call",
                                        "id": "fc-1",
                                        "name": "get_weather",
                                        "arguments": {"city": "Berln"},
                                    }
                                ],
                                "finish_reason": "stop",
                            }
                        ]
                    ),
                },
            ):
                pass
            with adk_tracer.start_as_current_span(
                "execute_tool get_weather",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "fc-1",
                    "gen_ai.tool.call.arguments": '{"city": "Berln"}',
                    "gen_ai.tool.call.result": '{"error": "ValueError: Unknown city"}',
                    "error.type": "TOOL_ERROR",
                },
            ) as tool:
                tool.set_status(Status(StatusCode.ERROR, "TOOL_ERROR"))
            with adk_tracer.start_as_current_span(
                "execute_tool get_time",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_time",
                    "gen_ai.tool.call.id": "fc-2",
                    "gen_ai.tool.call.arguments": "{}",
                    "gen_ai.tool.call.result": '{"result": "12:00"}',
                },
            ):
                pass
            with adk_tracer.start_as_current_span(
                "execute_tool (merged)",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "(merged tools)",
                    "gen_ai.tool.call.id": "5b9f-event-uuid",
                },
            ):
                pass
    spans = {s.name: s for s in adk_tracer.finished()}
    readings = {name: read_span(span) for name, span in spans.items()}
    assert {n: (r.convention, r.span_type) for n, r in readings.items()} == {
        "invoke_workflow assistant_app": ("adk", "chain"),
        "invoke_agent assistant_agent": ("adk", "agent"),
        "generate_content gemini-2.0-flash": ("adk", "llm"),
        "execute_tool get_weather": ("adk", "tool"),
        "execute_tool get_time": ("adk", "tool"),
        "execute_tool (merged)": ("adk", "tool"),
    }
    llm = readings["generate_content gemini-2.0-flash"]
    assert llm.user_input == "What's the weather in Berlin?"
    assert llm.requested_calls == [RequestedToolCall("get_weather", {"city": "Berln"}, "fc-1")]
    assert llm.session_id == "sess-7"
    failed = readings["execute_tool get_weather"].tool
    assert (failed.args, failed.call_id, failed.error) == ({"city": "Berln"}, "fc-1", "ValueError: Unknown city")
    assert readings["execute_tool get_time"].tool.result == "12:00"
    merged = readings["execute_tool (merged)"]
    assert (merged.is_wrapper, merged.tool) == (True, None)


def test_adk_read_never_raises_on_odd_attributes():
    odd = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        "call_llm",
        1,
        2,
        scope="gcp.vertex.agent",
        attributes={
            "gcp.vertex.agent.llm_request": '{"contents": "nope", "config": {"tools": [5, {"function_declarations": [1]}]}}',
            "gcp.vertex.agent.llm_response": "<not serializable>",
        },
    )
    reading = read_span(odd)
    assert (reading.convention, reading.span_type, reading.user_input, reading.response) == ("adk", "llm", None, None)
    assert reading.tools_available == []


# --- the two captures describe the same runs: same tool sequences per scenario -------------------

GENAI_CAPTURE = FIXTURES / "realclients/openai_otel_genai.otlp.json"


@lru_cache(maxsize=1)
def genai_capture() -> tuple[SpanRecord, ...]:
    spans = [s for r in read_trace_file(str(GENAI_CAPTURE)) for s in from_otlp(r.resource_spans).spans]
    return tuple(sorted(spans, key=lambda s: s.start_ns))


def sequence(spans, scenario_session: str) -> list[tuple]:
    session = [s for s in spans if s.attributes.get("session.id") == scenario_session]
    out = []
    for trace_id in dict.fromkeys(s.trace_id for s in session):  # turns in start order
        record = aggregate_trace(map_spans([s for s in session if s.trace_id == trace_id]))
        out += [(c.tool_name, c.parameters) for c in record.tool_calls]
        out += [("error", r.error_message) for r in record.tool_call_results if not r.success]
    return out


@pytest.mark.parametrize(
    "scenario", ["s1-weather", "s2-multi-tool", "s3-followup", "s4-sql", "s5-tool-error", "s6-retrieval"]
)
def test_adk_legacy_and_openai_genai_give_the_same_tool_sequence(scenario):
    adk_sequence = sequence(capture(), f"google_adk_legacy-{scenario}")
    assert adk_sequence == sequence(genai_capture(), f"openai_otel_genai-{scenario}")
    assert adk_sequence  # every scenario calls at least one tool


@pytest.mark.parametrize(
    "texts",
    [
        ("0066359b15480101", "chat gpt-4o", "llm"),
        ("", "naïve \"quoted\" \\ back\nline\ttab \x00 \u2028", "tool"),
        ("\ud800", "emoji 😀 and é", "agent"),
    ],
)
def test_trace_record_json_is_what_json_dumps_writes(texts):
    # aggregate_trace writes its ``trace`` text without json.dumps; it must be the same text,
    # for any span name, and a value that is not a plain string goes through json.dumps itself.
    from types import SimpleNamespace

    from otel_eval.mapping import _trace_json

    def member(span_id, name, kind):
        return SimpleNamespace(
            span=SimpleNamespace(span_id=span_id, name=name), reading=SimpleNamespace(span_type=kind)
        )

    for members in ([], [member(*texts)], [member(*texts), member("b", "x", "llm")], [member("a", 7, None)]):
        want = json.dumps(
            [{"span_id": m.span.span_id, "name": m.span.name, "type": m.reading.span_type} for m in members]
        )
        assert _trace_json(members) == want
