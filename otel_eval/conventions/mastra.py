"""Mastra's own tracing (``@mastra/observability``) exported by ``@mastra/otel-exporter``.

Built on the GenAI semconv (:mod:`.genai` reads the ``gen_ai.*`` attributes the exporter writes);
what is Mastra's own fills the gaps those leave (``observability/otel-exporter/src/
gen-ai-semantics.ts`` and ``span-converter.ts``):

* ``mastra.span.type`` names Mastra's span type: ``agent_run`` (``invoke_agent <agent>``, the
  run), ``model_generation`` (the model loop of a run), ``model_step`` (``agent_step``: one turn
  of the loop), ``model_inference`` (``chat <model>``: the request, with ``gen_ai.usage.*``),
  ``model_chunk``, ``tool_call`` / ``mcp_tool_call`` (``execute_tool <tool>``), ``workflow_*``,
  ``processor_run``, ``memory_operation``, ... Exporters paired with a Mastra that emits no
  ``model_inference`` spans make ``model_generation`` the ``chat`` span instead: the span whose
  ``gen_ai.operation.name`` is ``chat`` is the model call either way;
* a span's input and output go to GenAI attributes only for the model call and tools
  (``gen_ai.input.messages`` / ``gen_ai.tool.call.arguments`` ...); every other span keeps them
  as ``mastra.<span type>.input`` / ``.output``: the run's user input is
  ``mastra.agent_run.input`` (the text, or messages) and its answer ``mastra.agent_run.output``
  (``{"text", "files", ...}``, ``object`` for structured output); a step's request is
  ``mastra.model_step.input`` (messages) and its response ``mastra.model_step.output``
  (``{"text", "toolCalls": [{toolCallId, toolName, args}]}``);
* tracing metadata is ``mastra.metadata.<key>``: the application's ``sessionId`` / ``userId``,
  and with memory ``threadId`` / ``resourceId`` (the thread is also ``gen_ai.conversation.id``);
* a failed span has status ERROR, an ``exception`` event and ``error.type`` = the Mastra error id
  (``"unknown"`` when it has none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..json_text import as_text, parse_json_maybe
from ..spans import SpanRecord
from . import genai
from .base import IdentityKeys, Reading, SpanType, any_key_starts, as_arguments, tool_schema
from .messages import Message, last_user_text, note_unread_messages, system_text
from .vercel_ai import messages_of, parsed_attribute, requested_calls

NAME = "mastra"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
merge_logs = genai.merge_logs  # log records in the GenAI event form

#: ``mastra.span.type`` → span type, where ``gen_ai.operation.name`` does not settle it (the model
#: call is whichever span the exporter made ``chat``; any other model span groups it).
SPAN_TYPES: dict[str, SpanType] = {
    "agent_run": "agent",
    "model_inference": "llm",
    "model_generation": "chain",
    "model_step": "chain",
    "model_chunk": "chain",
    "tool_call": "tool",
    "mcp_tool_call": "tool",
    "provider_tool_call": "tool",
    "rag_embedding": "llm",
    # the first exporter (AISpanType, 2025): gen_ai.operation.name "llm.generation", "tool.execute", ...
    "llm_generation": "llm",
    "llm_chunk": "chain",
}
#: The attribute keys that name a span's session / user, in precedence order (the memory thread is
#: also ``gen_ai.conversation.id``, and the resource is whoever owns the thread).
SESSION_ATTRIBUTES = (
    "mastra.metadata.sessionId",
    "mastra.metadata.session_id",
    "mastra.metadata.threadId",
    "mastra.metadata.conversationId",
)
USER_ATTRIBUTES = ("mastra.metadata.userId", "mastra.metadata.user_id", "mastra.metadata.resourceId")
IDENTITY_KEYS = IdentityKeys(own_session=SESSION_ATTRIBUTES, own_user=USER_ATTRIBUTES)


def detect(span: SpanRecord) -> bool:
    """A ``mastra.*`` attribute: a span Mastra's OTel exporter wrote."""
    return "mastra.span.type" in span.attributes or any_key_starts(span.attributes, "mastra.")


def mastra_type(span: SpanRecord) -> str:
    """``mastra.span.type`` in lower case (``agent_run``, ``model_step``, ...); "" without one."""
    value = span.attributes.get("mastra.span.type")
    return str(value).lower() if value not in (None, "") else ""


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    operation = span.attributes.get("gen_ai.operation.name")
    if operation in genai.OPERATION_TYPES:
        return genai.OPERATION_TYPES[operation]
    kind = mastra_type(span)
    if kind:
        return SPAN_TYPES.get(kind, "chain")
    return genai.quick_span_type(span)


def read(span: SpanRecord) -> Reading:
    """The GenAI reading, typed by ``mastra.span.type`` and filled from the ``mastra.*`` inputs and
    outputs of the run, its steps and its tools."""
    attrs = span.attributes
    reading = genai.read_as(span, NAME)
    kind = quick_span_type(span)
    if reading.span_type == "llm" and kind != "llm":
        reading.requested_calls = []
        reading.sources.pop("tool_calls", None)
    reading.span_type = kind
    _read_context(attrs, reading)
    if not reading.tools_available:
        names = parse_json_maybe(attrs.get("gen_ai.tool.definitions"))
        if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            reading.tools_available = [tool_schema(n, "", None) for n in names if n]  # names only
            reading.sources["tools_available"] = "gen_ai.tool.definitions"

    mtype = mastra_type(span)
    if kind == "agent":
        _read_io(attrs, reading, f"mastra.{mtype or 'agent_run'}", legacy=True)
        reading.agent_exit = reading.response is not None
    elif kind == "tool":
        _read_tool(span, reading)
    elif mtype in ("model_step", "model_generation"):
        _read_io(attrs, reading, f"mastra.{mtype}", calls=mtype == "model_step")
    return reading


