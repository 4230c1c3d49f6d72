"""OpenTelemetry GenAI semantic conventions: current (``gen_ai.input.messages`` parts) and older forms.

Covers what the semconv has said over time, because real instrumentations lag the spec:

* span type from ``gen_ai.operation.name`` (or the span name ``"<operation> <target>"``);
* messages as JSON part lists (``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions``), as flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
  attributes, as ``gen_ai.*.message`` / ``gen_ai.choice`` span events, or only in OTLP log records
  (:func:`apply_log_events`);
* tool spans (``gen_ai.tool.*``), retrieval spans (``gen_ai.retrieval.*``), token usage in the
  ``input_tokens`` and the older ``prompt_tokens`` spelling.

The message helpers (:func:`parse_messages`, :func:`fill_from_messages`, ...) are shared by the
dialects built on top of this one (pydantic_ai, adk, traceloop). Gemini-style parts
(``function_call`` / ``function_response``) are understood too, since ADK writes them.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

from ..models.agent_data import ToolSchema
from ..spans import LogEvent, SpanEvent, SpanRecord
from .base import Reading, RequestedCall, SpanType, ToolInvocation, as_arguments, as_text, parse_json_maybe

NAME = "genai"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False

#: ``gen_ai.operation.name`` → span type. ``create_agent`` and ``invoke_workflow`` organise work
#: but are not the agent answering a user, so they are chains.
OPERATION_TYPES: dict[str, SpanType] = {
    "invoke_agent": "agent",
    "create_agent": "chain",
    "invoke_workflow": "chain",
    "execute_tool": "tool",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "embeddings": "llm",
    "retrieval": "retriever",
}
#: Span-name prefixes distinctive enough to identify a GenAI span without any attribute
#: ("chat x" is not: plenty of non-GenAI spans are called that).
_NAME_ONLY_OPERATIONS = ("invoke_agent", "execute_tool", "create_agent", "invoke_workflow")

_ROLE_ALIASES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system", "function": "tool"}
_PROMPT_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


# --- messages ----------------------------------------------------------------------------------

@dataclass
class ToolResponse:
    call_id: Optional[str]
    name: Optional[str]
    value: Any


@dataclass
class Message:
    """One chat message, whatever dialect it was written in."""

    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[RequestedCall] = field(default_factory=list)
    responses: list[ToolResponse] = field(default_factory=list)

    @property
    def text(self) -> Optional[str]:
        return "\n".join(self.texts) if self.texts else None


def normalise_role(role: Any) -> str:
    text = str(role or "").strip().lower()
    return _ROLE_ALIASES.get(text, text or "user")


def parse_messages(value: Any, default_role: str = "user") -> list[Message]:
    """Messages from a JSON string or list in any of the shapes GenAI instrumentations write:
    semconv parts (``{"role", "parts": [...]}``), OpenAI chat (``content`` + ``tool_calls``),
    Gemini contents (``parts`` with ``text`` / ``function_call`` / ``function_response``) and
    choice wrappers (``{"message": {...}}``). Anything unrecognisable is skipped, never raised."""
    parsed = parse_json_maybe(value)
    if isinstance(parsed, Mapping):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return []
    out = []
    for item in parsed:
        message = parse_message(item, default_role)
        if message is not None:
            out.append(message)
    return out


def parse_message(item: Any, default_role: str = "user") -> Optional[Message]:
    item = parse_json_maybe(item)
    if isinstance(item, str):
        return Message(role=normalise_role(default_role), texts=[item] if item else [])
    if not isinstance(item, Mapping):
        return None
    if "message" in item and isinstance(parse_json_maybe(item["message"]), Mapping) and "parts" not in item:
        return parse_message(item["message"], default_role)  # gen_ai.choice body
    message = Message(role=normalise_role(item.get("role") or default_role))
    for part in as_list(item.get("parts")):
        _add_part(message, part)
    if "content" in item:
        _add_content(message, item.get("content"))
    for call in as_list(item.get("tool_calls")):
        requested = _requested_call(call)
        if requested is not None:
            message.calls.append(requested)
    function_call = parse_json_maybe(item.get("function_call"))
    if isinstance(function_call, Mapping) and function_call.get("name"):
        message.calls.append(RequestedCall(str(function_call["name"]), as_arguments(function_call.get("arguments"))))
    if message.role == "tool" and not message.responses:
        # OpenAI tool message / gen_ai.tool.message body: the content is the tool's result.
        value = message.texts.pop() if message.texts else None
        message.responses.append(
            ToolResponse(_str_or_none(item.get("tool_call_id") or item.get("id")), _str_or_none(item.get("name")),
                         parse_json_maybe(value))
        )
    return message


def _add_part(message: Message, part: Any) -> None:
    part = parse_json_maybe(part)
    if isinstance(part, str):
        if part:
            message.texts.append(part)
        return
    if not isinstance(part, Mapping) or part.get("thought") is True:
        return
    kind = str(part.get("type") or "").lower()
    if kind in ("text", "") and isinstance(part.get("content", part.get("text")), str):
        text = part.get("content", part.get("text"))
        if text:
            message.texts.append(text)
        return
    if kind in ("tool_call", "function_call", "tool_use"):
        requested = _requested_call(part)
        if requested is not None:
            message.calls.append(requested)
        return
    if kind in ("tool_call_response", "function_response", "tool_result"):
        value = part["response"] if "response" in part else part.get("result", part.get("content"))
        message.responses.append(
            ToolResponse(_str_or_none(part.get("id") or part.get("tool_use_id")), _str_or_none(part.get("name")),
                         parse_json_maybe(value))
        )
        return
    if isinstance(part.get("function_call"), Mapping):  # Gemini content part
        call = part["function_call"]
        message.calls.append(
            RequestedCall(str(call.get("name") or ""), as_arguments(call.get("args", call.get("arguments"))),
                          _str_or_none(call.get("id")))
        )
        return
    if isinstance(part.get("function_response"), Mapping):
        response = part["function_response"]
        message.responses.append(
            ToolResponse(_str_or_none(response.get("id")), _str_or_none(response.get("name")),
                         parse_json_maybe(response.get("response")))
        )


def _add_content(message: Message, content: Any) -> None:
    content = parse_json_maybe(content) if isinstance(content, str) and content.strip()[:1] == "[" else content
    if isinstance(content, str):
        if content:
            message.texts.append(content)
    elif isinstance(content, list):  # OpenAI / Anthropic content blocks
        for block in content:
            if isinstance(block, Mapping) and "type" in block and block.get("type") not in ("text", "tool_use",
                                                                                         "tool_result"):
                continue
            _add_part(message, block)
    elif isinstance(content, Mapping):
        _add_part(message, content)


def _requested_call(call: Any) -> Optional[RequestedCall]:
    call = parse_json_maybe(call)
    if not isinstance(call, Mapping):
        return None
    function = parse_json_maybe(call.get("function"))
    source = function if isinstance(function, Mapping) else call
    name = source.get("name")
    if not name:
        return None
    arguments = source.get("arguments", source.get("args", source.get("input")))
    return RequestedCall(str(name), as_arguments(arguments), _str_or_none(call.get("id")))


def as_list(value: Any) -> list[Any]:
    value = parse_json_maybe(value)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _str_or_none(value: Any) -> Optional[str]:
    return None if value in (None, "") else str(value)


def instructions_text(value: Any) -> Optional[str]:
    """``gen_ai.system_instructions`` (a part list or plain text) as one string."""
    if isinstance(value, str):
        return _instructions_of_text(value)  # the same prompt on every LLM span: parse it once
    return _instructions_text(value)


@functools.lru_cache(maxsize=256)
def _instructions_of_text(value: str) -> Optional[str]:
    return _instructions_text(value)


def _instructions_text(value: Any) -> Optional[str]:
    parsed = parse_json_maybe(value)
    if parsed in (None, "", []):
        return None
    if isinstance(parsed, str):
        return parsed
    message = Message(role="system")
    for part in parsed if isinstance(parsed, list) else [parsed]:
        _add_part(message, part)
    return message.text


def last_user_text(messages: Sequence[Message]) -> Optional[str]:
    """The last user message that says something (tool results sent as role ``user`` do not count)."""
    for message in reversed(messages):
        if message.role == "user" and message.texts:
            return message.text
    return None


def system_text(messages: Sequence[Message]) -> Optional[str]:
    texts = [m.text for m in messages if m.role == "system" and m.texts]
    return "\n".join(t for t in texts if t) or None


def output_text(messages: Sequence[Message]) -> Optional[str]:
    """The answer: the first output message with text (further messages are alternative choices)."""
    for message in messages:
        if message.role != "user" and message.texts:
            return message.text
    return None


def output_calls(messages: Sequence[Message]) -> list[RequestedCall]:
    return [copy.copy(call) for message in messages if message.role != "user" for call in message.calls]


def fill_from_messages(
    reading: Reading,
    inputs: Sequence[Message] = (),
    outputs: Sequence[Message] = (),
    system: Optional[str] = None,
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
    if with_calls and not reading.requested_calls:
        calls = output_calls(outputs)
        if calls:
            reading.requested_calls = calls
            reading.sources.setdefault("tool_calls", output_source)


# --- flattened gen_ai.prompt.N / gen_ai.completion.N ---------------------------------------------

def indexed_messages(attributes: Mapping[str, Any], which: str) -> list[Message]:
    """Messages from the flattened ``gen_ai.prompt.N.*`` (``which="prompt"``) or
    ``gen_ai.completion.N.*`` attributes (OpenLLMetry and the pre-1.28 semconv)."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _PROMPT_KEY.match(key)
        if match is None or match.group(1) != which:
            continue
        _set_path(found.setdefault(int(match.group(2)), {}), match.group(3).split("."), value)
    messages = []
    default_role = "user" if which == "prompt" else "assistant"
    for index in sorted(found):
        raw = found[index]
        if isinstance(raw.get("tool_calls"), Mapping):
            raw["tool_calls"] = [raw["tool_calls"][k] for k in sorted(raw["tool_calls"], key=_int_key)]
        message = parse_message(raw, default_role)
        if message is not None:
            messages.append(message)
    return messages


