"""OpenTelemetry GenAI semantic conventions: current (``gen_ai.input.messages`` parts) and older forms.

Covers what the semconv has said over time, because real instrumentations lag the spec:

* span type from ``gen_ai.operation.name`` (or the span name ``"<operation> <target>"``);
* messages as JSON part lists (``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions``), as flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
  attributes, as ``gen_ai.*.message`` / ``gen_ai.choice`` span events, or only in OTLP log records
  (:func:`apply_log_events`);
* tool spans (``gen_ai.tool.*``), retrieval spans (``gen_ai.retrieval.*``), token usage in the
  ``input_tokens`` and the older ``prompt_tokens`` spelling.

The message and tool-definition helpers it shares with the dialects built on OpenAI-style
messages (pydantic_ai, google_adk, traceloop) live in :mod:`otel_eval.conventions.messages`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Iterable, Optional, Sequence

from ..spans import LogEvent, SpanEvent, SpanRecord
from .base import (Reading, SpanType, ExecutedToolCall, as_arguments, as_text, may_have_key_starting,
                   parse_json_maybe, span_error)
from .messages import (
    as_list,
    fill_from_messages,
    first_text,
    indexed_messages,
    instructions_text,
    Message,
    parse_history,
    parse_message,
    parse_messages,
    token_count,
    tool_schemas,
    set_path,
    str_or_none,
)

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

_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


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
    reading = Reading(convention, kind)
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


_MESSAGE_KEYS = frozenset({"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"})


def read_messages(span: SpanRecord, reading: Reading, with_calls: bool = True) -> None:
    """Content from every place the GenAI conventions have put it, newest form first."""
    attrs = span.attributes
    if _MESSAGE_KEYS & attrs.keys():  # (without them the first step finds nothing)
        fill_from_messages(
            reading,
            parse_history(attrs.get("gen_ai.input.messages")),
            parse_messages(attrs.get("gen_ai.output.messages"), "assistant"),
            instructions_text(attrs.get("gen_ai.system_instructions")),
            input_source="gen_ai.input.messages",
            output_source="gen_ai.output.messages",
            system_source="gen_ai.system_instructions",
            with_calls=with_calls,
        )
    if may_have_key_starting(attrs, "gen_ai.prompt.", "gen_ai.completion."):  # (nearly all spans: no)
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


def tool_invocation(span: SpanRecord, target: Optional[str] = None) -> ExecutedToolCall:
    attrs = span.attributes
    name, _ = first_text(attrs, "gen_ai.tool.name")
    return ExecutedToolCall(
        name=name or target or "unknown",
        arguments=as_arguments(attrs.get("gen_ai.tool.call.arguments")),
        call_id=str_or_none(attrs.get("gen_ai.tool.call.id")),
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
        set_path(body, key.split("."), value)
    content = event.attributes.get("gen_ai.event.content")
    return LogEvent(
        trace_id=span.trace_id,
        span_id=span.span_id,
        time_ns=event.time_ns,
        event_name=event.name,
        body=parse_json_maybe(content) if content is not None else body,
        attributes=dict(event.attributes),
    )
