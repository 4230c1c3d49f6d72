"""Traceloop / OpenLLMetry: ``traceloop.*`` entity spans plus the flattened GenAI attributes of
its LLM spans.

* ``traceloop.span.kind``: workflow / task / agent / tool (workflow and task are chains);
* ``traceloop.entity.name`` names the entity (the tool name on tool spans);
* ``traceloop.entity.input`` / ``output``: JSON written by the SDK's decorators
  (``{"args": [...], "kwargs": {...}}`` in, the return value out) or by its LangChain callback
  (``{"inputs": ..., "tags", "metadata", "kwargs"}`` in, ``{"outputs": ..., "kwargs"}`` out);
* ``traceloop.association.properties.<key>``: ``session_id`` / ``user_id`` among them;
* LLM spans (``llm.request.type``): ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` (with
  ``tool_calls.M.*``), ``llm.request.functions.N.*``, ``gen_ai.usage.prompt_tokens`` ... which
  :mod:`.genai` reads.

OpenLLMetry JS's LangChain instrumentation (``@traceloop/instrumentation-langchain``, its
``TraceloopCallbackHandler``) writes less than the Python one:

* its model spans (``chat <model>``) keep only each message's text (``parts: [{type: "text"}]``):
  no tool calls. What the model asked for is in the output of the chain that ran it: a LangGraph
  node's update (``{"messages": [AIMessage]}``, or ``Command``s with ``update.messages``, under
  ``outputs``/``output``), read here as that chain's requested calls. A chain whose output is a
  state with a human message in it (the graph, the workflow around it) made none of them, and a
  ``Send`` only dispatches them;
* a tool run is ``execute_tool <class>``, ``traceloop.span.kind`` ``task`` with
  ``gen_ai.operation.name`` ``execute_tool``: a tool span. ``traceloop.entity.name`` is the tool's
  class (``DynamicStructuredTool``), not its name; the name and call id are in the ``ToolMessage``
  it returned (``traceloop.entity.output``), and a failed run has none (the trajectory then
  pairs it with the model's request by its arguments).
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
    RequestedToolCall,
    SpanType,
    any_key_starts,
    as_arguments,
    span_error,
)
from .messages import (
    indexed_tool_schemas,
    last_user_text,
    output_calls,
    parse_history,
    parse_message,
    parse_messages,
    token_count,
)

NAME = "traceloop"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
#: The Traceloop SDK stamps its association properties on every span of the context, whichever
#: instrumentation made it.
IDENTITY_KEYS = IdentityKeys(
    session=("traceloop.association.properties.session_id",), user=("traceloop.association.properties.user_id",)
)
merge_logs = genai.merge_logs  # log records in the GenAI event form
KIND = "traceloop.span.kind"
ENTITY_NAME = "traceloop.entity.name"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
WORKFLOW_NAME = "traceloop.workflow.name"
ASSOCIATION = "traceloop.association.properties."
#: OpenLLMetry JS's LangChain instrumentation.
LANGCHAIN_JS_SCOPE = "@traceloop/instrumentation-langchain"
_KIND_TYPES: dict[str, SpanType] = {"workflow": "chain", "task": "chain", "agent": "agent", "tool": "tool"}
#: Argument names whose value is the user's request, in the order they are tried.
_INPUT_KEYS = ("input", "query", "question", "message", "prompt", "user_input", "text", "task", "content")


def detect(span: SpanRecord) -> bool:
    """``traceloop.span.kind``, ``llm.request.type`` or any ``traceloop.*`` attribute (OpenLLMetry)."""
    attrs = span.attributes
    return KIND in attrs or "llm.request.type" in attrs or any_key_starts(attrs, "traceloop.")


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, from the entity kind and the GenAI keys (stored at ingest:
    a type known only at scoring rewrites the span's row, raw JSON and all)."""
    attrs = span.attributes
    kind = _entity_kind(attrs)
    if kind in _KIND_TYPES:
        return _KIND_TYPES[kind]
    span_type = genai.quick_span_type(span)
    return "llm" if span_type == "unknown" and _model_call(attrs) else span_type