def _set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    for step in path[:-1]:
        nxt = target.get(step)
        if not isinstance(nxt, dict):
            nxt = target[step] = {}
        target = nxt
    target[path[-1]] = value


def _int_key(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)


# --- tools, errors, usage ----------------------------------------------------------------------

def tool_schemas(value: Any) -> list[ToolSchema]:
    """``gen_ai.tool.definitions`` (semconv ``{type,name,description,parameters}`` or OpenAI
    ``{type:function, function:{...}}``) as ToolSchemas; malformed entries are skipped."""
    if isinstance(value, str):
        # Every LLM span of an agent sends the same definitions: parse and validate them once.
        return list(_tool_schemas_of_text(value))
    return _tool_schemas(value)


@functools.lru_cache(maxsize=256)
def _tool_schemas_of_text(value: str) -> tuple[ToolSchema, ...]:
    return tuple(_tool_schemas(value))


def _tool_schemas(value: Any) -> list[ToolSchema]:
    out = []
    for item in as_list(value):
        item = parse_json_maybe(item)
        if not isinstance(item, Mapping):
            continue
        source = item.get("function") if isinstance(item.get("function"), Mapping) else item
        if not source.get("name"):
            continue
        parameters = parse_json_maybe(source.get("parameters", source.get("parameters_json_schema")))
        out.append(
            ToolSchema(
                name=str(source["name"]),
                description=str(source.get("description") or ""),
                args_schema=parameters if isinstance(parameters, dict) else None,
            )
        )
    return out


