"""OpenTelemetry GenAI semantic conventions: current (``gen_ai.input.messages`` parts) and older forms.

Covers what the semconv has said over time, because real instrumentations lag the spec:

* span type from ``gen_ai.operation.name`` (or the span name ``"<operation> <target>"``);
* messages as JSON part lists (``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions``), as flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
  attributes, as ``gen_ai.*.message`` / ``gen_ai.choice`` span events, or only in OTLP log records
  (:func:`apply_log_events`);
* tool spans (``gen_ai.tool.*``; without argument / result attributes, from the span's
  ``gen_ai.tool.message`` / ``gen_ai.choice`` events, as Strands Agents records them:
  :func:`tool_from_events`), retrieval spans (``gen_ai.retrieval.*``), token usage in the
  ``input_tokens`` and the older ``prompt_tokens`` spelling.

Event bodies (span event attributes, re-nested at their dots, or a log record's body) are read by
the shared message reader: ``content`` / ``message`` as a string, parts, or content blocks,
``tool_calls``, a tool message's ``id``. What it cannot read goes to ``Reading.unread``.

The message and tool-definition helpers it shares with the dialects built on OpenAI-style
messages (pydantic_ai, google_adk, traceloop) live in :mod:`otel_eval.conventions.messages`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..json_text import as_text, json_value, parse_json_maybe
from ..spans import LogEvent, SpanEvent, SpanRecord
from .base import (
    ExecutedToolCall,
    IdentityKeys,
    Reading,
    SpanType,
    as_arguments,
    may_have_key_starting,
    note_unread,
    span_error,
)
from .messages import (
    Message,
    all_parts,
    as_list,
    fill_from_messages,
    first_text,
    indexed_messages,
    instructions_text,
    is_part,
    note_unread_messages,
    parse_history,
    parse_message,
    parse_messages,
    read_content,
    result_value,
    set_path,
    str_or_none,
    token_count,
    tool_schemas,
)

NAME = "genai"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
IDENTITY_KEYS = IdentityKeys()  # its keys are OpenTelemetry's own (base.OTEL_IDENTITY), read for every dialect

#: ``gen_ai.operation.name`` → span type. ``create_agent`` and ``invoke_workflow`` organise work
#: but are not the agent answering a user, so they are chains.
OPERATION_TYPES: dict[str, SpanType] = {
    "invoke_agent": "agent",
    "create_agent": "chain",
    "invoke_workflow": "chain",
    "execute_tool": "tool",
    "execute_event_loop_cycle": "chain",  # Strands: one model call and its tools, grouped
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


def operation_of(span: SpanRecord) -> str | None:
    """``gen_ai.operation.name``, else the first word of the span name when it names an operation
    (spans that carry their operation only in their name); None when neither does."""
    operation = span.attributes.get("gen_ai.operation.name")
    if operation:
        return str(operation)
    head = span.name.split(" ", 1)[0]
    return head if head in OPERATION_TYPES else None


def detect(span: SpanRecord) -> bool:
    """Any ``gen_ai.*`` attribute or event, or a span named by a GenAI operation (``invoke_agent x``):
    the general dialect, tried after every one that builds on it."""
    if "gen_ai.operation.name" in span.attributes:
        return True
    if span.name.split(" ", 1)[0] in _NAME_ONLY_OPERATIONS:
        return True
    if any(key.startswith("gen_ai.") for key in span.attributes):
        return True
    return any(event.name.startswith("gen_ai.") for event in span.events)


def _span_type_of(span: SpanRecord, operation: str | None) -> SpanType:
    if operation in OPERATION_TYPES:
        return OPERATION_TYPES[operation]
    attrs = span.attributes
    if "gen_ai.tool.name" in attrs or "gen_ai.tool.call.id" in attrs:
        return "tool"
    if "gen_ai.retrieval.query.text" in attrs or "gen_ai.retrieval.documents" in attrs:
        return "retriever"
    if any(
        key.startswith(
            (
                "gen_ai.prompt",
                "gen_ai.completion",
                "gen_ai.input.",
                "gen_ai.output.",
                "gen_ai.request.",
                "gen_ai.usage.",
                "gen_ai.response.",
            )
        )
        for key in attrs
    ):
        return "llm"
    if any(e.name in _MESSAGE_EVENTS or e.name in (CHOICE_EVENT, DETAILS_EVENT) for e in span.events):
        return "llm"
    if "gen_ai.agent.name" in attrs or "gen_ai.agent.id" in attrs:
        return "agent"
    return "unknown"


def read(span: SpanRecord) -> Reading:
    """The GenAI semconv reading of the span (:func:`read_as`, labelled ``genai``)."""
    return read_as(span, NAME)


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    return _span_type_of(span, operation_of(span))


def read_as(span: SpanRecord, convention: str) -> Reading:
    """The GenAI reading of a span, labelled with the dialect that asked for it."""
    attrs = span.attributes
    operation = operation_of(span)
    kind = _span_type_of(span, operation)
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
    reading.input_tokens = token_count(
        attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"
    )
    reading.output_tokens = token_count(
        attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens"
    )

    tools = tool_schemas(attrs.get("gen_ai.tool.definitions"))
    if tools:
        reading.tools_available = tools
        reading.sources["tools_available"] = "gen_ai.tool.definitions"

    read_messages(span, reading, with_calls=kind == "llm")

    if kind == "tool":
        reading.tool = tool_invocation(span, target)
        args_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
        if span.events and (not reading.tool.args or reading.tool.result is None):
            events = [_span_event_as_log(span, e) for e in span.events if e.name.startswith("gen_ai.")]
            found = tool_from_events(reading, events, "event:")
            args_key, result_key = found.get("arguments", args_key), found.get("result", result_key)
        reading.parameters = dict(reading.tool.args)
        tool_sources(reading, args_key, result_key)
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
    if span.events and reading.span_type != "tool":  # a tool span's events are its call (tool_from_events)
        events = [_span_event_as_log(span, e) for e in span.events if e.name.startswith("gen_ai.")]
        if events:
            _apply_events(reading, events, "event:", with_calls)


def tool_invocation(span: SpanRecord, target: str | None = None) -> ExecutedToolCall:
    """The tool call a tool span records (name, arguments, call id, result, error); ``target`` names it
    when ``gen_ai.tool.name`` is missing."""
    attrs = span.attributes
    name, _ = first_text(attrs, "gen_ai.tool.name")
    return ExecutedToolCall(
        name=name or target or "unknown",
        args=as_arguments(attrs.get("gen_ai.tool.call.arguments")),
        call_id=str_or_none(attrs.get("gen_ai.tool.call.id")),
        result=result_value(attrs.get("gen_ai.tool.call.result")),
        error=span_error(span),
    )


def tool_sources(reading: Reading, args_key: str, result_key: str) -> None:
    """Name the attributes a tool span's call came from, so ``otel-eval inspect`` can show them; the
    dialects built on GenAI pass their own argument and result keys."""
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
    """A retrieval span's query and documents (``gen_ai.retrieval.*``) into ``reading``."""
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


