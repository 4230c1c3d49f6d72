"""The one message reader every dialect shares (``otel_eval.conventions.messages``): each message
shape instrumentations write, read to the same texts, tool calls and tool results; what it cannot
read kept as text and named; and it never raises, whatever JSON it is given."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.conventions.base import Reading, RequestedToolCall
from otel_eval.conventions.messages import (
    fill_from_messages,
    parse_history,
    parse_message,
    parse_messages,
    read_content,
    result_value,
)


def one(value, role="user"):
    messages = parse_messages(value, role)
    assert len(messages) == 1, messages
    return messages[0]


# --- OpenAI chat ---------------------------------------------------------------------------------


def test_openai_chat_content_as_a_string_or_as_parts_gives_the_same_text():
    as_string = one({"role": "user", "content": "Weather in Tokyo?"})
    as_parts = one({"role": "user", "content": [{"type": "text", "text": "Weather in Tokyo?"}]})
    assert as_string.role == as_parts.role == "user"
    assert as_string.text == as_parts.text == "Weather in Tokyo?"


def test_openai_chat_tool_calls_and_the_tool_message_that_answers_them():
    assistant, tool = parse_messages(
        [
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
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 22}'},
        ]
    )
    assert assistant.calls == [RequestedToolCall("get_weather", {"city": "Tokyo"}, "call_1")]
    assert assistant.text is None
    assert [(r.call_id, r.value, r.is_error) for r in tool.responses] == [("call_1", {"temp": 22}, False)]
    assert tool.text is None  # a tool's output is its result, not something said


def test_openai_chat_image_parts_are_not_text_but_are_named():
    message = one(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:..."}},
            ],
        }
    )
    assert message.text == "What is this?"
    assert any("image_url" in reason for reason in message.unread)


def test_openai_refusal_is_what_the_model_said():
    assert (
        one({"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help."}]}).text == "I can't help."
    )


# --- OTel GenAI parts ----------------------------------------------------------------------------


def test_genai_parts_text_calls_results_and_reasoning():
    assistant, tool = parse_messages(
        json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "reasoning", "content": "The user wants weather."},
                        {"type": "text", "content": "Let me check."},
                        {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}},
                    ],
                },
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "18°C"}]},
            ]
        )
    )
    assert assistant.text == "Let me check."  # reasoning is not the answer
    assert list(assistant.reasoning) == ["The user wants weather."]
    assert assistant.calls == [RequestedToolCall("get_weather", {"city": "Paris"}, "c1")]
    assert [(r.call_id, r.value) for r in tool.responses] == [("c1", "18°C")]


# --- Bedrock Converse / Strands content blocks ----------------------------------------------------


def test_bedrock_blocks_text_tool_use_and_tool_result():
    assistant = one(
        {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "tu1", "name": "get_weather", "input": {"city": "Tokyo"}}},
            ],
        }
    )
    assert assistant.text == "Checking."
    assert assistant.calls == [RequestedToolCall("get_weather", {"city": "Tokyo"}, "tu1")]
    user = one(
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tu1", "status": "success", "content": [{"text": "It is 22°C."}]}},
                {"toolResult": {"toolUseId": "tu2", "status": "success", "content": [{"json": {"rows": 3}}]}},
            ],
        }
    )
    assert [(r.call_id, r.value, r.is_error) for r in user.responses] == [
        ("tu1", "It is 22°C.", False),
        ("tu2", {"rows": 3}, False),
    ]


def test_bedrock_tool_result_with_status_error_is_an_error():
    message = one(
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tu1", "status": "error", "content": [{"text": "Error: Unknown city"}]}}
            ],
        }
    )
    assert [(r.value, r.is_error) for r in message.responses] == [("Error: Unknown city", True)]


def test_a_bare_list_of_blocks_is_one_message_whatever_its_form():
    blocks = [{"text": "Checking."}, {"toolUse": {"toolUseId": "tu1", "name": "f", "input": {}}}]
    for value in (blocks, json.dumps(blocks)):
        message = one(value, "assistant")
        assert (message.role, message.text, [c.name for c in message.calls]) == ("assistant", "Checking.", ["f"])
    assert parse_message(json.dumps(blocks), "assistant").calls == one(blocks, "assistant").calls


def test_bedrock_reasoning_content_is_reasoning():
    message = one(
        {
            "role": "assistant",
            "content": [{"reasoningContent": {"reasoningText": {"text": "thinking..."}}}, {"text": "Answer."}],
        }
    )
    assert (message.text, list(message.reasoning)) == ("Answer.", ["thinking..."])


# --- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_tool_use_tool_result_and_thinking():
    assistant, user = parse_messages(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "x"},
                    {"type": "text", "text": "On it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "not found"}],
                        "is_error": True,
                    }
                ],
            },
        ]
    )
    assert (assistant.text, list(assistant.reasoning)) == ("On it.", ["hmm"])
    assert assistant.calls == [RequestedToolCall("lookup", {"q": "x"}, "toolu_1")]
    assert [(r.call_id, r.value, r.is_error) for r in user.responses] == [("toolu_1", "not found", True)]
    assert user.text is None


def test_anthropic_tool_result_content_may_be_a_string():
    message = one({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "42"}]})
    assert [(r.call_id, r.value, r.is_error) for r in message.responses] == [("t", 42, False)]


# --- Gemini --------------------------------------------------------------------------------------


def test_gemini_parts_in_both_spellings():
    model = one(
        {
            "role": "model",
            "parts": [
                {"text": "thinking", "thought": True},
                {"text": "Here."},
                {"function_call": {"id": "g1", "name": "search", "args": {"q": "a"}}},
                {"functionCall": {"name": "search", "args": {"q": "b"}}},
            ],
        }
    )
    assert model.role == "assistant"
    assert (model.text, list(model.reasoning)) == ("Here.", ["thinking"])
    assert model.calls == [RequestedToolCall("search", {"q": "a"}, "g1"), RequestedToolCall("search", {"q": "b"})]
    user = one(
        {
            "role": "user",
            "parts": [
                {"function_response": {"id": "g1", "name": "search", "response": {"hits": 1}}},
                {"functionResponse": {"name": "search", "response": {"hits": 2}}},
            ],
        }
    )
    assert [(r.call_id, r.name, r.value) for r in user.responses] == [
        ("g1", "search", {"hits": 1}),
        (None, "search", {"hits": 2}),
    ]


# --- OpenAI Responses ----------------------------------------------------------------------------


def test_responses_items_message_function_call_and_output():
    question, answer, call, output = parse_messages(
        [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Oslo"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "cold"},
        ]
    )
    assert (question.role, question.text) == ("user", "Weather?")
    assert (answer.role, answer.text) == ("assistant", "Checking.")
    # the call is linked by call_id, not by the item's own id
    assert (call.role, call.calls) == ("assistant", [RequestedToolCall("get_weather", {"city": "Oslo"}, "call_1")])
    assert (output.role, [(r.call_id, r.value) for r in output.responses]) == ("tool", [("call_1", "cold")])


# --- LangChain serialized messages and choice wrappers -------------------------------------------


def test_langchain_serialized_messages():
    human, ai, tool = parse_messages(
        [
            {"type": "human", "data": {"content": "hi"}},
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "AIMessage"],
                "kwargs": {
                    "content": "",
                    "tool_calls": [{"name": "f", "args": {"a": 1}, "id": "c", "type": "tool_call"}],
                },
            },
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "ToolMessage"],
                "kwargs": {"content": "boom", "tool_call_id": "c", "status": "error"},
            },
        ]
    )
    assert (human.role, human.text) == ("user", "hi")
    assert (ai.role, ai.calls) == ("assistant", [RequestedToolCall("f", {"a": 1}, "c")])
    assert [(r.call_id, r.value, r.is_error) for r in tool.responses] == [("c", "boom", True)]


def test_a_choice_message_may_be_a_string_a_message_or_blocks():
    as_string = parse_message({"index": 0, "finish_reason": "stop", "message": "Done."}, "assistant")
    as_dict = parse_message({"index": 0, "message": {"role": "assistant", "content": "Done."}}, "assistant")
    as_blocks = parse_message({"finish_reason": "end_turn", "message": '[{"text": "Done."}]'}, "assistant")
    assert as_string.text == as_dict.text == as_blocks.text == "Done."
    calls = parse_message({"message": [{"toolUse": {"toolUseId": "t", "name": "f", "input": {"x": 1}}}]}, "assistant")
    assert calls.calls == [RequestedToolCall("f", {"x": 1}, "t")]


def test_a_message_whose_text_merely_looks_like_json_stays_text():
    assert one({"role": "user", "content": "[1, 2, 3] are the numbers"}).text == "[1, 2, 3] are the numbers"
    assert one({"role": "user", "content": '{"question": "why?"}'}).text == '{"question": "why?"}'


# --- what it cannot read -------------------------------------------------------------------------


def test_an_unknown_part_is_kept_as_text_and_named():
    message = one({"role": "assistant", "content": [{"type": "text", "text": "A"}, {"type": "hologram", "data": 1}]})
    assert message.texts[0] == "A"
    assert json.loads(message.texts[1]) == {"type": "hologram", "data": 1}
    assert message.unread == ["unknown content part type 'hologram'"]
    untyped = one({"role": "assistant", "content": [{"sparkle": True}]})
    assert json.loads(untyped.text) == {"sparkle": True} and untyped.unread


def test_content_that_should_be_json_and_does_not_parse_is_empty_and_named():
    message = parse_message({"role": "assistant", "content": '[{"text": "cut off'})
    assert message.text is None
    assert message.unread == ["content looks like JSON but does not parse"]
    broken = parse_messages('[{"role": "user", "parts": [')
    assert [m.text for m in broken] == [None] and broken[0].unread


def test_a_tool_call_without_a_name_is_named_not_dropped_silently():
    message = one({"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]})
    assert message.calls == [] and message.unread == ["tool call without a tool name"]


def test_the_reading_names_what_its_messages_could_not_read():
    reading = Reading("genai", "llm")
    fill_from_messages(
        reading,
        parse_messages([{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "hologram"}]}]),
        input_source="gen_ai.input.messages",
    )
    assert reading.user_input.startswith("Hi")
    assert reading.unread == ["gen_ai.input.messages: unknown content part type 'hologram'"]


def test_tool_results_are_unwrapped_from_text_and_json_blocks_only():
    assert result_value('[{"text": "{\\"a\\": 1}"}]') == {"a": 1}
    assert result_value([{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]) == "x\ny"
    assert result_value([{"id": 1, "text": "doc"}]) == [{"id": 1, "text": "doc"}]  # a record, not a block
    assert result_value({"temp": 22}) == {"temp": 22}


def test_wrong_types_give_empty_messages_not_errors():
    for value in (
        5,
        True,
        [None],
        {"role": 3, "content": {"x": [1]}},
        {"parts": 7},
        {"content": [[[["deep"]]]]},
        {"role": "assistant", "tool_calls": "not json"},
        {"message": None},
        [{"type": 5}],
    ):
        parse_messages(value)
        parse_message(value)
    assert read_content({"weird": 1}).unread


# --- never raises ----------------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(
        [
            "text",
            "tool_call",
            "toolUse",
            "toolResult",
            "function_call",
            "message",
            "content",
            "role",
            "tool",
            "assistant",
            "parts",
            "type",
            "error",
            "[{",
            '{"',
        ]
    ),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "parts",
                    "type",
                    "text",
                    "toolUse",
                    "toolResult",
                    "tool_calls",
                    "message",
                    "function",
                    "name",
                    "arguments",
                    "args",
                    "input",
                    "id",
                    "call_id",
                    "toolUseId",
                    "status",
                    "response",
                    "output",
                    "json",
                    "thought",
                    "function_call",
                    "functionResponse",
                    "lc",
                    "kwargs",
                    "data",
                    "summary",
                    "reasoning",
                    "is_error",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(value=_json, as_text=st.booleans(), role=st.sampled_from(["user", "assistant", "tool", "system"]))
def test_property_the_reader_never_raises(value, as_text, role):
    value = json.dumps(value) if as_text else value
    read = parse_messages(value, role) + parse_history(value, role)
    single = parse_message(value, role)
    read += [single] if single is not None else []
    read.append(read_content(value, role))
    for message in read:
        fields = (message.texts, message.calls, message.responses, message.reasoning, message.unread)
        assert all(isinstance(text, str) for text in message.texts)
        assert all(isinstance(call.args, dict) for call in message.calls)
        # the safety net caught nothing: every shape was read by a rule
        assert not any(reason.startswith(("message not read", "content not read")) for reason in fields[4]), fields
    result_value(value)