def indexed_tool_schemas(attributes: Mapping[str, Any], prefix: str = "llm.request.functions") -> list[ToolSchema]:
    """OpenLLMetry's ``llm.request.functions.N.{name,description,parameters}``."""
    found: dict[int, dict[str, Any]] = {}
    pattern = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.(name|description|parameters)$")
    for key, value in attributes.items():
        match = pattern.match(key)
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return tool_schemas([found[i] for i in sorted(found)])


def span_error(span: SpanRecord) -> Optional[str]:
    """The failure of a span as one line (``"ValueError: Unknown city"``), or None if it succeeded.

    A span failed when its status is ERROR or it carries ``error.type`` (the semconv's failure
    marker). The message comes from the status description, else the ``exception`` event.
    """
    error_type = _str_or_none(span.attributes.get("error.type"))
    if span.status != "error" and error_type is None:
        return None
    exception = next((e for e in reversed(span.events) if e.name == "exception"), None)
    if exception is not None:
        error_type = error_type or _str_or_none(exception.attributes.get("exception.type"))
    message = span.status_message or (
        _str_or_none(exception.attributes.get("exception.message")) if exception is not None else None
    )
    if message and error_type and error_type not in message and error_type != "_OTHER":
        return f"{error_type}: {message}"
    return message or error_type or "error"


