"""OTel GenAI semconv: the real openai-v2 / util-genai capture, plus older forms built with the SDK."""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_eval.conventions import genai, pydantic_ai, traceloop
from otel_eval.conventions import google_adk as adk
from otel_eval.conventions.base import RequestedToolCall
from otel_eval.conventions.messages import output_calls, parse_messages
from otel_eval.mapping import map_span, map_spans, read_span, session_id_of
from otel_eval.otlp_json import read_trace_file
from otel_eval.spans import LogEvent, SpanRecord, from_otlp, from_sdk_span
from tests.paths import FIXTURES

CAPTURE = FIXTURES / "realclients/openai_otel_genai.otlp.json"
SESSION = "openai_otel_genai-{}"


@lru_cache(maxsize=1)
def capture() -> tuple[SpanRecord, ...]:
    spans = [s for r in read_trace_file(str(CAPTURE)) for s in from_otlp(r.resource_spans).spans]
    return tuple(sorted(spans, key=lambda s: s.start_ns))


def spans_of(scenario: str) -> list[SpanRecord]:
    return [s for s in capture() if s.attributes.get("session.id") == SESSION.format(scenario)]


def tool_calls(scenario: str) -> list[tuple]:
    out = []
    for m in map_spans(spans_of(scenario)):
        if m.reading.tool is not None:
            t = m.reading.tool
            out.append((t.name, t.args, t.call_id, t.error))
    return out


def agent_reading(scenario: str, turn: int = 0):
    agents = [s for s in spans_of(scenario) if s.name.startswith("invoke_agent")]
    return read_span(agents[turn])


# --- the real capture ----------------------------------------------------------------------------


def test_every_span_is_read_as_genai_with_the_type_its_operation_names():
    expected = {"invoke_agent": "agent", "chat": "llm", "execute_tool": "tool", "retrieval": "retriever"}
    seen = {}
    for span in capture():
        reading = read_span(span)
        assert reading.convention == "genai", span.name
        operation = span.name.split(" ")[0]
        assert reading.span_type == expected[operation], span.name
        seen[operation] = seen.get(operation, 0) + 1
    assert seen == {"invoke_agent": 7, "chat": 15, "execute_tool": 9, "retrieval": 1}


def test_s1_tool_call_with_parsed_args_call_id_and_result():
    tool_spans = [s for s in spans_of("s1-weather") if s.name == "execute_tool get_weather"]
    reading = read_span(tool_spans[0])
    assert reading.tool.name == "get_weather"
    assert reading.tool.args == {"city": "Tokyo"}
    assert reading.tool.call_id == "call_5d9603777a7458189ecea4b8"
    assert reading.tool.result == {"city": "Tokyo", "temperature_c": 22, "condition": "sunny"}
    assert reading.tool.error is None
    assert reading.parameters == {"city": "Tokyo"}
    assert reading.sources["parameters_passed"] == "gen_ai.tool.call.arguments"
    data = map_span(tool_spans[0])
    assert data.tool_call_results[0].call_id == "call_5d9603777a7458189ecea4b8"
    assert data.tool_call_results[0].success is True


def test_tool_sequences_of_every_scenario():
    assert tool_calls("s1-weather") == [("get_weather", {"city": "Tokyo"}, "call_5d9603777a7458189ecea4b8", None)]
    assert tool_calls("s2-multi-tool") == [
        ("get_weather", {"city": "Paris"}, "call_7a139ffae0f5b07212a6145d", None),
        ("get_weather", {"city": "London"}, "call_d1e6a4a00bf905aad2e0a242", None),
    ]
    assert tool_calls("s3-followup") == [
        ("get_weather", {"city": "Paris"}, "call_f430efb212ae0c9051450ffe", None),
        ("get_forecast", {"city": "Paris", "days": 1}, "call_17c60be2010b6a2a12d40463", None),
    ]
    assert tool_calls("s4-sql") == [
        ("call_db_agent", {"question": "Show me the top 10 users by revenue"}, "call_9279418cc9391a9eed1b79a7", None)
    ]
    assert tool_calls("s6-retrieval") == [
        ("search_docs", {"query": "refund policy"}, "call_7144b358cfb81890c20dbc67", None)
    ]