def merge_logs(span: SpanRecord, reading: Reading, events: Sequence[LogEvent]) -> Reading:
    """The convention hook (``Convention.merge_logs``) of every dialect that has no names of its
    own to fix: :func:`apply_log_events`."""
    return apply_log_events(reading, events)


def apply_log_events(reading: Reading, events: Iterable[LogEvent]) -> Reading:
    """A copy of ``reading`` with content that only reached the backend as OTLP log records
    (``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.client.inference.operation.details``, ...)
    merged in. Fields the span itself filled are kept: span attributes win over log records."""
    relevant = [e for e in events if e.event_name.startswith("gen_ai.")]
    result = copy.deepcopy(reading)
    if not relevant:
        return result
    relevant.sort(key=lambda e: e.time_ns)
    if result.span_type == "tool" and result.tool is not None:
        if not result.tool.args or result.tool.result is None:
            found = tool_from_events(result, relevant, "log:")
            result.parameters = dict(result.tool.args)
            if "arguments" in found:
                result.sources["parameters_passed"] = found["arguments"]
            if "result" in found:
                result.sources["tool_call_results"] = found["result"]
                if result.response is None and result.tool.result is not None:
                    result.response = as_text(result.tool.result)
                    result.sources["agent_response"] = found["result"]
        return result
    if result.span_type in ("unknown", "chain"):
        result.span_type = "llm"
    _apply_events(result, relevant, "log:", result.span_type == "llm")
    return result


