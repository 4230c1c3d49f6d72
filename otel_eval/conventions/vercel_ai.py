"""The Vercel AI SDK's own telemetry (``ai.*`` attributes): AI SDK 4, 5 and 6
(``experimental_telemetry``) and AI SDK 7's legacy integration (``@ai-sdk/otel``).

What the SDK writes (``packages/ai/src/telemetry`` and each function's ``recordSpan``):

* every span names its operation in ``ai.operationId`` (the span name is the same):
  ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject`` is one
  call of the function, a run that may take several model steps (the agent span of a turn);
  ``<op>.doGenerate`` / ``<op>.doStream`` / ``ai.embed.doEmbed`` ... is one request to the model;
  ``ai.toolCall`` is one tool execution; ``ai.embed`` / ``ai.embedMany`` / ``ai.rerank`` group
  their model requests (chains);
* the run span's input is ``ai.prompt``: JSON ``{system?, prompt?, messages?}`` as the caller
  passed them (``prompt`` a string or a message list); each model request's input is
  ``ai.prompt.messages``: the messages sent to the provider, in the SDK's own message format
  (content a string or parts: ``{type: "text", text}``, ``{type: "tool-call", toolCallId,
  toolName, input | args}``, ``{type: "tool-result", toolCallId, toolName, output | result}``,
  ``output`` being ``{type: "text" | "json" | "error-text" | "error-json", value}`` since AI SDK 5);
* outputs are ``ai.response.text``, ``ai.response.object`` (structured output) and
  ``ai.response.toolCalls`` (JSON list of ``{toolCallId, toolName, input | args}``, the
  arguments a JSON string);
* tool spans: ``ai.toolCall.name`` / ``.id`` / ``.args`` / ``.result`` (AI SDK 7 also
  ``.input`` / ``.output``); a failed tool leaves status ERROR and an ``exception`` event;
* tool definitions: ``ai.prompt.tools``, a list of JSON strings ``{type, name, description,
  inputSchema | parameters}``;
* usage: ``ai.usage.promptTokens`` / ``completionTokens`` (AI SDK 4, and ``generateObject``
  later), ``ai.usage.inputTokens`` / ``outputTokens`` (AI SDK 5+); model requests also carry
  ``gen_ai.request.model`` and ``gen_ai.usage.*``;
* application data: ``experimental_telemetry.metadata`` as ``ai.telemetry.metadata.<key>`` (the
  documented place for a session and user id), ``functionId`` as ``ai.telemetry.functionId``;
  AI SDK 7 also records the call's ``context`` as ``ai.settings.context.<key>``.

The spans also carry a few ``gen_ai.*`` attributes: :mod:`.genai` reads them first, and the
SDK's own keys win wherever both say something.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..json_text import as_text, parse_json_maybe
from ..models.agent_data import ToolSchema
from ..spans import SpanRecord
from . import genai
from .base import (
    ExecutedToolCall,
    IdentityKeys,
    Reading,
    RequestedToolCall,
    SpanType,
    any_key_starts,
    as_arguments,
    as_int,
    note_unread,
    span_error,
    tool_schema,
)
from .messages import Message, last_user_text, note_unread_messages, parse_messages, system_text

NAME = "vercel_ai"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
merge_logs = genai.merge_logs  # log records in the GenAI event form

#: ``ai.operationId`` of a function call that runs the model (possibly over several steps).
RUN_OPERATIONS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
TOOL_OPERATION = "ai.toolCall"

#: Keys under ``ai.telemetry.metadata.`` / ``ai.settings.context.`` that name a session or a user,
#: in the spellings applications use.
SESSION_KEYS = (
    "sessionId",
    "session_id",
    "session.id",
    "sessionID",
    "conversationId",
    "conversation_id",
    "threadId",
    "thread_id",
    "chatId",
    "chat_id",
)
USER_KEYS = ("userId", "user_id", "user.id", "userID", "endUserId")
_CONTEXT_PREFIXES = ("ai.telemetry.metadata.", "ai.settings.context.")
#: The attribute keys that name a span's session / user, in precedence order: what ingest needs to
#: key a session before any span is read.
SESSION_ATTRIBUTES = tuple(prefix + name for prefix in _CONTEXT_PREFIXES for name in SESSION_KEYS)
USER_ATTRIBUTES = tuple(prefix + name for prefix in _CONTEXT_PREFIXES for name in USER_KEYS)
IDENTITY_KEYS = IdentityKeys(own_session=SESSION_ATTRIBUTES, own_user=USER_ATTRIBUTES)


# --- detect / span type ------------------------------------------------------------------------


def detect(span: SpanRecord) -> bool:
    """An ``ai.*`` attribute (``ai.operationId`` first): a span of the Vercel AI SDK."""
    attrs = span.attributes
    if "ai.operationId" in attrs:
        return True
    return any_key_starts(attrs, "ai.")


def _operation_of(span: SpanRecord) -> str | None:
    operation = span.attributes.get("ai.operationId")
    if isinstance(operation, str) and operation:
        return operation
    return span.name if span.name.startswith("ai.") else None


def span_type_of_operation(operation: str | None) -> SpanType | None:
    """The span type an ``ai.operationId`` names; None for an operation this does not know."""
    if operation is None:
        return None
    if operation in RUN_OPERATIONS:
        return "agent"
    if operation == TOOL_OPERATION:
        return "tool"
    head, _, last = operation.rpartition(".")
    if head.startswith("ai.") and last.startswith("do") and last[2:3].isupper():
        return "llm"  # doGenerate, doStream, doEmbed, doRerank, ...: one request to a model
    if operation.startswith("ai."):
        return "chain"  # ai.embed, ai.embedMany, ai.rerank, ai.generateImage, ...: they group requests
    return None


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    return span_type_of_operation(_operation_of(span)) or genai.quick_span_type(span)


# --- read ----------------------------------------------------------------------------------------


def read(span: SpanRecord) -> Reading:
    """The reading of a Vercel AI SDK span by its operation (run, model call, tool), from its ``ai.*``
    attributes and the GenAI ones its model calls carry."""
    attrs = span.attributes
    kind = quick_span_type(span)
    reading = genai.read_as(span, NAME) if _has_genai(span) else Reading(NAME)
    if reading.span_type == "llm" and kind != "llm":
        reading.requested_calls = []  # a run's last step repeats its model request's calls
        reading.sources.pop("tool_calls", None)
    reading.span_type = kind

    _read_context(span, reading, kind)
    _read_model(attrs, reading)
    tools = _tool_definitions(parsed_attribute(reading, attrs, "ai.prompt.tools"))
    if tools:
        reading.tools_available = tools
        reading.sources["tools_available"] = "ai.prompt.tools"

    if kind == "agent":
        _read_run(attrs, reading)
    elif kind == "llm":
        _read_model_call(attrs, reading)
    elif kind == "tool":
        _read_tool(span, reading)
    else:
        _read_response(attrs, reading)
    return reading


def _has_genai(span: SpanRecord) -> bool:
    return any_key_starts(span.attributes, "gen_ai.") or any(e.name.startswith("gen_ai.") for e in span.events)


def _read_context(span: SpanRecord, reading: Reading, kind: SpanType) -> None:
    attrs = span.attributes
    session, key = _context_value(attrs, SESSION_ATTRIBUTES)
    if session is not None:
        reading.session_id = session
        reading.sources["session_id"] = key
    user, key = _context_value(attrs, USER_ATTRIBUTES)
    if user is not None:
        reading.user_id = user
        reading.sources["user_id"] = key
    function_id = attrs.get("ai.telemetry.functionId")
    if function_id not in (None, ""):
        reading.agent_name = str(function_id)
        reading.sources["agent_name"] = "ai.telemetry.functionId"
    elif kind == "agent" and reading.agent_name is None:
        service = span.resource.get("service.name")
        if service not in (None, "") and not str(service).startswith("unknown_service"):
            reading.agent_name = str(service)
            reading.sources["agent_name"] = "resource:service.name"


def _context_value(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, str]:
    for key in keys:
        value = attrs.get(key)
        if value not in (None, "") and not isinstance(value, (dict, list, tuple)):
            return str(value), key
    return None, ""


def _read_model(attrs: Mapping[str, Any], reading: Reading) -> None:
    for key in ("ai.response.model", "ai.model.id"):
        value = attrs.get(key)
        if value not in (None, ""):
            reading.model = str(value)
            break
    tokens_in = _first_int(attrs, "ai.usage.inputTokens", "ai.usage.promptTokens")
    tokens_out = _first_int(attrs, "ai.usage.outputTokens", "ai.usage.completionTokens")
    if tokens_in is not None:
        reading.input_tokens = tokens_in
    if tokens_out is not None:
        reading.output_tokens = tokens_out


def _first_int(attrs: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = as_int(attrs.get(key))
        if value is not None:
            return value
    return None


def _read_run(attrs: Mapping[str, Any], reading: Reading) -> None:
    """``ai.generateText`` / ``ai.streamText`` / ...: the caller's prompt and the run's answer."""
    prompt = parsed_attribute(reading, attrs, "ai.prompt")
    if isinstance(prompt, Mapping):
        messages = messages_of(prompt.get("messages"))
        inline = prompt.get("prompt")
        if isinstance(inline, str):
            if inline:
                messages.append(Message("user", [inline]))
        elif inline is not None:
            messages.extend(messages_of(inline))
        note_unread_messages(reading, messages, "ai.prompt")
        text = last_user_text(messages)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = "ai.prompt"
        system = _system_of(prompt.get("system", prompt.get("instructions"))) or system_text(messages)
        if system is not None:
            reading.system_prompt = system
            reading.sources["system_prompt"] = "ai.prompt"
    elif isinstance(prompt, str) and prompt and prompt.strip()[:1] not in ("{", "["):  # (else: noted)
        reading.user_input = prompt
        reading.sources["agent_task"] = "ai.prompt"
    _read_response(attrs, reading)
    reading.agent_exit = reading.response is not None


def _read_model_call(attrs: Mapping[str, Any], reading: Reading) -> None:
    """``<op>.doGenerate`` / ``<op>.doStream``: the messages sent, the text and calls returned."""
    if "ai.prompt.messages" in attrs:
        messages = messages_of(parsed_attribute(reading, attrs, "ai.prompt.messages"))
        note_unread_messages(reading, messages, "ai.prompt.messages")
        text = last_user_text(messages)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = "ai.prompt.messages"
        system = system_text(messages)
        if system is not None:
            reading.system_prompt = system
            reading.sources["system_prompt"] = "ai.prompt.messages"
    elif "ai.values" in attrs or "ai.value" in attrs:  # an embedding request: the texts embedded
        values = parse_json_maybe(attrs.get("ai.values", attrs.get("ai.value")))
        items = values if isinstance(values, list) else [values]
        texts = [t for t in (as_text(parse_json_maybe(v)) for v in items) if t]
        if texts:
            reading.user_input = "\n".join(texts)
            reading.sources["agent_task"] = "ai.values" if "ai.values" in attrs else "ai.value"
    _read_response(attrs, reading)
    calls = requested_calls(parsed_attribute(reading, attrs, "ai.response.toolCalls"))
    if calls:
        reading.requested_calls = calls
        reading.sources["tool_calls"] = "ai.response.toolCalls"


def _read_response(attrs: Mapping[str, Any], reading: Reading) -> None:
    for key in ("ai.response.text", "ai.response.object"):
        value = attrs.get(key)
        if value not in (None, ""):
            reading.response = value if isinstance(value, str) else as_text(value)
            reading.sources["agent_response"] = key
            return


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    known = reading.tool
    name = attrs.get("ai.toolCall.name")
    args_key = "ai.toolCall.args" if "ai.toolCall.args" in attrs else "ai.toolCall.input"
    result_key = "ai.toolCall.result" if "ai.toolCall.result" in attrs else "ai.toolCall.output"
    tool = ExecutedToolCall(
        name=str(name) if name not in (None, "") else (known.name if known is not None else "unknown"),
        args=as_arguments(parsed_attribute(reading, attrs, args_key))
        if args_key in attrs
        else (known.args if known else {}),
        call_id=_str(attrs.get("ai.toolCall.id")) or (known.call_id if known is not None else None),
        result=parsed_attribute(reading, attrs, result_key)
        if result_key in attrs
        else (known.result if known else None),
        error=span_error(span),
    )
    reading.tool = tool
    reading.parameters = dict(tool.args)
    reading.response = as_text(tool.result) if tool.result is not None else None
    reading.sources.update(
        {
            "tool_calls": "ai.toolCall.name" if name not in (None, "") else "gen_ai.tool.name",
            "parameters_passed": args_key if args_key in attrs else "gen_ai.tool.call.arguments",
        }
    )
    if tool.result is not None:
        key = result_key if result_key in attrs else "gen_ai.tool.call.result"
        reading.sources["tool_call_results"] = key
        reading.sources["agent_response"] = key


def parsed_attribute(reading: Reading, attrs: Mapping[str, Any], key: str) -> Any:
    """``attrs[key]`` with JSON text parsed; text that looks like JSON but does not parse stays
    text, and the reading says so."""
    value = attrs.get(key)
    parsed = parse_json_maybe(value)
    if parsed is value and isinstance(value, str) and value.strip()[:1] in ("{", "["):
        note_unread(reading, f"{key} looks like JSON but does not parse")
    return parsed


def _str(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


# --- the SDK's message format --------------------------------------------------------------------


def messages_of(value: Any) -> list[Message]:
    """AI SDK messages (``ModelMessage`` / the provider prompt) as :class:`Message`s. Each is put
    in the GenAI parts form and read by :func:`.messages.parse_messages`; a message in a shape
    this does not know is handed over as it is, so the shared reader still gets its chance."""
    parsed = parse_json_maybe(value)
    if isinstance(parsed, Mapping):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    return parse_messages([_as_parts_message(m) for m in parsed])


def _as_parts_message(message: Any) -> Any:
    message = parse_json_maybe(message)
    if not isinstance(message, Mapping) or "content" not in message or "parts" in message:
        return message
    content = parse_json_maybe(message["content"]) if not isinstance(message["content"], str) else message["content"]
    role = message.get("role") or "user"
    if isinstance(content, str):
        parts: list[Any] = [{"type": "text", "content": content}] if content else []
    elif isinstance(content, list):
        parts = [p for p in (_part(item) for item in content) if p is not None]
    elif isinstance(content, Mapping):
        part = _part(content)
        parts = [part] if part is not None else []
    else:
        return message
    return {"role": role, "parts": parts}


def _part(item: Any) -> dict[str, Any] | None:
    item = parse_json_maybe(item)
    if isinstance(item, str):
        return {"type": "text", "content": item} if item else None
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind == "text" or (kind is None and isinstance(item.get("text"), str)):
        text = item.get("text", item.get("content"))
        return {"type": "text", "content": text} if isinstance(text, str) and text else None
    if kind == "tool-call":
        arguments = item.get("input", item.get("args"))
        return {
            "type": "tool_call",
            "id": _str(item.get("toolCallId")),
            "name": str(item.get("toolName") or ""),
            "arguments": as_arguments(arguments),
        }
    if kind == "tool-result":
        output = parse_json_maybe(item.get("output"))
        value = tool_result_value(output) if "output" in item else parse_json_maybe(item.get("result"))
        part = {
            "type": "tool_call_response",
            "id": _str(item.get("toolCallId")),
            "name": _str(item.get("toolName")),
            "response": value,
        }
        if isinstance(output, Mapping) and output.get("type") in _ERROR_OUTPUTS or item.get("isError") is True:
            part["status"] = "error"
        return part
    if kind == "reasoning":
        return {"type": "reasoning", "content": item.get("text", item.get("content"))}
    return dict(item)  # images, files, approvals: the shared reader notes what it does not read


_ERROR_OUTPUTS = frozenset({"error-text", "error-json", "execution-denied"})


def tool_result_value(output: Any) -> Any:
    """A ``tool-result`` part's ``output`` (``{type, value}`` since AI SDK 5) as the value the tool
    returned (or the error it raised: the part is then marked failed)."""
    output = parse_json_maybe(output)
    if not isinstance(output, Mapping) or "type" not in output:
        return output
    kind = output.get("type")
    if kind in ("text", "error-text"):
        return output.get("value")
    if kind in ("json", "error-json"):
        return parse_json_maybe(output.get("value"))
    if kind == "execution-denied":
        return output.get("reason") or "execution denied"
    if kind == "content" and isinstance(output.get("value"), list):
        texts = [text for p in output["value"] if isinstance(p, Mapping) and isinstance(text := p.get("text"), str)]
        return "\n".join(texts) if texts else output.get("value")
    return output


def _system_of(value: Any) -> str | None:
    """``system`` / ``instructions`` of ``ai.prompt``: a string, a system message, or a list of them."""
    value = parse_json_maybe(value)
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        return value
    items = value if isinstance(value, list) else [value]
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, Mapping):
            message = messages_of([{**item, "role": "system"}])
            if message and message[0].texts:
                texts.append(message[0].text or "")
    return "\n".join(t for t in texts if t) or None


def requested_calls(value: Any) -> list[RequestedToolCall]:
    """``ai.response.toolCalls``: ``[{toolCallId, toolName, input | args}]``; malformed entries skipped."""
    parsed = parse_json_maybe(value)
    if isinstance(parsed, Mapping):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    calls = []
    for item in parsed:
        item = parse_json_maybe(item)
        if not isinstance(item, Mapping):
            continue
        name = item.get("toolName", item.get("name"))
        if name in (None, ""):
            continue
        arguments = item.get("input", item.get("args", item.get("arguments")))
        calls.append(
            RequestedToolCall(str(name), as_arguments(arguments), _str(item.get("toolCallId", item.get("id"))))
        )
    return calls


def _tool_definitions(value: Any) -> list[ToolSchema]:
    """``ai.prompt.tools``: JSON strings ``{type, name, description, inputSchema | parameters}``."""
    parsed = parse_json_maybe(value)
    if parsed is None:
        return []
    out = []
    for item in parsed if isinstance(parsed, (list, tuple)) else [parsed]:
        item = parse_json_maybe(item)
        if not isinstance(item, Mapping) or item.get("name") in (None, ""):
            continue
        schema = parse_json_maybe(item.get("inputSchema", item.get("parameters")))
        out.append(tool_schema(item["name"], item.get("description"), schema))
    return out
