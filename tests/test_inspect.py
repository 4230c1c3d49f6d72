"""`otel-eval inspect`: convention, span type and source attribute of every AgentData field,
session id origin and trajectory, on real captured spans."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from rich.console import Console

from otel_eval.errors import InputError
from otel_eval.inspection import (
    add_inspect_arguments,
    inspect_file,
    inspect_main,
    inspect_session,
    inspect_spans,
    one_line,
    render_inspection,
)
from otel_eval.readers import read_spans
from otel_eval.spans import from_sdk_span
from tests.paths import FIXTURES

FIXTURES = FIXTURES
GENAI = FIXTURES / "realclients" / "openai_otel_genai.otlp.json"
LANGGRAPH = FIXTURES / "realclients" / "langgraph_openinference.otlp.json"
NOVEUM = FIXTURES / "noveum" / "dataset.json"


def all_spans(report):
    return [span for s in report["sessions"] for t in s["traces"] for span in t["spans"]]


def session(report, session_id):
    return next(s for s in report["sessions"] if s["session_id"] == session_id)


def rendered(report) -> str:
    console = Console(record=True, width=120)
    render_inspection(report, console)
    return console.export_text()


def has_line(text: str, pattern: str) -> bool:
    return any(re.search(pattern, line) for line in text.splitlines())


# --- OTel GenAI capture ----------------------------------------------------------------------


def test_genai_spans_show_convention_type_and_sources():
    report = inspect_file(GENAI)
    assert report["spans_total"] == 32 and report["spans_shown"] == 32
    s1 = session(report, "openai_otel_genai-s1-weather")
    assert s1["session_source"] == "session.id"
    spans = s1["traces"][0]["spans"]
    assert [(s["depth"], s["name"], s["convention"], s["span_type"]) for s in spans] == [
        (0, "invoke_agent assistant_agent", "genai", "agent"),
        (1, "chat gpt-4o-mini", "genai", "llm"),
        (1, "execute_tool get_weather", "genai", "tool"),
        (1, "chat gpt-4o-mini", "genai", "llm"),
    ]
    agent, first_chat, tool, _ = spans
    assert agent["fields"]["agent_name"] == {"value": "assistant_agent", "source": "gen_ai.agent.name"}
    assert agent["fields"]["agent_task"] == {"value": "What's the weather in Tokyo?", "source": "gen_ai.input.messages"}
    assert agent["fields"]["agent_response"] == {
        "value": "It's currently 22°C and sunny in Tokyo.",
        "source": "gen_ai.output.messages",
    }
    assert agent["fields"]["tools_available"] == {
        "value": "get_weather, get_forecast, call_db_agent, search_docs",
        "source": "gen_ai.tool.definitions",
    }
    assert agent["fields"]["task_id"] == {"value": "766c282c5dd41d25c5b902b4f2cb2607", "source": "trace id"}
    assert agent["fields"]["user_id"] == {"value": "user-alice", "source": "user.id"}

    # The chat that decided the tool call has no text answer: the user sees it listed as empty.
    assert first_chat["fields"]["tool_calls"] == {
        "value": 'get_weather(city="Tokyo")',
        "source": "gen_ai.output.messages",
    }
    assert first_chat["empty_fields"] == [
        "agent_response",
        "trace",
        "tools_available",
        "parameters_passed",
        "tool_call_results",
        "retrieval_query",
        "retrieved_context",
        "agent_exit",
    ]

    assert tool["tool"] == {
        "name": "get_weather",
        "name_source": "gen_ai.tool.name",
        "arguments_source": "gen_ai.tool.call.arguments",
        "call_id": "call_5d9603777a7458189ecea4b8",
        "error": None,
    }
    assert tool["fields"]["parameters_passed"] == {"value": '{"city": "Tokyo"}', "source": "gen_ai.tool.call.arguments"}
    assert tool["fields"]["agent_name"] == {"value": "tool", "source": "span type"}
    assert "agent_task" in tool["empty_fields"]


def test_session_from_conversation_id_when_no_session_attribute():
    """Without the baggage-copied session.id, util-genai's gen_ai.conversation.id (on the
    invoke_agent span only) names the session of the whole trace, chat spans included."""
    stripped = [
        dataclasses.replace(
            span, attributes={k: v for k, v in span.attributes.items() if k not in ("session.id", "user.id")}
        )
        for span in read_spans(GENAI)
    ]
    report = inspect_spans(stripped)
    s3 = session(report, "openai_otel_genai-s3-followup")
    assert s3["session_source"] == "gen_ai.conversation.id"
    assert s3["session_source_span"]["name"] == "invoke_agent assistant_agent"
    assert [len(t["spans"]) for t in s3["traces"]] == [4, 4]
    assert len(report["sessions"]) == 6
    text = rendered(report)
    assert (
        "Session openai_otel_genai-s3-followup  ← gen_ai.conversation.id (span 'invoke_agent assistant_agent')" in text
    )


def test_genai_trajectory_of_tool_error_and_followup():
    report = inspect_file(GENAI)
    s5 = session(report, "openai_otel_genai-s5-tool-error")["trajectory"]
    calls = s5["turns"][0]["calls"]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_weather", {"city": "Berln"}),
        ("get_weather", {"city": "Berlin"}),
    ]
    assert calls[0]["error"] is not None and calls[1]["error"] is None
    assert s5["query"] == "What's the weather in Berlin?"

    s3 = session(report, "openai_otel_genai-s3-followup")["trajectory"]
    assert [t["user_input"] for t in s3["turns"]] == ["What's the weather in Paris?", "What about tomorrow?"]
    assert [[(c["name"], c["args"]) for c in t["calls"]] for t in s3["turns"]] == [
        [("get_weather", {"city": "Paris"})],
        [("get_forecast", {"city": "Paris", "days": 1})],
    ]


# --- OpenInference (LangGraph) capture -------------------------------------------------------


def test_langgraph_tree_order_and_tool_sources():
    report = inspect_file(LANGGRAPH)
    assert [len(s["traces"]) for s in report["sessions"]] == [1, 1, 2, 1, 1, 1]
    s1 = session(report, "langgraph_openinference-s1-weather")
    assert s1["session_source"] == "session.id"
    spans = s1["traces"][0]["spans"]
    assert [(s["depth"], s["name"], s["span_type"]) for s in spans] == [
        (0, "assistant_agent", "agent"),
        (1, "agent", "agent"),
        (2, "call_model", "chain"),
        (2, "RunnableSequence", "chain"),
        (3, "Prompt", "chain"),
        (3, "ChatOpenAI", "llm"),
        (2, "should_continue", "chain"),
        (1, "tools", "chain"),
        (2, "get_weather", "tool"),
        (1, "agent", "agent"),
        (2, "call_model", "chain"),
        (2, "RunnableSequence", "chain"),
        (3, "Prompt", "chain"),
        (3, "ChatOpenAI", "llm"),
        (2, "should_continue", "chain"),
    ]
    assert {s["convention"] for s in spans} == {"openinference"}
    tool = spans[8]
    assert tool["tool"]["name"] == "get_weather" and tool["tool"]["name_source"] == "tool.name"
    # A one-argument LangChain tool records the bare value: the user sees where the {"input": …} came from.
    assert tool["fields"]["parameters_passed"] == {"value": '{"input": "Tokyo"}', "source": "input.value"}
    assert tool["fields"]["tool_call_results"]["source"] == "output.value"
    llm = spans[5]
    assert llm["fields"]["system_prompt"]["source"] == "llm.input_messages.*.message.content (role system)"
    assert llm["fields"]["system_prompt"]["value"].endswith("…") and len(llm["fields"]["system_prompt"]["value"]) == 80
    tools_node = spans[7]
    assert tools_node["empty_fields"][:3] == ["agent_task", "system_prompt", "agent_response"]

    # The tool span's bare value was replaced by the LLM's named arguments in the trajectory.
    turn = s1["trajectory"]["turns"][0]
    assert [(c["name"], c["args"]) for c in turn["calls"]] == [("get_weather", {"city": "Tokyo"})]
    assert turn["final_response"] == "It's currently 22°C and sunny in Tokyo."


def test_langgraph_sql_tool_named_agent_is_still_a_tool():
    report = inspect_file(LANGGRAPH)
    s4 = session(report, "langgraph_openinference-s4-sql")
    db_call = next(s for s in s4["traces"][0]["spans"] if s["name"] == "call_db_agent")
    assert (db_call["convention"], db_call["span_type"]) == ("openinference", "tool")
    assert db_call["tool"]["name_source"] == "tool.name"


def test_render_shows_tree_fields_sources_and_trajectory():
    text = rendered(inspect_file(LANGGRAPH, limit=15))
    assert "15 of 116 span(s)" in text
    assert "Session langgraph_openinference-s1-weather  ← session.id (span 'assistant_agent')" in text
    assert "trace e500bda079ca4a48f54f1e838fcebbb7 (15 spans)" in text
    assert has_line(text, r"^└── assistant_agent  openinference · agent status ok  f5393189b19df74f")
    assert has_line(text, r"└── get_weather  openinference · tool status ok  ee507c6dd8f1c410")
    assert has_line(text, r"\btool\s+get_weather\s+← tool\.name\s*$")
    assert has_line(text, r"\bparameters_passed\s+\{\"input\": \"Tokyo\"\}\s+← input\.value\s*$")
    assert has_line(text, r"\bagent_response\s+It's currently 22°C and sunny in Tokyo\.\s+← output\.value\s*$")
    assert has_line(text, r"\bempty\s+agent_task, system_prompt, agent_response, trace,")
    assert "Trajectory: 1 turn(s)" in text
    assert has_line(text, r"^\s+user\s+What's the weather in Tokyo\?\s*$")
    assert has_line(text, r"^\s+call 1 get_weather\(city=\"Tokyo\"\)\s*$")
    assert has_line(text, r"^\s+→ \{\"city\": \"Tokyo\", \"temperature_c\": 22, \"condition\": \"sunny\"\}\s*$")
    assert has_line(text, r"^\s+final\s+It's currently 22°C and sunny in Tokyo\.\s*$")
    # routine ids are in the label and trace header, not repeated as rows
    assert not has_line(text, r"^\W*task_id\s")


# --- Noveum dataset --------------------------------------------------------------------------


def test_noveum_sessions_are_traces_and_sources_are_noveum_keys():
    report = inspect_file(NOVEUM)
    assert report["spans_total"] == 62
    assert len(report["sessions"]) == 10
    assert {s["session_source"] for s in report["sessions"]} == {"trace id"}
    assert all(s["session_id"] == s["traces"][0]["trace_id"] for s in report["sessions"])
    first = report["sessions"][0]
    assert first["session_id"] == "a8fe28a3-2ebb-428d-b679-9aba40c69be0"
    root, llm, tool = first["traces"][0]["spans"][:3]
    assert (root["name"], root["convention"], root["span_type"], root["depth"]) == (
        "chain_start.unknown",
        "noveum",
        "agent",
        0,
    )
    assert root["fields"]["agent_task"] == {
        "value": "can you use langchain retriever tool?",
        "source": "chain.inputs.input",
    }
    assert root["fields"]["agent_exit"] == {"value": "true", "source": "events[agent_finish]"}
    assert root["empty_fields"] == [
        "user_id",
        "system_prompt",
        "tools_available",
        "tool_call_results",
        "retrieved_context",
    ]
    assert (llm["convention"], llm["span_type"]) == ("noveum", "llm")
    assert llm["fields"]["tools_available"] == {
        "value": "escalate_to_human, end_conversation, langchain_retriever",
        "source": "llm.input.prompts[0]",
    }
    assert (tool["name"], tool["span_type"], tool["tool"]["name"]) == (
        "tool:langchain_retriever:langchain_retriever",
        "tool",
        "langchain_retriever",
    )
    assert tool["tool"]["name_source"] == "tool.name, tool.input.*"
    assert tool["fields"]["retrieval_query"] == {
        "value": '["how to use langchain retriever tool"]',
        "source": "tool.input.input_str",
    }

    text = rendered(report)
    assert "Session a8fe28a3-2ebb-428d-b679-9aba40c69be0  ← trace id (no session attribute on any span)" in text


# --- options, errors, a span no convention knows ------------------------------------------


def test_span_option_takes_a_prefix_and_drops_the_trajectory():
    report = inspect_file(GENAI, span_id="E63D2BC")
    assert report["spans_shown"] == 1
    (only,) = report["sessions"]
    assert only["trajectory"] is None
    assert [s["span_id"] for s in all_spans(report)] == ["e63d2bcf39878908"]
    text = rendered(report)
    assert has_line(text, r"^└── execute_tool get_weather  genai · tool status unset  e63d2bcf39878908")


def test_unknown_or_ambiguous_span_id_names_the_file_and_option():
    with pytest.raises(InputError) as missing:
        inspect_file(GENAI, span_id="ffffffffffffffff")
    assert str(missing.value) == f"{GENAI}: at --span: no span with id 'ffffffffffffffff' among 32 span(s)"
    with pytest.raises(InputError) as ambiguous:
        inspect_file(GENAI, span_id="77")
    assert ambiguous.value.reason.startswith("span id prefix '77' is ambiguous: 776a826bacf10d21, 77bdf992d66e3d2b")


def test_limit_keeps_the_first_spans_in_display_order():
    report = inspect_file(GENAI, limit=6)
    assert report["spans_shown"] == 6
    assert [(s["session_id"], len(all_spans({"sessions": [s]}))) for s in report["sessions"]] == [
        ("openai_otel_genai-s1-weather", 4),
        ("openai_otel_genai-s2-multi-tool", 2),
    ]


def test_full_values_are_not_shortened():
    report = inspect_file(GENAI, limit=1, value_width=None)
    prompt = all_spans(report)[0]["fields"]["system_prompt"]["value"]
    assert len(prompt) > 80 and not prompt.endswith("…")
    assert one_line("a\n  b   c", 80) == "a b c"
    assert one_line("x" * 100, 10) == "xxxxxxxxx…"


class _Collect(SpanExporter):
    def __init__(self):
        self.spans = []

    def export(self, spans):
        self.spans.extend(from_sdk_span(s) for s in spans)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass


def test_span_without_a_known_convention_lists_every_content_field_as_empty():
    """The case the tool exists for: an agent that sets its own attribute names."""
    exporter = _Collect()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("my-agent")
    with tracer.start_as_current_span("handle_request") as root:
        root.set_attribute("my.answer", "42")
        with tracer.start_as_current_span("lookup"):
            pass
    provider.shutdown()

    report = inspect_spans(exporter.spans)
    (only,) = report["sessions"]
    assert only["session_source"] == "trace id"
    root_row, child = only["traces"][0]["spans"]
    assert (root_row["name"], root_row["convention"], root_row["span_type"], root_row["depth"]) == (
        "handle_request",
        "none",
        "unknown",
        0,
    )
    assert child["depth"] == 1
    assert root_row["fields"]["agent_name"] == {"value": "agent", "source": "span type"}
    assert root_row["empty_fields"] == [
        "user_id",
        "agent_task",
        "system_prompt",
        "agent_response",
        "trace",
        "tools_available",
        "tool_calls",
        "parameters_passed",
        "tool_call_results",
        "retrieval_query",
        "retrieved_context",
        "agent_exit",
    ]
    turn = only["trajectory"]["turns"][0]
    assert (turn["user_input"], turn["final_response"], turn["calls"]) == (None, None, [])
    text = rendered(report)
    assert has_line(text, r"^└── handle_request  none · unknown status unset")
    assert has_line(text, r"^\s+user\s+\(none found\)\s*$")


def test_orphan_span_is_shown_as_a_root():
    spans = [s for s in read_spans(GENAI) if s.name != "invoke_agent assistant_agent"]
    report = inspect_spans(spans, limit=3)
    first = report["sessions"][0]["traces"][0]["spans"]
    assert [(s["depth"], s["name"]) for s in first] == [
        (0, "chat gpt-4o-mini"),
        (0, "execute_tool get_weather"),
        (0, "chat gpt-4o-mini"),
    ]


# --- a stored session ------------------------------------------------------------------------


def test_inspect_a_session_stored_by_the_engine(tmp_path):
    from otel_eval.offline import evaluate

    db = tmp_path / "eval.db"
    evaluate([GENAI], db=db)
    report = inspect_session(db, "openai_otel_genai-s3-followup")
    assert report["spans_total"] == 8
    (only,) = report["sessions"]
    assert only["session_id"] == "openai_otel_genai-s3-followup"
    assert [t["trace_id"] for t in only["traces"]] == [
        "e7eadf8418e17e45251d53db5045e07a",
        "936ea9e997821fffabf64c8452d82e1c",
    ]
    assert [t["user_input"] for t in only["trajectory"]["turns"]] == [
        "What's the weather in Paris?",
        "What about tomorrow?",
    ]

    with pytest.raises(InputError) as missing:
        inspect_session(db, "no-such-session")
    assert missing.value.location == "spans.session_id"
    assert missing.value.reason.startswith("no spans for session 'no-such-session'; recent sessions: ")
    with pytest.raises(InputError) as no_db:
        inspect_session(tmp_path / "absent.db", "x")
    assert no_db.value.reason == "database file not found"
    assert not (tmp_path / "absent.db").exists()


# --- CLI entry point -------------------------------------------------------------------------


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="otel-eval inspect")
    add_inspect_arguments(parser)
    return parser.parse_args(list(argv))


def test_inspect_main_json_and_rich_output(capsys):
    assert inspect_main(parse(str(GENAI), "--span", "e63d2bcf39878908", "--json")) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["spans_shown"] == 1 and printed["input"] == str(GENAI)

    console = Console(record=True, width=120)
    assert inspect_main(parse(str(GENAI), "--limit", "2"), console=console) == 0
    assert "2 of 32 span(s)" in console.export_text()


def test_inspect_main_rejects_missing_or_conflicting_inputs(tmp_path):
    with pytest.raises(InputError, match="give a span FILE, or --db PATH --session ID"):
        inspect_main(parse())
    with pytest.raises(InputError, match="not both"):
        inspect_main(parse(str(GENAI), "--db", "x.db", "--session", "s"))
    with pytest.raises(InputError, match="--limit must be at least 1, got 0"):
        inspect_main(parse(str(GENAI), "--limit", "0"))
    with pytest.raises(InputError, match="file not found"):
        inspect_main(parse(str(tmp_path / "nothing.json")))
