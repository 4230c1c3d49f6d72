"""Big Sky eval datasets (seed bigsky-eval-dataset.md) → EvalSet, and their evaluators → criteria."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from otel_eval.errors import InputError
from otel_eval.golden import criteria_from_bigsky, load_golden, load_golden_data, validate_golden
from otel_eval.models.evalset import (
    IGNORE,
    CriterionConfig,
    EvalConfig,
    EvalSet,
    ExpectedToolCall,
    MatchType,
    SessionInput,
)
from otel_eval.models.results import EvalCaseResult
from otel_eval.scoring import score_session
from otel_eval.trajectory import ActualToolCall, Trajectory, Turn

DATA = Path(__file__).parent / "data" / "golden"
SEED = json.loads((DATA / "seed_weather.bigsky.json").read_text())


def test_seed_example_verbatim():
    eval_set = load_golden(DATA / "seed_weather.bigsky.json")

    assert (eval_set.eval_set_id, eval_set.name, eval_set.description) == (
        "seed_weather",
        "Get the Weather",
        "Getting the weather for a location",
    )
    [case] = eval_set.eval_cases
    assert (case.eval_id, case.name, case.query) == (
        "1",
        "Get weather for the current location by default",
        "Get the weather",
    )
    assert case.session_input == SessionInput(initial_state={"currentLocation": "Boston, MA"})
    [turn] = case.conversation
    assert turn.invocation_id == "1-1"
    assert turn.expected_tool_trajectory == [ExpectedToolCall(name="getWeather", args={"location": "Boston, MA"})]
    assert turn.expected_final_response is None  # content "" expects no text
    assert turn.first_call_only is True  # chat:matchToolCall compares the first call only
    assert turn.metadata == {"history": [{"role": "assistant", "content": "How can I help you?"}]}
    assert eval_set.criteria == {
        "trajectory_match": CriterionConfig(
            threshold=1.0,
            match_type=MatchType.EXACT,
            check_args=True,
            options={"first_call_only": True},
        )
    }
    assert eval_set.metadata["bigsky"]["comparativeEvaluators"] == SEED["comparativeEvaluators"]
    assert eval_set.metadata["bigsky"]["summaryEvaluators"] == SEED["summaryEvaluators"]
    assert eval_set.metadata["bigsky"]["criteria_sources"] == {"trajectory_match": "match_tool_call"}


def _example(arguments, content="", messages=None):
    data = copy.deepcopy(SEED)
    example = data["data"][0]
    example["outputs"]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    example["outputs"]["message"]["content"] = content
    if messages is not None:
        example["inputs"]["messages"] = messages
    return data


def test_arguments_as_json_string_equal_arguments_as_object():
    as_object = load_golden_data(_example({"location": "Boston, MA", "units": "metric"}), "w.json")
    as_string = load_golden_data(_example('{"location": "Boston, MA", "units": "metric"}'), "w.json")
    assert as_object == as_string
    assert as_string.eval_cases[0].conversation[0].expected_tool_trajectory[0].args == {
        "location": "Boston, MA",
        "units": "metric",
    }


def test_ignore_values_are_kept_and_match_anything():
    eval_set = load_golden_data(_example('{"location": "IGNORE", "units": "metric"}'), "w.json")
    expected = eval_set.eval_cases[0].conversation[0].expected_tool_trajectory[0]
    assert expected.args == {"location": IGNORE, "units": "metric"}
    assert expected.matches(ExpectedToolCall(name="getWeather", args={"location": "Paris", "units": "metric"}))
    assert not expected.matches(ExpectedToolCall(name="getWeather", args={"location": "Paris", "units": "imperial"}))


# What Big Sky's chat:matchToolCall answers (src/eval/evaluators/chat.js of Automattic/big-sky-agents,
# the versions that read ``outputs.message``): the first call's name equal, and its arguments deep-equal
# (lodash isEqual) once every key whose expected value is "IGNORE" is left out on both sides.
# (agent's calls, Big Sky's score) against the seed's example, expecting getWeather with
# {"location": "Boston, MA", "units": "IGNORE"}.
MATCH_TOOL_CALL_CASES = [
    ([("getWeather", {"location": "Boston, MA"})], True),
    ([("getWeather", {"location": "Boston, MA", "units": "metric"})], True),  # IGNORE: any value
    ([("getWeather", {"location": "Paris"})], False),  # the right tool, the wrong place
    ([("getWeather", {})], False),
    ([("getWeather", {"location": "Boston, MA", "days": 3})], False),  # a key the example does not have
    ([("getForecast", {"location": "Boston, MA"})], False),
    ([], False),
    ([("getWeather", {"location": "Boston, MA"}), ("getForecast", {"location": "Paris"})], True),  # first only
    ([("getForecast", {"location": "Boston, MA"}), ("getWeather", {"location": "Boston, MA"})], False),
]


def score_example(data: dict, calls: list, answer: str | None = None) -> tuple[EvalSet, EvalCaseResult]:
    """A Big Sky dataset of one example, and the result of a one-turn session that asks its query,
    makes ``calls`` ((name, args) each) and answers ``answer``, scored by the dataset's criteria."""
    eval_set = load_golden_data(data, "w.json")
    [case] = eval_set.eval_cases
    trajectory = Trajectory(
        "s",
        [
            Turn(
                index=0,
                trace_id="t",
                user_input=case.query,
                final_response=answer,
                calls=[ActualToolCall(name=n, args=a) for n, a in calls],
            )
        ],
    )
    return eval_set, score_session(trajectory, case, EvalConfig(criteria=eval_set.criteria))