def token_count(attributes: Mapping[str, Any], *keys: str) -> Optional[int]:
    for key in keys:
        value = attributes.get(key)
        if value in (None, ""):
            continue
        try:
            return int(value)
        except (TypeError, ValueError):
            continue
    return None


def first_text(attributes: Mapping[str, Any], *keys: str) -> tuple[Optional[str], str]:
    for key in keys:
        value = attributes.get(key)
        if value not in (None, ""):
            return str(value), key
    return None, ""


# --- detect / read -----------------------------------------------------------------------------

def operation_of(span: SpanRecord) -> Optional[str]:
    operation = span.attributes.get("gen_ai.operation.name")
    if operation:
        return str(operation)
    head = span.name.split(" ", 1)[0]
    return head if head in OPERATION_TYPES else None


def detect(span: SpanRecord) -> bool:
    if "gen_ai.operation.name" in span.attributes:
        return True
    if span.name.split(" ", 1)[0] in _NAME_ONLY_OPERATIONS:
        return True
    if any(key.startswith("gen_ai.") for key in span.attributes):
        return True
    return any(event.name.startswith("gen_ai.") for event in span.events)


def span_type_of(span: SpanRecord, operation: Optional[str]) -> SpanType:
    if operation in OPERATION_TYPES:
        return OPERATION_TYPES[operation]
    attrs = span.attributes
    if "gen_ai.tool.name" in attrs or "gen_ai.tool.call.id" in attrs:
        return "tool"
    if "gen_ai.retrieval.query.text" in attrs or "gen_ai.retrieval.documents" in attrs:
        return "retriever"
    if any(key.startswith(("gen_ai.prompt", "gen_ai.completion", "gen_ai.input.", "gen_ai.output.",
                           "gen_ai.request.", "gen_ai.usage.", "gen_ai.response.")) for key in attrs):
        return "llm"
    if any(e.name in _MESSAGE_EVENTS or e.name in (CHOICE_EVENT, DETAILS_EVENT) for e in span.events):
        return "llm"
    if "gen_ai.agent.name" in attrs or "gen_ai.agent.id" in attrs:
        return "agent"
    return "unknown"


def read(span: SpanRecord) -> Reading:
    return read_as(span, NAME)


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    return span_type_of(span, operation_of(span))