def _read_context(attrs: Mapping[str, Any], reading: Reading) -> None:
    for key in SESSION_ATTRIBUTES:
        value = attrs.get(key)
        if value not in (None, ""):
            reading.session_id = str(value)
            reading.sources["session_id"] = key
            break
    if reading.user_id is None:
        for key in USER_ATTRIBUTES:
            value = attrs.get(key)
            if value not in (None, ""):
                reading.user_id = str(value)
                reading.sources["user_id"] = key
                break


def _read_io(
    attrs: Mapping[str, Any], reading: Reading, prefix: str, calls: bool = False, legacy: bool = False
) -> None:
    """``<prefix>.input`` / ``.output`` (the first exporter's ``input`` / ``output`` on a run) into the
    empty fields: the last user text and system prompt of the input, the output's text."""
    input_key = f"{prefix}.input" if f"{prefix}.input" in attrs or not legacy else "input"
    output_key = f"{prefix}.output" if f"{prefix}.output" in attrs or not legacy else "output"
    if input_key in attrs:
        value = parsed_attribute(reading, attrs, input_key)
        messages = _messages(value)
        note_unread_messages(reading, messages, input_key)
        if reading.user_input is None:
            text = last_user_text(messages) if messages else _plain_text(value)
            if text is not None:
                reading.user_input = text
                reading.sources["agent_task"] = input_key
        if reading.system_prompt is None:
            system = system_text(messages)
            if system is not None:
                reading.system_prompt = system
                reading.sources["system_prompt"] = input_key
    if output_key in attrs:
        value = parsed_attribute(reading, attrs, output_key)
        text = _output_text(value)
        if text is not None:
            reading.response = text
            reading.sources["agent_response"] = output_key
        if calls and isinstance(value, Mapping) and not reading.requested_calls:
            found = requested_calls(value.get("toolCalls"))
            if found:
                reading.requested_calls = found
                reading.sources["tool_calls"] = output_key


def _messages(value: Any) -> list[Message]:
    """Messages of a Mastra input: AI SDK model messages, Mastra's stored messages (``content``
    ``{"format": 2, "parts": [...], "content": "..."}``), or ``{"messages": [...]}``."""
    if isinstance(value, Mapping) and "messages" in value:
        value = parse_json_maybe(value["messages"])
    if isinstance(value, Mapping) and "role" in value:
        value = [value]
    if not isinstance(value, list):
        return []
    return messages_of([_ai_sdk_message(m) for m in value])


def _ai_sdk_message(message: Any) -> Any:
    """A Mastra stored message (format 2) as an AI SDK message; any other shape unchanged."""
    message = parse_json_maybe(message)
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), Mapping):
        return message
    content = message["content"]
    parts = []
    for part in content.get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "tool-invocation" and isinstance(part.get("toolInvocation"), Mapping):
            call = part["toolInvocation"]
            parts.append(
                {
                    "type": "tool-call",
                    "toolCallId": call.get("toolCallId"),
                    "toolName": call.get("toolName"),
                    "input": call.get("args"),
                }
            )
    if not parts and isinstance(content.get("content"), str):
        parts = [{"type": "text", "text": content["content"]}]
    return {"role": message.get("role") or "user", "content": parts}


def _plain_text(value: Any) -> str | None:
    """Text that is just text (JSON that did not parse is not: the reading names it unread)."""
    if isinstance(value, str) and value and value.strip()[:1] not in ("{", "["):
        return value
    return None


def _output_text(value: Any) -> str | None:
    if isinstance(value, str):
        return _plain_text(value)
    if isinstance(value, Mapping):
        if value.get("object") is not None:
            return as_text(value["object"])
        text = value.get("text")
        if isinstance(text, str):
            return text or None
        return None
    return as_text(value) if value not in (None, [], {}) else None


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    tool = reading.tool
    if tool is None:
        return
    args_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
    if not tool.args:  # the first exporter: gen_ai.tool.input / input
        for key in ("gen_ai.tool.input", "input"):
            if attrs.get(key) is not None:
                tool.args = as_arguments(attrs[key])
                args_key = key
                break
    if tool.result is None:
        for key in ("gen_ai.tool.output", "output"):
            if attrs.get(key) is not None:
                tool.result = parse_json_maybe(attrs[key])
                result_key = key
                break
    if tool.error is not None and str(attrs.get("error.type")) == "unknown" and tool.error.startswith("unknown: "):
        tool.error = tool.error[len("unknown: ") :]  # Mastra's "no error id", not a type
    reading.parameters = dict(tool.args)
    reading.response = as_text(tool.result) if tool.result is not None else None
    genai.tool_sources(reading, args_key, result_key)
