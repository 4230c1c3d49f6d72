"""OpenLLMetry JS's LangChain instrumentation (``@traceloop/instrumentation-langchain``, its
``TraceloopCallbackHandler``), made with the real OpenTelemetry SDK the way the handler writes its
spans: ``chat <model>`` spans whose messages keep only their text (no tool calls), ``workflow
<Runnable>`` chain spans with the callback's inputs and outputs as ``traceloop.entity.input`` /
``output``, and ``execute_tool <ToolClass>`` spans (``traceloop.span.kind`` ``task``) whose input is
``{"args": [<the arguments as JSON text>]}`` and whose output is the ``ToolMessage`` the tool
returned (none when it threw). The real capture of a LangChain.js ``createAgent`` is scored in
``tests/test_captures.py`` (``langchainjs_openllmetry``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval.conventions import traceloop
from otel_eval.mapping import map_spans, read_span
from otel_eval.spans import SpanRecord, from_sdk_span
from otel_eval.trajectory import build_trajectory

SESSION = {"traceloop.association.properties.session_id": "lc-1", "traceloop.workflow.name": "chat_turn"}


def lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    """A LangChain message serialized as ``JSON.stringify`` writes it (``lc: 1`` constructor)."""
    return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", kind], "kwargs": kwargs}


def ai(*calls: tuple[str, str, dict[str, Any]], text: str = "") -> dict[str, Any]:
    return lc(
        "AIMessage",
        content=text,
        tool_calls=[{"name": name, "args": args, "type": "tool_call", "id": call_id} for call_id, name, args in calls],
    )


def tool_message(call_id: str, name: str, content: str, status: str = "success") -> dict[str, Any]:
    return lc("ToolMessage", status=status, content=content, tool_call_id=call_id, name=name)


HUMAN = lc("HumanMessage", content="What's the weather in Berlin?")


class Handler:
    """The callback handler's spans inside one ``withWorkflow`` turn (every span a child of it, as
    the handler starts them in the workflow's context)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.sdk = self.provider.get_tracer("@traceloop/node-server-sdk", "0.27.0")
        self.tracer = self.provider.get_tracer(traceloop.LANGCHAIN_JS_SCOPE, "0.27.0")

    def turn(self, question: str) -> Any:
        attributes = {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "chat_turn",
            "traceloop.entity.input": json.dumps({"args": [question], "kwargs": {}}),
            **SESSION,
        }
        return self.sdk.start_as_current_span("chat_turn.workflow", attributes=attributes)

    def chain(self, name: str, inputs: Any, outputs: Any) -> None:
        attributes = {
            "gen_ai.operation.name": "workflow",
            "gen_ai.provider.name": "langchain",
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps(inputs),
            "traceloop.entity.output": json.dumps(outputs),
            **SESSION,
        }
        with self.tracer.start_as_current_span(f"workflow {name}", attributes=attributes) as span:
            span.set_status(Status(StatusCode.OK))

    def chat(self, history: list[tuple[str, str]], answer: str = "") -> None:
        """The model call: texts only, as the handler records them."""
        messages = [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in history]
        output = [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(output),
            "gen_ai.usage.input_tokens": 42,
            "gen_ai.usage.output_tokens": 7,
            **SESSION,
        }
        with self.tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes) as span:
            span.set_status(Status(StatusCode.OK))

    def model_node(self, state: list[dict[str, Any]], message: dict[str, Any], history: list[tuple[str, str]]) -> None:
        """createAgent's model node: the chat span, then the node's update as a ``Command``."""
        self.chat(history, message["kwargs"]["content"])
        self.chain(
            "RunnableSequence",
            {"messages": state},
            {"output": [{"lg_name": "Command", "update": {"messages": [message]}, "goto": []}]},
        )

    def tool(
        self, args: dict[str, Any], output: Any = None, error: str | None = None, cls: str = "DynamicStructuredTool"
    ) -> None:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.provider.name": "langchain",
            "traceloop.span.kind": "task",
            "traceloop.entity.name": cls,
            "traceloop.entity.input": json.dumps({"args": [json.dumps(args)]}),
            **SESSION,
        }
        with self.tracer.start_as_current_span(
            f"execute_tool {cls}", attributes=attributes, record_exception=False
        ) as span:
            if error is not None:
                span.record_exception(RuntimeError(error))
                span.set_status(Status(StatusCode.ERROR, error))
            else:
                span.set_attribute("traceloop.entity.output", json.dumps(output))
                span.set_status(Status(StatusCode.OK))

    def finished(self) -> list[SpanRecord]:
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


@pytest.fixture()
def handler():
    made = Handler()
    yield made
    made.provider.shutdown()


def turn_of(spans: list[SpanRecord]):
    (turn,) = build_trajectory("lc-1", map_spans(spans)).turns
    return turn