def _apply_events(reading: Reading, events: Sequence[LogEvent], prefix: str, with_calls: bool) -> None:
    """Content from the GenAI events of one span (span events or log records), in time order:
    ``gen_ai.{system,user,assistant,tool}.message`` are the input, ``gen_ai.choice`` the output,
    ``gen_ai.client.inference.operation.details`` both. What an event's body does not let us
    read is named in ``reading.unread``."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    system: str | None = None
    names = {"input": "", "output": "", "system": ""}
    for event in events:
        name = event.event_name
        where = f"{prefix}{name}"
        body = _event_body(event)
        if name == DETAILS_EVENT:
            source = {**event.attributes, **(body if isinstance(body, Mapping) else {})}
            found_in = parse_messages(source.get("gen_ai.input.messages"))
            found_out = parse_messages(source.get("gen_ai.output.messages"), "assistant")
            _note_messages(reading, found_in + found_out, where)
            inputs.extend(found_in)
            outputs.extend(found_out)
            system = instructions_text(source.get("gen_ai.system_instructions")) or system
            names = {"input": where, "output": where, "system": where}
        elif name in _MESSAGE_EVENTS:
            role = _MESSAGE_EVENTS[name]
            message = parse_message(body if body is not None else {}, role)
            if message is None:
                continue
            message.role = role
            _note_messages(reading, [message], where)
            inputs.append(message)
            names["system" if role == "system" else "input"] = where
        elif name == CHOICE_EVENT:
            message = parse_message(body if body is not None else {}, "assistant")
            if message is not None:
                message.role = "assistant" if message.role in ("user", "tool") else message.role
                _note_messages(reading, [message], where)
                outputs.append(message)
                names["output"] = where
        elif name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
            attribute = "gen_ai.prompt" if name.endswith("prompt") else "gen_ai.completion"
            value = event.attributes.get(attribute, body)
            found = parse_messages(value) if attribute == "gen_ai.prompt" else parse_messages(value, "assistant")
            _note_messages(reading, found, where)
            if attribute == "gen_ai.prompt":
                inputs.extend(found)
                names["input"] = where
            else:
                outputs.extend(found)
                names["output"] = where
    fill_from_messages(
        reading,
        inputs,
        outputs,
        system,
        input_source=names["input"],
        output_source=names["output"],
        system_source=names["system"] or names["input"],
        with_calls=with_calls,
    )


def _note_messages(reading: Reading, messages: Sequence[Message], where: str) -> None:
    """The messages' unread reasons, named by the event they came in (then cleared, so
    fill_from_messages does not name them again under another event's name)."""
    note_unread_messages(reading, messages, where)
    for message in messages:
        if message.unread:
            message.unread = ()


# --- a tool span's events: its arguments and result ---------------------------------------------