def test_s2_parallel_calls_are_one_llm_response():
    chat = [s for s in spans_of("s2-multi-tool") if s.name.startswith("chat")][0]
    assert read_span(chat).requested_calls == [
        RequestedToolCall("get_weather", {"city": "Paris"}, "call_7a139ffae0f5b07212a6145d"),
        RequestedToolCall("get_weather", {"city": "London"}, "call_d1e6a4a00bf905aad2e0a242"),
    ]


def test_s4_tool_result_carries_the_sql():
    tool = [s for s in spans_of("s4-sql") if s.name.startswith("execute_tool")][0]
    result = read_span(tool).tool.result
    assert result["sql"] == (
        "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10"
    )
    assert len(result["rows"]) == 10


def test_s5_failed_call_has_error_type_and_message_and_no_result():
    assert tool_calls("s5-tool-error") == [
        (
            "get_weather",
            {"city": "Berln"},
            "call_af0a52ce90b4ca3e09c13cf2",
            "ValueError: Unknown city: 'Berln'. Check the spelling and try again.",
        ),
        ("get_weather", {"city": "Berlin"}, "call_8c503066cd8c087cfff302ec", None),
    ]
    failed = [s for s in spans_of("s5-tool-error") if s.status == "error"][0]
    data = map_span(failed)
    assert data.tool_call_results[0].success is False
    assert data.tool_call_results[0].result is None
    assert (
        data.tool_call_results[0].error_message
        == "ValueError: Unknown city: 'Berln'. Check the spelling and try again."
    )


def test_s6_retrieval_span_gives_query_and_documents():
    retrieval = [s for s in spans_of("s6-retrieval") if s.name.startswith("retrieval")][0]
    data = map_span(retrieval)
    assert data.retrieval_query == ["refund policy"]
    assert data.retrieved_context == [
        [
            "Refunds are available within 30 days of purchase for unused items with proof of purchase.",
            "Digital products are refundable only if they have not been downloaded. Refunds go to the original "
            "payment method within 5-7 business days.",
        ]
    ]


@pytest.mark.parametrize(
    "scenario,turn,question,answer",
    [
        ("s1-weather", 0, "What's the weather in Tokyo?", "It's currently 22°C and sunny in Tokyo."),
        (
            "s2-multi-tool",
            0,
            "Compare the weather in Paris and London",
            "Paris is 18°C and cloudy, while London is 15°C with light rain, so Paris is 3°C warmer right now.",
        ),
        ("s3-followup", 0, "What's the weather in Paris?", None),
        ("s3-followup", 1, "What about tomorrow?", "Tomorrow in Paris it should be 20°C and sunny."),
        (
            "s5-tool-error",
            0,
            "What's the weather in Berlin?",
            "Sorry about the hiccup - it's 16°C and windy in Berlin right now.",
        ),
        (
            "s6-retrieval",
            0,
            "What is your refund policy?",
            "You can get a refund within 30 days of purchase for unused items with proof of purchase. Digital "
            "products are refundable only if not downloaded, and refunds go back to the original payment method "
            "within 5-7 business days.",
        ),
    ],
)
def test_agent_span_user_input_and_final_answer(scenario, turn, question, answer):
    reading = agent_reading(scenario, turn)
    assert reading.agent_name == "assistant_agent"
    assert reading.user_input == question
    if answer is not None:
        assert reading.response == answer
        assert reading.agent_exit is True
    assert reading.system_prompt == (
        "You are a helpful assistant. Use the tools to answer questions about weather, forecasts, company data "
        "and support policies."
    )
    assert [t.name for t in reading.tools_available] == ["get_weather", "get_forecast", "call_db_agent", "search_docs"]
    assert reading.tools_available[0].args_schema == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }


