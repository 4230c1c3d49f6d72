"""OpenInference (Arize) spans: ``openinference.span.kind`` plus flattened, indexed attributes.

Read from the spec (``spec/semantic_conventions.md``, ``spec/tool_calling.md``) and checked
against real openinference-instrumentation-langchain spans of a LangGraph agent, whose quirks
this module absorbs so the trajectory builder never sees them:

* any LangChain run whose name contains "agent" is kind AGENT, tools included (``call_db_agent``):
  a span carrying ``tool.name`` is a tool whatever its kind;
* a one-argument tool's ``input.value`` is the bare value (``Tokyo``): it is kept as
  ``{"input": value}`` here and the builder swaps in the LLM's JSON arguments;
* a tool's ``output.value`` is a serialized ``ToolMessage``: its content is the result and its
  ``tool_call_id`` the call id (the TOOL span has no ``tool.id``);
* AGENT/CHAIN ``input.value`` / ``output.value`` hold the whole message state: the user text is
  the last human message of the input, the answer the last AI message of the output.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ..json_text import as_text, json_value, parse_json_maybe
from ..models.agent_data import ToolSchema
from ..spans import SpanRecord
from . import genai
from .base import (
    ExecutedToolCall,
    IdentityKeys,
    Reading,
    SpanType,
    ToolResponse,
    as_arguments,
    as_int,
    may_have_key_starting,
    span_error,
    tool_schema,
)
from .messages import (
    IndexedGroups,
    Message,
    given_results,
    last_text_from,
    last_user_text,
    openinference_messages,
    parse_messages,
    read_content,
    result_value,
    state_messages,
    system_text,
)

NAME = "openinference"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
#: The spec's ``session.id`` / ``user.id`` (OpenTelemetry's own keys, too).
IDENTITY_KEYS = IdentityKeys(session=("session.id",), user=("user.id",))
merge_logs = genai.merge_logs  # log records in the GenAI event form
KIND_KEY = "openinference.span.kind"

#: OpenInference kinds → span types. Kinds that neither answer the user, call a model for text,
#: nor run a tool (embedding, guardrail, evaluator, prompt rendering) are steps: "chain".
KIND_TYPES: dict[str, SpanType] = {
    "AGENT": "agent",
    "CHAIN": "chain",
    "LLM": "llm",
    "TOOL": "tool",
    "RETRIEVER": "retriever",
    "RERANKER": "retriever",
    "EMBEDDING": "chain",
    "GUARDRAIL": "chain",
    "EVALUATOR": "chain",
    "PROMPT": "chain",
}
_JSON_MIME = "application/json"
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def detect(span: SpanRecord) -> bool:
    """An ``openinference.span.kind`` attribute: every OpenInference instrumentation writes it."""
    return KIND_KEY in span.attributes


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    kind = str(span.attributes.get(KIND_KEY) or "").upper()
    if span.attributes.get("tool.name") and kind not in ("LLM", "RETRIEVER", "RERANKER", "EMBEDDING"):
        return "tool"  # LangChain marks tools named "*agent*" as AGENT (call_db_agent)
    return KIND_TYPES.get(kind, "unknown")


def read(span: SpanRecord) -> Reading:
    """The reading of an OpenInference span by its kind (llm, tool, retriever, agent or chain)."""
    attrs = span.attributes
    span_type = quick_span_type(span)
    reading = Reading(NAME, span_type)
    _read_identity(attrs, reading)
    if span_type == "llm":
        _read_llm(span, reading)
    elif span_type == "tool":
        _read_tool(span, reading)
    elif span_type == "retriever":
        _read_retriever(span, reading)
    else:
        _read_agent_or_chain(span, reading)
    return reading


# --- per span type ---------------------------------------------------------------------------


def _read_identity(attrs: Mapping[str, Any], reading: Reading) -> None:
    metadata: dict[str, Any] | None = None  # parsed only when an attribute is missing
    for field_name, key in (("session_id", "session.id"), ("user_id", "user.id")):
        value = attrs.get(key)
        if value in (None, ""):
            if metadata is None:
                parsed = parse_json_maybe(attrs.get("metadata"))
                metadata = parsed if isinstance(parsed, dict) else {}
            value, key = metadata.get(field_name), f"metadata.{field_name}"
            if value in (None, ""):
                continue
        setattr(reading, field_name, str(value))
        reading.sources[field_name] = key


def _read_llm(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    groups = _llm_groups(attrs)  # one pass over the keys for every list below
    inputs = openinference_messages(groups.get("llm.input_messages", {}), with_calls=False)  # roles and texts only
    outputs = openinference_messages(groups.get("llm.output_messages", {}))
    system = system_text(inputs)
    if system is not None:
        reading.system_prompt = system
        reading.sources["system_prompt"] = "llm.input_messages.*.message.content (role system)"
    user = last_user_text(inputs)
    if any(m.role == "tool" for m in inputs):  # read when asked (Reading.tool_results): most spans never are
        reading.sent_back = lambda: _sent_back(attrs, inputs)
        reading.sources["tool_results"] = "llm.input_messages.*.message.content (role tool, after the last role user)"
    if user is not None:
        reading.user_input = user
        reading.sources["agent_task"] = "llm.input_messages.*.message.content (last role user)"
    else:
        prompts = _values(groups.get("llm.prompts", {}), "prompt.text")
        if prompts:
            reading.user_input = str(prompts[-1])
            reading.sources["agent_task"] = "llm.prompts.*.prompt.text"
    texts = [text for m in outputs for text in m.texts]  # every output message's text
    if texts:
        reading.response = "\n".join(texts)
        reading.sources["agent_response"] = "llm.output_messages.*.message.content"
    else:
        choices = _values(groups.get("llm.choices", {}), "completion.text")
        if choices:
            reading.response = str(choices[0])
            reading.sources["agent_response"] = "llm.choices.0.completion.text"
    for message in outputs:
        reading.requested_calls.extend(message.calls)
    if reading.requested_calls:
        reading.sources["tool_calls"] = "llm.output_messages.*.message.tool_calls.*.tool_call.*"
    reading.tools_available = _tool_schemas(groups.get("llm.tools", {}))
    if reading.tools_available:
        reading.sources["tools_available"] = "llm.tools.*.tool.json_schema"
    reading.model = (
        _str(attrs.get("llm.model_name"))
        or _str(attrs.get("llm.response.model_name"))
        or _str(attrs.get("llm.request.model_name"))
    )
    reading.input_tokens = as_int(attrs.get("llm.token_count.prompt"))
    reading.output_tokens = as_int(attrs.get("llm.token_count.completion"))


def _sent_back(attrs: Mapping[str, Any], inputs: list[Message]) -> list[ToolResponse]:
    """The tool results after the last user message, their values parsed, with ``is_error`` set
    where the request kept in ``input.value`` says a call failed: flattening the messages loses
    that flag (Anthropic's ``tool_result.is_error``), the whole request has it under the same
    call ids."""
    results = [ToolResponse(r.call_id, r.name, result_value(r.value)) for r in given_results(inputs)]
    if not results or attrs.get("input.mime_type") != _JSON_MIME:
        return results
    request = parse_json_maybe(attrs.get("input.value"))
    if type(request) is not dict or not isinstance(request.get("messages"), list):
        return results
    failed = {r.call_id for r in given_results(parse_messages(request["messages"])) if r.is_error and r.call_id}
    for result in results:
        if result.call_id in failed:
            result.is_error = True
    return results


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    name = _str(attrs.get("tool.name")) or span.name
    invocation = ExecutedToolCall(name=name)
    reading.sources["tool_calls"] = "tool.name" if attrs.get("tool.name") else "span name"
    definition = parse_json_maybe(attrs.get("tool.parameters"))
    if "input.value" in attrs:
        invocation.args = as_arguments(_io_value(attrs, "input"))
        reading.sources["parameters_passed"] = "input.value"
    elif isinstance(definition, dict) and not _is_schema(definition):
        invocation.args = dict(definition)  # some tracers put the call's values here
        reading.sources["parameters_passed"] = "tool.parameters"
    if isinstance(definition, dict) and _is_schema(definition):
        reading.tools_available = [tool_schema(name, _str(attrs.get("tool.description")), definition)]
        reading.sources["tools_available"] = "tool.parameters"
    invocation.call_id = _str(attrs.get("tool.id")) or _str(attrs.get("tool_call.id"))
    if "output.value" in attrs:
        result, message_call_id, failed = unwrap_tool_message(_io_value(attrs, "output"))
        invocation.result = result
        invocation.call_id = invocation.call_id or message_call_id
        if failed:
            invocation.error = as_text(result)
        reading.sources["tool_call_results"] = "output.value"
    error = span_error(span)
    if error is not None:
        invocation.error = error
    reading.tool = invocation
    reading.parameters = dict(invocation.args)
    reading.response = as_text(invocation.result)
    if reading.response is not None:
        reading.sources["agent_response"] = "output.value"
    documents = _documents(attrs, "retrieval.documents")
    if documents:
        reading.retrieved_documents = documents
        reading.sources["retrieved_context"] = "retrieval.documents.*.document.content"


def _read_retriever(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    query = attrs.get("reranker.query") or _io_value(attrs, "input")
    if query not in (None, ""):
        reading.retrieval_query = [_query_text(query)]
        reading.sources["retrieval_query"] = "reranker.query" if attrs.get("reranker.query") else "input.value"
    for prefix in ("retrieval.documents", "reranker.output_documents"):
        documents = _documents(attrs, prefix)
        if documents:
            reading.retrieved_documents = documents
            reading.sources["retrieved_context"] = f"{prefix}.*.document.content"
            break
    reading.response = "\n\n".join(reading.retrieved_documents) if reading.retrieved_documents else None


def _read_agent_or_chain(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    if reading.span_type == "agent":
        reading.agent_name = _str(attrs.get("agent.name")) or span.name or None
        reading.sources["agent_name"] = "agent.name" if attrs.get("agent.name") else "span name"
    value = _io_value(attrs, "input")
    user = user_text(value)
    if user is not None:
        reading.user_input = user
        reading.sources["agent_task"] = "input.value"
    else:
        inputs = openinference_messages(_group_indexed(attrs, "llm.input_messages"), with_calls=False)
        user = last_user_text(inputs)
        if user is not None:
            reading.user_input = user
            reading.sources["agent_task"] = "llm.input_messages.*.message.content (last role user)"
    answer = answer_text(_io_value(attrs, "output"))
    if answer is not None:
        reading.response = answer
        reading.sources["agent_response"] = "output.value"
    documents = _documents(attrs, "retrieval.documents")
    if documents:
        reading.retrieved_documents = documents
        reading.sources["retrieved_context"] = "retrieval.documents.*.document.content"


# --- input / output values -------------------------------------------------------------------


def _io_value(attrs: Mapping[str, Any], which: str) -> Any:
    """``input.value``/``output.value``, JSON-parsed when its mime type says JSON (spec: else text)."""
    value = attrs.get(f"{which}.value")
    if isinstance(value, str) and str(attrs.get(f"{which}.mime_type") or "").startswith(_JSON_MIME):
        try:
            return json_value(value)
        except ValueError:
            return value
    return value


def user_text(value: Any) -> str | None:
    """The user's request in an agent/chain input: plain text, the last user message of a
    ``messages`` state, or a conventional ``input``/``question``/``query``/``task`` field. Text
    that is a JSON object with no mime type saying so (smolagents' ``run`` arguments) is read as
    that object when it has one of these, else kept as the text it is."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if value[:1] == "{":
            parsed = parse_json_maybe(value)
            if isinstance(parsed, dict):
                return user_text(parsed) or value
        return value
    messages = state_messages(value)
    if messages is not None:
        return last_text_from(messages, "user")
    if isinstance(value, dict):
        for key in ("input", "question", "query", "user_input", "prompt", "task"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
    return None


def answer_text(value: Any) -> str | None:
    """The answer in an agent/chain output: plain text, the last AI message (with text) of a
    ``messages`` state, a conventional ``output``/``answer`` field, else the value as JSON."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    messages = state_messages(value)
    if messages is not None:
        return last_text_from(messages, "assistant")
    if isinstance(value, dict):
        for key in ("output", "answer", "result", "final_output", "content"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
        text = last_text_from([value], "assistant")  # the state is itself the AI message
        if text is not None:
            return text
    return as_text(value)


def unwrap_tool_message(value: Any) -> tuple[Any, str | None, bool]:
    """(result, tool_call_id, failed) of a tool output: a serialized LangChain ``ToolMessage``
    is unwrapped to its content (JSON-parsed when it is JSON); anything else is the result."""
    body: dict[str, Any] | None = None
    if isinstance(value, dict):
        if value.get("type") == "tool" and isinstance(value.get("data"), dict):
            body = value["data"]
        elif value.get("lc") == 1 and isinstance(value.get("kwargs"), dict) and "ToolMessage" in str(value.get("id")):
            body = value["kwargs"]
    if body is None:
        return parse_json_maybe(value), None, False
    result = body.get("content")
    if isinstance(result, list):  # content blocks: their texts (a block it cannot read, as its JSON)
        result = read_content(result).text
    return parse_json_maybe(result), _str(body.get("tool_call_id")), body.get("status") == "error"


def _query_text(query: Any) -> str:
    if isinstance(query, dict):
        for key in ("query", "input", "question"):
            if isinstance(query.get(key), str):
                return query[key]
    return as_text(query) or ""


# --- indexed attributes ----------------------------------------------------------------------


def _group_indexed(attrs: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``prefix.N.rest`` keys as {N: {rest: value}}."""
    if len(attrs) > _SCAN_LIMIT and not _HAS_INDEX.search(prefix):
        # A span's attributes are grouped for several prefixes in a row: index them in one pass
        # and keep the index for the next call on the same (immutable) attribute mapping.
        global _last_grouped
        seen, groups = _last_grouped
        if seen is not attrs:
            groups = _group_all(attrs)
            _last_grouped = (attrs, groups)
        return groups.get(prefix, {})
    found: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    if not may_have_key_starting(attrs, start):  # the usual answer (no documents on a tool span)
        return found
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        match = _INDEXED.match(key[len(start) :])
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return found


_SCAN_LIMIT = 12
_FIRST_INDEX = re.compile(r"\.(\d+)\.")
_HAS_INDEX = re.compile(r"(?:^|\.)\d+(?:\.|$)")
_last_grouped: tuple[Any, dict[str, dict[int, dict[str, Any]]]] = (None, {})


def _group_all(attrs: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """{prefix: {N: {rest: value}}} for every ``prefix.N.rest`` key, split at its first index:
    what the per-prefix scan finds for any prefix without an index of its own."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attrs.items():
        found = _FIRST_INDEX.search(key)
        if found is None:
            continue
        match = _INDEXED.match(key[found.start() + 1 :])
        if match:
            out.setdefault(key[: found.start()], {}).setdefault(int(match.group(1)), {})[match.group(2)] = value
    return out


def _values(grouped: dict[int, dict[str, Any]], leaf: str) -> list[Any]:
    return [grouped[i][leaf] for i in sorted(grouped) if grouped[i].get(leaf) not in (None, "")]


_llm_groups = IndexedGroups("llm.input_messages", "llm.output_messages", "llm.tools", "llm.prompts", "llm.choices")


def _tool_schemas(grouped: dict[int, dict[str, Any]]) -> list[ToolSchema]:
    schemas = []
    for _, fields in sorted(grouped.items()):
        text = fields.get("tool.json_schema")
        # The same few schemas come with every LLM span: each text is parsed and validated once.
        schema = _schema_of_text(text) if isinstance(text, str) else _schema_of_definition(text)
        if schema is not None:
            schemas.append(schema)
        elif fields.get("tool.name"):
            schemas.append(
                tool_schema(
                    fields["tool.name"], fields.get("tool.description"), parse_json_maybe(fields.get("tool.parameters"))
                )
            )
    return schemas


@functools.lru_cache(maxsize=512)
def _schema_of_text(text: str) -> ToolSchema | None:
    """The ToolSchema a ``tool.json_schema`` text defines, or None."""
    return _schema_of_definition(parse_json_maybe(text))


def _schema_of_definition(definition: Any) -> ToolSchema | None:
    """An OpenAI function definition (``{"type": "function", "function": {...}}``) or a bare one
    as a ToolSchema; None when it is not a definition with a name."""
    if not isinstance(definition, dict):
        return None
    function = inner if isinstance(inner := definition.get("function"), dict) else definition
    name = function.get("name")
    if not name:
        return None
    return tool_schema(name, function.get("description"), function.get("parameters", function.get("input_schema")))


def _documents(attrs: Mapping[str, Any], prefix: str) -> list[str]:
    docs = []
    for _, fields in sorted(_group_indexed(attrs, prefix).items()):
        content = fields.get("document.content")
        if content not in (None, ""):
            docs.append(str(content))
    return docs


def documents_with_ids(attrs: Mapping[str, Any], prefix: str = "retrieval.documents") -> list[dict[str, Any]]:
    """Retrieved documents with every field the spec defines (id, content, score, metadata)."""
    docs = []
    for _, fields in sorted(_group_indexed(attrs, prefix).items()):
        doc = {key.split(".", 1)[1]: value for key, value in fields.items() if key.startswith("document.")}
        if "metadata" in doc:
            doc["metadata"] = parse_json_maybe(doc["metadata"])
        docs.append(doc)
    return docs


# --- small helpers ---------------------------------------------------------------------------


def _is_schema(value: dict[str, Any]) -> bool:
    return "properties" in value or value.get("type") == "object" or "$schema" in value


def _str(value: Any) -> str | None:
    if value in (None, ""):
        return None
    return str(value)
