"""SpanRecord → AgentData: pick the span's convention, read it, apply the seed's field rules.

``map_span`` is the public one-span entry point; ``map_spans`` also returns the reading and
session id the engine needs; ``aggregate_trace`` builds the per-trace record of the seed's
"Span Aggregation" section.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .conventions import CONVENTIONS, merge_logs_of_unrecognised
from .conventions.base import OTEL_IDENTITY, Reading
from .models.agent_data import AgentData, ToolCall, ToolResult
from .spans import LogEvent, SpanRecord
from .truncation import DEFAULT_LIMIT, truncate_reading

log = logging.getLogger("otel_eval.mapping")

CASE_ATTRIBUTES = ("otel_eval.case_id", "otel_eval.case")
SESSION_END_ATTRIBUTE = "otel_eval.session.end"
SESSION_END_EVENT = "session.end"
VERSION_ATTRIBUTES = ("gen_ai.agent.version",)


def _shared_keys(which: str) -> tuple[str, ...]:
    """OpenTelemetry's keys, then every dialect's keys read on any span, in detection order (DESIGN
    §4 precedence: :class:`otel_eval.conventions.base.IdentityKeys`), each once."""
    keys = [*getattr(OTEL_IDENTITY, which)]
    for convention in CONVENTIONS:
        keys.extend(getattr(convention.IDENTITY_KEYS, which))
    return tuple(dict.fromkeys(keys))


_BUILT_IN_SESSION_KEYS = _shared_keys("session")
_BUILT_IN_USER_KEYS = _shared_keys("user")
_session_keys: tuple[str, ...] = _BUILT_IN_SESSION_KEYS
_user_keys: tuple[str, ...] = _BUILT_IN_USER_KEYS


def use_identity_attributes(session: Sequence[str] = (), user: Sequence[str] = ()) -> None:
    """Attribute keys a user named (``--session-attribute`` / ``--user-attribute``) that name a
    span's session and user, ahead of the built-in keys: a framework that files the id under a
    metadata key of its own then needs no code change. Process-wide, like a logging config: the
    engine sets it at start, and each score worker process from its settings."""
    global _session_keys, _user_keys
    _session_keys = (*dict.fromkeys(k for k in session if k not in _BUILT_IN_SESSION_KEYS), *_BUILT_IN_SESSION_KEYS)
    _user_keys = (*dict.fromkeys(k for k in user if k not in _BUILT_IN_USER_KEYS), *_BUILT_IN_USER_KEYS)


def identity_attributes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The session and user keys read on every span, in precedence order: the user's, then the
    built-in ones (a span's own dialect may add keys of its own after these)."""
    return _session_keys, _user_keys


@dataclass
class MappedSpan:
    """One span as the trajectory and the store need it: the record, its convention's reading and the
    agent data row made of both, with the session it belongs to."""

    span: SpanRecord
    reading: Reading
    data: AgentData
    session_id: str | None
    """The session id found on the span, or None (the session is then keyed by trace id)."""


def first_attribute(span: SpanRecord, keys: Sequence[str], resource_too: bool = True) -> str | None:
    """The first of ``keys`` the span carries (then, with ``resource_too``, its resource), as text:
    settings list keys in order of preference. A JSON-quoted string value is unquoted."""
    for key in keys:
        value = span.attributes.get(key)
        if value not in (None, ""):
            return _unquoted(value) if type(value) is str and value[:1] == '"' else str(value)
    if resource_too:
        for key in keys:
            value = span.resource.get(key)
            if value not in (None, ""):
                return _unquoted(value) if type(value) is str and value[:1] == '"' else str(value)
    return None


def _unquoted(value: str) -> str:
    """A JSON-quoted string (MLflow writes ``'"s1"'``) as the string it quotes; else unchanged."""
    if len(value) > 1 and value[-1] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if type(decoded) is str:
            return decoded
    return value


def session_id_of(span: SpanRecord, reading: Reading | None = None, convention: str | None = None) -> str | None:
    """The session id by DESIGN §4 precedence; None means "one trace = one session".

    The keys a user named and those every dialect shares come first (on the span, then on its
    resource), then the keys of the span's own dialect (``IDENTITY_KEYS.own_session`` of its
    convention: the Vercel AI SDK's ``ai.telemetry.metadata.sessionId``, ...), so ingest, which
    has no reading, keys the span as scoring will; then what the reading found."""
    found = first_attribute(span, _session_keys)
    if found is None:
        found = _own_attribute(span, "own_session", reading, convention)
    if found is None and reading is not None and reading.session_id:
        found = reading.session_id
    return found


