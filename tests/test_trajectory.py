"""build_trajectory on real captures (LangGraph/OpenInference S1–S6, Noveum) and on hostile input."""

from __future__ import annotations

import random

import pytest

from otel_eval.mapping import map_spans
from otel_eval.otlp_json import read_trace_file
from otel_eval.spans import SpanRecord, from_otlp, read_noveum_file
from otel_eval.trajectory import build_trajectory
from tests.paths import FIXTURES

CAPTURE = FIXTURES / "realclients/langgraph_openinference.otlp.json"
NOVEUM = FIXTURES / "noveum/dataset.json"
PREFIX = "langgraph_openinference-"


@pytest.fixture(scope="module")
def sessions():
    spans = [s for r in read_trace_file(str(CAPTURE)) for s in from_otlp(r.resource_spans).spans]
    grouped: dict = {}
    for m in map_spans(spans):
        grouped.setdefault(m.session_id, []).append(m)
    return {sid[len(PREFIX) :]: build_trajectory(sid, ms) for sid, ms in grouped.items()}


def _calls(trajectory):
    return [(c.name, c.args, c.result, c.error) for c in trajectory.calls]


def test_six_sessions_seven_turns(sessions):
    assert sorted(sessions) == ["s1-weather", "s2-multi-tool", "s3-followup", "s4-sql", "s5-tool-error", "s6-retrieval"]
    assert {k: len(t.turns) for k, t in sessions.items()} == {
        "s1-weather": 1,
        "s2-multi-tool": 1,
        "s3-followup": 2,
        "s4-sql": 1,
        "s5-tool-error": 1,
        "s6-retrieval": 1,
    }
    for t in sessions.values():
        assert (t.agent_version, t.service_name, t.case_hint) == ("1.0.0", "realclients-langgraph_openinference", None)


def test_s1_single_call(sessions):
    t = sessions["s1-weather"]
    assert (t.query, t.final_response, t.user_id) == (
        "What's the weather in Tokyo?",
        "It's currently 22°C and sunny in Tokyo.",
        "user-alice",
    )
    assert _calls(t) == [
        ("get_weather", {"city": "Tokyo"}, {"city": "Tokyo", "temperature_c": 22, "condition": "sunny"}, None)
    ]
    call = t.calls[0]
    assert (call.call_id, call.group, call.agent, call.depth, call.turn) == (
        "call_dad3c5cf233d87f80e761a3f",
        None,
        "assistant_agent",
        0,
        0,
    )
    turn = t.turns[0]
    assert (turn.llm_calls, turn.input_tokens, turn.output_tokens, turn.span_count) == (2, 713, 23, 15)


def test_s2_parallel_calls_share_a_group_in_request_order(sessions):
    t = sessions["s2-multi-tool"]
    assert t.query == "Compare the weather in Paris and London"
    assert _calls(t) == [
        ("get_weather", {"city": "Paris"}, {"city": "Paris", "temperature_c": 18, "condition": "cloudy"}, None),
        ("get_weather", {"city": "London"}, {"city": "London", "temperature_c": 15, "condition": "light rain"}, None),
    ]
    groups = {c.group for c in t.calls}
    assert len(groups) == 1 and None not in groups
    assert [c.step for c in t.calls] == [0, 0]  # one model response issued both
    assert [c.call_id for c in t.calls] == ["call_3ea38ff7df76e7f4259d42c2", "call_c18a0dcc50ba08d10f2a5907"]
    assert (
        t.final_response
        == "Paris is 18°C and cloudy, while London is 15°C with light rain, so Paris is 3°C warmer right now."
    )


def test_s3_two_turns_in_one_session(sessions):
    t = sessions["s3-followup"]
    assert [(x.index, x.user_input, x.final_response) for x in t.turns] == [
        (0, "What's the weather in Paris?", "It's 18°C and cloudy in Paris right now."),
        (1, "What about tomorrow?", "Tomorrow in Paris it should be 20°C and sunny."),
    ]
    assert [(c.turn, c.name, c.args) for c in t.calls] == [
        (0, "get_weather", {"city": "Paris"}),
        (1, "get_forecast", {"city": "Paris", "days": 1}),
    ]
    assert t.query == "What's the weather in Paris?" and t.user_id == "user-dave"


def test_s4_db_agent_kept_as_a_tool(sessions):
    t = sessions["s4-sql"]
    assert t.query == "Show me the top 10 users by revenue"
    [call] = t.calls
    assert (call.name, call.args, call.depth, call.error) == (
        "call_db_agent",
        {"question": "Show me the top 10 users by revenue"},
        0,
        None,
    )
    sql = (
        "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10"
    )
    assert call.result["sql"] == sql and len(call.result["rows"]) == 10
    assert any(sql in text for text in t.sql_sources())


