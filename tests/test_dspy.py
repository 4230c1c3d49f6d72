"""DSPy through openinference-instrumentation-dspy, made with the real OpenTelemetry SDK the way
the instrumentation writes its spans (``_ModuleForwardWrapper``: ``<Module>.forward`` CHAIN spans
with ``forward``'s bound arguments as ``input.value``; ``_ToolCallWrapper``: a ``dspy.Tool`` call
as a TOOL span ``<tool name>.__call__`` / ``.acall`` with ``{"kwargs": ...}``, no ``tool.name``,
the exception recorded when the tool raises) and ``dspy.ReAct`` runs them (``forward(**input_args)``,
one tool a step, then its ``finish`` pseudo-tool, then the extract step). The real capture is
scored in ``tests/test_captures.py`` (``dspy_openinference``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval.conventions import dspy
from otel_eval.mapping import convention_name, map_spans, read_span
from otel_eval.spans import SpanRecord, from_sdk_span
from otel_eval.trajectory import build_trajectory

SCOPE = "openinference.instrumentation.dspy"
CONTEXT = {"session.id": "dspy-1", "user.id": "u-1"}


class ReAct:
    """A ReAct run's spans, step by step."""

    def __init__(self, scope: str = SCOPE) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(scope, "0.1.48")
        self.trajectory: dict[str, Any] = {}

    def module(self, name: str, inputs: dict[str, Any]) -> Any:
        attributes = {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps(inputs),
            "input.mime_type": "application/json",
            **CONTEXT,
        }
        return self.tracer.start_as_current_span(name, attributes=attributes)

    def step(self, question: str, thought: str, tool: str, args: dict[str, Any]) -> None:
        """ReAct's ``Predict.forward`` choosing the next tool, with the model call inside it."""
        inputs = {"question": question, "history": "messages=[]", "trajectory": ""}
        with self.module("Predict.forward", inputs) as predict:
            with self.tracer.start_as_current_span(
                "LM.__call__",
                attributes={
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-4o-mini",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": f"[[ ## question ## ]]\n{question}",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": f"[[ ## next_tool_name ## ]]\n{tool}",
                    "llm.token_count.prompt": 42,
                    "llm.token_count.completion": 7,
                    **CONTEXT,
                },
            ):
                pass
            outputs = {"next_thought": thought, "next_tool_name": tool, "next_tool_args": args}
            predict.set_attributes({"output.value": json.dumps(outputs), "output.mime_type": "application/json"})

    def tool(
        self, name: str, args: dict[str, Any], result: Any = None, error: str | None = None, suffix: str = ".__call__"
    ) -> None:
        """``dspy.Tool.__call__``: ReAct catches the exception and writes it as the observation."""
        attributes = {
            "openinference.span.kind": "TOOL",
            "input.value": json.dumps({"kwargs": args}),
            "input.mime_type": "application/json",
            **CONTEXT,
        }
        index = len(self.trajectory) // 4
        self.trajectory.update({f"thought_{index}": "...", f"tool_name_{index}": name, f"tool_args_{index}": args})
        try:
            with self.tracer.start_as_current_span(name + suffix, attributes=attributes) as span:
                if error is not None:
                    raise ValueError(error)
                span.set_status(Status(StatusCode.OK))
                span.set_attributes({"output.value": json.dumps(result), "output.mime_type": "application/json"})
            self.trajectory[f"observation_{index}"] = result
        except ValueError as err:
            self.trajectory[f"observation_{index}"] = f"Execution error in {name}: {err}"

    def finished(self) -> list[SpanRecord]:
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


@pytest.fixture()
def react():
    made = ReAct()
    yield made
    made.provider.shutdown()


def run_weather(react: ReAct, question: str = "Compare the weather in Paris and Berlin") -> None:
    """Paris, a failed Berlin ("Berln"), Berlin again, then finish and the extract step."""
    with react.module("ReAct.forward", {"input_args": {"question": question, "history": "messages=[]"}}) as root:
        react.step(question, "Paris first.", "get_weather", {"city": "Paris"})
        react.tool("get_weather", {"city": "Paris"}, "It is 18°C in Paris.")
        react.step(question, "Now Berlin.", "get_weather", {"city": "Berln"})
        react.tool("get_weather", {"city": "Berln"}, error="Unknown city: Berln")
        react.step(question, "Fix the typo.", "get_weather", {"city": "Berlin"})
        react.tool("get_weather", {"city": "Berlin"}, "It is 12°C in Berlin.")
        react.step(question, "Done.", "finish", {})
        react.tool("finish", {}, "Completed.")
        answer = "Paris is 18°C; Berlin is 12°C."
        with react.module("ChainOfThought.forward", {"question": question, "trajectory": "..."}) as extract:
            extract.set_attributes({"output.value": json.dumps({"reasoning": "Both known.", "answer": answer})})
        root.set_attributes(
            {
                "output.value": json.dumps(
                    {"trajectory": react.trajectory, "reasoning": "Both known.", "answer": answer}
                ),
                "output.mime_type": "application/json",
            }
        )


def span_of(name: str, attributes: dict[str, Any], scope: str = SCOPE) -> SpanRecord:
    """One span as a file would hold it, without an SDK."""
    return SpanRecord("t" * 32, "s" * 16, None, name, 1, 2, attributes=attributes, scope=scope)


def turn_of(spans: list[SpanRecord]):
    mapped = map_spans(spans)
    (turn,) = build_trajectory("dspy-1", mapped).turns
    return turn


def test_dspy_spans_are_their_own_dialect_and_other_openinference_spans_are_not(react):
    run_weather(react)
    assert {convention_name(s) for s in react.finished()} == {"dspy"}
    other = span_of("lookup.__call__", {"openinference.span.kind": "TOOL"}, scope="")
    assert convention_name(other) == "openinference"
    assert read_span(other).tool.name == "lookup.__call__"  # only DSPy's Tool call form is stripped


def test_react_turn_reads_the_question_the_tools_by_name_and_the_answer(react):
    run_weather(react)
    turn = turn_of(react.finished())
    assert turn.user_input == "Compare the weather in Paris and Berlin"
    assert turn.final_response == "Paris is 18°C; Berlin is 12°C."
    assert [(c.name, c.args) for c in turn.calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Berln"}),
        ("get_weather", {"city": "Berlin"}),
    ]
    assert [c.error for c in turn.calls] == [None, "ValueError: Unknown city: Berln", None]
    assert turn.calls[0].result == "It is 18°C in Paris."
    steps = [c.step for c in turn.calls]
    assert len(set(steps)) == 3  # one tool a ReAct step: the failed call's retry is a later step


def test_finish_is_the_end_of_the_loop_not_a_call(react):
    run_weather(react)
    finish = next(s for s in react.finished() if s.name == "finish.__call__")
    reading = read_span(finish)
    assert (reading.span_type, reading.tool) == ("chain", None)
    assert dspy.quick_span_type(finish) == "chain"
    assert "finish" not in [c.name for c in turn_of(react.finished()).calls]


def test_an_awaited_tool_and_a_tool_named_by_its_attribute(react):
    with react.module("ReAct.aforward", {"input_args": {"question": "Forecast?"}}):
        react.tool("get_forecast", {"city": "Oslo", "days": 2}, "Sunny.", suffix=".acall")
    span = next(s for s in react.finished() if s.name == "get_forecast.acall")
    assert read_span(span).tool.name == "get_forecast"
    named = span_of("Tool.__call__", {"openinference.span.kind": "TOOL", "tool.name": "search.v2", "input.value": "{}"})
    assert read_span(named).tool.name == "search.v2"


@pytest.mark.parametrize(
    ("inputs", "request_text"),
    [
        ({"input_args": {"question": "Q?", "history": "messages=[]"}}, "Q?"),
        ({"input_args": {"topic": "Rivers of Europe", "history": "messages=[]"}}, "Rivers of Europe"),
        ({"topic": "Rivers", "trajectory": "..."}, "Rivers"),
        ({"input_args": {"topic": "A", "audience": "B"}}, None),  # two text fields: neither is the request
        ({}, None),
    ],
)
def test_a_modules_request_is_its_conventional_or_only_text_field(inputs, request_text):
    span = span_of(
        "Summarize.forward",
        {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps(inputs),
            "input.mime_type": "application/json",
        },
    )
    assert read_span(span).user_input == request_text


@pytest.mark.parametrize(
    ("prediction", "answer"),
    [
        ({"trajectory": {}, "reasoning": "r", "answer": "A."}, "A."),
        ({"reasoning": "r", "summary": "Short."}, "Short."),
        ({"title": "T", "summary": "S"}, None),
        ("plain text", None),
    ],
)
def test_a_predictions_answer_is_its_conventional_or_only_text_field(prediction, answer):
    assert dspy.prediction_answer(prediction) == answer


def test_missing_values_never_raise():
    for name, kind in (
        ("ReAct.forward", "CHAIN"),
        ("x.__call__", "TOOL"),
        ("LM.__call__", "LLM"),
        (".__call__", "TOOL"),
    ):
        read_span(span_of(name, {"openinference.span.kind": kind}))
    bad = span_of(
        "ReAct.forward", {"openinference.span.kind": "CHAIN", "input.value": "{not json", "output.value": "[1, 2"}
    )
    assert read_span(bad).user_input == "{not json"  # kept as the text it is
