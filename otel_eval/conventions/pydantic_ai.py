"""Pydantic AI's instrumentation (``Agent(instrument=...)`` / the ``Instrumentation`` capability).

Built on the GenAI semconv (:mod:`.genai` reads the shared attributes); what is pydantic-ai's own:

* the agent span (``invoke_agent <name>``, or ``agent run`` in data format v2) has no
  ``gen_ai.input.messages``: the conversation is in ``pydantic_ai.all_messages`` (semconv parts,
  history first; ``pydantic_ai.new_message_index`` marks where this run begins) and the answer in
  ``final_result`` (text, or JSON for structured output);
* tool arguments inside messages are a JSON string inside JSON; tool results travel as role
  ``user`` ``tool_call_response`` parts with ``result``;
* format v2 tool spans (``running tool``) use ``tool_arguments`` / ``tool_response``;
* ``gen_ai.conversation.id`` is ``""`` when no conversation id was given (no session);
* a ``ModelRetry`` leaves the tool span ERROR with a ``ToolRetryError`` exception event and the
  retry prompt as ``gen_ai.tool.call.result``.
"""

from __future__ import annotations

from typing import Any

from ..json_text import as_text, parse_json_maybe
from ..spans import SpanRecord
from . import genai
from .base import ExecutedToolCall, IdentityKeys, Reading, SpanType, any_key_starts, as_arguments, as_int
from .messages import last_user_text, parse_messages, system_text

NAME = "pydantic_ai"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
IDENTITY_KEYS = IdentityKeys()  # gen_ai.conversation.id: OpenTelemetry's own
merge_logs = genai.merge_logs  # log records in the GenAI event form
_OWN_KEYS = (
    "pydantic_ai.all_messages",
    "final_result",
    "model_request_parameters",
    "gen_ai.agent.call.id",
    "all_messages_events",
    "pydantic_ai.new_message_index",
)
_V2_SPAN_NAMES: dict[str, SpanType] = {"agent run": "agent", "running tool": "tool", "running output function": "tool"}


def detect(span: SpanRecord) -> bool:
    """Pydantic AI's scope or its own attributes, or a format v2 span name (``agent run``, ``running
    tool``) beside Logfire's message."""
    if span.scope.replace("_", "-").startswith("pydantic-ai"):
        return True
    attrs = span.attributes
    if any(map(attrs.__contains__, _OWN_KEYS)) or any_key_starts(attrs, "pydantic_ai."):
        return True
    return span.name in _V2_SPAN_NAMES and "logfire.msg" in attrs


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    return _own_type(span, genai.quick_span_type(span))


def _own_type(span: SpanRecord, genai_type: SpanType) -> SpanType:
    """The GenAI type, or the one a format v2 span name tells when GenAI's keys tell none."""
    return _V2_SPAN_NAMES.get(span.name, genai_type) if genai_type == "unknown" else genai_type


def read(span: SpanRecord) -> Reading:
    """The GenAI reading, with the agent's conversation and answer and the tool's arguments and result
    from Pydantic AI's own attributes; an empty conversation id is no session."""
    attrs = span.attributes
    reading = genai.read_as(span, NAME)
    reading.span_type = _own_type(span, reading.span_type)
    if reading.session_id == "":
        reading.session_id = None

    if reading.span_type == "agent":
        _read_agent(attrs, reading)
    elif reading.span_type == "tool":
        _read_tool(span, reading)
    return reading


def _read_agent(attrs: Any, reading: Reading) -> None:
    if reading.agent_name is None and attrs.get("agent_name"):
        reading.agent_name = str(attrs["agent_name"])
        reading.sources["agent_name"] = "agent_name"
    messages = parse_messages(attrs.get("pydantic_ai.all_messages"))
    start = as_int(attrs.get("pydantic_ai.new_message_index")) or 0
    if reading.user_input is None:
        # This run's prompt is the first user text from new_message_index on; later user texts
        # are retry prompts pydantic-ai writes as user messages.
        own = [m for m in messages[start:] if m.role == "user" and m.texts]
        text = own[0].text if own else last_user_text(messages)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = "pydantic_ai.all_messages"
    if reading.system_prompt is None:
        text = system_text(messages)
        if text is not None:
            reading.system_prompt = text
            reading.sources["system_prompt"] = "pydantic_ai.all_messages"
    final = attrs.get("final_result")
    if final not in (None, ""):
        reading.response = final if isinstance(final, str) else as_text(final)
        reading.sources["agent_response"] = "final_result"
    elif reading.response is None:
        answers = [m for m in messages if m.role == "assistant" and m.texts]
        if answers:
            reading.response = answers[-1].text
            reading.sources["agent_response"] = "pydantic_ai.all_messages"
    reading.agent_exit = reading.response is not None


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    tool = reading.tool or ExecutedToolCall(name=str(attrs.get("gen_ai.tool.name") or "unknown"))
    args_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
    if not tool.args and attrs.get("tool_arguments") is not None:
        tool.args = as_arguments(attrs["tool_arguments"])
        args_key = "tool_arguments"
    if tool.result is None and attrs.get("tool_response") is not None:
        tool.result = parse_json_maybe(attrs["tool_response"])
        result_key = "tool_response"
    if tool.error is not None:
        # The retry prompt pydantic-ai records as the result is what the model was told; the
        # exception message says why the tool failed.
        tool.error = _retry_message(span) or tool.error
    reading.tool = tool
    reading.parameters = dict(tool.args)
    reading.response = as_text(tool.result) if tool.result is not None else None
    genai.tool_sources(reading, args_key, result_key)


def _retry_message(span: SpanRecord) -> str | None:
    for event in reversed(span.events):
        if event.name == "exception":
            message = event.attributes.get("exception.message")
            kind = event.attributes.get("exception.type")
            if message and kind:
                return f"{kind}: {message}"
            return str(message or kind) if (message or kind) else None
    return None