def test_s5_failed_call_then_retry(sessions):
    t = sessions["s5-tool-error"]
    assert t.query == "What's the weather in Berlin?"
    assert _calls(t) == [
        (
            "get_weather",
            {"city": "Berln"},
            None,
            "ValueError: Unknown city: 'Berln'. Check the spelling and try again.",
        ),
        ("get_weather", {"city": "Berlin"}, {"city": "Berlin", "temperature_c": 16, "condition": "windy"}, None),
    ]
    assert [c.succeeded for c in t.calls] == [False, True]
    assert [c.step for c in t.calls] == [0, 1]  # the retry is the next model response's decision
    assert [c.call_id for c in t.calls] == ["call_73b72e049764b897f7617913", "call_4a317184219f9f4be6161c61"]
    assert t.final_response == "Sorry about the hiccup - it's 16°C and windy in Berlin right now."
    assert t.turns[0].llm_calls == 3


def test_s6_retrieval(sessions):
    t = sessions["s6-retrieval"]
    assert t.query == "What is your refund policy?"
    assert [(c.name, c.args) for c in t.calls] == [("search_docs", {"query": "refund policy"})]
    assert t.turns[0].retrieved_documents == [
        "Refunds are available within 30 days of purchase for unused items with proof of purchase.",
        "Digital products are refundable only if they have not been downloaded. Refunds go to the original payment method within 5-7 business days.",
    ]
    assert t.final_response.startswith("You can get a refund within 30 days of purchase")


def test_shuffled_duplicated_and_rootless_input_gives_the_same_trajectory(sessions):
    spans = [s for r in read_trace_file(str(CAPTURE)) for s in from_otlp(r.resource_spans).spans]
    mine = [s for s in spans if s.attributes.get("session.id") == PREFIX + "s5-tool-error"]
    shuffled = mine + mine[:5]
    random.Random(7).shuffle(shuffled)
    t = build_trajectory("x", map_spans(shuffled))
    assert _calls(t) == _calls(sessions["s5-tool-error"])
    assert t.turns[0].span_count == 23
    # Without its root span the turn still has its user text (first LLM) and answer (last LLM).
    rootless = [s for s in mine if s.parent_span_id]
    t = build_trajectory("x", map_spans(rootless))
    assert (t.query, t.final_response) == (
        "What's the weather in Berlin?",
        "Sorry about the hiccup - it's 16°C and windy in Berlin right now.",
    )
    assert [c.args for c in t.calls] == [{"city": "Berln"}, {"city": "Berlin"}]


def test_no_tool_spans_uses_the_llm_requests(sessions):
    spans = [s for r in read_trace_file(str(CAPTURE)) for s in from_otlp(r.resource_spans).spans]
    mine = [
        s
        for s in spans
        if s.attributes.get("session.id") == PREFIX + "s2-multi-tool" and "tool.name" not in s.attributes
    ]
    t = build_trajectory("x", map_spans(mine))
    # The results come from the next model call, whose input sends them back by call id.
    assert [(c.name, c.args, c.call_id, c.result) for c in t.calls] == [
        (
            "get_weather",
            {"city": "Paris"},
            "call_3ea38ff7df76e7f4259d42c2",
            {"city": "Paris", "temperature_c": 18, "condition": "cloudy"},
        ),
        (
            "get_weather",
            {"city": "London"},
            "call_c18a0dcc50ba08d10f2a5907",
            {"city": "London", "temperature_c": 15, "condition": "light rain"},
        ),
    ]
    assert t.calls[0].group == t.calls[1].group is not None


def _span(span_id, parent, attrs, start, name="s", trace="t1"):
    return SpanRecord(trace, span_id, parent, name, start, start + 10, status="ok", attributes=attrs)


def test_calls_inside_a_sub_agent_have_depth_and_agent():
    tool_kind = {"openinference.span.kind": "TOOL"}
    spans = [
        _span(
            "r",
            None,
            {"openinference.span.kind": "AGENT", "agent.name": "boss", "input.value": "q", "otel_eval.case_id": "c-1"},
            1,
            "boss",
        ),
        _span("t1", "r", {**tool_kind, "tool.name": "ask_helper", "input.value": "sub q"}, 2),
        _span("a2", "t1", {"openinference.span.kind": "AGENT", "agent.name": "helper"}, 3, "helper"),
        _span("t2", "a2", {**tool_kind, "tool.name": "lookup", "input.value": "x"}, 4),
        _span("a3", "r", {"openinference.span.kind": "AGENT", "agent.name": "other"}, 5, "other"),
        _span("t3", "a3", {**tool_kind, "tool.name": "lookup", "input.value": "y"}, 6),
    ]
    t = build_trajectory("s", map_spans(spans))
    assert [(c.name, c.agent, c.depth) for c in t.calls] == [
        ("ask_helper", "boss", 0),
        ("lookup", "helper", 1),
        ("lookup", "other", 1),
    ]
    # Only the helper run as a tool made its call inside another call (what adk eval never counts).
    assert [c.inside_call for c in t.calls] == [False, True, False]
    assert t.case_hint == "c-1"


