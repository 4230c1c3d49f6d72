"""A small tool-using agent that emits spans the way OpenInference instrumentation does.

One user turn = one trace::

    agent.invoke            AGENT     input.value = the user's text, output.value = the answer
    ├─ ChatCompletion       LLM       decides tool calls (several in one response = parallel)
    ├─ get_weather          TOOL      input.value = JSON arguments, output.value = JSON result
    ├─ ...                            (a failing tool: status ERROR + exception event)
    ├─ search_docs          TOOL
    │  └─ policy_retriever  RETRIEVER retrieval.documents.N.document.{id,content,score,metadata}
    └─ ChatCompletion       LLM       the final answer

Every span carries ``session.id``, ``user.id`` (OpenInference's using_session / using_user)
and ``gen_ai.agent.version``, so one provider can host several agent versions. The attribute
shapes follow the real captures in ``/work/shared/fixtures/realclients`` (openai_openinference,
langgraph_openinference) and the OpenInference semantic conventions; in particular
``tool.parameters`` is the tool's parameter JSON schema (as OpenInference's ``@tracer.tool``
records it), the call's arguments are in ``input.value``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import Span, Status, StatusCode, TracerProvider

from . import tools as tool_impl
from .policy import FORECAST_FOR_WEATHER, MISTAKES, WRONG_TABLE, WRONG_TABLE_NAME, Decision, PlannedCall, decide

AGENT_NAME = "weather_agent"
MODEL_NAME = "scripted-tool-caller-1"
SYSTEM_PROMPT = (
    "You are a helpful assistant. Use the tools to answer questions about weather, forecasts, "
    "company data and support policies."
)
SESSION_END_ATTRIBUTE = "otel_eval.session.end"
CASE_ID_ATTRIBUTE = "otel_eval.case_id"
#: Safety net against a policy that never stops calling tools.
MAX_MODEL_CALLS = 5

#: Mistakes each version makes unless ``mistakes=`` says otherwise: 2.x is the regression.
VERSION_MISTAKES = {"1": frozenset(), "2": frozenset({FORECAST_FOR_WEATHER, WRONG_TABLE})}


@dataclass
class TurnResult:
    """What one user turn produced (the same facts the spans carry)."""

    trace_id: str
    user_input: str
    answer: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Executed tool calls in order: name, arguments, call_id, result or error."""


@dataclass
class SessionResult:
    session_id: str
    version: str
    turns: list[TurnResult] = field(default_factory=list)


def agent_resource(version: str = "1.0.0", service_name: str = "weather-agent") -> Resource:
    """The resource a provider for this agent should use (``service.version`` = agent version)."""
    return Resource.create({"service.name": service_name, "service.version": version})


def mistakes_for(version: str) -> frozenset[str]:
    return VERSION_MISTAKES.get(version.split(".", 1)[0], frozenset())


def run_session(
    tracer_provider: TracerProvider,
    session_id: str,
    user_turns: Sequence[str],
    version: str = "1.0.0",
    mistakes: Iterable[str] | None = None,
    user_id: str = "user-demo",
    mark_end: bool = False,
    case_id: str | None = None,
) -> SessionResult:
    """Run one conversation, one trace per user turn, and return what the agent did.

    ``mistakes``: None = the version's own (see :data:`VERSION_MISTAKES`); otherwise any subset
    of :data:`~examples.weather_agent.policy.MISTAKES`. ``mark_end`` sets
    ``otel_eval.session.end=true`` on the last turn's root span, so the evaluator can score the
    session at once instead of waiting for it to go idle. ``case_id`` names the golden case
    explicitly (``otel_eval.case_id`` on every root span).
    """
    chosen = mistakes_for(version) if mistakes is None else frozenset(mistakes)
    unknown = chosen - MISTAKES
    if unknown:
        raise ValueError(f"unknown mistakes {sorted(unknown)}; known: {sorted(MISTAKES)}")
    tracer = tracer_provider.get_tracer("examples.weather_agent", version)
    runner = _Runner(tracer, session_id, user_id, version, chosen)
    result = SessionResult(session_id=session_id, version=version)
    for index, text in enumerate(user_turns):
        last = index == len(user_turns) - 1
        result.turns.append(runner.turn(text, index, end_session=mark_end and last, case_id=case_id))
    return result


