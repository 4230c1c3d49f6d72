"""The answer of a turn, which spans are model calls, and what no rule read (issue 29, items 4,
8 and 10), as ``inspect`` and ``report --session`` show them to a user."""

from __future__ import annotations

import json
import subprocess
import sys

from otel_eval import evaluate
from otel_eval.inspection import inspect_spans
from otel_eval.mapping import map_spans
from otel_eval.spans import SpanEvent, SpanRecord
from otel_eval.trajectory import build_trajectory

TRACE = "cd" * 16
OI_LLM = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"}


def span(span_id: str, parent, name: str, start: int, attributes: dict, events=()) -> SpanRecord:
    return SpanRecord(
        TRACE,
        span_id.rjust(16, "0"),
        parent and parent.rjust(16, "0"),
        name,
        start,
        start + 5,
        attributes={"session.id": "s-1", **attributes},
        events=list(events),
    )


def llamaindex_turn(root_output: str, model_answer: str | None) -> list[SpanRecord]:
    """A LlamaIndex FunctionAgent turn through OpenInference: the root CHAIN's output is the
    workflow's StopEvent repr; the model's last text is the answer."""
    spans = [
        span(
            "1",
            None,
            "FunctionAgent.run",
            1,
            {
                "openinference.span.kind": "CHAIN",
                "input.value": json.dumps({"user_msg": "Weather in Tokyo?"}),
                "output.value": root_output,
            },
        ),
        span(
            "2", "1", "OpenAI._prepare_chat_with_tools", 2, {**OI_LLM, "input.value": '{"tools": ["<FunctionTool>"]}'}
        ),
        span(
            "3",
            "1",
            "OpenAI.astream_chat",
            3,
            {
                **OI_LLM,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Weather in Tokyo?",
                "llm.token_count.prompt": 42,
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Tokyo"}',
            },
        ),
        span(
            "4",
            "1",
            "FunctionTool.acall",
            4,
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": json.dumps({"kwargs": {"city": "Tokyo"}}),
                "output.value": "22°C and sunny",
            },
        ),
    ]
    if model_answer is not None:
        spans.append(
            span(
                "5",
                "1",
                "OpenAI.astream_chat",
                5,
                {
                    **OI_LLM,
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": "Weather in Tokyo?",
                    "llm.token_count.prompt": 60,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": model_answer,
                },
            )
        )
    return spans


STOP_EVENT = (
    "StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, "
    "blocks=[TextBlock(text='It is 22°C and sunny in Tokyo.')])))"
)


def turn_of(spans):
    return build_trajectory("s-1", map_spans(spans)).turns[0]


def test_a_roots_object_repr_is_not_the_answer_when_the_model_said_something():
    turn = turn_of(llamaindex_turn(STOP_EVENT, "It is 22°C and sunny in Tokyo."))
    assert turn.final_response == "It is 22°C and sunny in Tokyo."
    assert "last model text" in turn.answer_source and "object dump" in turn.answer_source
    assert [c.args for c in turn.calls] == [{"city": "Tokyo"}]  # the {"kwargs": ...} wrapper unwrapped


def test_a_serialized_state_is_not_the_answer_either_but_a_plain_root_answer_is():
    state = json.dumps({"messages": [{"role": "assistant", "content": "It is 22°C and sunny in Tokyo."}]})
    assert turn_of(llamaindex_turn(state, "Sunny, 22°C.")).final_response == "Sunny, 22°C."
    plain = turn_of(llamaindex_turn("Tokyo: 22°C, sunny. Enjoy!", "It is 22°C and sunny in Tokyo."))
    assert plain.final_response == "Tokyo: 22°C, sunny. Enjoy!" and plain.answer_source.startswith("root output")


def test_with_no_model_text_the_object_dump_still_stands_in_and_says_so():
    turn = turn_of(llamaindex_turn(STOP_EVENT, None))
    assert turn.final_response == STOP_EVENT and "no model text" in turn.answer_source


def test_only_model_calls_count_as_llm_calls_and_inspect_names_the_rule():
    spans = llamaindex_turn(STOP_EVENT, "It is 22°C and sunny in Tokyo.")
    # An agent loop's step that replays the history in message events, as Strands' cycle spans
    # do, under an operation name no dialect knows.
    cycle = span(
        "6",
        "1",
        "run_loop_cycle",
        6,
        {"gen_ai.operation.name": "run_loop_cycle", "event_loop.cycle_id": "c-1"},
        events=[SpanEvent("gen_ai.user.message", 6, {"content": json.dumps([{"text": "Weather in Tokyo?"}])})],
    )
    chat_without_content = span(
        "7", "1", "chat gpt-4o-mini", 7, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
    )
    spans += [cycle, chat_without_content]
    assert turn_of(spans).llm_calls == 3  # two astream_chat calls and the chat span; not prepare, not the cycle
    report = inspect_spans(spans)
    rows = {row["name"]: row for trace in report["sessions"][0]["traces"] for row in trace["spans"]}
    prepare = rows["OpenAI._prepare_chat_with_tools"]
    assert prepare["span_type"] == "chain" and "no model exchange" in prepare["typed_by"]
    assert rows["run_loop_cycle"]["span_type"] == "chain"
    assert "not a model request" in rows["run_loop_cycle"]["typed_by"]
    assert rows["chat gpt-4o-mini"]["span_type"] == "llm"
    assert rows["OpenAI.astream_chat"]["typed_by"] == "openinference.span.kind=LLM"


def unknown_framework_turn() -> list[SpanRecord]:
    """A framework we never saw: GenAI spans, with the user input and answer only under keys of its own."""
    return [
        span(
            "a1",
            None,
            "invoke_agent helper",
            1,
            {
                "gen_ai.operation.name": "invoke_agent",
                "acme.agent_run.input": "Weather in Tokyo?",
                "acme.agent_run.output": "Sunny.",
            },
        ),
        span(
            "a2",
            "a1",
            "execute_tool get_weather",
            2,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"},
            events=[SpanEvent("acme.tool.io", 2, {"arguments": '{"city": "Tokyo"}'})],
        ),
    ]


def test_inspect_lists_what_the_spans_carry_that_no_rule_read():
    report = inspect_spans(unknown_framework_turn())
    unread = {(u["kind"], u["name"]): u for u in report["sessions"][0]["unread"]}
    assert ("attribute", "acme.agent_run.input") in unread and ("attribute", "acme.agent_run.output") in unread
    assert unread[("event", "acme.tool.io")]["example_span"] == "execute_tool get_weather"
    assert not any(name in ("gen_ai.operation.name", "gen_ai.tool.name", "session.id") for _, name in unread)


def test_report_session_says_what_was_not_read(tmp_path):
    db = tmp_path / "u.db"
    evaluate(unknown_framework_turn(), db=db)
    run = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db), "--session", "s-1"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    assert "not read" in run.stdout
    assert "attribute acme.agent_run.input on 1 span(s), e.g. 'invoke_agent helper'" in run.stdout
    assert "span event acme.tool.io" in run.stdout


def test_inspect_names_a_message_it_could_not_parse():
    """Malformed content: the span is still read, the field stays empty, and inspect says why."""
    bad = span(
        "b1",
        None,
        "chat gpt-4o-mini",
        1,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "Weather?"',
        },
    )
    report = inspect_spans([bad])
    problems = [u for u in report["sessions"][0]["unread"] if u["kind"] == "problem"]
    assert problems and "gen_ai.input.messages" in problems[0]["name"], report["sessions"][0]["unread"]
    assert report["sessions"][0]["trajectory"]["turns"][0]["user_input"] is None