def tool_from_events(reading: Reading, events: Sequence[LogEvent], prefix: str) -> dict[str, str]:
    """Fill the tool call's missing arguments and result from its span's GenAI events (span events
    or log records); returns ``{"arguments" | "result": where each came from}``.

    Strands Agents (GenAI conventions up to v1.36, its default) records the call's input in a
    ``gen_ai.tool.message`` event (``content``: the input object as JSON; ``id``: the call id) and
    its result in a ``gen_ai.choice`` event (``message``: the result's content blocks,
    ``[{"text": "..."}]``). Also read: ``toolUse`` / ``toolResult`` blocks in either event, a
    choice whose message is a plain string, an object or ``{role, content}``. A
    ``gen_ai.tool.message`` whose content is neither an object nor blocks is, without a
    ``gen_ai.choice`` beside it, what the conventions define that event as: the tool's result.
    ``gen_ai.client.inference.operation.details`` gives ``tool_call`` / ``tool_call_response``
    parts (Strands with the latest conventions)."""
    tool = reading.tool
    assert tool is not None
    found: dict[str, str] = {}
    want_args, want_result = not tool.args, tool.result is None
    has_choice = any(e.event_name == CHOICE_EVENT for e in events)
    for event in events:
        name = event.event_name
        where = f"{prefix}{name}"
        body = _event_body(event)
        if tool.call_id is None and isinstance(body, Mapping):
            call_id = str_or_none(body.get("id"))
            if call_id is not None and not isinstance(body.get("id"), (dict, list)):
                tool.call_id = call_id
        if name == "gen_ai.tool.message":
            value = _event_payload(body, ("content",), reading, where)
            if value is _NOTHING:
                continue
            message = _payload_message(value, reading, where)
            if message is not None:
                call = _own_call(message, tool.name)
                if call is not None and want_args:
                    _take_call(tool, call)
                    want_args, found["arguments"] = False, where
                if message.responses and want_result:
                    _take_result(tool, message)
                    want_result, found["result"] = False, where
            elif isinstance(value, Mapping) or has_choice:
                if want_args:
                    tool.args = as_arguments(value)
                    want_args, found["arguments"] = False, where
            elif want_result:
                tool.result = result_value(value)
                want_result, found["result"] = False, where
        elif name == CHOICE_EVENT and want_result:
            value = _event_payload(body, ("message", "content"), reading, where)
            if value is _NOTHING:
                continue
            message = _payload_message(value, reading, where)
            if message is None:
                tool.result = result_value(value)
            elif message.responses:
                _take_result(tool, message)
            elif message.texts:
                tool.result = parse_json_maybe(message.text)
            else:
                continue
            want_result, found["result"] = False, where
        elif name == DETAILS_EVENT:
            source = {**event.attributes, **(body if isinstance(body, Mapping) else {})}
            if want_args:
                for message in parse_messages(source.get("gen_ai.input.messages"), "tool"):
                    call = _own_call(message, tool.name)
                    if call is not None:
                        _take_call(tool, call)
                        want_args, found["arguments"] = False, where
                        break
            if want_result:
                for message in parse_messages(source.get("gen_ai.output.messages"), "tool"):
                    if message.responses:
                        _take_result(tool, message)
                        want_result, found["result"] = False, where
                        break
    return found


_NOTHING = object()


def _event_payload(body: Any, keys: tuple[str, ...], reading: Reading, where: str) -> Any:
    """The value an event carries under the first of ``keys`` (the body itself when it is not an
    object), JSON text parsed; :data:`_NOTHING` when there is none or it does not parse."""
    if isinstance(body, Mapping):
        for key in keys:
            if key in body:
                value = body[key]
                break
        else:
            return _NOTHING
    else:
        value = body
    if value is None:
        return _NOTHING
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                return json_value(text)
            except (ValueError, RecursionError):
                note_unread(reading, f"{where}: {keys[0]} looks like JSON but does not parse")
                return _NOTHING
        return parse_json_maybe(value)
    return value


def _payload_message(value: Any, reading: Reading, where: str) -> Message | None:
    """Content blocks, one block, or a whole message, read as a tool message; None for a plain
    value (the input object, the result itself)."""
    if isinstance(value, (list, tuple)):
        if not all_parts(value):
            return None
        message = read_content(value, "tool")
    elif isinstance(value, Mapping) and is_part(value):
        message = read_content(value, "tool")
    elif isinstance(value, Mapping) and (
        "role" in value or "parts" in value or ("content" in value and len(value.keys() - {"content", "id"}) == 0)
    ):
        whole = parse_message(value, "tool")
        if whole is None:
            return None
        message = whole
    else:
        return None
    note_unread_messages(reading, [message], where)
    return message


def _own_call(message: Message, name: str | None) -> Any:
    for call in message.calls:
        if name in (None, "unknown") or call.name == name:
            return call
    return message.calls[0] if message.calls else None


def _take_call(tool: ExecutedToolCall, call: Any) -> None:
    tool.args = dict(call.args)
    if tool.name == "unknown":
        tool.name = call.name
    if tool.call_id is None:
        tool.call_id = call.call_id


def _take_result(tool: ExecutedToolCall, message: Message) -> None:
    responses = [r for r in message.responses if tool.call_id is None or r.call_id in (None, tool.call_id)]
    responses = responses or message.responses
    tool.result = responses[0].value if len(responses) == 1 else [r.value for r in responses]
    if tool.call_id is None:
        tool.call_id = responses[0].call_id
    if tool.error is None and any(r.is_error for r in responses):
        tool.error = as_text(tool.result) or "error"


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