class _Runner:
    """Holds the conversation across turns (the agent's memory) and emits the spans."""

    def __init__(self, tracer: Any, session_id: str, user_id: str, version: str, mistakes: frozenset[str]):
        self.tracer = tracer
        self.session_id = session_id
        self.user_id = user_id
        self.version = version
        self.mistakes = mistakes
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.call_prefix = "call_" + hashlib.sha1(session_id.encode()).hexdigest()[:8]
        self.call_count = 0

    def common(self) -> dict[str, Any]:
        return {"session.id": self.session_id, "user.id": self.user_id, "gen_ai.agent.version": self.version}

    def turn(self, text: str, index: int, end_session: bool, case_id: str | None) -> TurnResult:
        attributes = {
            **self.common(),
            "openinference.span.kind": "AGENT",
            "agent.name": AGENT_NAME,
            "gen_ai.agent.name": AGENT_NAME,
            "input.value": text,
            "input.mime_type": "text/plain",
            "metadata": json.dumps({"turn": index}),
        }
        if case_id:
            attributes[CASE_ID_ATTRIBUTE] = case_id
        with self.tracer.start_as_current_span("agent.invoke", attributes=attributes) as root:
            self.messages.append({"role": "user", "content": text})
            turn = TurnResult(trace_id=format(root.get_span_context().trace_id, "032x"), user_input=text, answer="")
            for _ in range(MAX_MODEL_CALLS):
                decision, output = self.model_call()
                if decision.text is not None:
                    turn.answer = decision.text
                    break
                self.messages.append(output)
                for call, requested in zip(decision.calls, output["tool_calls"]):
                    turn.calls.append(self.tool_call(call, requested["id"]))
            else:
                turn.answer = "Sorry, I could not finish that request."
            self.messages.append({"role": "assistant", "content": turn.answer})
            root.set_attribute("output.value", turn.answer)
            root.set_attribute("output.mime_type", "text/plain")
            if end_session:
                root.set_attribute(SESSION_END_ATTRIBUTE, True)
            root.set_status(Status(StatusCode.OK))
        return turn

    # -- LLM ---------------------------------------------------------------------------------

    def model_call(self) -> tuple[Decision, dict[str, Any]]:
        """One LLM span: the decision, and the assistant message (with call ids) it produced."""
        request = list(self.messages)
        with self.tracer.start_as_current_span("ChatCompletion", attributes=self.common()) as span:
            decision = decide(request, self.mistakes)
            output = self.output_message(decision)
            attributes: dict[str, Any] = {
                "openinference.span.kind": "LLM",
                "llm.model_name": MODEL_NAME,
                "llm.provider": "scripted",
                "llm.invocation_parameters": json.dumps({"model": MODEL_NAME, "temperature": 0.0}),
                "input.value": json.dumps({"model": MODEL_NAME, "messages": request}, ensure_ascii=False),
                "input.mime_type": "application/json",
                "output.value": json.dumps({"choices": [{"message": output}]}, ensure_ascii=False),
                "output.mime_type": "application/json",
            }
            for i, name in enumerate(tool_impl.TOOLS):
                attributes[f"llm.tools.{i}.tool.json_schema"] = json.dumps(tool_impl.function_schema(name))
            for i, message in enumerate(request):
                attributes.update(_message_attributes(f"llm.input_messages.{i}.message", message))
            attributes.update(_message_attributes("llm.output_messages.0.message", output))
            prompt_tokens = sum(_count_tokens(m.get("content")) for m in request) + 40 * len(tool_impl.TOOLS)
            completion_tokens = _count_tokens(output.get("content")) + 12 * len(output.get("tool_calls", []))
            attributes["llm.token_count.prompt"] = prompt_tokens
            attributes["llm.token_count.completion"] = completion_tokens
            attributes["llm.token_count.total"] = prompt_tokens + completion_tokens
            span.set_attributes(attributes)
            span.set_status(Status(StatusCode.OK))
        return decision, output

    def output_message(self, decision: Decision) -> dict[str, Any]:
        if decision.text is not None:
            return {"role": "assistant", "content": decision.text}
        tool_calls = []
        for call in decision.calls:
            self.call_count += 1
            tool_calls.append(
                {
                    "id": f"{self.call_prefix}_{self.call_count:03d}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
            )
        return {"role": "assistant", "content": None, "tool_calls": tool_calls}

    # -- tools -------------------------------------------------------------------------------

    def tool_call(self, call: PlannedCall, call_id: str) -> dict[str, Any]:
        attributes = {
            **self.common(),
            "openinference.span.kind": "TOOL",
            "tool.name": call.name,
            "tool.description": tool_impl.DESCRIPTIONS[call.name],
            "tool.parameters": json.dumps(tool_impl.PARAMETERS[call.name]),
            "tool_call.id": call_id,
            "input.value": json.dumps(call.arguments, ensure_ascii=False),
            "input.mime_type": "application/json",
        }
        record: dict[str, Any] = {"name": call.name, "arguments": dict(call.arguments), "call_id": call_id}
        with self.tracer.start_as_current_span(
            call.name, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                result = self.execute(call, span)
            except tool_impl.ToolError as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                record["error"] = str(exc)
                content = f"Error: {exc}"
            else:
                content = json.dumps(result, ensure_ascii=False)
                span.set_attribute("output.value", content)
                span.set_attribute("output.mime_type", "application/json")
                span.set_status(Status(StatusCode.OK))
                record["result"] = result
        self.messages.append({"role": "tool", "tool_call_id": call_id, "name": call.name, "content": content})
        return record

    def execute(self, call: PlannedCall, span: Span) -> Any:
        if call.name == "search_docs":
            return self.retrieve(call.arguments["query"])
        if call.name == "call_db_agent" and WRONG_TABLE in self.mistakes:
            # The regression lives inside the sub-agent: the model's arguments are unchanged.
            return tool_impl.call_db_agent(call.arguments["question"], table=WRONG_TABLE_NAME)
        return tool_impl.TOOLS[call.name](**call.arguments)

    def retrieve(self, query: str) -> list[dict[str, Any]]:
        with self.tracer.start_as_current_span(
            "policy_retriever",
            attributes={
                **self.common(),
                "openinference.span.kind": "RETRIEVER",
                "input.value": query,
                "input.mime_type": "text/plain",
            },
        ) as span:
            documents = tool_impl.search_docs(query)
            for i, doc in enumerate(documents):
                prefix = f"retrieval.documents.{i}.document"
                span.set_attribute(f"{prefix}.id", doc["id"])
                span.set_attribute(f"{prefix}.content", doc["content"])
                span.set_attribute(f"{prefix}.score", doc["score"])
                span.set_attribute(f"{prefix}.metadata", json.dumps(doc["metadata"]))
            span.set_status(Status(StatusCode.OK))
        return documents


def _message_attributes(prefix: str, message: dict[str, Any]) -> dict[str, Any]:
    """OpenInference's flattened message attributes: role, content, tool_calls, tool_call_id, name."""
    attributes: dict[str, Any] = {f"{prefix}.role": message["role"]}
    if message.get("content") is not None:
        attributes[f"{prefix}.content"] = message["content"]
    for j, call in enumerate(message.get("tool_calls") or []):
        call_prefix = f"{prefix}.tool_calls.{j}.tool_call"
        attributes[f"{call_prefix}.id"] = call["id"]
        attributes[f"{call_prefix}.function.name"] = call["function"]["name"]
        attributes[f"{call_prefix}.function.arguments"] = call["function"]["arguments"]
    if message["role"] == "tool":
        attributes[f"{prefix}.tool_call_id"] = message["tool_call_id"]
        attributes[f"{prefix}.name"] = message["name"]
    return attributes


def _count_tokens(text: str | None) -> int:
    """A rough whitespace token count: enough for the health metrics to have numbers."""
    return len(text.split()) if text else 0
