"""Format detection, the EvalSet format, file errors, validation of a whole file, conversion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_eval.errors import InputError
from otel_eval.golden import (
    UnknownFormat,
    convert,
    detect_format,
    load_golden,
    load_golden_data,
    save_evalset,
    validate_golden,
)
from otel_eval.models.evalset import EvalSet

DATA = Path(__file__).parent / "data" / "golden"
EXAMPLES = Path(__file__).parent.parent / "examples" / "golden"


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("seed_weather.evalset.json", "evalset"),
        ("seed_revenue.trajectory.json", "trajectory"),
        ("seed_weather.bigsky.json", "bigsky"),
        ("dice.test.json", "adk"),
        ("flights.evalset.json", "adk"),
    ],
)
def test_detect_format(name, fmt):
    path = DATA / name
    assert detect_format(json.loads(path.read_text()), str(path)) == fmt


def test_unknown_format_names_what_was_expected():
    with pytest.raises(UnknownFormat) as err:
        detect_format({"rows": []}, "x.json")
    assert err.value.source == "x.json"
    assert err.value.reason.endswith("found keys rows")
    with pytest.raises(InputError):
        load_golden_data("just text", "x.json")


def test_seed_evalset_example_verbatim_equals_evalset_load():
    path = DATA / "seed_weather.evalset.json"
    eval_set = load_golden(path)
    assert eval_set == EvalSet.load(path)
    assert eval_set.metadata == {"version": "1.0.0", "created_by": "QA Team", "last_updated": "2024-01-15"}
    [case] = eval_set.eval_cases
    assert (case.eval_id, case.name, case.tags, case.query) == (
        "basic_weather",
        "Basic Weather Query",
        ["weather", "basic"],
        "What's the weather in Tokyo?",
    )
    assert case.conversation[0].expected_final_response.get_text() == "The current weather in Tokyo is 22°C and sunny."


def test_evalset_reports_every_problem_not_only_pydantics_first(tmp_path):
    path = tmp_path / "bad.evalset.json"
    path.write_text(
        json.dumps(
            {
                "eval_set_id": "s",
                "eval_cases": [
                    {
                        "eval_id": "a",
                        "conversation": [{"invocation_id": "1", "user_content": {"role": "user", "content": 5}}],
                    },
                    {"eval_id": "a", "conversation": []},
                    {"conversation": [{"invocation_id": "1", "user_content": {"role": "user", "content": ""}}]},
                    {
                        "eval_id": "d",
                        "conversation": [
                            {
                                "invocation_id": "1",
                                "user_content": {"role": "user", "content": "x"},
                                "expected_tool_trajectory": [{"args": {}}],
                            }
                        ],
                    },
                ],
            }
        )
    )
    problems = validate_golden(path)
    assert [(p.source, p.location, p.reason) for p in problems] == [
        (
            str(path),
            "$.eval_cases[0].conversation[0].user_content.content",
            "Input should be a valid string or Input should be a valid list",
        ),
        (str(path), "$.eval_cases[2].eval_id", "missing required field"),
        (str(path), "$.eval_cases[3].conversation[0].expected_tool_trajectory[0].name", "missing required field"),
        (str(path), "$.eval_cases[1].conversation", "case has no conversation: no query to match and nothing to score"),
        (
            str(path),
            "$.eval_cases[2].conversation[0].user_content.content",
            "missing query: the first user message is empty",
        ),
        (str(path), "$.eval_cases[1].eval_id", "duplicate eval_id 'a' (first used at $.eval_cases[0].eval_id)"),
    ]


def test_file_level_problems(tmp_path):
    missing = tmp_path / "nope.json"
    assert [(p.location, p.reason) for p in validate_golden(missing)] == [("$", "file not found")]
    broken = tmp_path / "broken.json"
    broken.write_text('[{"query": "a",}]')
    assert [(p.location, p.reason) for p in validate_golden(broken)] == [
        ("$", "invalid JSON: Expecting property name enclosed in double quotes (line 1, column 16)")
    ]
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'[{"query": "caf\xe9"}]')
    assert [p.reason for p in validate_golden(latin)] == ["not UTF-8 text (invalid continuation byte at byte 15)"]
    with pytest.raises(InputError) as err:
        load_golden(broken)
    assert (err.value.source, err.value.location) == (str(broken), "$")
    assert str(err.value) == (
        f"{broken}: at $: invalid JSON: Expecting property name enclosed in double quotes (line 1, column 16)"
    )


def test_json_lines_trajectory_file(tmp_path):
    path = tmp_path / "cases.trajectory.jsonl"
    path.write_text('{"id": "a", "query": "one"}\n\n{"id": "b", "query": "two"\n{"id": "c", "query": "three"}\n')
    assert [(p.location, p.reason) for p in validate_golden(path)] == [
        ("$[1]", "invalid JSON on line 3: Expecting ',' delimiter (column 27)")
    ]
    path.write_text('{"id": "a", "query": "one"}\n{"id": "c", "query": "three"}\n')
    eval_set = load_golden(path)
    assert (eval_set.eval_set_id, [c.eval_id for c in eval_set.eval_cases]) == ("cases", ["a", "c"])


@pytest.mark.parametrize(
    "source",
    [
        DATA / "seed_weather.evalset.json",
        DATA / "seed_revenue.trajectory.json",
        DATA / "seed_weather.bigsky.json",
        DATA / "dice.test.json",
        DATA / "flights.evalset.json",
        EXAMPLES / "weather.trajectory.json",
        EXAMPLES / "weather.evalset.json",
    ],
)
def test_convert_round_trips_through_evalset_load(source, tmp_path):
    out = tmp_path / "out" / "converted.evalset.json"
    written = convert(source, out)
    assert EvalSet.load(out) == written == load_golden(source)
    assert detect_format(json.loads(out.read_text()), str(out)) == "evalset"
    assert load_golden(out) == written


def test_save_evalset_creates_directories(tmp_path):
    eval_set = load_golden(DATA / "dice.test.json")
    path = save_evalset(eval_set, tmp_path / "a" / "b" / "dice.evalset.json")
    assert EvalSet.load(path) == eval_set


def test_explicit_format_overrides_detection():
    data = [{"query": "hi", "expected_tool_use": []}, {"query": "bye"}]
    assert len(load_golden_data(data, "x.json").eval_cases) == 2
    assert len(load_golden_data(data, "x.json", fmt="adk").eval_cases) == 1
    with pytest.raises(ValueError, match="unknown golden format 'csv'"):
        load_golden_data(data, "x.json", fmt="csv")
