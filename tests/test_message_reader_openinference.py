"""OpenInference's messages through the shared reader (``conventions.messages``): the flattened
``llm.*_messages.N.message.*`` attributes, and the message states in an agent's input and output."""

from __future__ import annotations

from otel_eval.conventions.base import RequestedToolCall
from otel_eval.conventions.messages import (
    IndexedGroups,
    last_text_from,
    last_user_text,
    openinference_messages,
    state_messages,
    system_text,
)

GROUPS = IndexedGroups("llm.input_messages", "llm.output_messages")


def test_flattened_messages_read_roles_texts_and_calls():
    attributes = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Be brief.",
        "llm.input_messages.1.message.role": "human",
        "llm.input_messages.1.message.contents.0.message_content.type": "text",
        "llm.input_messages.1.message.contents.0.message_content.text": "Weather in Oslo?",
        "llm.input_messages.1.message.contents.1.message_content.type": "image",
        "llm.input_messages.1.message.contents.1.message_content.image.image.url": "data:...",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call-1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Oslo"}',
        "llm.output_messages.1.message.role": "assistant",
        "llm.output_messages.1.message.function_call_name": "get_time",
        "llm.output_messages.1.message.function_call_arguments_json": '{"tz": "CET"}',
    }
    groups = GROUPS(attributes)
    inputs = openinference_messages(groups["llm.input_messages"])
    assert (system_text(inputs), last_user_text(inputs)) == ("Be brief.", "Weather in Oslo?")  # the image is no text
    outputs = openinference_messages(groups["llm.output_messages"])
    assert [m.calls for m in outputs] == [
        [RequestedToolCall("get_weather", {"city": "Oslo"}, "call-1")],
        [RequestedToolCall("get_time", {"tz": "CET"})],
    ]
    # an input history is read for its roles and texts only
    assert all(m.calls == [] for m in openinference_messages(groups["llm.output_messages"], with_calls=False))


def test_a_message_that_names_no_role_is_nobodys():
    groups = GROUPS({"llm.input_messages.0.message.content": "orphan"})
    assert last_user_text(openinference_messages(groups["llm.input_messages"])) is None


def test_the_latest_turn_and_answer_of_a_langchain_state():
    state = {
        "messages": [
            {"type": "human", "data": {"content": "first question"}},
            {"lc": 1, "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "first answer"}},
            {"role": "user", "content": [{"type": "text", "text": "second question"}]},
            {"role": "assistant", "content": ""},  # a turn that only called tools: no answer
            "not a message",
        ]
    }
    messages = state_messages(state)
    assert (last_text_from(messages, "user"), last_text_from(messages, "assistant")) == (
        "second question",
        "first answer",
    )
    # LangChain's model input is a batch of message lists: the last one is the conversation
    batch = {"messages": [[{"role": "user", "content": "old"}], [{"role": "user", "content": "new"}]]}
    assert last_text_from(state_messages(batch), "user") == "new"
    assert state_messages({"input": "no messages here"}) is None