def test_followup_chat_reads_the_latest_user_message_not_the_history():
    chats = [s for s in spans_of("s3-followup") if s.name.startswith("chat")]
    last = read_span(chats[-1])
    assert last.user_input == "What about tomorrow?"
    assert last.model == "gpt-4o-mini-2024-07-18"
    assert (last.input_tokens, last.output_tokens) == (511, 12)


def test_session_from_conversation_id_when_baggage_is_absent():
    agent = [s for s in spans_of("s1-weather") if s.name.startswith("invoke_agent")][0]
    without_baggage = dataclasses.replace(
        agent, attributes={k: v for k, v in agent.attributes.items() if k not in ("session.id", "user.id")}
    )
    reading = read_span(without_baggage)
    assert reading.session_id == "openai_otel_genai-s1-weather"
    assert reading.sources["session_id"] == "gen_ai.conversation.id"
    assert session_id_of(without_baggage, reading) == "openai_otel_genai-s1-weather"


# --- spans built from the spec with the real SDK -------------------------------------------------


@pytest.fixture()
def tracer():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    tracer.finished = lambda: [from_sdk_span(s) for s in exporter.get_finished_spans()]
    yield tracer
    provider.shutdown()


def test_older_flattened_prompt_and_completion_attributes(tracer):
    with tracer.start_as_current_span("openai.chat", kind=SpanKind.CLIENT) as span:
        span.set_attributes(
            {
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4",
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "Be brief.",
                "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": "Weather in Oslo and Rome?",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.finish_reason": "tool_calls",
                "gen_ai.completion.0.tool_calls.0.id": "call_1",
                "gen_ai.completion.0.tool_calls.0.name": "get_weather",
                "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}',
                "gen_ai.completion.0.tool_calls.1.id": "call_2",
                "gen_ai.completion.0.tool_calls.1.name": "get_weather",
                "gen_ai.completion.0.tool_calls.1.arguments": '{"city": "Rome"}',
                "gen_ai.usage.prompt_tokens": 40,
                "gen_ai.usage.completion_tokens": 9,
            }
        )
    reading = read_span(tracer.finished()[0])
    assert (reading.convention, reading.span_type) == ("genai", "llm")
    assert reading.system_prompt == "Be brief."
    assert reading.user_input == "Weather in Oslo and Rome?"
    assert reading.requested_calls == [
        RequestedToolCall("get_weather", {"city": "Oslo"}, "call_1"),
        RequestedToolCall("get_weather", {"city": "Rome"}, "call_2"),
    ]
    assert (reading.input_tokens, reading.output_tokens) == (40, 9)
    assert reading.sources["tool_calls"] == "gen_ai.completion.N.tool_calls"


def test_span_name_alone_identifies_tool_and_agent_spans(tracer):
    with tracer.start_as_current_span("invoke_agent planner"):
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_status(Status(StatusCode.ERROR, "timeout"))
    tool_span, agent_span = tracer.finished()
    tool_reading = read_span(tool_span)
    assert (tool_reading.convention, tool_reading.span_type) == ("genai", "tool")
    assert (tool_reading.tool.name, tool_reading.tool.error) == ("lookup", "timeout")
    agent = read_span(agent_span)
    assert (agent.span_type, agent.agent_name) == ("agent", "planner")


def test_message_span_events_of_the_older_semconv(tracer):
    with tracer.start_as_current_span("chat gemini-pro") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.add_event("gen_ai.system.message", {"content": "You are terse."})
        span.add_event("gen_ai.user.message", {"content": "Capital of Peru?"})
        span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message.content": "Lima."})
    reading = read_span(tracer.finished()[0])
    assert reading.system_prompt == "You are terse."
    assert reading.user_input == "Capital of Peru?"
    assert reading.response == "Lima."
    assert reading.sources["agent_response"] == "event:gen_ai.choice"


def test_tool_call_arguments_may_be_a_json_string_inside_the_message_json():
    messages = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": json.dumps({"x": 1})}],
            }
        ]
    )
    assert output_calls(parse_messages(messages)) == [RequestedToolCall("f", {"x": 1}, "c1")]