def _entity_kind(attrs: Mapping[str, Any]) -> str:
    kind = str(attrs.get(KIND) or "").lower()
    if kind == "task" and attrs.get("gen_ai.operation.name") == "execute_tool":
        return "tool"  # OpenLLMetry JS's LangChain tool runs are "task" entities
    return kind


def read(span: SpanRecord) -> Reading:
    """A workflow, task, agent or tool span from its ``traceloop.entity.*`` input and output; any other
    (a model call inside a workflow) as GenAI with the flattened prompts; the association properties'
    session and user on both."""
    attrs = span.attributes
    kind = _entity_kind(attrs)
    if kind in _KIND_TYPES:
        reading = Reading(convention=NAME, span_type=_KIND_TYPES[kind])
        _read_entity(span, reading, kind)
    else:
        # An LLM (or other instrumented library) span inside a Traceloop workflow.
        reading = genai.read_as(span, NAME)
        if reading.span_type == "unknown" and _model_call(attrs):
            reading.span_type = "llm"
            genai.read_messages(span, reading)
        if not reading.tools_available:
            schemas = indexed_tool_schemas(attrs)
            if schemas:
                reading.tools_available = schemas
                reading.sources["tools_available"] = "llm.request.functions.N"
        if reading.input_tokens is None:
            reading.input_tokens = token_count(attrs, "llm.usage.prompt_tokens")

    session = _association(attrs, "session_id")
    if session is not None:
        reading.session_id = session
        reading.sources["session_id"] = ASSOCIATION + "session_id"
    user = _association(attrs, "user_id")
    if user is not None:
        reading.user_id = user
        reading.sources["user_id"] = ASSOCIATION + "user_id"
    return reading


def _read_entity(span: SpanRecord, reading: Reading, kind: str) -> None:
    attrs = span.attributes
    name = attrs.get(ENTITY_NAME) or (span.name.rsplit(".", 1)[0] if "." in span.name else span.name)
    raw_input = parse_json_maybe(attrs.get(ENTITY_INPUT))
    raw_output = parse_json_maybe(attrs.get(ENTITY_OUTPUT))
    output = _unwrap_output(raw_output)

    if kind == "tool":
        arguments = entity_arguments(raw_input)
        reading.tool = ExecutedToolCall(
            name=str(name),
            args=arguments,
            call_id=None,
            result=output,
            error=span_error(span),
        )
        reading.sources.update(
            {"tool_calls": ENTITY_NAME, "parameters_passed": ENTITY_INPUT, "tool_call_results": ENTITY_OUTPUT}
        )
        output = _read_tool_message(output, reading)
        reading.parameters = dict(arguments)
    else:
        reading.agent_name = str(name) if name else _text(attrs.get(WORKFLOW_NAME))
        reading.sources["agent_name"] = ENTITY_NAME if name else WORKFLOW_NAME
        text = request_text(raw_input)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = ENTITY_INPUT
    if output is not None:
        reading.response = output if isinstance(output, str) else as_text(output)
        reading.sources["agent_response"] = ENTITY_OUTPUT
    if kind == "agent" and reading.response is not None:
        reading.agent_exit = True
    if kind != "tool" and span.scope == LANGCHAIN_JS_SCOPE:
        calls = node_update_calls(raw_output)
        if calls:
            reading.requested_calls = calls
            reading.sources["tool_calls"] = ENTITY_OUTPUT + " (the AI messages of a node's update)"


def _read_tool_message(output: Any, reading: Reading) -> Any:
    """A LangChain ``ToolMessage`` a tool returned: its name and call id name the call (the span
    names only the tool's class), its content is the result, an error status the failure.
    Returns the result; any other output is the result as it is."""
    if not isinstance(output, Mapping) or reading.tool is None:
        return output
    message = parse_message(output)
    if message is None or message.role != "tool" or len(message.responses) != 1:
        return output
    response = message.responses[0]
    tool = reading.tool
    if response.name:
        tool.name = response.name
        reading.sources["tool_calls"] = ENTITY_OUTPUT + " (ToolMessage name)"
    tool.call_id = response.call_id
    tool.result = response.value
    if response.is_error and tool.error is None:
        tool.error = as_text(response.value) or "error"
    return response.value


