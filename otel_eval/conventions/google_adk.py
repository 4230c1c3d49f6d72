"""Google ADK's own telemetry (scope ``gcp.vertex.agent``), legacy and v2 schema.

Legacy (ADK 1.x style, ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``): a root ``invocation`` span with
no attributes, ``call_llm`` spans carrying the whole request/response as JSON strings
(``gcp.vertex.agent.llm_request`` / ``llm_response``, Gemini ``contents``/``parts``), and tool
spans with ``gcp.vertex.agent.tool_call_args`` / ``tool_response``. v2 (the default) writes plain
GenAI semconv (``invoke_workflow`` / ``invoke_agent`` / ``generate_content`` / ``execute_tool``),
which :mod:`.genai` reads; this module runs first so ADK's own attributes are not lost and its
quirks are undone:

* ``execute_tool (merged)`` / ``gen_ai.tool.name="(merged tools)"`` only groups the responses of
  parallel calls: a wrapper, never a call (its call id is an event UUID).
* A tool "error" is often a ``{"error": ...}`` dict returned by a callback, with status ERROR and
  description ``TOOL_ERROR``: the dict's text is the error.
* Non-dict tool results are wrapped as ``{"result": value}``; the value is what the tool returned.
* Tool spans carry placeholder ``llm_request``/``llm_response`` of ``"{}"``; ignored.
* v2 names a model's function call that has no id (Gemini's never do) ``<tool>_<part index>`` in
  ``gen_ai.output.messages``, while the call it runs gets ADK's own id (``adk-<uuid>``, on the
  tool span): the placeholder names no call, so it is dropped and the call pairs by name.
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
    span_error,
)
from .messages import as_list, fill_from_messages, instructions_text, parse_messages, token_count, tool_schemas

NAME = "adk"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
#: Read on every span: ADK stamps it on spans that OpenInference's ADK instrumentation types too.
IDENTITY_KEYS = IdentityKeys(session=("gcp.vertex.agent.session_id",))
merge_logs = genai.merge_logs  # log records in the GenAI event form
SCOPE = "gcp.vertex.agent"
PREFIX = "gcp.vertex.agent."
MERGED_TOOL_NAME = "(merged tools)"
_PLACEHOLDERS = ("", "{}", "N/A", "<not specified>", "<not serializable>")


def detect(span: SpanRecord) -> bool:
    """ADK's tracer scope (``gcp.vertex.agent``), as scope or ``gen_ai.system``, or a
    ``gcp.vertex.agent.*`` attribute."""
    if span.scope == SCOPE or span.attributes.get("gen_ai.system") == SCOPE:
        return True
    return any_key_starts(span.attributes, PREFIX)


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without parsing a large request (stored at ingest)."""
    asks_model = span.name == "call_llm" or _has_content(span.attributes.get(PREFIX + "llm_request"))
    return _own_type(span, genai.quick_span_type(span), asks_model)


def _own_type(span: SpanRecord, genai_type: SpanType, asks_model: bool) -> SpanType:
    """A span that asks a model is an LLM span; the Runner's ``invocation`` wraps the agent and says
    nothing itself (a chain); any other keeps its GenAI type."""
    if asks_model:
        return "llm"
    return "chain" if span.name == "invocation" and genai_type == "unknown" else genai_type


def read(span: SpanRecord) -> Reading:
    """The GenAI reading, with what ADK records in its own attributes: the LLM request and response,
    the tool's arguments and response, and the session id."""
    attrs = span.attributes
    reading = genai.read_as(span, NAME)
    asks_model = span.name == "call_llm" or _content(attrs.get(PREFIX + "llm_request")) is not None
    reading.span_type = _own_type(span, reading.span_type, asks_model)
    if asks_model:
        _read_llm(attrs, reading)
    if reading.span_type == "tool":
        _read_tool(span, reading)
    for call in reading.requested_calls:
        if _stand_in_id(call.name, call.call_id):
            call.call_id = None

    session = _text(attrs.get(PREFIX + "session_id"))
    if session is not None and reading.session_id is None:
        reading.session_id = session
        reading.sources["session_id"] = PREFIX + "session_id"
    return reading


INVOCATION_ID = PREFIX + "invocation_id"
EVENT_ID = PREFIX + "event_id"


def invocation_id(span: SpanRecord) -> str | None:
    """The ADK invocation a model span ran in (``gcp.vertex.agent.invocation_id``, on the model
    spans of both telemetry schemas). One invocation is one turn of ``adk eval``, even over several
    traces: a ``task`` agent that asks the user something is resumed by the user's answer, in a
    trace of its own, under the same invocation id. An ``AgentTool``'s agent runs an invocation of
    its own (another id) inside the caller's trace."""
    return _text(span.attributes.get(INVOCATION_ID))


def model_call_id(span: SpanRecord) -> str | None:
    """The ADK event a model span produced (``gcp.vertex.agent.event_id``): the legacy schema
    wraps each model call in a ``call_llm`` span with a ``generate_content`` span inside, both
    carrying the same event id: one model call, as ADK counts it (one model event)."""
    return _text(span.attributes.get(EVENT_ID))