def run_retry(handler: Handler) -> None:
    """A failed call (its span names no tool), the model's retry, the answer; then the graph's
    and the workflow's outputs: the whole state, with a turn before this one in it."""
    earlier = [
        lc("HumanMessage", content="Hi"),
        ai(("c0", "get_forecast", {"city": "Rome", "days": 1})),
        ai(text="Hello"),
    ]
    failed = ai(("c1", "get_weather", {"city": "Berln"}))
    retried = ai(("c2", "get_weather", {"city": "Berlin"}))
    answer = ai(text="It is 12°C and windy in Berlin.")
    state = [*earlier, HUMAN]
    with handler.turn("What's the weather in Berlin?"):
        handler.model_node(state, failed, [("user", "What's the weather in Berlin?")])
        handler.chain(
            "RunnableLambda",
            {"messages": [*state, failed]},
            {"output": [{"lg_name": "Send", "node": "tools", "args": {"messages": [*state, failed]}}]},
        )
        handler.tool({"city": "Berln"}, error="Unknown city: Berln")
        error_message = tool_message("c1", "get_weather", "Error: Unknown city: Berln", status="error")
        handler.chain("RunnableSequence", {"messages": [*state, failed]}, {"messages": [error_message]})
        state += [failed, error_message]
        handler.model_node(state, retried, [("user", "What's the weather in Berlin?"), ("tool", "Error")])
        handler.tool({"city": "Berlin"}, tool_message("c2", "get_weather", "It is 12°C and windy in Berlin."))
        state += [retried, tool_message("c2", "get_weather", "It is 12°C and windy in Berlin.")]
        handler.model_node(state, answer, [("user", "What's the weather in Berlin?")])
        state.append(answer)
        handler.chain(
            "CompiledStateGraph",
            {"messages": [{"role": "user", "content": "What's the weather in Berlin?"}]},
            {"messages": state},
        )


def test_a_failed_call_takes_the_requested_name_and_its_retry_is_a_later_step(handler):
    run_retry(handler)
    turn = turn_of(handler.finished())
    assert turn.user_input == "What's the weather in Berlin?"
    assert turn.final_response == "It is 12°C and windy in Berlin."
    assert [(c.name, c.args, c.call_id) for c in turn.calls] == [
        ("get_weather", {"city": "Berln"}, "c1"),
        ("get_weather", {"city": "Berlin"}, "c2"),
    ]
    failed, retried = turn.calls
    assert failed.error == "RuntimeError: Unknown city: Berln" and retried.error is None
    assert retried.result == "It is 12°C and windy in Berlin."
    assert failed.step is not None and retried.step is not None and failed.step < retried.step


def test_tool_spans_are_tools_named_by_the_tool_message(handler):
    run_retry(handler)
    tools = [s for s in handler.finished() if s.name.startswith("execute_tool")]
    readings = [read_span(s) for s in tools]
    assert [r.span_type for r in readings] == ["tool", "tool"]
    assert [r.tool.name for r in readings] == ["DynamicStructuredTool", "get_weather"]  # a failed run names no tool
    assert readings[1].tool.call_id == "c2"


def test_only_a_nodes_update_requests_calls(handler):
    """The graph's and the workflow's states, and the Send that dispatches the calls, request none:
    the turn before this one would come back, and each call twice."""
    run_retry(handler)
    requested = {
        s.name: [c.name for c in read_span(s).requested_calls]
        for s in handler.finished()
        if read_span(s).requested_calls
    }
    assert requested == {"workflow RunnableSequence": ["get_weather"]}
    assert sum(len(read_span(s).requested_calls) for s in handler.finished()) == 2


def test_parallel_calls_from_one_update_are_one_group(handler):
    both = ai(("p", "get_weather", {"city": "Paris"}), ("l", "get_weather", {"city": "London"}))
    with handler.turn("Compare Paris and London"):
        handler.model_node(
            [lc("HumanMessage", content="Compare Paris and London")], both, [("user", "Compare Paris and London")]
        )
        handler.tool({"city": "Paris"}, tool_message("p", "get_weather", "18°C"))
        handler.tool({"city": "London"}, tool_message("l", "get_weather", "15°C"))
        handler.model_node([], ai(text="Paris is warmer."), [("user", "Compare Paris and London")])
    turn = turn_of(handler.finished())
    assert [(c.name, c.args["city"]) for c in turn.calls] == [("get_weather", "Paris"), ("get_weather", "London")]
    assert turn.calls[0].group is not None and turn.calls[0].group == turn.calls[1].group


def test_a_plain_node_update_and_a_tool_returning_plain_text(handler):
    """A StateGraph node returning ``{"messages": [AIMessage]}``; a tool invoked with its arguments
    (not a ToolCall) returns its text, so no message names it: the model's request does."""
    asked = ai(("x1", "search_docs", {"query": "refunds"}))
    with handler.turn("Refund policy?"):
        handler.chat([("user", "Refund policy?")])
        handler.chain(
            "RunnableSequence", {"messages": [lc("HumanMessage", content="Refund policy?")]}, {"messages": [asked]}
        )
        handler.tool({"query": "refunds"}, "Refunds within 30 days.", cls="StructuredTool")
        handler.chat([("user", "Refund policy?")], "Refunds are possible within 30 days.")
    (call,) = turn_of(handler.finished()).calls
    assert (call.name, call.args, call.result) == ("search_docs", {"query": "refunds"}, "Refunds within 30 days.")


def test_a_tool_whose_arguments_no_request_has_keeps_its_class_name(handler):
    with handler.turn("Hi"):
        handler.tool({"q": 1}, error="boom")
    (call,) = turn_of(handler.finished()).calls
    assert (call.name, call.error) == ("DynamicStructuredTool", "RuntimeError: boom")


def test_odd_outputs_never_raise():
    for output in ("", "null", "[1, 2", '{"output": [{"lg_name": "Command"}]}', '{"messages": "x"}', '{"outputs": 3}'):
        span = SpanRecord(
            "t" * 32,
            "s" * 16,
            None,
            "workflow RunnableSequence",
            1,
            2,
            attributes={"traceloop.span.kind": "workflow", "traceloop.entity.output": output},
            scope=traceloop.LANGCHAIN_JS_SCOPE,
        )
        assert read_span(span).requested_calls == []
    assert (
        traceloop.node_update_calls({"output": [{"lg_name": "Command", "update": {"messages": [ai(("a", "t", {}))]}}]})[
            0
        ].name
        == "t"
    )
