"""What a reading takes from parsed messages: the user's request, the system prompt, the answer,
the tool calls asked for, and what the messages could not read."""

from __future__ import annotations

from collections.abc import Sequence

from ..base import Reading, RequestedToolCall, ToolResponse, note_unread
from .lists import unread_of
from .model import Message


def last_user_text(messages: Sequence[Message]) -> str | None:
    """The last user message that says something (tool results sent as role ``user`` do not count)."""
    for message in reversed(messages):
        if message.role == "user" and message.texts:
            return message.text
    return None


def given_results(messages: Sequence[Message]) -> list[ToolResponse]:
    """The tool results in ``messages`` after the last user message that says something: what a
    model call inside a tool loop is sent back, in order (results sent as role ``user`` content
    blocks, as Anthropic's are, count). A result that names no tool (OpenAI's tool messages name
    only the call's id) takes the name of the call of that id in the messages before it."""
    found: list[ToolResponse] = []
    asked: list[Message] = []
    for message in reversed(messages):
        role = message.role
        if role == "user" and message.texts:
            break
        if role == "tool" or role == "user":
            found.extend(reversed(message.responses))
        elif role == "assistant":
            asked.append(message)
    found.reverse()
    if any(r.name is None and r.call_id for r in found):
        names = {call.call_id: call.name for message in asked for call in message.calls if call.call_id}
        for r in found:
            if r.name is None and r.call_id in names:
                r.name = names[r.call_id]
    return found


def system_text(messages: Sequence[Message]) -> str | None:
    """The system messages' text, joined by newlines; None when there is none."""
    texts = [m.text for m in messages if m.role == "system" and m.texts]
    return "\n".join(t for t in texts if t) or None


def output_text(messages: Sequence[Message]) -> str | None:
    """The answer: the first output message with text (further messages are alternative choices)."""
    for message in messages:
        if message.role != "user" and message.texts:
            return message.text
    return None


def output_calls(messages: Sequence[Message]) -> list[RequestedToolCall]:
    """The tool calls the model asked for in ``messages`` (not the user's), as copies the reading owns."""
    # Each reading gets calls of its own, built directly: copy.copy's generic path costs ~1 µs a call.
    return [
        RequestedToolCall(call.name, call.args, call.call_id)
        for message in messages
        if message.role != "user"
        for call in message.calls
    ]


def fill_from_messages(
    reading: Reading,
    inputs: Sequence[Message] = (),
    outputs: Sequence[Message] = (),
    system: str | None = None,
    *,
    input_source: str = "",
    output_source: str = "",
    system_source: str = "",
    with_calls: bool = True,
) -> None:
    """Fill the reading's empty content fields from parsed messages (never overwrites)."""
    if reading.user_input is None:
        text = last_user_text(inputs)
        if text is not None:
            reading.user_input = text
            reading.sources.setdefault("agent_task", input_source)
    if reading.system_prompt is None:
        text = system if system is not None else system_text(inputs)
        if text is not None:
            reading.system_prompt = text
            reading.sources.setdefault("system_prompt", system_source if system is not None else input_source)
    if reading.response is None:
        text = output_text(outputs)
        if text is not None:
            reading.response = text
            reading.sources.setdefault("agent_response", output_source)
    if inputs:  # read when asked (Reading.tool_results); an earlier source of messages first
        earlier = reading.sent_back
        if callable(earlier):
            reading.sent_back = lambda: earlier() or given_results(inputs)
        elif not earlier:
            reading.sent_back = lambda: given_results(inputs)
    if with_calls and not reading.requested_calls:
        calls = output_calls(outputs)
        if calls:
            reading.requested_calls = calls
            reading.sources.setdefault("tool_calls", output_source)
    note_unread_messages(reading, inputs, input_source)
    note_unread_messages(reading, outputs, output_source)


def note_unread_messages(reading: Reading, messages: Sequence[Message], source: str) -> None:
    """What the messages could not read, in ``reading.unread``, named by where they came from
    (messages deferred and never read are not looked at)."""
    for message in messages:
        for reason in unread_of(message):
            note_unread(reading, f"{source}: {reason}" if source else reason)
