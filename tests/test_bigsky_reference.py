"""Big Sky's evaluators, differentially: otel-eval's verdict against Big Sky Agents' own code.

A Big Sky dataset's ``chat:matchToolCall``, ``chat:matchMessageOrToolCall``,
``chat:includeString`` and ``chat:matchRegex`` become otel-eval criteria
(``otel_eval.golden.bigsky``; ``compareContent`` asks OpenAI and is not compared here). Here the same example and the same agent output go to
both: the published package's ``dist/evaluators/chat.js`` run by node (the ``bigsky_oracle``
fixture; ``make reference`` fetches the pinned version), and otel-eval's scoring of a session
that made those calls. The verdicts must agree.

Left out of the generated cases, because otel-eval differs on purpose (docs/golden-formats.md):
a number written as text (``"10"`` equals 10 in otel-eval, not in Big Sky); ``"IGNORE"`` inside
an array (Big Sky only leaves out object keys); arrays in another order (Big Sky's
``deepEqual`` sorts them); and an empty array against an empty object (its ``deepEqual``
compares the two by their keys, and finds them equal).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_golden_bigsky import score_example

Call = tuple[str, dict[str, Any]]
QUERY = "Get the weather"


def _dataset(function: str, expected_calls: list[Call] | None, expected_content: str) -> dict[str, Any]:
    """``expected_calls`` None: the expected message has no ``tool_calls`` key."""
    message: dict[str, Any] = {"role": "assistant", "content": expected_content}
    if expected_calls is not None:
        message["tool_calls"] = [
            {"type": "function", "function": {"name": name, "arguments": args}} for name, args in expected_calls
        ]
    return {
        "name": "differential",
        "description": "",
        "evaluators": [{"key": "k", "function": function}],
        "data": [
            {"id": "1", "inputs": {"messages": [{"role": "user", "content": QUERY}]}, "outputs": {"message": message}}
        ],
    }


def _big_sky(oracle: Any, function: str, dataset: dict[str, Any], calls: list[Call], content: str | None) -> bool:
    # What Big Sky's runner hands an evaluator: the example, and the model's message (arguments as
    # the JSON text a chat completion carries).
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]
    return oracle.score(
        function.removeprefix("chat:"), json.loads(json.dumps(dataset["data"][0])), {"outputs": {"message": message}}
    )


def _otel_eval(dataset: dict[str, Any], calls: list[Call], content: str | None) -> bool:
    eval_set, result = score_example(dataset, calls, content)
    mapped = [c for c in result.criterion_results if c.criterion in eval_set.criteria]
    assert mapped, "the evaluator became no criterion"
    return all(c.passed for c in mapped if not c.skipped)


def _agree(
    oracle: Any,
    function: str,
    expected_calls: list[Call] | None,
    expected_content: str,
    calls: list[Call],
    content: str | None,
) -> None:
    dataset = _dataset(function, expected_calls, expected_content)
    big_sky = _big_sky(oracle, function, dataset, calls, content)
    assert _otel_eval(dataset, calls, content) is big_sky, (function, expected_calls, expected_content, calls, content)


WEATHER = ("getWeather", {"location": "Boston, MA", "units": "IGNORE", "days": {"from": 1, "to": "IGNORE"}})


@pytest.mark.parametrize(
    "calls",
    [
        [("getWeather", {"location": "Boston, MA", "units": "c", "days": {"from": 1, "to": 3}})],
        [("getWeather", {"location": "Boston, MA", "days": {"from": 1}})],  # IGNOREd keys left out
        [("getWeather", {"location": "Boston, MA", "days": {"from": 2, "to": 3}})],
        [("getWeather", {"location": "Boston, MA", "days": 1})],
        [("getWeather", {"location": "Paris", "days": {"from": 1}})],
        [("getWeather", {"location": "Boston, MA", "days": {"from": 1}, "extra": True})],
        [("getWeather", {"location": "Boston, MA", "days": {"from": True}})],  # true is not 1
        [("getForecast", {"location": "Boston, MA", "days": {"from": 1}})],
        [],
        [("getWeather", {"location": "Boston, MA", "days": {"from": 1}}), ("getForecast", {})],
        [("getForecast", {}), ("getWeather", {"location": "Boston, MA", "days": {"from": 1}})],
    ],
)
@pytest.mark.parametrize("function", ["chat:matchToolCall", "chat:matchMessageOrToolCall"])
def test_chosen_calls_score_as_big_sky_scores_them(bigsky_oracle, function, calls):
    _agree(bigsky_oracle, function, [WEATHER], "", calls, None)


@pytest.mark.parametrize(
    "calls",
    [
        [],
        [("getTime", {})],
        [("getWeather", {"location": "Boston, MA"})],
        [("getTime", {}), ("getWeather", {"x": 1})],
    ],
)
@pytest.mark.parametrize("expected_calls", [None, []], ids=["no tool_calls", "tool_calls []"])
@pytest.mark.parametrize("function", ["chat:matchToolCall", "chat:matchMessageOrToolCall"])
def test_no_call_expected_scores_as_big_sky_scores_it(bigsky_oracle, function, expected_calls, calls):
    # Big Sky then compares only the first call's arguments with {} (matchMessageOrToolCall: nothing).
    _agree(bigsky_oracle, function, expected_calls, "Which city?", calls, "Which city?")


def test_a_passed_over_first_call_is_shown_not_hidden():
    from otel_eval.report import trajectory_rows

    _, result = score_example(_dataset("chat:matchToolCall", None, "Which city?"), [("getTime", {})], "Which city?")
    [turn] = next(c for c in result.criterion_results if c.criterion == "trajectory_match").details["per_turn"]
    assert [(r["kind"], r["actual"]["name"]) for r in trajectory_rows(turn)] == [("passed_over", "getTime")]


@pytest.mark.parametrize(
    "expected_content, content",
    [
        ("It is sunny.", "It is sunny."),
        ("It is sunny.", "It rains."),
        ("It is sunny.", None),
        ("", "Anything."),
    ],
)
def test_message_content_scores_as_big_sky_scores_it(bigsky_oracle, expected_content, content):
    _agree(
        bigsky_oracle,
        "chat:matchMessageOrToolCall",
        [WEATHER],
        expected_content,
        [("getWeather", {"location": "Boston, MA"})],
        content,
    )


# --- generated: arguments the agent got right, nearly right, or wrong ---------------------------------

_TEXT = st.text("abc", min_size=1, max_size=3).map(lambda s: f"v-{s}")  # never a number or a boolean as text
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, 2.25, -1.5]), _TEXT)
_KEY = st.sampled_from(["city", "units", "days", "when", "limit"])
_VALUE = st.one_of(
    _SCALAR,
    st.lists(_SCALAR, min_size=1, max_size=1),  # (never []: Big Sky's deepEqual takes [] for {})
    st.dictionaries(_KEY, _SCALAR, max_size=3),
)


@st.composite
def _expected_args(draw: Any) -> dict[str, Any]:
    args = draw(st.dictionaries(_KEY, st.one_of(_VALUE, st.just("IGNORE")), max_size=4))
    for _key, value in list(args.items()):
        if isinstance(value, dict) and value and draw(st.booleans()):
            value[draw(st.sampled_from(sorted(value)))] = "IGNORE"
    return args


@st.composite
def _agent_args(draw: Any, expected: dict[str, Any]) -> dict[str, Any]:
    args = json.loads(json.dumps(expected))
    for key in list(args):
        if args[key] == "IGNORE":
            choice = draw(st.sampled_from(["drop", "value", "keep"]))
            if choice == "drop":
                del args[key]
            elif choice == "value":
                args[key] = draw(_VALUE)
        elif isinstance(args[key], dict):
            for inner in list(args[key]):
                if args[key][inner] == "IGNORE":
                    args[key][inner] = draw(_SCALAR)
    change = draw(st.sampled_from(["none", "none", "value", "drop", "add"]))
    if change == "value" and args:
        args[draw(st.sampled_from(sorted(args)))] = draw(_VALUE)
    elif change == "drop" and args:
        del args[draw(st.sampled_from(sorted(args)))]
    elif change == "add":
        args[draw(_KEY)] = draw(_VALUE)
    return args


@st.composite
def _scenario(draw: Any) -> tuple[list[Call] | None, list[Call]]:
    expected_args = draw(_expected_args())
    expected = draw(st.sampled_from([[("getWeather", expected_args)]] * 4 + [[], None]))
    first = (draw(st.sampled_from(["getWeather", "getWeather", "getForecast"])), draw(_agent_args(expected_args)))
    calls = draw(st.sampled_from([[first], [first, ("getForecast", {})], [], [("getForecast", {}), first]]))
    return expected, calls


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=_scenario())
def test_generated_calls_score_as_big_sky_scores_them(bigsky_oracle, scenario):
    expected, calls = scenario
    _agree(bigsky_oracle, "chat:matchToolCall", expected, "", calls, None)


# --- the response evaluators ---------------------------------------------------------------------


def _agree_on_response(oracle: Any, evaluator: dict[str, Any], expected_content: str, content: str | None) -> None:
    dataset = _dataset(evaluator["function"], [WEATHER] if not expected_content else None, expected_content)
    dataset["evaluators"] = [{"key": "k", **evaluator}]
    message = {"role": "assistant", "content": content}
    big_sky = oracle.score(
        evaluator["function"].removeprefix("chat:"),
        json.loads(json.dumps(dataset["data"][0])),
        {"outputs": {"message": message}},
        evaluator.get("arguments"),
    )
    assert _otel_eval(dataset, [], content) is big_sky, (evaluator, expected_content, content)


@pytest.mark.parametrize("content", ["It is sunny in Boston.", "It is sunny in boston.", "Sunny.", ""])
@pytest.mark.parametrize("expected_content", ["", "It is sunny in Boston."])
def test_include_string_scores_as_big_sky_scores_it(bigsky_oracle, expected_content, content):
    _agree_on_response(
        bigsky_oracle, {"function": "chat:includeString", "arguments": {"string": "Boston."}}, expected_content, content
    )


@pytest.mark.parametrize("pattern", [r"^It is \w+", r"Boston\.$", r"\d{2,}", "sunny|rainy", "SUNNY"])
@pytest.mark.parametrize("content", ["It is sunny in Boston.", "Rain: 12 mm", ""])
def test_match_regex_scores_as_big_sky_scores_it(bigsky_oracle, pattern, content):
    _agree_on_response(bigsky_oracle, {"function": "chat:matchRegex", "arguments": {"pattern": pattern}}, "", content)
