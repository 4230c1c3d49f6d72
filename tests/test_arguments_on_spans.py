"""Arguments as the instrumentations record them, end to end (issue 10, rule 4).

OpenInference's LangChain instrumentation writes a one-argument tool's ``input.value`` as the bare
value (``Tokyo``, ``3.10``) and the model's call, with the argument's name, in the LLM span. The
bare text is read as JSON when it looks like a number, so ``3.10`` became the number 3.1, no
longer the same text as the model's ``"3.10"``: the trajectory kept ``{"input": 3.1}`` instead of
``{"version": "3.10"}`` and a session that did exactly what the golden says FAILED. Spans here are
made by the real OTel SDK with the attributes the captured LangGraph run carries.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.mapping import map_spans
from otel_eval.spans import from_sdk_span
from otel_eval.trajectory import Trajectory, build_trajectory
from tests.test_trajectory_verdicts import case_of, criterion


def langgraph_one_arg_call(tool: str, argument: str, value: str) -> Trajectory:
    """A LangGraph ReAct turn as openinference-instrumentation-langchain records it: the model asks
    for ``tool(argument=value)``, the TOOL span carries the bare ``value``, the model answers."""
    return langgraph_one_arg_call_with_span_value(tool, argument, value, span_value=value)


def langgraph_one_arg_call_with_span_value(tool: str, argument: str, value: str, span_value: str) -> Trajectory:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openinference.instrumentation.langchain")
    session = {"session.id": "one-arg"}
    with tracer.start_as_current_span(
        "LangGraph",
        attributes={
            "openinference.span.kind": "CHAIN",
            **session,
            "input.mime_type": "application/json",
            "input.value": json.dumps({"messages": [{"role": "user", "content": "Which docs?"}]}),
        },
    ):
        with tracer.start_as_current_span(
            "ChatOpenAI",
            attributes={
                "openinference.span.kind": "LLM",
                **session,
                "llm.model_name": "gpt-4o-mini",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": tool,
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(
                    {argument: value}
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            tool,
            attributes={
                "openinference.span.kind": "TOOL",
                **session,
                "tool.name": tool,
                "input.value": span_value,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "ChatOpenAI",
            attributes={
                "openinference.span.kind": "LLM",
                **session,
                "llm.model_name": "gpt-4o-mini",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Here they are.",
            },
        ):
            pass
    provider.shutdown()
    return build_trajectory("one-arg", map_spans([from_sdk_span(s) for s in exporter.get_finished_spans()]))


@pytest.mark.parametrize(
    "argument, value",
    [
        ("version", "3.10"),
        ("amount", "10.50"),
        ("code", "1e3"),
        ("flag", "true"),
        ("zip", "02139"),
        ("id", "12345"),
    ],
)
def test_a_one_argument_tool_keeps_the_models_argument_text(argument, value):
    trajectory = langgraph_one_arg_call("lookup", argument, value)
    assert [(c.name, c.args) for c in trajectory.calls] == [("lookup", {argument: value})]
    tm, result = criterion(trajectory, case_of([("lookup", {argument: value})]))
    assert (tm.score, tm.passed, result.verdict) == (1.0, True, "passed")


def test_a_bare_value_other_than_the_models_is_kept_as_recorded():
    """The tool span says another value than the model asked for: what the span recorded stays."""
    trajectory = langgraph_one_arg_call("lookup", "version", "3.10")
    assert trajectory.calls[0].args == {"version": "3.10"}
    differs = langgraph_one_arg_call_with_span_value("lookup", "version", "3.10", span_value="3.11")
    assert differs.calls[0].args == {"input": 3.11}
