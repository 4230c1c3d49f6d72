"""The Langfuse Python SDK's own telemetry (SDK v3 to v5: ``langfuse.observation.*`` attributes).

What the SDK writes on each observation's span (``langfuse/_client/attributes.py``):

* ``langfuse.observation.type``: ``agent`` / ``generation`` / ``tool`` / ``span`` / ``chain`` /
  ``retriever`` / ``embedding`` / ``evaluator`` / ``guardrail`` / ``event``;
* ``langfuse.observation.input`` / ``.output``: the value serialised as JSON (a plain string
  is JSON-encoded or raw). An ``@observe``-decorated function's input is its call,
  ``{"args": [...], "kwargs": {...}}``; the OpenAI integration's generation input is
  ``{"tools": [...], "messages": [...]}`` and its output the assistant message;
* ``langfuse.observation.model.name``, ``.usage_details`` (JSON: ``prompt_tokens`` /
  ``completion_tokens``, or ``input`` / ``output``), ``.level`` (``ERROR`` on failure) and
  ``.status_message``;
* the trace's session and user as ``session.id`` / ``user.id`` (read generally by the mapper).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..json_text import as_text, parse_json_maybe
from ..spans import SpanRecord
from . import genai
from .base import (
    ExecutedToolCall,
    IdentityKeys,
    Reading,
    SpanType,
    any_key_starts,
    as_arguments,
    as_int,
    note_unread,
    span_error,
)
from .messages import (
    last_user_text,
    note_unread_messages,
    output_calls,
    output_text,
    parse_messages,
    system_text,
    tool_schemas,
)

NAME = "langfuse"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
merge_logs = genai.merge_logs  # log records in the GenAI event form

_PREFIX = "langfuse.observation."
TYPE = "langfuse.observation.type"
INPUT = "langfuse.observation.input"
OUTPUT = "langfuse.observation.output"
MODEL = "langfuse.observation.model.name"
USAGE = "langfuse.observation.usage_details"
LEVEL = "langfuse.observation.level"
STATUS_MESSAGE = "langfuse.observation.status_message"

#: The SDK writes the trace's session and user as ``session.id`` / ``user.id`` (v3+); the
#: ``langfuse.*`` spellings are older / other exporters' forms.
SESSION_ATTRIBUTES = ("session.id", "langfuse.session.id", "langfuse.trace.session_id")
USER_ATTRIBUTES = ("user.id", "langfuse.user.id", "langfuse.trace.user_id")
#: ``langfuse.session.id`` / ``langfuse.user.id`` are read on every span: other exporters put them
#: on spans of any instrumentation.
IDENTITY_KEYS = IdentityKeys(
    session=("langfuse.session.id",),
    user=("langfuse.user.id",),
    own_session=SESSION_ATTRIBUTES,
    own_user=USER_ATTRIBUTES,
)

_TYPES: dict[str, SpanType] = {
    "agent": "agent",
    "generation": "llm",
    "embedding": "llm",
    "tool": "tool",
    "retriever": "retriever",
    "span": "chain",
    "chain": "chain",
    "evaluator": "chain",
    "guardrail": "chain",
    "event": "chain",
}
_INPUT_KEYS = ("input", "query", "question", "message", "prompt", "user_input", "task")


def detect(span: SpanRecord) -> bool:
    """A ``langfuse.observation.*`` attribute: a span the Langfuse SDK wrote itself."""
    return any_key_starts(span.attributes, _PREFIX)


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type ``langfuse.observation.type`` names (``generation`` → llm, ...); unknown without one."""
    kind = span.attributes.get(TYPE)
    return _TYPES.get(str(kind).lower(), "unknown") if kind not in (None, "") else "unknown"


def read(span: SpanRecord) -> Reading:
    """The reading of a Langfuse observation; a shape no rule foresaw keeps what was read before it
    and is noted as unread, never raised."""
    reading = Reading(NAME, quick_span_type(span))
    try:
        _read(span, reading)
    except Exception as exc:  # never raise: what was read so far stays
        note_unread(reading, f"langfuse: {type(exc).__name__}: {exc}")
    return reading