def _own_attribute(span: SpanRecord, which: str, reading: Reading | None, convention: str | None) -> str | None:
    """The first of the span's dialect's own keys (``own_session`` / ``own_user`` of its
    ``IDENTITY_KEYS``) that is set; the dialect is detected when not given."""
    name = convention or (reading.convention if reading is not None else None)
    module = _BY_NAME.get(name) if name is not None else next((c for c in CONVENTIONS if c.detect(span)), None)
    keys = getattr(module.IDENTITY_KEYS, which) if module is not None else ()
    return first_attribute(span, keys, resource_too=False) if keys else None


def user_id_of(span: SpanRecord, reading: Reading | None = None) -> str | None:
    """The user a span names: a configured or built-in user attribute, else its convention's own
    user key, else what its reading found. None when nothing names one."""
    found = first_attribute(span, _user_keys)
    if found is None:
        found = _own_attribute(span, "own_user", reading, None)
    if found is None and reading is not None and reading.user_id:
        found = reading.user_id
    return found


def ends_session(span: SpanRecord) -> bool:
    """An explicit end: attribute ``otel_eval.session.end`` true, or a ``session.end`` event."""
    flag = span.attributes.get(SESSION_END_ATTRIBUTE)
    if flag is True or (isinstance(flag, str) and flag.lower() in ("true", "1", "yes")):
        return True
    return any(event.name == SESSION_END_EVENT for event in span.events)


def agent_version_of(span: SpanRecord) -> str | None:
    """The agent version a span names (``gen_ai.agent.version``, else the resource's
    ``service.version``): what release comparisons group sessions by."""
    return first_attribute(span, VERSION_ATTRIBUTES, resource_too=False) or (
        str(span.resource["service.version"]) if span.resource.get("service.version") else None
    )


def convention_name(span: SpanRecord) -> str:
    """The name of the convention that recognises the span ("none" if none does); detection only."""
    for convention in CONVENTIONS:
        if convention.detect(span):
            return convention.NAME
    return "none"


def ingest_span_type(span: SpanRecord, convention: str) -> str | None:
    """The span type, when the convention can tell it without reading the span (stored at
    ingest, so scoring need not rewrite the span's row); None otherwise."""
    module = _BY_NAME.get(convention)
    quick = module.quick_span_type if module is not None else None
    if quick is None:
        return None
    try:
        return quick(span)
    except Exception:  # read() decides at scoring time, with its own error handling
        return None


def read_span(span: SpanRecord, max_value_chars: int = DEFAULT_LIMIT, convention: str | None = None) -> Reading:
    """The reading of the first convention that recognises the span (DESIGN §4 order), or of
    ``convention`` when its name is already known (detected at ingest and stored).

    Content longer than ``max_value_chars`` (prompts, documents, tool results) is cut with a
    marker that keeps the original length; the raw span is stored uncut.
    """
    module = _BY_NAME.get(convention) if convention is not None else None
    if module is None:
        if convention == "none":
            return Reading(convention="none")
        module = next((c for c in CONVENTIONS if c.detect(span)), None)
        if module is None:
            return Reading(convention="none")
    try:
        return truncate_reading(typed(span, module.read(span)), max_value_chars)
    except Exception:  # a reader bug must not lose the span or block the batch it came in
        log.warning(
            "%s could not read span %s (%r); stored without AgentData fields",
            module.NAME,
            span.span_id,
            span.name,
            exc_info=True,
        )
        return Reading(convention=module.NAME)


_BY_NAME = {c.NAME: c for c in CONVENTIONS}


def with_log_events(span: SpanRecord, reading: Reading, events: Sequence[LogEvent]) -> Reading:
    """The reading with the content its span's log records carry (span attributes win), merged by
    the span's dialect (``merge_logs`` of its convention)."""
    module = _BY_NAME.get(reading.convention)
    merge = module.merge_logs if module is not None else merge_logs_of_unrecognised
    return merge(span, reading, events)


#: The attribute that states a span's type, per dialect, for ``inspect``'s "typed by".
_TYPE_KEYS = (
    "openinference.span.kind",
    "gen_ai.operation.name",
    "traceloop.span.kind",
    "ai.operationId",
    "mastra.span.type",
    "logfire.msg_template",
)
#: Operations that are a request to a model by definition, even with content capture off.
_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
#: Attributes that record a request sent to a model (not a property of an LLM object, such as
#: OpenInference's ``llm.model_name``, which every method of the class carries).
_REQUEST_KEYS = ("gen_ai.request.model", "gcp.vertex.agent.llm_request")


