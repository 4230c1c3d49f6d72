"""Noveum spans (noveum-trace-python's LangChain callback, ``dataset.json``).

A LangChain ReAct ``AgentExecutor`` run: one ``chain_start.*`` root, ``llm.*`` spans and
``tool:<name>:<name>`` spans. Field rules follow the seed (agentdata-field-mapping.md); the places
where NovaEval's reference mapping is knowingly wrong are changed on purpose and listed in
``docs/noveum-differences.md``. The SDK's quirks, and what this module does about them:

* a span's type comes from what it *is* (chain root → agent, ``llm.*`` → llm, ``tool.name`` →
  tool). A tool span that is not last in its run also carries ``agent.output.action.*``: that is
  the NEXT decision (made by the following LLM call), so it is not read as this span's call;
* the SDK builds tool spans from the agent action, so ``tool.input.input_str`` is the action
  input; ``argument_count``/``expression`` are bookkeeping, not arguments;
* ``tool.output.output`` is the run's FINAL answer, not the tool's observation. The per-span
  record keeps what the span says (as the seed does); :func:`tool_observations` recovers the real
  observation from the next LLM prompt's ReAct scratchpad, and the trajectory builder uses it;
* spans are chained (each LLM/tool span is a child of the previous tool span), so parent links
  do not mean "called from inside": :data:`SEQUENTIAL_NESTING`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..json_text import as_text, parse_json_maybe
from ..models.agent_data import ToolSchema
from ..spans import SpanEvent, SpanRecord
from . import genai
from .base import ExecutedToolCall, IdentityKeys, Reading, RequestedToolCall, SpanType, as_int, span_error

NAME = "noveum"
quick_span_type = None  # the span type is known only once the span is read

#: Parent links of this SDK chain consecutive steps; the trajectory builder must not read a tool
#: span below another tool span as a sub-agent call.
SEQUENTIAL_NESTING = True
#: The SDK's ``metadata`` (flattened); read on every span, as spans of other SDKs may carry a
#: ``metadata`` object too.
IDENTITY_KEYS = IdentityKeys(session=("metadata.session_id",), user=("metadata.user_id",))
merge_logs = genai.merge_logs  # log records in the GenAI event form

RETRIEVER_TOOL = "langchain_retriever"
#: LangChain's stand-in tool for an LLM output the ReAct parser rejected (``handle_parsing_errors``).
PARSE_ERROR_TOOL = "_Exception"
_DISTINCT_KEYS = ("llm.input.prompts", "tool.output.output", "chain.inputs", "chain.inputs.input")
_SDK_KEYS = ("llm.model", "tool.name", "chain.name")
_TOOL_INPUT_PREFIX = "tool.input."
_TOOL_INPUT_BOOKKEEPING = ("argument_count", "expression")

# "name(arg: type = default, ...) -> rettype - description"
_SIGNATURE = re.compile(r"^([A-Za-z_][\w.\-]*)\((.*)\)\s*->\s*(.+?)\s+-\s+(.*)$")
# LangChain's ReActSingleInputOutputParser pattern.
_REACT_ACTION = re.compile(r"Action\s*\d*\s*:[\s]*(.*?)[\s]*Action\s*\d*\s*Input\s*\d*\s*:[\s]*(.*)", re.DOTALL)
_REACT_QUESTION = re.compile(r"\nQuestion:\s*(.*?)\nThought:", re.DOTALL)
_OBSERVATION = "\nObservation: "


def detect(span: SpanRecord) -> bool:
    """Attributes only Noveum's LangChain callback writes, or its SDK's span (a LangChain run id or
    its scope) with a model, tool or chain name."""
    attrs = span.attributes
    if any(key.startswith("agent.output.") for key in attrs) or any(key in attrs for key in _DISTINCT_KEYS):
        return True
    sdk_span = "langchain.run_id" in attrs or span.scope.startswith("noveum")
    return sdk_span and any(key in attrs for key in _SDK_KEYS)


def span_type_of(span: SpanRecord) -> SpanType:
    """What the span is: a chain span is the agent when it is the root, has events or carries the
    agent's output (else a chain); ``tool.name`` makes a tool, ``llm.*`` a model call."""
    attrs = span.attributes
    if "chain.name" in attrs or "chain.inputs" in attrs or "chain.inputs.input" in attrs:
        return "agent" if span.is_root or _has_agent_output(attrs) or span.events else "chain"
    if attrs.get("tool.name"):
        return "tool"
    if any(key.startswith("llm.") for key in attrs):
        return "llm"
    if _has_agent_output(attrs):
        return "agent"
    return "unknown"