def _read(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    _read_context(attrs, reading)
    kind = reading.span_type
    if kind == "agent":
        reading.agent_name = span.name or None
        if reading.agent_name:
            reading.sources["agent_name"] = "span.name"
        _read_agent(attrs, reading)
    elif kind == "llm":
        _read_generation(attrs, reading)
    elif kind == "tool":
        _read_tool(span, reading)
    elif kind == "retriever":
        query = _user_text(_parsed(reading, attrs, INPUT))
        if query is not None:
            reading.retrieval_query = [query]
            reading.sources["retrieval_query"] = INPUT
        output = _parsed(reading, attrs, OUTPUT)
        if output is not None:
            items = output if isinstance(output, list) else [output]
            reading.retrieved_documents = [t for t in (as_text(i) for i in items) if t]
            reading.sources["retrieved_documents"] = OUTPUT
    else:
        _read_response(attrs, reading)


def _read_context(attrs: Mapping[str, Any], reading: Reading) -> None:
    for keys, field in ((SESSION_ATTRIBUTES, "session_id"), (USER_ATTRIBUTES, "user_id")):
        for key in keys:
            value = attrs.get(key)
            if value not in (None, "") and not isinstance(value, (dict, list, tuple)):
                setattr(reading, field, str(value))
                reading.sources[field] = key
                break
    model = attrs.get(MODEL)
    if model not in (None, ""):
        reading.model = str(model)
    usage = parse_json_maybe(attrs.get(USAGE))
    if isinstance(usage, Mapping):
        reading.input_tokens = _first_int(usage, "prompt_tokens", "input", "input_tokens")
        reading.output_tokens = _first_int(usage, "completion_tokens", "output", "output_tokens")


def _first_int(usage: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = as_int(usage.get(key))
        if value is not None:
            return value
    return None


def _read_agent(attrs: Mapping[str, Any], reading: Reading) -> None:
    value = _parsed(reading, attrs, INPUT)
    text = _user_text(value)
    if text is not None:
        reading.user_input = text
        reading.sources["agent_task"] = INPUT
    elif isinstance(value, (Mapping, list)):
        messages = _messages_in(value)
        if messages:
            text = last_user_text(messages)
            if text is not None:
                reading.user_input = text
                reading.sources["agent_task"] = INPUT
            system = system_text(messages)
            if system is not None:
                reading.system_prompt = system
                reading.sources["system_prompt"] = INPUT
    _read_response(attrs, reading)
    reading.agent_exit = reading.response is not None


def _user_text(value: Any) -> str | None:
    """The user's request in an observation's input: plain text, the lone positional string of a
    recorded call, or a dict's ``input`` / ``query`` / ``question`` / ``message`` field."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping) and value.keys() <= {"args", "kwargs"} and value:
        args = value.get("args") or []
        kwargs = value.get("kwargs") or {}
        strings = [a for a in (args if isinstance(args, list) else [args]) if isinstance(a, str) and a]
        if len(strings) == 1:
            return strings[0]
        if isinstance(kwargs, Mapping):
            found = _user_text({k: v for k, v in kwargs.items()}) if kwargs else None
            if found is not None:
                return found
        if len(strings) == 0 and isinstance(args, list) and len(args) == 1:
            return _user_text(parse_json_maybe(args[0]))
        return None
    if isinstance(value, Mapping):
        for key in _INPUT_KEYS:
            item = value.get(key)
            if isinstance(item, str) and item:
                return item
    return None


def _messages_in(value: Any) -> list:
    if isinstance(value, Mapping) and "messages" in value:
        value = parse_json_maybe(value.get("messages"))
    if isinstance(value, list) or (isinstance(value, Mapping) and "role" in value):
        return parse_messages(value)
    return []


def _read_generation(attrs: Mapping[str, Any], reading: Reading) -> None:
    value = _parsed(reading, attrs, INPUT)
    if isinstance(value, Mapping) and "tools" in value:
        tools = tool_schemas(value.get("tools"))
        if tools:
            reading.tools_available = tools
            reading.sources["tools_available"] = INPUT
    messages = _messages_in(value)
    if messages:
        note_unread_messages(reading, messages, INPUT)
        text = last_user_text(messages)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = INPUT
        system = system_text(messages)
        if system is not None:
            reading.system_prompt = system
            reading.sources["system_prompt"] = INPUT
    elif isinstance(value, str) and value:
        reading.user_input = value
        reading.sources["agent_task"] = INPUT
    if isinstance(value, Mapping):
        parameters = {k: v for k, v in value.items() if k not in ("messages", "tools")}
        if parameters:
            reading.parameters = parameters
    output = _parsed(reading, attrs, OUTPUT)
    if isinstance(output, str):
        if output:
            reading.response = output
            reading.sources["agent_response"] = OUTPUT
        return
    out_messages = _output_messages(output)
    if out_messages:
        note_unread_messages(reading, out_messages, OUTPUT)
        text = output_text(out_messages)
        if text is not None:
            reading.response = text
            reading.sources["agent_response"] = OUTPUT
        calls = output_calls(out_messages)
        if calls:
            reading.requested_calls = calls
            reading.sources["tool_calls"] = OUTPUT


def _output_messages(output: Any) -> list:
    if isinstance(output, Mapping):
        if "choices" in output and isinstance(output.get("choices"), list):  # a whole completion
            output = [c.get("message") for c in output["choices"] if isinstance(c, Mapping) and c.get("message")]
        else:
            output = [{"role": "assistant", **output}] if "role" not in output else [output]
    if isinstance(output, list):
        return parse_messages(output, default_role="assistant")
    return []


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    arguments = as_arguments(_parsed(reading, attrs, INPUT)) if INPUT in attrs else {}
    result = _parsed(reading, attrs, OUTPUT) if OUTPUT in attrs else None
    error = span_error(span)
    if error in (None, "error") and (error is not None or str(attrs.get(LEVEL, "")).upper() == "ERROR"):
        message = attrs.get(STATUS_MESSAGE)  # the SDK's own record, when the span status has no description
        error = str(message).strip().splitlines()[0] if message not in (None, "") and str(message).strip() else "error"
    reading.tool = ExecutedToolCall(name=span.name or "unknown", args=arguments, result=result, error=error)
    reading.parameters = dict(arguments)
    reading.sources["tool_calls"] = "span.name"
    if INPUT in attrs:
        reading.sources["parameters_passed"] = INPUT
    if result is not None:
        reading.response = as_text(result)
        reading.sources["tool_call_results"] = OUTPUT
        reading.sources["agent_response"] = OUTPUT


def _read_response(attrs: Mapping[str, Any], reading: Reading) -> None:
    output = _parsed(reading, attrs, OUTPUT)
    if output in (None, ""):
        return
    if isinstance(output, Mapping) and ("role" in output or "choices" in output):
        text = output_text(_output_messages(output))
    elif isinstance(output, Mapping) and isinstance(output.get("output"), str):
        text = output["output"]
    else:
        text = as_text(output)
    if text:
        reading.response = text
        reading.sources["agent_response"] = OUTPUT


def _parsed(reading: Reading, attrs: Mapping[str, Any], key: str) -> Any:
    value = attrs.get(key)
    parsed = parse_json_maybe(value)
    if parsed is value and isinstance(value, str) and value.strip()[:1] in ("{", "["):
        note_unread(reading, f"{key} looks like JSON but does not parse")
    return parsed