def node_update_calls(value: Any) -> list[RequestedToolCall]:
    """The tool calls of the AI messages a LangGraph node's update holds (LangChain callback
    output: ``{"messages": [...]}`` or ``Command``s with ``update.messages``, under ``outputs`` /
    ``output`` or bare). None from a state that holds a human message (a graph's or a workflow's
    output: the calls of the turn, and of turns before it, that its nodes made), nor from a
    ``Send`` (a dispatch of calls made before)."""
    calls: list[RequestedToolCall] = []
    for messages in _update_messages(parse_json_maybe(value)):
        parsed = parse_messages(messages, "assistant")
        if any(message.role == "user" and message.texts for message in parsed):
            continue
        calls.extend(output_calls(parsed))
    return calls


def _update_messages(value: Any) -> list[Any]:
    """The message lists of a chain output's updates, unwrapped from ``outputs`` / ``output``."""
    if isinstance(value, Mapping):
        for envelope in ("outputs", "output"):
            if envelope in value and len(value) <= 2:
                return _update_messages(parse_json_maybe(value[envelope]))
        if value.get("lg_name") == "Command":
            return _update_messages(value.get("update"))
        messages = value.get("messages")
        return [messages] if isinstance(messages, list) else []
    if isinstance(value, list):
        return [found for item in value for found in _update_messages(item)]
    return []


def entity_arguments(value: Any) -> dict[str, Any]:
    """Tool arguments from ``traceloop.entity.input`` in any of its shapes.

    The decorator's ``{"args": [...], "kwargs": {...}}`` is unwrapped by the rule every dialect
    shares (:func:`otel_eval.conventions.base.unwrap_call_input`).
    """
    value = parse_json_maybe(value)
    if not isinstance(value, Mapping):
        return as_arguments(value)
    if "inputs" in value or "input_str" in value:  # LangChain callback
        inputs = parse_json_maybe(value.get("inputs"))
        if isinstance(inputs, Mapping) and inputs:
            return dict(inputs)
        return as_arguments(value.get("input_str", inputs))
    if value.keys() <= {"args", "kwargs"}:  # @tool / @task decorator: the shared wrapper rule
        return as_arguments(dict(value))
    return dict(value)


def request_text(value: Any) -> str | None:
    """The user's request inside an entity input: a plain string, a well-known argument
    (``input``, ``query``, ...), or the last user message of a ``messages`` list."""
    value = parse_json_maybe(value)
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        # parse_history: only the roles up front, so a LangGraph state's messages after the last
        # user turn (tool calls, tool results, answers) are not read in full only to be passed over.
        text = last_user_text(parse_history(value))
        if text is not None:
            return text
        return next((request_text(item) for item in value if request_text(item) is not None), None)
    if not isinstance(value, Mapping):
        return None
    for container in ("inputs", "kwargs"):
        if container in value:
            found = request_text(value[container])
            if found is not None:
                return found
    if "args" in value:
        found = request_text(value.get("args"))
        if found is not None:
            return found
    if "messages" in value:
        found = last_user_text(parse_history(value["messages"]))
        if found is not None:
            return found
    for key in _INPUT_KEYS:
        if isinstance(value.get(key), str) and value[key]:
            return value[key]
    return None


def _unwrap_output(value: Any) -> Any:
    """The entity's return value: LangChain's ``{"outputs": ...}`` envelope removed, and an
    ``{"output": text}`` result (AgentExecutor) reduced to the text."""
    if isinstance(value, Mapping) and "outputs" in value:
        value = parse_json_maybe(value["outputs"])
    if isinstance(value, Mapping) and isinstance(value.get("output"), str) and len(value) <= 2:
        return value["output"]
    return value


def _model_call(attrs: Mapping[str, Any]) -> bool:
    """A span GenAI's keys leave untyped that OpenLLMetry's own keys show is a model call."""
    return "llm.request.type" in attrs or any(
        key.startswith(("gen_ai.prompt.", "gen_ai.completion.", "llm.prompts.")) for key in attrs
    )


def _association(attrs: Mapping[str, Any], key: str) -> str | None:
    return _text(attrs.get(ASSOCIATION + key))


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