def read(span: SpanRecord) -> Reading:
    """The reading of a Noveum span by its type (agent or chain, llm, tool), as the module's notes say."""
    span_type = span_type_of(span)
    reading = Reading(convention=NAME, span_type=span_type)
    reading.sources.update({"task_id": "trace_id", "turn_id": "span_id", "exit_status": "status"})
    user_id = span.attributes.get("metadata.user_id")
    if user_id:
        reading.user_id = str(user_id)
        reading.sources["user_id"] = "metadata.user_id"
    session_id = span.attributes.get("metadata.session_id")
    if session_id:
        reading.session_id = str(session_id)
    if span_type in ("agent", "chain"):
        _read_agent(span, reading)
    elif span_type == "llm":
        _read_llm(span, reading)
    elif span_type == "tool":
        _read_tool(span, reading)
    return reading


# --- per span type ---------------------------------------------------------------------------


def _read_agent(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    task = _nested(attrs, "chain.inputs", "input")
    if task is not None:
        reading.user_input = as_text(task)
        reading.sources["agent_task"] = "chain.inputs.input"
    output = _nested(attrs, "agent.output.finish.return_values", "output")
    if output is not None:
        reading.response = as_text(output)
        reading.sources["agent_response"] = "agent.output.finish.return_values.output"
    tool = attrs.get("agent.output.action.tool")
    if tool:
        tool_input = attrs.get("agent.output.action.tool_input")
        reading.requested_calls = [RequestedToolCall(name=str(tool), args={"input": tool_input})]
        reading.parameters = {"input": tool_input}
        reading.sources["tool_calls"] = "agent.output.action.tool, agent.output.action.tool_input"
        reading.sources["parameters_passed"] = "agent.output.action.tool_input"
        if tool == RETRIEVER_TOOL:
            reading.retrieval_query = [as_text(tool_input) or ""]
            reading.sources["retrieval_query"] = "agent.output.action.tool_input"
    if span.events:
        reading.trace = events_json(span.events)
        reading.sources["trace"] = "events"
    reading.agent_exit = any(event.name == "agent_finish" for event in span.events)
    if reading.agent_exit:
        reading.sources["agent_exit"] = "events[agent_finish]"


def _read_llm(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    prompt = _first(attrs.get("llm.input.prompts"))
    if prompt is not None:
        reading.tools_available = parse_react_tools(str(prompt))
        if reading.tools_available:
            reading.sources["tools_available"] = "llm.input.prompts[0]"
        question = react_question(str(prompt))
        if question is not None:
            reading.user_input = question
            reading.sources["agent_task"] = "llm.input.prompts[0] (ReAct Question)"
    response = _first(attrs.get("llm.output.response"))
    if response is not None:
        reading.response = as_text(response)
        reading.sources["agent_response"] = "llm.output.response[0]"
        action = react_action(reading.response or "")
        if action is not None:
            reading.requested_calls = [action]
            reading.sources["tool_calls"] = "llm.output.response[0] (ReAct Action / Action Input)"
    reading.model = str(attrs["llm.model"]) if attrs.get("llm.model") else None
    reading.input_tokens = as_int(attrs.get("llm.input_tokens"))
    reading.output_tokens = as_int(attrs.get("llm.output_tokens"))


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    attrs = span.attributes
    name = str(attrs["tool.name"])
    inputs = {
        key[len(_TOOL_INPUT_PREFIX) :]: value for key, value in attrs.items() if key.startswith(_TOOL_INPUT_PREFIX)
    }
    reading.parameters = dict(inputs)
    reading.sources["parameters_passed"] = "tool.input.*"
    invocation = ExecutedToolCall(name=name, args=tool_arguments(inputs))
    reading.sources["tool_calls"] = "tool.name, tool.input.*"
    if "tool.output.output" in attrs:
        invocation.result = attrs["tool.output.output"]
        reading.response = as_text(invocation.result)
        reading.sources["tool_call_results"] = "tool.output.output"
        reading.sources["agent_response"] = "tool.output.output"
    if name == PARSE_ERROR_TOOL:
        # Not a tool the agent chose: LangChain's record of an LLM output it could not parse.
        invocation.result = None
        invocation.error = as_text(inputs.get("input_str")) or "invalid ReAct output"
    else:
        invocation.error = span_error(span)
    reading.tool = invocation
    if name == RETRIEVER_TOOL:
        query = inputs.get("input_str", inputs.get("query"))
        if query is not None:
            reading.retrieval_query = [as_text(query) or ""]
            reading.sources["retrieval_query"] = "tool.input.input_str"
        if "tool.output.output" in attrs:
            reading.retrieved_documents = [as_text(attrs["tool.output.output"]) or ""]
            reading.sources["retrieved_context"] = "tool.output.output"


def tool_arguments(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A tool span's real arguments from its ``tool.input.*`` values.

    Spans made from an agent action carry ``input_str`` (the action input) plus ``expression``
    (a copy) and ``argument_count``: the call is ``{"input": input_str}``, the shape LangChain's
    single-input tools and the agent action (``{"input": tool_input}``) use. Spans made by
    ``on_tool_start`` with structured inputs carry one ``tool.input.<arg>`` per argument.
    """
    real = {k: v for k, v in inputs.items() if k not in _TOOL_INPUT_BOOKKEEPING and k != "input_str"}
    if real:
        return {k: parse_json_maybe(v) if isinstance(v, str) and v[:1] in "[{" else v for k, v in real.items()}
    if "input_str" in inputs:
        return {"input": inputs["input_str"]}
    if "expression" in inputs:
        return {"input": inputs["expression"]}
    return {}


# --- ReAct text ------------------------------------------------------------------------------


def parse_react_tools(prompt: str) -> list[ToolSchema]:
    """The tool list of a ReAct prompt: ``name(arg: type = default) -> rettype - description``.

    The list is the first block of signature lines; a description runs on over following lines
    until a blank line or the next signature, so the last tool never swallows the rest of the
    prompt (instructions, question, scratchpad).
    """
    tools: list[ToolSchema] = []
    current: dict[str, Any] | None = None
    for line in prompt.split("\n"):
        match = _SIGNATURE.match(line)
        if match:
            if current is not None:
                tools.append(ToolSchema(**current))
            name, params, returns, description = match.groups()
            current = {
                "name": name,
                "description": description.strip(),
                "args_schema": parse_react_args(params),
                "return_schema": {"type": returns.strip()},
            }
        elif current is not None:
            if not line.strip():
                break
            current["description"] += "\n" + line.rstrip()
    if current is not None:
        tools.append(ToolSchema(**current))
    return tools


def parse_react_args(text: str) -> dict[str, Any]:
    """``"a: str = 'x', b: int"`` → ``{"a": {"type": "str", "default": "x"}, "b": {"type": "int"}}``."""
    args: dict[str, Any] = {}
    for part in _split_top_level(text):
        part = part.strip()
        if not part:
            continue
        name, _, rest = part.partition(":")
        type_text, has_default, default = rest.partition("=")
        if not has_default and "=" in name:  # "a = 1" without a type
            name, _, default = name.partition("=")
            has_default = "="
        spec: dict[str, Any] = {}
        if type_text.strip():
            spec["type"] = type_text.strip()
        if has_default:
            spec["default"] = _unquote(default.strip())
        args[name.strip()] = spec
    return args


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quotes (``Dict[str, int]``, ``'a, b'``)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def react_action(text: str) -> RequestedToolCall | None:
    """The action a ReAct LLM output asks for, parsed as LangChain's ReAct parser does
    (``Action:`` / ``Action Input:``; the input stripped of spaces, then of double quotes)."""
    match = _REACT_ACTION.search(text)
    if match is None:
        return None
    tool = match.group(1).strip()
    tool_input = match.group(2).strip(" ").strip('"')
    if not tool:
        return None
    return RequestedToolCall(name=tool, args={"input": tool_input})


def react_question(prompt: str) -> str | None:
    """The user's question in a ReAct prompt (``Question: ...`` before the first ``Thought:``)."""
    marker = prompt.rfind("\nBegin!")
    match = _REACT_QUESTION.search(prompt, marker if marker >= 0 else 0)
    return match.group(1).strip() if match else None


def tool_observations(spans: Sequence[SpanRecord]) -> dict[str, Any]:
    """What each action-taking LLM span got back: ``{llm span id: observation}``.

    LangChain appends ``<llm output>\\nObservation: <tool output>\\nThought:`` to the scratchpad,
    so the observation after LLM span *i*'s action is in LLM span *i+1*'s prompt, right after
    span *i*'s output text. LLM spans with no later LLM span get no entry (unknown)."""
    llms = sorted((s for s in spans if span_type_of(s) == "llm"), key=lambda s: (s.start_ns, s.end_ns, s.span_id))
    found: dict[str, Any] = {}
    for current, following in zip(llms, llms[1:]):
        log = _first(current.attributes.get("llm.output.response"))
        prompt = _first(following.attributes.get("llm.input.prompts"))
        if log is None or prompt is None or react_action(str(log)) is None:
            continue
        observation = observation_after(str(prompt), str(log))
        if observation is not None:
            found[current.span_id] = observation
    return found


def observation_after(prompt: str, log: str) -> str | None:
    """The observation following ``log`` in a ReAct scratchpad (the last occurrence of ``log``;
    if the log is not found, the prompt's last observation)."""
    at = prompt.rfind(log + _OBSERVATION)
    if at >= 0:
        start = at + len(log) + len(_OBSERVATION)
    else:
        at = prompt.rfind(_OBSERVATION)
        if at < 0:
            return None
        start = at + len(_OBSERVATION)
    end = prompt.find("\nThought:", start)
    text = prompt[start:] if end < 0 else prompt[start:end]
    return text.rstrip()


# --- helpers ---------------------------------------------------------------------------------


def events_json(events: Sequence[SpanEvent]) -> str:
    """The span's events as NovaEval's ``trace`` field: ``json.dumps`` of
    ``[{"name", "timestamp" (ISO 8601, microseconds, +00:00), "attributes"}]``."""
    return json.dumps(
        [{"name": e.name, "timestamp": _iso_time(e.time_ns), "attributes": dict(e.attributes)} for e in events]
    )


def _iso_time(time_ns: int) -> str:
    seconds, rest = divmod(int(time_ns), 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc).replace(microsecond=rest // 1000)
    return moment.isoformat(timespec="microseconds")


def _has_agent_output(attrs: Mapping[str, Any]) -> bool:
    return any(key.startswith("agent.output.") for key in attrs)


def _nested(attrs: Mapping[str, Any], key: str, leaf: str) -> Any:
    """``attrs[key][leaf]`` (nested dict, or a JSON string of one) or ``attrs["key.leaf"]``."""
    value = parse_json_maybe(attrs.get(key))
    if isinstance(value, Mapping) and leaf in value:
        return value[leaf]
    return attrs.get(f"{key}.{leaf}")


def _first(value: Any) -> Any:
    value = parse_json_maybe(value)
    if isinstance(value, (list, tuple)):
        return value[0] if value else None
    return value