def test_log_records_fill_a_span_that_has_no_content(tracer):
    with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT) as span:
        span.set_attribute("gen_ai.operation.name", "chat")
    record = tracer.finished()[0]
    reading = read_span(record)
    assert reading.user_input is None

    def log(name, body, t):
        return LogEvent(record.trace_id, record.span_id, t, name, body)

    merged = genai.apply_log_events(
        reading,
        [
            log("gen_ai.user.message", {"content": "Book a table for two"}, 2),
            log("gen_ai.system.message", {"content": "You book restaurants."}, 1),
            log(
                "gen_ai.choice",
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": "book", "arguments": '{"people": 2}'},
                            }
                        ],
                    },
                },
                3,
            ),
        ],
    )
    assert merged.user_input == "Book a table for two"
    assert merged.system_prompt == "You book restaurants."
    assert merged.requested_calls == [RequestedToolCall("book", {"people": 2}, "call_9")]
    assert merged.sources["agent_task"] == "log:gen_ai.user.message"
    assert reading.user_input is None  # the original reading is untouched


def test_inference_details_log_record_and_span_attributes_win():
    reading = genai.read(
        SpanRecord(
            "a" * 32,
            "b" * 16,
            None,
            "chat m",
            1,
            2,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "From span"}]}]
                ),
            },
        )
    )
    details = LogEvent(
        "a" * 32,
        "b" * 16,
        5,
        "gen_ai.client.inference.operation.details",
        None,
        {
            "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "From log"}]}],
            "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "Other"}]}],
            "gen_ai.system_instructions": [{"type": "text", "content": "Rules"}],
        },
    )
    merged = genai.apply_log_events(reading, [details])
    assert (merged.user_input, merged.response, merged.system_prompt) == ("From log", "From span", "Rules")


