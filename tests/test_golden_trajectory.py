"""trajectory-golden files (seed trajectory-evaluation.md) → EvalSet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_eval.errors import InputError
from otel_eval.golden import load_golden, load_golden_data, validate_golden, validate_golden_data
from otel_eval.models.evalset import ExpectedToolCall

DATA = Path(__file__).parent / "data" / "golden"


def test_seed_example_verbatim_becomes_one_single_turn_case():
    eval_set = load_golden(DATA / "seed_revenue.trajectory.json")

    assert eval_set.eval_set_id == "seed_revenue"
    assert eval_set.metadata == {"golden_format": "trajectory"}
    [case] = eval_set.eval_cases
    assert case.eval_id == "show_me_the_top_10_users_by_revenue-45e44e1d"
    assert case.query == "Show me the top 10 users by revenue"
    [turn] = case.conversation
    assert turn.invocation_id == "show_me_the_top_10_users_by_revenue-45e44e1d-1"
    assert turn.expected_tool_trajectory == [
        ExpectedToolCall(name="call_db_agent", check_args=False)
    ]  # named only: arguments not checked
    assert turn.expected_tool_selection == "call_db_agent"
    assert turn.expected_sql is True
    assert turn.expected_tables == ["user_revenue_table"]
    assert turn.expected_final_response is None
    # The seed names the tool without tool_input: arguments are not part of the expectation.
    assert turn.metadata == {}  # the name-only call is marked on the call itself (check_args=False)


def test_generated_id_is_stable_and_an_explicit_id_wins():
    item = {"query": "Show me the top 10 users by revenue"}
    first = load_golden_data([item], "a.json").eval_cases[0].eval_id
    again = load_golden_data([dict(item)], "b.json").eval_cases[0].eval_id
    assert first == again == "show_me_the_top_10_users_by_revenue-45e44e1d"
    assert load_golden_data([{**item, "id": 7}], "a.json").eval_cases[0].eval_id == "7"


def test_the_example_golden_file_loads_with_arguments_and_no_sql():
    eval_set = load_golden(Path(__file__).parent.parent / "examples" / "golden" / "weather.trajectory.json")
    assert [c.eval_id for c in eval_set.eval_cases] == [
        "top_users_by_revenue",
        "active_users_last_month",
        "london_forecast_3_days",
    ]
    london = eval_set.eval_cases[2].conversation[0]
    assert london.expected_tool_trajectory == [
        ExpectedToolCall(name="get_forecast", args={"city": "London", "days": 3})
    ]
    assert london.expected_sql is False
    assert london.expected_tables == []
    assert london.metadata == {}


def test_object_container_json_string_input_tables_response_and_metadata():
    data = {
        "name": "DB agent",
        "description": "golden for the db agent",
        "test_cases": [
            {
                "id": "q1",
                "query": "Revenue per region?",
                "expected_tool_use": [
                    {"tool_name": "call_db_agent", "tool_input": "{\"question\": \"Revenue per region?\"}"}
                ],
                "expected_table": ["sales", "regions"],
                "expected_trajectory": ["Tool_Selection : call_ds_agent", "sql_generation: FALSE", "table_usage: geo"],
                "reference": "North leads.",
                "tags": ["db"],
                "metadata": {"difficulty": "easy"},
            },
            {
                "query": "Hello",
                "expected_table": "N/A",
                "expected_trajectory": ["sql_generation: no"],
            },
        ],
    }
    eval_set = load_golden_data(data, "golden/db.golden.json")
    assert (eval_set.eval_set_id, eval_set.name, eval_set.description) == ("db", "DB agent", "golden for the db agent")
    first, second = eval_set.eval_cases
    turn = first.conversation[0]
    assert turn.expected_tool_trajectory == [
        ExpectedToolCall(name="call_db_agent", args={"question": "Revenue per region?"})
    ]
    assert turn.expected_tool_selection == "call_ds_agent"  # the line wins over the first expected tool
    assert turn.expected_sql is False
    assert turn.expected_tables == ["sales", "regions", "geo"]
    assert turn.expected_final_response.get_text() == "North leads."
    assert first.tags == ["db"]
    assert first.metadata == {"difficulty": "easy"}
    assert second.conversation[0].expected_tables == []
    assert second.conversation[0].expected_tool_selection is None


def test_every_problem_is_reported_with_its_path(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            [
                {
                    "query": "a",
                    "expected_trajectory": ["tool_selection: x", "uses_cache: yes", "sql_generation: maybe"],
                },
                {"query": "   "},
                {
                    "id": "dup",
                    "query": "b",
                    "expected_tool_use": [{"tool_input": {}}, {"tool_name": "t", "tool_input": "{oops"}],
                },
                {"id": "dup", "query": "c", "expected_trajectory": ["tool_selection: a", "tool_selection: b"]},
                "not an object",
                {"expected_table": 3},
            ]
        )
    )
    problems = validate_golden(path)
    assert [(p.source, p.location, p.reason) for p in problems] == [
        (
            str(path),
            "$[0].expected_trajectory[1]",
            "unknown trajectory line 'uses_cache: yes': expected one of 'tool_selection: ...', "
            "'sql_generation: ...', 'table_usage: ...'",
        ),
        (str(path), "$[0].expected_trajectory[2]", "sql_generation must be yes/no/true/false, got 'maybe'"),
        (str(path), "$[1].query", "must not be empty"),
        (str(path), "$[2].expected_tool_use[0].tool_name", "missing required field 'tool_name'"),
        (
            str(path),
            "$[2].expected_tool_use[1].tool_input",
            "arguments string is not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        ),
        (str(path), "$[3].expected_trajectory[1]", "conflicting 'tool_selection' lines: 'a' and 'b'"),
        (str(path), "$[4]", "expected a test case object, got string"),
        (str(path), "$[5].query", "missing required field 'query'"),
        (str(path), "$[5].expected_table", "expected a table name (string), got number"),
        (str(path), "$[3].id", "duplicate eval_id 'dup' (first used at $[2].id)"),
    ]


def test_duplicate_ids_are_a_problem_at_the_second_one():
    problems = validate_golden_data([{"id": "x", "query": "a"}, {"id": "x", "query": "b"}], "dups.json")
    assert [(p.location, p.reason) for p in problems] == [("$[1].id", "duplicate eval_id 'x' (first used at $[0].id)")]


def test_load_raises_naming_file_path_and_reason_of_every_problem_unknown_keys_first():
    with pytest.raises(InputError) as err:
        load_golden_data([{"query": "a", "expected_trajectory": ["foo: bar"]}, {"qeury": "b"}], "g.json")
    assert err.value.source == "g.json"
    assert err.value.location == "$[1].qeury"
    assert err.value.reason == (
        "unknown key 'qeury' (did you mean 'query'?) (and 2 more problems; `otel-eval golden validate` lists them all)"
    )
    assert err.value.lines() == [
        "g.json: at $[1].qeury: unknown key 'qeury' (did you mean 'query'?)",
        "g.json: at $[0].expected_trajectory[0]: unknown trajectory line 'foo: bar': expected one of "
        "'tool_selection: ...', 'sql_generation: ...', 'table_usage: ...'",
        "g.json: at $[1].query: missing required field 'query'",
    ]
