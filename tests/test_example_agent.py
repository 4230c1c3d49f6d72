"""The example weather agent: its spans (real SDK, in-memory exporter), its golden sets, and
end to end through the real EvalSpanProcessor and a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from examples.weather_agent import agent_resource, run_session
from otel_eval.models import EvalSet

GOLDEN = Path(__file__).resolve().parent.parent / "examples" / "golden"
EVALSET = GOLDEN / "weather.evalset.json"
TRAJECTORY_GOLDEN = GOLDEN / "weather.trajectory.json"


@pytest.fixture
def traced():
    """Run sessions on a real TracerProvider; returns (run, spans) helpers."""
    exporter = InMemorySpanExporter()
    providers = []

    def run(session_id, turns, version="1.0.0", **kwargs):
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
        return run_session(provider, session_id, turns, version=version, **kwargs)

    def spans(session_id=None):
        found = [
            s
            for s in exporter.get_finished_spans()
            if session_id is None or s.attributes.get("session.id") == session_id
        ]
        return sorted(found, key=lambda s: s.start_time)

    yield run, spans
    for provider in providers:
        provider.shutdown()


def kind(span):
    return span.attributes["openinference.span.kind"]


def shape(spans):
    """(name, kind, parent name) per span, in start order: the tree at a glance."""
    by_id = {s.context.span_id: s for s in spans}
    return [(s.name, kind(s), by_id[s.parent.span_id].name if s.parent else None) for s in spans]


def test_one_turn_is_one_trace_with_agent_llm_tool_llm(traced):
    run, spans = traced
    result = run("s-tokyo", ["What's the weather in Tokyo?"], user_id="user-alice")
    got = spans("s-tokyo")

    assert shape(got) == [
        ("agent.invoke", "AGENT", None),
        ("ChatCompletion", "LLM", "agent.invoke"),
        ("get_weather", "TOOL", "agent.invoke"),
        ("ChatCompletion", "LLM", "agent.invoke"),
    ]
    assert len({s.context.trace_id for s in got}) == 1
    assert format(got[0].context.trace_id, "032x") == result.turns[0].trace_id
    for span in got:
        assert span.attributes["session.id"] == "s-tokyo"
        assert span.attributes["user.id"] == "user-alice"
        assert span.attributes["gen_ai.agent.version"] == "1.0.0"
        assert span.resource.attributes["service.version"] == "1.0.0"
        assert span.status.status_code == StatusCode.OK

    root, decide, tool, answer = got
    assert root.attributes["input.value"] == "What's the weather in Tokyo?"
    assert root.attributes["output.value"] == "It's currently 22°C and sunny in Tokyo."
    assert "otel_eval.session.end" not in root.attributes

    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call"
    assert decide.attributes[f"{prefix}.function.name"] == "get_weather"
    assert json.loads(decide.attributes[f"{prefix}.function.arguments"]) == {"city": "Tokyo"}
    assert "llm.output_messages.0.message.tool_calls.1.tool_call.id" not in decide.attributes
    assert decide.attributes["llm.input_messages.0.message.role"] == "system"
    assert decide.attributes["llm.input_messages.1.message.content"] == "What's the weather in Tokyo?"
    assert decide.attributes["llm.model_name"] == "scripted-tool-caller-1"
    assert decide.attributes["llm.token_count.total"] == (
        decide.attributes["llm.token_count.prompt"] + decide.attributes["llm.token_count.completion"]
    )
    assert json.loads(decide.attributes["llm.tools.0.tool.json_schema"])["function"]["name"] == "get_weather"

    assert tool.attributes["tool.name"] == "get_weather"
    assert json.loads(tool.attributes["input.value"]) == {"city": "Tokyo"}
    assert tool.attributes["input.mime_type"] == "application/json"
    assert json.loads(tool.attributes["output.value"]) == {"city": "Tokyo", "temperature_c": 22, "condition": "sunny"}
    assert json.loads(tool.attributes["tool.parameters"])["required"] == ["city"]
    assert tool.attributes["tool_call.id"] == decide.attributes[f"{prefix}.id"]

    assert answer.attributes["llm.output_messages.0.message.content"] == "It's currently 22°C and sunny in Tokyo."
    assert answer.attributes["llm.input_messages.3.message.role"] == "tool"
    assert answer.attributes["llm.input_messages.3.message.tool_call_id"] == tool.attributes["tool_call.id"]


def test_compare_asks_for_both_cities_in_one_llm_response(traced):
    run, spans = traced
    run("s-compare", ["Compare the weather in Paris and London"])
    got = spans("s-compare")

    assert [s.name for s in got] == ["agent.invoke", "ChatCompletion", "get_weather", "get_weather", "ChatCompletion"]
    decide = got[1]
    calls = [
        (
            decide.attributes[f"llm.output_messages.0.message.tool_calls.{i}.tool_call.function.name"],
            json.loads(decide.attributes[f"llm.output_messages.0.message.tool_calls.{i}.tool_call.function.arguments"]),
        )
        for i in (0, 1)
    ]
    assert calls == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})]
    assert [json.loads(s.attributes["input.value"]) for s in got[2:4]] == [{"city": "Paris"}, {"city": "London"}]
    assert got[0].attributes["output.value"] == (
        "Paris is 18°C and cloudy, while London is 15°C and light rain, so Paris is 3°C warmer right now."
    )


def test_follow_up_is_a_second_trace_of_the_same_session_that_remembers_the_city(traced):
    run, spans = traced
    run("s-follow", ["What's the weather in Paris?", "What about tomorrow?"], mark_end=True)
    roots = [s for s in spans("s-follow") if s.parent is None]

    assert [r.attributes["input.value"] for r in roots] == ["What's the weather in Paris?", "What about tomorrow?"]
    assert roots[0].context.trace_id != roots[1].context.trace_id
    assert "otel_eval.session.end" not in roots[0].attributes
    assert roots[1].attributes["otel_eval.session.end"] is True

    second = [s for s in spans("s-follow") if s.context.trace_id == roots[1].context.trace_id]
    tool = next(s for s in second if kind(s) == "TOOL")
    assert tool.name == "get_forecast"
    assert json.loads(tool.attributes["input.value"]) == {"city": "Paris", "days": 1}
    assert roots[1].attributes["output.value"] == "Tomorrow in Paris: 20°C and sunny."
    # The follow-up's model call saw the first turn: system, user, assistant(tool call), tool, assistant, user.
    decide = next(s for s in second if kind(s) == "LLM")
    roles = [decide.attributes[f"llm.input_messages.{i}.message.role"] for i in range(6)]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert "llm.input_messages.6.message.role" not in decide.attributes


def test_misspelt_city_fails_with_error_status_then_the_agent_retries(traced):
    run, spans = traced
    result = run("s-typo", ["What's the weather in Berln?"])
    got = spans("s-typo")

    tools = [s for s in got if kind(s) == "TOOL"]
    assert [json.loads(s.attributes["input.value"]) for s in tools] == [{"city": "Berln"}, {"city": "Berlin"}]
    failed, retried = tools
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description == "ToolError: Unknown city 'Berln'. Did you mean 'Berlin'?"
    assert "output.value" not in failed.attributes
    [event] = failed.events
    assert event.name == "exception"
    assert event.attributes["exception.type"].endswith("ToolError")
    assert retried.status.status_code == StatusCode.OK
    assert [kind(s) for s in got].count("LLM") == 3
    assert got[0].status.status_code == StatusCode.OK
    assert result.turns[0].answer == "It's currently 12°C and windy in Berlin."
    assert result.turns[0].calls[0]["error"] == "Unknown city 'Berln'. Did you mean 'Berlin'?"


def test_search_docs_has_a_retriever_child_with_the_documents(traced):
    run, spans = traced
    run("s-docs", ["What is your refund policy?"])
    got = spans("s-docs")

    assert shape(got)[2:4] == [
        ("search_docs", "TOOL", "agent.invoke"),
        ("policy_retriever", "RETRIEVER", "search_docs"),
    ]
    retriever = got[3]
    assert retriever.attributes["input.value"] == "refund policy"
    assert [retriever.attributes[f"retrieval.documents.{i}.document.id"] for i in (0, 1)] == [
        "policy-001",
        "policy-002",
    ]
    assert retriever.attributes["retrieval.documents.0.document.score"] == 0.92
    assert json.loads(retriever.attributes["retrieval.documents.1.document.metadata"]) == {
        "source": "help-center/payments.md"
    }
    assert "retrieval.documents.2.document.id" not in retriever.attributes


def test_db_agent_result_carries_the_sql(traced):
    run, spans = traced
    run("s-sql", ["Show me the top 10 users by revenue"])
    tool = next(s for s in spans("s-sql") if kind(s) == "TOOL")

    assert tool.name == "call_db_agent"
    assert json.loads(tool.attributes["input.value"]) == {"question": "Show me the top 10 users by revenue"}
    output = json.loads(tool.attributes["output.value"])
    assert output["sql"] == (
        "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10"
    )
    assert len(output["rows"]) == 10


def test_version_2_is_the_regression_and_mistakes_can_be_chosen(traced):
    run, spans = traced
    run("s-bad", ["What's the weather in Tokyo?"], version="2.0.0")
    run("s-bad-sql", ["Show me the top 10 users by revenue"], version="2.0.0")
    run("s-v2-fixed", ["What's the weather in Tokyo?"], version="2.0.0", mistakes=[])

    bad = next(s for s in spans("s-bad") if kind(s) == "TOOL")
    assert (bad.name, json.loads(bad.attributes["input.value"])) == ("get_forecast", {"city": "Tokyo", "days": 1})
    assert bad.attributes["gen_ai.agent.version"] == "2.0.0"
    assert bad.resource.attributes["service.version"] == "2.0.0"

    sql_tool = next(s for s in spans("s-bad-sql") if kind(s) == "TOOL")
    assert json.loads(sql_tool.attributes["input.value"]) == {"question": "Show me the top 10 users by revenue"}
    assert " FROM revenue_archive_2019 " in json.loads(sql_tool.attributes["output.value"])["sql"]

    fixed = next(s for s in spans("s-v2-fixed") if kind(s) == "TOOL")
    assert fixed.name == "get_weather"


def test_unknown_mistake_and_case_id(traced):
    run, spans = traced
    with pytest.raises(ValueError, match="unknown mistakes \\['typo'\\]"):
        run("s-x", ["hi"], mistakes=["typo"])
    run("s-case", ["Tell me a joke"], case_id="weather_tokyo")
    [root, llm] = spans("s-case")
    assert root.attributes["otel_eval.case_id"] == "weather_tokyo"
    assert root.attributes["output.value"] == (
        "I can help with the weather, forecasts, company data and our help-center policies."
    )


# -- golden sets --------------------------------------------------------------------------------


def test_evalset_golden_loads_and_matches_what_version_1_does(traced):
    run, _ = traced
    eval_set = EvalSet.load(EVALSET)
    assert [c.eval_id for c in eval_set.eval_cases] == [
        "weather_tokyo",
        "compare_paris_london",
        "paris_followup",
        "berlin_typo_retry",
        "refund_policy",
    ]
    followup = next(c for c in eval_set.eval_cases if c.eval_id == "paris_followup")
    assert [i.user_content.get_text() for i in followup.conversation] == [
        "What's the weather in Paris?",
        "What about tomorrow?",
    ]
    # The golden set describes version 1 exactly: same answers, same successful calls.
    for case in eval_set.eval_cases:
        outcome = run(f"golden-{case.eval_id}", [i.user_content.get_text() for i in case.conversation])
        for invocation, turn in zip(case.conversation, outcome.turns, strict=True):
            assert turn.answer == invocation.expected_final_response.get_text(), case.eval_id
            succeeded = [(c["name"], c["arguments"]) for c in turn.calls if "error" not in c]
            assert succeeded == [(t.name, t.args) for t in invocation.expected_tool_trajectory], case.eval_id


def test_trajectory_golden_lines_hold_for_version_1(traced):
    run, _ = traced
    items = json.loads(TRAJECTORY_GOLDEN.read_text(encoding="utf-8"))
    assert [item["id"] for item in items] == [
        "top_users_by_revenue",
        "active_users_last_month",
        "london_forecast_3_days",
    ]
    evalset_queries = {c.query for c in EvalSet.load(EVALSET).eval_cases}
    for item in items:
        assert item["query"] not in evalset_queries  # one query, one case across both files
        lines = dict(line.split(": ", 1) for line in item["expected_trajectory"])
        outcome = run(f"golden-{item['id']}", [item["query"]])
        calls = outcome.turns[0].calls
        assert calls[0]["name"] == lines["tool_selection"]
        assert [{"tool_name": c["name"], "tool_input": c["arguments"]} for c in calls] == item["expected_tool_use"]
        sql = calls[0]["result"].get("sql") if isinstance(calls[0]["result"], dict) else None
        assert (sql is not None) == (lines["sql_generation"] == "yes")
        if "expected_table" in item:
            assert f" FROM {item['expected_table']} " in sql


# -- end to end through the real processor ---------------------------------------------------


def test_processor_passes_version_1_and_fails_version_2_naming_the_criterion(tmp_path):
    from otel_eval import EvalSpanProcessor
    from otel_eval.read.evaluations import current_evaluations

    results = {}
    db = tmp_path / "eval.db"
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    processor = EvalSpanProcessor(
        db=db,
        golden=[EVALSET, TRAJECTORY_GOLDEN],
        trace_quiet=0.2,
        session_idle=0.5,
        on_result=lambda r: results.__setitem__(r.session_id, r),
    )
    provider.add_span_processor(processor)
    run_session(provider, "v1-tokyo", ["What's the weather in Tokyo?"], mark_end=True)
    run_session(provider, "v1-followup", ["What's the weather in Paris?", "What about tomorrow?"])
    run_session(provider, "v1-typo", ["What's the weather in Berln?"])
    run_session(provider, "v1-sql", ["Show me the top 10 users by revenue"])
    run_session(provider, "v2-tokyo", ["What's the weather in Tokyo?"], version="2.0.0", mark_end=True)
    run_session(provider, "v2-sql", ["Show me the top 10 users by revenue"], version="2.0.0")
    provider.shutdown()

    def failing(result):
        return sorted(
            c.criterion for c in result.criterion_results if not c.skipped and not c.passed and c.criterion != "health"
        )

    assert {sid: (r.eval_id, r.passed) for sid, r in results.items()} == {
        "v1-tokyo": ("weather_tokyo", True),
        "v1-followup": ("paris_followup", True),
        "v1-typo": ("berlin_typo_retry", True),
        "v1-sql": ("top_users_by_revenue", True),
        "v2-tokyo": ("weather_tokyo", False),
        "v2-sql": ("top_users_by_revenue", False),
    }
    assert "trajectory_match" in failing(results["v2-tokyo"])
    assert failing(results["v2-sql"]) == ["table_usage"]

    stored = {row.session_id: row for row in current_evaluations([db])}
    assert stored["v2-tokyo"].agent_version == "2.0.0"
    assert stored["v1-tokyo"].passed is True and stored["v2-sql"].passed is False


def test_demo_judges_every_scenario_as_expected(tmp_path):
    from rich.console import Console

    from examples.demo import run_demo

    console = Console(record=True, width=200)
    assert run_demo(tmp_path / "demo.db", console) == 0
    text = console.export_text()
    assert "10/10 sessions judged as expected" in text
    assert (tmp_path / "demo.db").exists()