@pytest.mark.parametrize(
    "attributes",
    [
        {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "{not json"},
        {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[1, null, {\"parts\": 5}]"},
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.arguments": "[1,2]",
            "gen_ai.tool.definitions": "7",
        },
        {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": "{\"id\": 1}"},
        {"gen_ai.prompt.x.role": "user", "gen_ai.usage.input_tokens": "many"},
    ],
)
def test_odd_attributes_never_raise(attributes):
    reading = genai.read(SpanRecord("a" * 32, "b" * 16, None, "x", 1, 2, attributes=attributes))
    assert reading.convention == "genai"


def test_odd_values_are_read_as_far_as_they_go():
    tool = genai.read(
        SpanRecord(
            "a" * 32,
            "b" * 16,
            None,
            "execute_tool t",
            1,
            2,
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": "[1,2]"},
        )
    )
    assert tool.tool.args == {"input": [1, 2]}
    retrieval = genai.read(
        SpanRecord(
            "a" * 32,
            "b" * 16,
            None,
            "retrieval",
            1,
            2,
            attributes={"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": '{"id": 1}'},
        )
    )
    assert retrieval.retrieved_documents == ['{"id": 1}']


# --- robustness: whatever the attribute values, read() returns a Reading ---------------------

_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.name",
    "gen_ai.retrieval.documents",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "gen_ai.usage.input_tokens",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_response",
    "gcp.vertex.agent.tool_call_args",
    "pydantic_ai.all_messages",
    "pydantic_ai.new_message_index",
    "final_result",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "llm.request.functions.0.parameters",
    "error.type",
]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "parts",
                    "content",
                    "type",
                    "tool_calls",
                    "function",
                    "name",
                    "arguments",
                    "id",
                    "args",
                    "kwargs",
                    "inputs",
                    "contents",
                    "config",
                    "tools",
                    "message",
                    "result",
                    "response",
                    "function_call",
                    "function_response",
                    "text",
                    "error",
                    "outputs",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
_values = st.one_of(
    st.text(max_size=12),
    st.integers(),
    _json.map(lambda v: __import__("json").dumps(v)),
    st.sampled_from(["invoke_agent", "execute_tool", "chat", "retrieval", "tool", "workflow", "agent"]),
)


@settings(max_examples=150, deadline=None)
@given(
    attributes=st.dictionaries(st.sampled_from(_KEYS), _values, max_size=8),
    name=st.sampled_from(["call_llm", "invocation", "execute_tool (merged)", "agent run", "x", "chat m"]),
    status=st.sampled_from(["ok", "error", "unset"]),
)
def test_property_read_never_raises(attributes, name, status):
    span = SpanRecord("a" * 32, "b" * 16, None, name, 1, 2, status=status, attributes=attributes)
    for module in (genai, adk, pydantic_ai, traceloop):
        assert module.read(span).convention == module.NAME


# --- the quick message reader agrees with the general one ------------------------------------


class _NotPlainDict(dict):
    """A message the quick path does not take (it reads plain dicts only): the general path's answer."""


_text_part = st.fixed_dictionaries({"type": st.just("text"), "content": st.text(max_size=4)})
_call_part = st.fixed_dictionaries(
    {
        "type": st.just("tool_call"),
        "id": st.one_of(st.text(max_size=3), st.none()),
        "name": st.text(min_size=1, max_size=3),
        "arguments": st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2),
    }
)
# A well-formed part with one key changed or added: what must go to the general path (or agree with it).
_odd_part = st.builds(
    lambda part, change: {**part, change[0]: change[1]},
    _text_part | _call_part,
    st.sampled_from(
        [
            ("type", "TEXT"),
            ("type", "function_call"),
            ("type", ""),
            ("content", None),
            ("content", 2),
            ("content", ""),
            ("thought", True),
            ("thought", False),
            ("text", "x"),
            ("id", ""),
            ("id", 2),
            ("name", ""),
            ("name", 2),
            ("name", None),
            ("arguments", '{"q": 1}'),
            ("arguments", None),
            ("arguments", ["x"]),
            ("args", {"a": 1}),
            ("function", {"name": "f"}),
        ]
    ),
)
_plain_like = st.builds(
    lambda parts, role, extra: {"parts": parts, **role, **extra},
    st.lists(_text_part | _call_part | _odd_part, max_size=3),
    st.sampled_from(
        [
            {},
            {"role": "assistant"},
            {"role": "user"},
            {"role": "system"},
            {"role": "tool"},
            {"role": "model"},
            {"role": None},
            {"role": 3},
        ]
    ),
    st.sampled_from([{}, {}, {"finish_reason": "stop"}, {"content": "x"}, {"tool_call_id": "c"}]),
)


@settings(max_examples=400, deadline=None)
@given(item=_plain_like, default_role=st.sampled_from(["user", "assistant"]))
def test_property_the_quick_message_reader_gives_what_the_general_one_gives(item, default_role):
    from otel_eval.conventions.messages import parse_message

    quick, general = parse_message(item, default_role), parse_message(_NotPlainDict(item), default_role)
    assert (quick.role, quick.texts, quick.calls, quick.responses) == (
        general.role,
        general.texts,
        general.calls,
        general.responses,
    )
    assert [type(call.call_id) for call in quick.calls] == [type(call.call_id) for call in general.calls]


@settings(max_examples=200, deadline=None)
@given(
    history=st.lists(
        st.one_of(
            _plain_like,
            st.text(max_size=4),
            st.none(),
            st.builds(lambda inner: {"message": inner}, _plain_like),
            st.fixed_dictionaries(
                {"role": st.sampled_from(["tool", "user", "assistant"]), "content": st.text(max_size=4)},
                optional={"tool_call_id": st.text(max_size=2), "name": st.text(max_size=2)},
            ),
        ),
        max_size=5,
    ),
    as_text=st.booleans(),
)
def test_property_the_history_reader_gives_the_messages_the_message_reader_gives(history, as_text):
    # parse_history reads the commonest shape at once and defers the rest: either way, the same messages.
    from otel_eval.conventions.messages import parse_history

    value = json.dumps(history) if as_text else history
    read = [(m.role, m.texts, m.calls, m.responses) for m in parse_history(value)]
    assert read == [(m.role, m.texts, m.calls, m.responses) for m in parse_messages(value)]