def read_as(span: SpanRecord, convention: str) -> Reading:
    """The GenAI reading of a span, labelled with the dialect that asked for it."""
    attrs = span.attributes
    operation = operation_of(span)
    kind = span_type_of(span, operation)
    reading = Reading(convention=convention, span_type=kind)
    target = span.name.split(" ", 1)[1].strip() if " " in span.name else None

    agent_name, key = first_text(attrs, "gen_ai.agent.name")
    if agent_name is None and kind == "agent":
        agent_name, key = (target, "span.name") if target else first_text(attrs, "gen_ai.agent.id")
    if agent_name is not None:
        reading.agent_name = agent_name
        reading.sources["agent_name"] = key

    session, key = first_text(attrs, "gen_ai.conversation.id")
    if session is not None:
        reading.session_id = session
        reading.sources["session_id"] = key
    user, key = first_text(attrs, "gen_ai.user.id", "user.id", "enduser.id")
    if user is not None:
        reading.user_id = user
        reading.sources["user_id"] = key

    model, key = first_text(attrs, "gen_ai.response.model", "gen_ai.request.model")
    if model is not None:
        reading.model = model
    reading.input_tokens = token_count(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                                       "llm.usage.prompt_tokens")
    reading.output_tokens = token_count(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                                        "llm.usage.completion_tokens")

    tools = tool_schemas(attrs.get("gen_ai.tool.definitions"))
    if tools:
        reading.tools_available = tools
        reading.sources["tools_available"] = "gen_ai.tool.definitions"

    read_messages(span, reading, with_calls=kind == "llm")

    if kind == "tool":
        reading.tool = tool_invocation(span, target)
        reading.parameters = dict(reading.tool.arguments)
        tool_sources(reading, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
        if reading.response is None and reading.tool.result is not None:
            reading.response = as_text(reading.tool.result)
    elif kind == "retriever":
        read_retrieval(span, reading)
    if kind == "agent" and reading.response is not None:
        reading.agent_exit = True
    return reading


def read_messages(span: SpanRecord, reading: Reading, with_calls: bool = True) -> None:
    """Content from every place the GenAI conventions have put it, newest form first."""
    attrs = span.attributes
    fill_from_messages(
        reading,
        parse_messages(attrs.get("gen_ai.input.messages")),
        parse_messages(attrs.get("gen_ai.output.messages"), "assistant"),
        instructions_text(attrs.get("gen_ai.system_instructions")),
        input_source="gen_ai.input.messages",
        output_source="gen_ai.output.messages",
        system_source="gen_ai.system_instructions",
        with_calls=with_calls,
    )
    if any(key.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for key in attrs):
        fill_from_messages(
            reading,
            indexed_messages(attrs, "prompt"),
            indexed_messages(attrs, "completion"),
            input_source="gen_ai.prompt.N.content",
            output_source="gen_ai.completion.N.content",
            with_calls=with_calls,
        )
        if with_calls and reading.sources.get("tool_calls") == "gen_ai.completion.N.content":
            reading.sources["tool_calls"] = "gen_ai.completion.N.tool_calls"
    if "gen_ai.prompt" in attrs or "gen_ai.completion" in attrs:  # whole-list JSON (old span events' form)
        fill_from_messages(
            reading,
            parse_messages(attrs.get("gen_ai.prompt")),
            parse_messages(attrs.get("gen_ai.completion"), "assistant"),
            input_source="gen_ai.prompt",
            output_source="gen_ai.completion",
            with_calls=with_calls,
        )
    if span.events:
        events = [_span_event_as_log(span, e) for e in span.events if e.name.startswith("gen_ai.")]
        if events:
            _apply_events(reading, events, "event:", with_calls)


def tool_invocation(span: SpanRecord, target: Optional[str] = None) -> ToolInvocation:
    attrs = span.attributes
    name, _ = first_text(attrs, "gen_ai.tool.name")
    return ToolInvocation(
        name=name or target or "unknown",
        arguments=as_arguments(attrs.get("gen_ai.tool.call.arguments")),
        call_id=_str_or_none(attrs.get("gen_ai.tool.call.id")),
        result=parse_json_maybe(attrs.get("gen_ai.tool.call.result")),
        error=span_error(span),
    )


def tool_sources(reading: Reading, args_key: str, result_key: str) -> None:
    reading.sources.update(
        {
            "tool_calls": "gen_ai.tool.name",
            "parameters_passed": args_key,
            "tool_call_results": result_key,
        }
    )
    if reading.tool is not None and reading.tool.result is not None:
        reading.sources.setdefault("agent_response", result_key)


def read_retrieval(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    query, key = first_text(attrs, "gen_ai.retrieval.query.text")
    if query is not None:
        reading.retrieval_query = [query]
        reading.sources["retrieval_query"] = key
    documents = as_list(attrs.get("gen_ai.retrieval.documents"))
    if documents or "gen_ai.retrieval.documents" in attrs:
        reading.retrieved_documents = [document_text(d) for d in documents]
        reading.sources["retrieved_context"] = "gen_ai.retrieval.documents"


def document_text(document: Any) -> str:
    """A retrieved document as text: its content when it has one, else the whole record as JSON."""
    document = parse_json_maybe(document)
    if isinstance(document, Mapping):
        for key in ("content", "text", "page_content"):
            if isinstance(document.get(key), str):
                return document[key]
    return as_text(document) or ""


# --- events: span events and OTLP log records --------------------------------------------------

def apply_log_events(reading: Reading, events: Iterable[LogEvent]) -> Reading:
    """A copy of ``reading`` with content that only reached the backend as OTLP log records
    (``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.client.inference.operation.details``, ...)
    merged in. Fields the span itself filled are kept: span attributes win over log records."""
    relevant = [e for e in events if e.event_name.startswith("gen_ai.")]
    result = copy.deepcopy(reading)
    if not relevant:
        return result
    if result.span_type in ("unknown", "chain"):
        result.span_type = "llm"
    _apply_events(result, sorted(relevant, key=lambda e: e.time_ns), "log:", result.span_type == "llm")
    return result


def _apply_events(reading: Reading, events: Sequence[LogEvent], prefix: str, with_calls: bool) -> None:
    inputs: list[Message] = []
    outputs: list[Message] = []
    system: Optional[str] = None
    names = {"input": "", "output": "", "system": ""}
    for event in events:
        name = event.event_name
        body = _event_body(event)
        if name == DETAILS_EVENT:
            source = {**event.attributes, **(body if isinstance(body, Mapping) else {})}
            inputs.extend(parse_messages(source.get("gen_ai.input.messages")))
            outputs.extend(parse_messages(source.get("gen_ai.output.messages"), "assistant"))
            system = instructions_text(source.get("gen_ai.system_instructions")) or system
            names = {"input": f"{prefix}{name}", "output": f"{prefix}{name}", "system": f"{prefix}{name}"}
        elif name in _MESSAGE_EVENTS:
            message = parse_message(body if body is not None else {}, _MESSAGE_EVENTS[name])
            if message is None:
                continue
            message.role = _MESSAGE_EVENTS[name] if name != "gen_ai.tool.message" else "tool"
            inputs.append(message)
            names["system" if message.role == "system" else "input"] = f"{prefix}{name}"
        elif name == CHOICE_EVENT:
            message = parse_message(body if body is not None else {}, "assistant")
            if message is not None:
                message.role = "assistant" if message.role == "user" else message.role
                outputs.append(message)
                names["output"] = f"{prefix}{name}"
        elif name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
            attribute = "gen_ai.prompt" if name.endswith("prompt") else "gen_ai.completion"
            value = event.attributes.get(attribute, body)
            if attribute == "gen_ai.prompt":
                inputs.extend(parse_messages(value))
                names["input"] = f"{prefix}{name}"
            else:
                outputs.extend(parse_messages(value, "assistant"))
                names["output"] = f"{prefix}{name}"
    fill_from_messages(
        reading, inputs, outputs, system,
        input_source=names["input"], output_source=names["output"],
        system_source=names["system"] or names["input"], with_calls=with_calls,
    )


def _event_body(event: LogEvent) -> Any:
    body = parse_json_maybe(event.body)
    if body is None and "gen_ai.event.content" in event.attributes:
        body = parse_json_maybe(event.attributes["gen_ai.event.content"])
    return body


def _span_event_as_log(span: SpanRecord, event: SpanEvent) -> LogEvent:
    """Span events carry no body: their attributes (dotted keys re-nested) play its part."""
    body: dict[str, Any] = {}
    for key, value in event.attributes.items():
        if key == "gen_ai.event.content":
            continue
        _set_path(body, key.split("."), value)
    content = event.attributes.get("gen_ai.event.content")
    return LogEvent(
        trace_id=span.trace_id,
        span_id=span.span_id,
        time_ns=event.time_ns,
        event_name=event.name,
        body=parse_json_maybe(content) if content is not None else body,
        attributes=dict(event.attributes),
    )