def typed(span: SpanRecord, reading: Reading) -> Reading:
    """Only model calls are LLM spans: a span a dialect typed "llm" that shows no exchange with
    a model (no messages, no text, no tool calls asked for, no token counts) is a chain.

    Frameworks mark every method of their LLM class as an LLM span (LlamaIndex's
    ``_prepare_chat_with_tools`` through OpenInference, an agent's event-loop cycle), and each
    one counted as a model call. A model name alone is no exchange: it is on all of them; and
    messages alone are not a request either when the span states an operation that is not a
    model request and names no model (Strands' ``execute_event_loop_cycle`` replays the history
    in events). A GenAI ``chat`` operation, or a span recording the request it sent (the
    requested model, ADK's ``llm_request``), is a model call by definition, content capture on or off. The rule
    that typed the span is kept in ``sources["span_type"]`` for ``inspect``."""
    if "span_type" not in reading.sources:
        key = next((k for k in _TYPE_KEYS if k in span.attributes), None)
        reading.sources["span_type"] = f"{key}={span.attributes[key]}" if key else f"span name {span.name!r}"
    if reading.span_type != "llm":
        return reading
    operation = span.attributes.get("gen_ai.operation.name")
    if operation in _MODEL_OPERATIONS or any(key in span.attributes for key in _REQUEST_KEYS):
        return reading
    exchange = (
        reading.user_input
        or reading.system_prompt
        or reading.response
        or reading.requested_calls
        or reading.input_tokens
        or reading.output_tokens
    )
    if not exchange:
        why = "it shows no model exchange (no messages, text, tool calls or tokens)"
    elif operation is not None and not reading.model:
        why = f"its operation {operation!r} is not a model request and it names no model"
    else:
        return reading
    reading.span_type = "chain"
    reading.sources["span_type"] += f" typed it llm, but {why}: chain"
    return reading


def to_agent_data(span: SpanRecord, reading: Reading) -> AgentData:
    """Apply the seed's per-span-type rules to a reading."""
    kind = reading.span_type if reading.span_type != "unknown" else "agent"
    if kind in ("chain",):
        kind = "agent"
    tool_calls = (
        [
            _tool_call({"tool_name": call.name, "parameters": call.args, "call_id": call.call_id or span.span_id})
            for call in reading.requested_calls
        ]
        if reading.requested_calls
        else []
    )  # (most spans request none: no comprehension call)
    results: list[ToolResult] = []
    if reading.tool is not None:
        results.append(
            _tool_result(
                {
                    "call_id": reading.tool.call_id or span.span_id,
                    "result": reading.tool.result,
                    "success": reading.tool.error is None and span.status != "error",
                    "error_message": reading.tool.error,
                }
            )
        )
    retrieved = [reading.retrieved_documents] if reading.retrieved_documents is not None else None
    return _agent_data(
        {
            "user_id": user_id_of(span, reading),
            "task_id": span.trace_id,
            "turn_id": span.span_id,
            "agent_name": reading.agent_name or kind,
            "agent_role": kind,
            "agent_task": reading.user_input if kind == "agent" or reading.user_input else None,
            "system_prompt": reading.system_prompt,
            "agent_response": reading.response,
            "trace": reading.trace,
            "tools_available": reading.tools_available,  # validation copies lists and dicts
            "tool_calls": tool_calls,
            "parameters_passed": reading.parameters,
            "tool_call_results": results,
            "retrieval_query": reading.retrieval_query,
            "retrieved_context": retrieved,
            "exit_status": span.status,
            "agent_exit": reading.agent_exit,
            "metadata": None,
        }
    )


# ``Model(**fields)`` less the Python wrapper around pydantic's validator: the same validation,
# coercion and errors, called directly (a few models per span add up).
_agent_data = AgentData.__pydantic_validator__.validate_python
_tool_call = ToolCall.__pydantic_validator__.validate_python
_tool_result = ToolResult.__pydantic_validator__.validate_python


def map_span(span: SpanRecord) -> AgentData:
    """One finished span → its AgentData record."""
    return to_agent_data(span, read_span(span))