def _stand_in_id(name: str, call_id: str | None) -> bool:
    """ADK's id for a function call that had none: ``f"{name}_{index of the part}"``."""
    return call_id is not None and call_id.startswith(name + "_") and call_id[len(name) + 1 :].isdigit()


def is_merged(span: SpanRecord) -> bool:
    """ADK's merged tool span, which groups the responses of parallel calls that have spans of their
    own: a wrapper, not a call."""
    return span.attributes.get("gen_ai.tool.name") == MERGED_TOOL_NAME or span.name == "execute_tool (merged)"


# --- LLM: gcp.vertex.agent.llm_request / llm_response ------------------------------------------


def _read_llm(attrs: Mapping[str, Any], reading: Reading) -> None:
    request = _content(attrs.get(PREFIX + "llm_request"))
    response = _content(attrs.get(PREFIX + "llm_response"))
    if isinstance(request, Mapping):
        config = given if isinstance(given := request.get("config"), Mapping) else {}
        tools = [
            declaration
            for tool in as_list(config.get("tools"))
            if isinstance(tool, Mapping)
            for declaration in as_list(tool.get("function_declarations"))
        ]
        schemas = tool_schemas(tools)
        if schemas and not reading.tools_available:
            reading.tools_available = schemas
            reading.sources["tools_available"] = PREFIX + "llm_request"
        fill_from_messages(
            reading,
            parse_messages(request.get("contents")),
            system=instructions_text(_instruction_parts(config.get("system_instruction"))),
            input_source=PREFIX + "llm_request",
            system_source=PREFIX + "llm_request",
            with_calls=False,
        )
        if reading.model is None and request.get("model"):
            reading.model = str(request["model"])
    if isinstance(response, Mapping):
        content = response.get("content")
        outputs = parse_messages(content, "assistant") if content is not None else []
        fill_from_messages(reading, (), outputs, output_source=PREFIX + "llm_response")
        usage = given if isinstance(given := response.get("usage_metadata"), Mapping) else {}
        if reading.input_tokens is None:
            reading.input_tokens = token_count(usage, "prompt_token_count")
        if reading.output_tokens is None:
            reading.output_tokens = token_count(usage, "candidates_token_count")
        if response.get("model_version"):
            reading.model = str(response["model_version"])


def _instruction_parts(value: Any) -> Any:
    """``system_instruction`` is a string or a Content (``{"parts": [{"text": ...}]}``)."""
    value = parse_json_maybe(value)
    if isinstance(value, Mapping) and "parts" in value:
        return value["parts"]
    return value


# --- tools ---------------------------------------------------------------------------------------


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    if is_merged(span):
        # Groups the responses of parallel calls that have their own spans: not a call.
        reading.is_wrapper = True
        reading.tool = None
        reading.parameters = {}
        reading.response = as_text(parse_json_maybe(attrs.get(PREFIX + "tool_response")))
        reading.sources = {
            k: v
            for k, v in reading.sources.items()
            if k not in ("tool_calls", "parameters_passed", "tool_call_results")
        }
        return
    tool = reading.tool or ExecutedToolCall(name=str(attrs.get("gen_ai.tool.name") or "unknown"))
    args_key = "gen_ai.tool.call.arguments"
    raw_args = attrs.get(PREFIX + "tool_call_args")
    if raw_args is not None and raw_args not in _PLACEHOLDERS[2:] and not tool.args:
        tool.args = as_arguments(raw_args)
        args_key = PREFIX + "tool_call_args"
    result_key = "gen_ai.tool.call.result"
    raw_result = attrs.get(PREFIX + "tool_response")
    if tool.result is None and raw_result is not None and raw_result not in _PLACEHOLDERS[2:]:
        tool.result = parse_json_maybe(raw_result)
        result_key = PREFIX + "tool_response"
    if tool.call_id in _PLACEHOLDERS:
        tool.call_id = None
    tool.result = _unwrap_result(tool.result)
    if isinstance(tool.result, Mapping) and "error" in tool.result and span.status == "error":
        tool.error = as_text(tool.result["error"])
    elif span.status == "error" and tool.error is None:
        tool.error = span_error(span)
    reading.tool = tool
    reading.parameters = dict(tool.args)
    reading.response = as_text(tool.result) if tool.result is not None else None
    genai.tool_sources(reading, args_key, result_key)


def _unwrap_result(result: Any) -> Any:
    """ADK wraps a non-dict return value as ``{"result": value}``; give back the value."""
    if isinstance(result, Mapping) and set(result) == {"result"}:
        return result["result"]
    return result


def _content(value: Any) -> Any | None:
    """A JSON attribute, or None when ADK wrote a placeholder (``"{}"`` on tool spans, content off)."""
    if value is None or (isinstance(value, str) and value.strip() in _PLACEHOLDERS):
        return None
    parsed = parse_json_maybe(value)
    return None if parsed in ({}, None) else parsed


def _has_content(value: Any) -> bool:
    """``_content(value) is not None``, without parsing a long JSON text: one of over 64
    characters is never ``{}`` or ``null`` (nor a placeholder) but with padding no writer adds."""
    if isinstance(value, str) and len(value) > 64:
        return True
    return _content(value) is not None


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