@pytest.mark.parametrize("calls, big_sky_score", MATCH_TOOL_CALL_CASES)
def test_match_tool_call_compares_the_first_calls_name_and_arguments(calls, big_sky_score):
    _, result = score_example(_example({"location": "Boston, MA", "units": "IGNORE"}), calls)
    criterion = next(c for c in result.criterion_results if c.criterion == "trajectory_match")
    assert criterion.passed is big_sky_score
    assert (result.verdict == "passed") is big_sky_score


@pytest.mark.parametrize(
    "calls, answer, big_sky_score",
    [
        ([("getWeather", {"location": "Paris"})], "It is sunny.", True),  # the name only: any arguments
        ([("getWeather", {"location": "Boston, MA"})], "It rains.", False),  # the content must match too
        ([("getForecast", {"location": "Boston, MA"})], "It is sunny.", False),
    ],
)
def test_match_message_or_tool_call_needs_both_the_content_and_the_first_tool(calls, answer, big_sky_score):
    # chat.js: (!exampleContent || exampleContent === outputContent) && (!exampleToolCall || names equal).
    data = _example({"location": "Boston, MA"}, content="It is sunny.")
    data["evaluators"] = [{"key": "either", "function": "chat:matchMessageOrToolCall"}]
    eval_set, result = score_example(data, calls, answer)
    assert eval_set.metadata["bigsky"]["unmapped_evaluators"] == []
    scored = {
        c.criterion: c.passed for c in result.criterion_results if c.criterion in ("trajectory_match", "response_match")
    }
    assert len(scored) == 2
    assert all(scored.values()) is big_sky_score
    assert (result.verdict == "passed") is big_sky_score


def test_query_is_the_last_user_message_and_earlier_turns_are_history():
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "How can I help you?"},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Lisbon"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "geocode", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "38.7,-9.1"},
    ]
    eval_set = load_golden_data(_example({"location": "Lisbon"}, content="It is sunny.", messages=messages), "w.json")
    [case] = eval_set.eval_cases
    assert case.query == "Weather in Lisbon"
    assert len(case.conversation) == 1
    turn = case.conversation[0]
    assert turn.metadata == {"history": messages[:2], "after_query": messages[3:]}
    assert turn.expected_final_response.get_text() == "It is sunny."


