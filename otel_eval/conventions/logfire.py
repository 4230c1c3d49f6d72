"""Pydantic Logfire's own spans, above all its OpenAI Agents SDK integration
(``logfire.instrument_openai_agents()``, scope ``logfire.openai_agents``).

Read from Logfire's source (``logfire/_internal/integrations/openai_agents.py``, ``main.py``,
``json_schema.py``) and checked against a real capture (``openai_agents_logfire``):

* every Logfire span carries ``logfire.msg_template`` (the span name is that template) and
  ``logfire.msg``; its other attributes are the values the integration passed, a value that is no
  OTLP primitive JSON-encoded and described in ``logfire.json_schema`` (``{"type": "object",
  "properties": {key: schema}}``: an empty schema is a plain ``str``/``int``/``bool``/``float``,
  kept as sent; any other is JSON text, decoded here). A string that merely looks like JSON (a
  tool's arguments) stays a string;
* the integration names each span of the Agents SDK by a fixed template, and sets the span
  data's ``export()`` as attributes: ``Agent run: {name!r}`` (``name``, ``tools``, ``handoffs``),
  ``Function: {name}`` (``input``: the arguments as JSON text, ``output``: ``str(result)``,
  ``error``: the SDK's ``{"message", "data"}`` when the tool failed, with no span status),
  ``Chat completion with {gen_ai.request.model!r}`` (``input`` / ``output``: Chat Completions
  messages; ``request_data``), ``Responses API`` (``raw_input``: Responses input items,
  ``response``: the Response object, ``events``: the same as GenAI event dicts), ``Handoff``,
  ``Guardrail``, ``Task`` / ``Turn`` (the SDK's run and loop-turn spans), ...;
* the SDK's ``RunConfig(group_id=...)`` (its conversation id) and ``trace_metadata`` are on the
  ``OpenAI Agents trace: {name}`` root only, as ``group_id`` / ``metadata``.

Logfire spans of other integrations (OpenAI, Anthropic, ... in their GenAI form) are read as
GenAI, with the attributes decoded the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..json_text import as_text, json_value, parse_json_maybe
from ..spans import SpanRecord
from . import genai
from .base import ExecutedToolCall, IdentityKeys, Reading, SpanType, as_arguments, span_error, tool_schema
from .messages import fill_from_messages, parse_history, parse_messages

NAME = "logfire"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
#: Baggage copied onto every span (``session.id``, ``user.id``) is OpenTelemetry's own; the SDK's
#: ``group_id`` is read from the trace root by :func:`read`.
IDENTITY_KEYS = IdentityKeys()
merge_logs = genai.merge_logs  # log records in the GenAI event form
TEMPLATE = "logfire.msg_template"
SCHEMA = "logfire.json_schema"

#: The OpenAI Agents integration's message templates (its span names) → span type. Templates it
#: builds from the span data (``Task: <name>``, ``Turn {turn} for agent <name>``) by their start.
AGENTS_TEMPLATES: dict[str, SpanType] = {
    "OpenAI Agents trace: {name}": "chain",
    "Agent run: {name!r}": "agent",
    "Function: {name}": "tool",
    "Chat completion with {gen_ai.request.model!r}": "llm",
    "Responses API": "llm",
    "Responses API with {gen_ai.request.model!r}": "llm",
    "Guardrail {name!r} {triggered=}": "chain",
    "Handoff: {from_agent} → {to_agent}": "chain",
    "Custom span: {name}": "chain",
    "MCP: list tools from server {server}": "chain",
    "OpenAI agents: {type} span": "chain",
}
_AGENTS_PREFIXES: tuple[tuple[str, SpanType], ...] = (("Task: ", "chain"), ("Turn {turn} for agent ", "chain"))
_TRACE_ROOT = "OpenAI Agents trace: {name}"


def detect(span: SpanRecord) -> bool:
    """``logfire.msg_template``: Logfire writes it on every span it makes."""
    return TEMPLATE in span.attributes


def agents_span_type(span: SpanRecord) -> SpanType | None:
    """The span type of an OpenAI Agents SDK span by the template Logfire named it with; None for
    any other Logfire span."""
    template = str(span.attributes.get(TEMPLATE) or "")
    found = AGENTS_TEMPLATES.get(template)
    if found is not None:
        return found
    for prefix, span_type in _AGENTS_PREFIXES:
        if template.startswith(prefix):
            return span_type
    return None


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    return agents_span_type(span) or genai.quick_span_type(span)


def attributes(span: SpanRecord) -> dict[str, Any]:
    """The span's attributes with every value ``logfire.json_schema`` describes as JSON decoded.

    A value whose schema is empty was a plain ``str``/``int``/``bool``/``float`` and is kept as
    sent; one whose schema is missing, or whose text does not parse, is kept too (the reader that
    needs a structure tries it as JSON itself)."""
    attrs = dict(span.attributes)
    schema = parse_json_maybe(attrs.pop(SCHEMA, None))
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return attrs
    for key, described in properties.items():
        value = attrs.get(key)
        if described and isinstance(value, str):
            try:
                attrs[key] = json_value(value)
            except ValueError:
                pass
    return attrs


def read(span: SpanRecord) -> Reading:
    """An OpenAI Agents SDK span from the attributes Logfire set from its span data; any other
    Logfire span as GenAI. Both with the GenAI keys the integration also writes (model, tokens)."""
    reading = genai.read_as(span, NAME)
    span_type = agents_span_type(span)
    if span_type is None:
        return reading
    reading.span_type = span_type
    attrs = attributes(span)
    template = str(attrs.get(TEMPLATE))
    if span_type == "agent":
        _read_agent(attrs, reading)
    elif span_type == "tool":
        _read_function(span, attrs, reading)
    elif span_type == "llm":
        if template.startswith("Responses API"):
            _read_response(attrs, reading)
        else:
            _read_generation(attrs, reading)
    elif template == _TRACE_ROOT:
        _read_trace_root(attrs, reading)
    return reading


def _read_agent(attrs: Mapping[str, Any], reading: Reading) -> None:
    name = _text(attrs.get("name"))
    if name is not None:
        reading.agent_name = name
        reading.sources["agent_name"] = "name"
    tools = attrs.get("tools")
    if isinstance(tools, list) and tools:  # the agent's tool names (the SDK exports no schemas)
        reading.tools_available = [tool_schema(tool, "", None) for tool in tools if isinstance(tool, str) and tool]
        reading.sources["tools_available"] = "tools"


def _read_function(span: SpanRecord, attrs: Mapping[str, Any], reading: Reading) -> None:
    name = _text(attrs.get("name")) or _function_of_message(attrs.get("logfire.msg")) or span.name
    arguments = as_arguments(attrs.get("input"))
    result = parse_json_maybe(attrs.get("output"))
    error = span_error(span) or _sdk_error(attrs.get("error"))
    reading.tool = ExecutedToolCall(name=name, args=arguments, result=result, error=error)
    reading.parameters = dict(arguments)
    reading.sources.update({"tool_calls": "name", "parameters_passed": "input", "tool_call_results": "output"})
    if result is not None:
        reading.response = as_text(result)
        reading.sources["agent_response"] = "output"


def _function_of_message(message: Any) -> str | None:
    """The tool's name in the message Logfire formatted (``Function: get_weather``, with
    `` failed: <error>`` after it when the tool failed); None when it is no such message."""
    text = _text(message)
    if text is None or not text.startswith("Function: "):
        return None
    return _text(text[len("Function: ") :].split(" failed: ", 1)[0].strip())


def _sdk_error(value: Any) -> str | None:
    """The SDK's ``SpanError`` (``{"message", "data"}``) as one line: its message, and the error
    its data names (``"Error running tool (non-fatal): Tool execution failed. ..."``)."""
    value = parse_json_maybe(value)
    if not isinstance(value, dict):
        return _text(value)
    message = _text(value.get("message"))
    data = value.get("data")
    detail = _text(data.get("error")) if isinstance(data, dict) else None
    if message and detail and detail not in message:
        return f"{message}: {detail}"
    return message or detail or "error"


def _read_generation(attrs: Mapping[str, Any], reading: Reading) -> None:
    """A Chat Completions call: ``input`` the messages sent, ``output`` the choices' messages."""
    fill_from_messages(
        reading,
        parse_history(attrs.get("input")),
        parse_messages(attrs.get("output"), "assistant"),
        input_source="input",
        output_source="output",
    )