def map_spans(
    spans: Iterable[SpanRecord],
    max_value_chars: int = DEFAULT_LIMIT,
    conventions: Sequence[str | None] | None = None,
) -> list[MappedSpan]:
    """Each span mapped; ``conventions`` (one name per span, from ingest) skips detection."""
    out = []
    names: Iterable[str | None] = conventions if conventions is not None else itertools.repeat(None)
    for span, name in zip(spans, names):
        reading = read_span(span, max_value_chars, name)
        out.append(MappedSpan(span, reading, to_agent_data(span, reading), session_id_of(span, reading)))
    return out


def _trace_json(ordered: Sequence[MappedSpan]) -> str:
    """``json.dumps`` of the trace's spans as ``[{"span_id", "name", "type"}, ...]``, the same text:
    each string is quoted by the encoder ``json.dumps`` itself uses, between its separators.
    ``json.dumps`` builds an encoder and walks the list per call, which cost a third of
    aggregating a trace; a value that is not a plain string takes that path."""
    parts: list[str] = []
    for m in ordered:
        span_id, name, kind = m.span.span_id, m.span.name, m.reading.span_type
        if type(span_id) is not str or type(name) is not str or type(kind) is not str:
            return json.dumps(
                [{"span_id": m.span.span_id, "name": m.span.name, "type": m.reading.span_type} for m in ordered]
            )
        parts.append(f'{{"span_id": {_quoted(span_id)}, "name": {_quoted(name)}, "type": {_quoted(kind)}}}')
    return "[" + ", ".join(parts) + "]"


_quoted = json.encoder.encode_basestring_ascii
"""A string as ``json.dumps`` (``ensure_ascii``) writes it, quotes included (the C function)."""


def aggregate_trace(mapped: Sequence[MappedSpan]) -> AgentData:
    """The per-trace record (seed "Span Aggregation").

    task = the root's input (else the first user input seen), response = the root's output (else
    the last response of an agent or LLM span), every tool call and result of the trace in start
    order, the system prompt of the first LLM span, the union of available tools.
    """
    if not mapped:
        raise ValueError("aggregate_trace needs at least one span")
    ordered = sorted(mapped, key=lambda m: (m.span.start_ns, m.span.end_ns))
    roots = [m for m in ordered if m.span.is_root] or ordered[:1]
    root = roots[0]

    # One pass over the trace's spans collects everything below (this runs for every trace).
    first_input = last_response = system_prompt = user_id = None
    agent_exit = False
    tools_seen: dict[str, Any] = {}
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    queries: list[str] = []
    contexts: list[list[str]] = []
    for m in ordered:
        reading, data = m.reading, m.data
        if first_input is None and reading.user_input:
            first_input = reading.user_input
        if reading.response and reading.span_type in ("agent", "llm", "chain"):
            last_response = reading.response
        if system_prompt is None and reading.span_type == "llm" and reading.system_prompt:
            system_prompt = reading.system_prompt
        if user_id is None and data.user_id:
            user_id = data.user_id
        if reading.agent_exit:
            agent_exit = True
        for schema in data.tools_available:
            tools_seen.setdefault(schema.name, schema)
        if reading.tool is not None and not reading.is_wrapper:
            tool = reading.tool
            call_id = tool.call_id or m.span.span_id
            calls.append(_tool_call({"tool_name": tool.name, "parameters": tool.args, "call_id": call_id}))
            results.extend(data.tool_call_results)
        if data.retrieval_query:
            queries.extend(data.retrieval_query)
        if data.retrieved_context:
            contexts.extend(data.retrieved_context)
    # task = the root's input, else the first seen; response = the root's output, else the last
    # response of an agent or LLM span.
    task = root.reading.user_input or first_input
    response = root.reading.response if root.reading.response is not None else last_response
    if not calls:  # dialects with no tool spans (Noveum roots) still record the agent's actions
        for m in ordered:
            calls.extend(m.data.tool_calls)

    status = "error" if any(m.span.status == "error" for m in roots) else root.span.status
    return _agent_data(
        {
            "user_id": user_id,
            "task_id": root.span.trace_id,
            "turn_id": root.span.span_id,
            "agent_name": root.reading.agent_name or "agent",
            "agent_role": "agent",
            "agent_task": task,
            "system_prompt": system_prompt,
            "agent_response": response,
            "trace": _trace_json(ordered),
            "tools_available": list(tools_seen.values()),
            "tool_calls": calls,
            "parameters_passed": dict(root.data.parameters_passed),
            "tool_call_results": results,
            "retrieval_query": queries or None,
            "retrieved_context": contexts or None,
            "exit_status": status,
            "agent_exit": agent_exit or root.span.end_ns > 0,
            "metadata": None,
        }
    )