def test_evaluators_map_to_criteria():
    criteria = criteria_from_bigsky(
        [
            {"key": "tool", "function": "chat:matchToolCall"},
            {"key": "content", "function": "chat:compareContent"},
            {"key": "regex", "function": "chat:matchRegex", "arguments": {"pattern": "^Sunny"}},
        ]
    )
    assert criteria == {
        "trajectory_match": CriterionConfig(
            threshold=1.0, match_type=MatchType.EXACT, check_args=True, options={"first_call_only": True}
        ),
        "response_match": CriterionConfig(threshold=0.7),  # the first evaluator for a criterion wins
    }
    assert criteria_from_bigsky(
        [{"key": "s", "function": "chat:includeString", "arguments": {"string": "Boston"}}]
    ) == {"response_match": CriterionConfig(threshold=1.0, options={"method": "regex", "pattern": "Boston"})}


def test_unknown_evaluator_function_raises_when_called_directly():
    with pytest.raises(InputError) as err:
        criteria_from_bigsky([{"key": "x", "function": "chat:matchVibes"}])
    assert err.value.location == "$.evaluators[0].function"
    assert err.value.reason.startswith("unknown evaluator function 'chat:matchVibes'; known: chat:compareContent,")


def test_known_but_unmapped_and_shadowed_evaluators_are_recorded():
    data = _example({"location": "Boston, MA"})
    data["evaluators"] = [
        {"key": "ctx", "function": "chat:includeContext", "arguments": {"contextName": "currentLocation"}},
        {"key": "content", "function": "chat:compareContent"},
        {"key": "words", "function": "chat:includeString", "arguments": {"string": "Boston"}},
    ]
    eval_set = load_golden_data(data, "w.json")
    assert eval_set.eval_cases[0].conversation[0].first_call_only is False
    assert eval_set.metadata["bigsky"]["unmapped_evaluators"] == [
        {
            "key": "ctx",
            "function": "chat:includeContext",
            "reason": "needs a per-example context value; not expressible as one criterion",
        },
        {
            "key": "words",
            "function": "chat:includeString",
            "reason": "criterion 'response_match' already comes from evaluator 'content'",
        },
    ]


def test_every_problem_in_a_bad_dataset(tmp_path):
    data = _example("{location: Boston}")
    data["data"].append(
        {
            "id": "1",
            "inputs": {"messages": [{"role": "assistant", "content": "Hi"}]},
            "outputs": {"message": {"tool_calls": [{"type": "retrieval", "function": {"name": "x"}}]}},
        }
    )
    data["data"].append({"id": "3", "inputs": {"messages": [{"role": "user", "content": "Hey"}]}})
    data["data"].append(
        {
            "id": "4",
            "inputs": {"messages": [{"role": "user", "content": "Hey"}]},
            "outputs": {"message": {"tool_calls": [{"function": {"name": "f", "arguments": "[1, 2]"}}]}},
        }
    )
    data["evaluators"].append({"key": "judge", "function": "chat:matchVibes"})
    data["evaluators"].append({"key": "re", "function": "chat:matchRegex", "arguments": {"pattern": "(unclosed"}})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))

    problems = validate_golden(path)
    assert [(p.source, p.location) for p in problems] == [
        (str(path), "$.evaluators[1].function"),
        (str(path), "$.evaluators[2].arguments.pattern"),
        (str(path), "$.data[0].outputs.message.tool_calls[0].function.arguments"),
        (str(path), "$.data[1].inputs.messages"),
        (str(path), "$.data[1].outputs.message.tool_calls[0].type"),
        (str(path), "$.data[2].outputs"),
        (str(path), "$.data[3].outputs.message.tool_calls[0].function.arguments"),
        (str(path), "$.data[1].id"),
    ]
    reasons = [p.reason for p in problems]
    assert reasons[1] == "not a valid regular expression: missing ), unterminated subpattern at position 0"
    assert (
        reasons[2] == "arguments string is not valid JSON: Expecting property name enclosed in double quotes (column 2)"
    )
    assert reasons[3] == "missing query: no message with role 'user'"
    assert reasons[4] == "only 'function' tool calls are supported, got 'retrieval'"
    assert reasons[5] == "missing required field 'outputs'"
    assert reasons[6] == "arguments string must hold a JSON object, got array"
    assert reasons[7] == "duplicate eval_id '1' (first used at $.data[0].id)"

    with pytest.raises(InputError) as err:
        load_golden(path)
    assert (err.value.source, err.value.location) == (str(path), "$.evaluators[1].function")