def _read_response(attrs: Mapping[str, Any], reading: Reading) -> None:
    """A Responses API call: ``raw_input`` the input items (a string is one user message),
    ``response`` the Response (its ``output`` items and ``instructions``)."""
    response = attrs.get("response")
    response = response if isinstance(response, dict) else {}
    fill_from_messages(
        reading,
        parse_history(attrs.get("raw_input")),
        parse_messages(response.get("output"), "assistant"),
        _text(response.get("instructions")),
        input_source="raw_input",
        output_source="response.output",
        system_source="response.instructions",
    )
    if reading.user_input is None or reading.response is None:
        _read_events(attrs.get("events"), reading)


def _read_events(events: Any, reading: Reading) -> None:
    """The integration's GenAI-style event dicts (``{"event.name", "role", "content",
    "tool_calls"}``): the assistant's last, the others in."""
    if not isinstance(events, list):
        return
    items = [event for event in events if isinstance(event, dict)]
    # The output events come last (role assistant); an assistant event before the last other one
    # is history the request sent.
    last_in = max((i for i, event in enumerate(items) if event.get("role") != "assistant"), default=-1)
    fill_from_messages(
        reading,
        parse_history(items[: last_in + 1]),
        parse_messages(items[last_in + 1 :], "assistant"),
        input_source="events",
        output_source="events",
    )


def _read_trace_root(attrs: Mapping[str, Any], reading: Reading) -> None:
    """The SDK's trace: its workflow name, and its conversation (``group_id``) and metadata's
    session and user (read last, after every shared key)."""
    name = _text(attrs.get("name"))
    if name is not None:
        reading.agent_name = name
        reading.sources["agent_name"] = "name"
    metadata = attrs.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    session = _text(attrs.get("group_id"))
    key = "group_id"
    if session is None:
        session, key = _text(metadata.get("session_id")), "metadata.session_id"
    if reading.session_id is None and session is not None:
        reading.session_id = session
        reading.sources["session_id"] = key
    user = _text(metadata.get("user_id"))
    if reading.user_id is None and user is not None:
        reading.user_id = user
        reading.sources["user_id"] = "metadata.user_id"


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
