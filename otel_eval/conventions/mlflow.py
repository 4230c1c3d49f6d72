"""MLflow tracing's OTLP export (``mlflow.*`` attributes).

Every ``mlflow.*`` value is JSON-encoded (strings quoted). ``mlflow.spanType`` names the span
kind; ``mlflow.spanInputs`` / ``mlflow.spanOutputs`` hold the traced function's kwargs and
return value (for an OpenAI CHAT_MODEL span: the request and the ChatCompletion dump).
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
    as_arguments,
    as_int,
    note_unread,
    span_error,
)
from .messages import last_user_text, parse_messages, system_text, tool_schemas

NAME = "mlflow"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
IDENTITY_KEYS = IdentityKeys()  # session.id / user.id: OpenTelemetry's own
merge_logs = genai.merge_logs  # log records in the GenAI event form

_TYPES: dict[str, SpanType] = {
    "AGENT": "agent",
    "CHAT_MODEL": "llm",
    "LLM": "llm",
    "TOOL": "tool",
    "RETRIEVER": "retriever",
}
_INPUT_KEYS = ("question", "query", "input", "message", "prompt", "user_input")
_OUTPUT_KEYS = ("content", "answer", "output", "text")


def detect(span: SpanRecord) -> bool:
    """An ``mlflow.spanType`` attribute, or a resource whose SDK is MLflow's."""
    return "mlflow.spanType" in span.attributes or span.resource.get("telemetry.sdk.name") == "mlflow"


def _value(attrs: Mapping[str, Any], key: str) -> Any:
    return parse_json_maybe(attrs.get(key))


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type ``mlflow.spanType`` names; chain for a kind not mapped, or none."""
    kind = _value(span.attributes, "mlflow.spanType")
    return _TYPES.get(kind, "chain") if isinstance(kind, str) else "chain"


def read(span: SpanRecord) -> Reading:
    """The reading of an MLflow span from its JSON-encoded inputs and outputs; a shape no rule foresaw
    is noted as unread, never raised."""
    reading = Reading(NAME)
    try:
        _read(span, reading)
    except Exception as error:  # never raise: a shape no rule foresaw
        note_unread(reading, f"mlflow span not read ({type(error).__name__})")
    return reading


def _read(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    kind = quick_span_type(span)
    reading.span_type = kind
    inputs = _value(attrs, "mlflow.spanInputs")
    outputs = _value(attrs, "mlflow.spanOutputs")
    for field, key in (("session_id", "session.id"), ("user_id", "user.id")):
        value = _value(attrs, key)
        if value not in (None, "") and not isinstance(value, (dict, list)):
            setattr(reading, field, str(value))
            reading.sources[field] = key
    model = _value(attrs, "mlflow.llm.model")
    if model not in (None, ""):
        reading.model = str(model)
    usage = _value(attrs, "mlflow.chat.tokenUsage")
    if isinstance(usage, Mapping):
        reading.input_tokens = as_int(usage.get("input_tokens"))
        reading.output_tokens = as_int(usage.get("output_tokens"))
    if kind == "tool":
        _read_tool(span, reading, inputs, outputs)
    elif kind == "llm":
        _read_llm(attrs, reading, inputs, outputs)
    else:
        if kind == "agent":
            reading.agent_name = span.name
            reading.sources["agent_name"] = "span name"
        text = _input_text(inputs)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = "mlflow.spanInputs"
        answer = _output_text(outputs)
        if answer is not None:
            reading.response = answer
            reading.sources["agent_response"] = "mlflow.spanOutputs"
        reading.agent_exit = kind == "agent" and answer is not None


def _input_text(inputs: Any) -> str | None:
    if isinstance(inputs, str):
        return inputs or None
    if not isinstance(inputs, Mapping):
        return None
    for key in _INPUT_KEYS:
        value = inputs.get(key)
        if isinstance(value, str) and value:
            return value
    if "messages" in inputs:
        text = last_user_text(parse_messages(inputs.get("messages")))
        if text is not None:
            return text
    strings = [v for v in inputs.values() if isinstance(v, str) and v]
    return strings[0] if len(strings) == 1 else None


def _completion_message(outputs: Any) -> Mapping[str, Any] | None:
    if isinstance(outputs, Mapping) and isinstance(outputs.get("choices"), list) and outputs["choices"]:
        choice = outputs["choices"][0]
        if isinstance(choice, Mapping) and isinstance(choice.get("message"), Mapping):
            return choice["message"]
    return None


def _output_text(outputs: Any) -> str | None:
    if outputs is None:
        return None
    if isinstance(outputs, str):
        return outputs or None
    message = _completion_message(outputs)
    if message is not None:
        content = message.get("content")
        return content if isinstance(content, str) and content else None
    if isinstance(outputs, Mapping):
        for key in _OUTPUT_KEYS:
            value = outputs.get(key)
            if isinstance(value, str) and value:
                return value
    return as_text(outputs)


def _read_llm(attrs: Mapping[str, Any], reading: Reading, inputs: Any, outputs: Any) -> None:
    if isinstance(inputs, Mapping):
        messages = parse_messages(inputs.get("messages"))
        text = last_user_text(messages)
        if text is not None:
            reading.user_input = text
            reading.sources["agent_task"] = "mlflow.spanInputs"
        system = system_text(messages)
        if system is not None:
            reading.system_prompt = system
            reading.sources["system_prompt"] = "mlflow.spanInputs"
        tools = tool_schemas(inputs.get("tools")) if inputs.get("tools") else []
        if tools:
            reading.tools_available = tools
            reading.sources["tools_available"] = "mlflow.spanInputs"
        if reading.model is None and isinstance(inputs.get("model"), str):
            reading.model = inputs["model"]
        parameters = {k: v for k, v in inputs.items() if k not in ("messages", "tools", "model")}
        if parameters:
            reading.parameters = parameters
    if not reading.tools_available and "mlflow.chat.tools" in attrs:
        tools = tool_schemas(_value(attrs, "mlflow.chat.tools"))
        if tools:
            reading.tools_available = tools
            reading.sources["tools_available"] = "mlflow.chat.tools"
    message = _completion_message(outputs)
    if message is not None:
        content = message.get("content")
        if isinstance(content, str) and content:
            reading.response = content
            reading.sources["agent_response"] = "mlflow.spanOutputs"
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping) or not function.get("name"):
                continue
            calls.append(
                RequestedToolCall(
                    str(function["name"]),
                    as_arguments(function.get("arguments")),
                    str(call["id"]) if call.get("id") else None,
                )
            )
        if calls:
            reading.requested_calls = calls
            reading.sources["tool_calls"] = "mlflow.spanOutputs"
    elif outputs is not None:
        text = _output_text(outputs)
        if text is not None:
            reading.response = text
            reading.sources["agent_response"] = "mlflow.spanOutputs"


def _read_tool(span: SpanRecord, reading: Reading, inputs: Any, outputs: Any) -> None:
    name = span.name or _value(span.attributes, "mlflow.spanFunctionName") or "unknown"
    tool = ExecutedToolCall(name=str(name), args=as_arguments(inputs), result=outputs, error=span_error(span))
    reading.tool = tool
    reading.parameters = dict(tool.args)
    reading.sources["tool_calls"] = "span name" if span.name else "mlflow.spanFunctionName"
    reading.sources["parameters_passed"] = "mlflow.spanInputs"
    if outputs is not None:
        reading.response = as_text(outputs)
        reading.sources["tool_call_results"] = "mlflow.spanOutputs"
        reading.sources["agent_response"] = "mlflow.spanOutputs"