def test_model_step_of_tool_spans_no_llm_span_asked_for():
    """Without recorded requests, a tool call belongs to the latest LLM response that ended before
    it started: two calls after one response were issued together, a call after the next is later.
    (The LLM spans show a model exchange, their token counts, as model calls do with content hidden.)"""
    llm = {"openinference.span.kind": "LLM", "llm.model_name": "m", "llm.token_count.prompt": 10}
    tool = {"openinference.span.kind": "TOOL", "tool.name": "get_weather"}
    spans = [
        _span("r", None, {"openinference.span.kind": "AGENT", "agent.name": "a", "input.value": "q"}, 1, "a"),
        _span("l1", "r", llm, 100),
        _span("p", "r", {**tool, "input.value": "Paris"}, 200),
        _span("l", "r", {**tool, "input.value": "London"}, 205),
        _span("l2", "r", llm, 300),
        _span("b", "r", {**tool, "input.value": "Berlin"}, 400),
    ]
    t = build_trajectory("s", map_spans(spans))
    assert [(c.args, c.step) for c in t.calls] == [
        ({"input": "Paris"}, 0),
        ({"input": "London"}, 0),
        ({"input": "Berlin"}, 1),
    ]
    no_llm = build_trajectory("s", map_spans([s for s in spans if s.span_id not in ("l1", "l2")]))
    assert [c.step for c in no_llm.calls] == [None, None, None]


@pytest.fixture(scope="module")
def noveum_trajectories():
    grouped: dict = {}
    for m in map_spans(read_noveum_file(str(NOVEUM))):
        grouped.setdefault(m.span.trace_id[:8], []).append(m)
    return {k: build_trajectory(k, ms) for k, ms in grouped.items()}


def test_noveum_runs_use_the_recovered_observations(noveum_trajectories):
    assert len(noveum_trajectories) == 10
    t = noveum_trajectories["4675c7f8"]
    assert t.query == "what tools do you have access to"
    assert t.final_response == "The tools available are escalate_to_human, user_input, and langchain_retriever."
    assert [(c.name, c.args, c.depth) for c in t.calls] == [
        ("user_input", {"input": "Please provide more information about the tools you have access to."}, 0),
        ("langchain_retriever", {"input": "tools available"}, 0),
    ]
    assert t.calls[0].result == "User response: what tools do you have access to?"
    assert t.calls[1].result.startswith("Retrieved information:\n\n1. LangChain Agent Documentation")
    assert t.turns[0].retrieved_documents == [t.calls[1].result]
    for trajectory in noveum_trajectories.values():  # never the final answer as a tool result
        assert all(c.result != trajectory.final_response for c in trajectory.calls)


def test_noveum_parse_errors_and_a_run_without_tools(noveum_trajectories):
    t = noveum_trajectories["8adfdd3d"]
    assert [(c.name, c.succeeded) for c in t.calls] == [
        ("_Exception", False),
        ("_Exception", False),
        ("user_input", True),
        ("langchain_retriever", True),
        ("escalate_to_human", True),
    ]
    assert t.calls[0].error == "Invalid Format: Missing 'Action Input:' after 'Action:'"
    assert t.calls[2].result == "User response: cool, nothing"
    assert t.turns[0].llm_calls == 6
    hi = noveum_trajectories["ffa0e79c"]
    assert (hi.query, hi.final_response, hi.calls) == ("hi", "N/A", [])


def test_noveum_without_tool_spans_falls_back_to_llm_actions():
    spans = [
        s
        for s in read_noveum_file(str(NOVEUM))
        if s.trace_id.startswith("4675c7f8") and "tool.name" not in s.attributes
    ]
    t = build_trajectory("n", map_spans(spans))
    assert [(c.name, c.args, c.result) for c in t.calls] == [
        (
            "user_input",
            {"input": "Please provide more information about the tools you have access to."},
            "User response: what tools do you have access to?",
        ),
        ("langchain_retriever", {"input": "tools available"}, t.calls[1].result),
    ]
    assert t.calls[1].result.startswith("Retrieved information:")


def test_empty_and_attribute_less_spans():
    assert build_trajectory("e", []).turns == []
    t = build_trajectory("e", map_spans([_span("a", None, {}, 1), _span("b", "a", {}, 2)]))
    assert (len(t.turns), t.query, t.final_response, t.calls) == (1, None, None, [])
