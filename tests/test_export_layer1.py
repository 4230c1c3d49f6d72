"""Layer-1 checks over the Vertex record's flat texts, directly and as a configured criterion."""

from __future__ import annotations

import pytest

from otel_eval.criteria_file import eval_config_from_dict
from otel_eval.metrics.layer1 import check_record
from otel_eval.models.evalset import EvalCase, Invocation, MessageContent
from otel_eval.scoring import score_session
from otel_eval.trajectory import Trajectory, Turn

RECORD = {
    "prompt": "Cancel my order",
    "prompt_concat": "Hi\n\nCancel my order",
    "response_concat": "Hello!\n\nSorry, I cannot do that.",
    "response": {"candidates": [{"content": {"role": "model", "parts": [{"text": "Sorry, I cannot do that."}]}}]},
}


def test_regex_and_contains_with_expectations():
    assert check_record(RECORD, {"regex": "(?i)sorry", "expect": False}) == (
        0.0,
        {
            "field": "response_concat",
            "expect": False,
            "regex": "(?i)sorry",
            "found": True,
            "match": "Sorry",
            "passed": False,
        },
    )
    assert check_record(RECORD, {"field": "prompt", "contains": "cancel", "ignore_case": True})[0] == 1.0
    assert check_record(RECORD, {"field": "prompt", "contains": "cancel"})[0] == 0.0
    assert check_record(RECORD, {"field": "prompt_concat", "regex": r"^Hi$"})[0] == 0.0
    assert check_record(RECORD, {"field": "prompt_concat", "regex": r"(?m)^Hi$"})[0] == 1.0
    assert check_record(RECORD, {"field": "response", "regex": "^Sorry"})[0] == 1.0


@pytest.mark.parametrize(
    "options, message",
    [
        ({"regex": "("}, "options.regex: invalid regular expression"),
        ({}, "exactly one of options.regex or options.contains"),
        ({"regex": "a", "contains": "b"}, "exactly one of options.regex or options.contains"),
        ({"field": "answer", "regex": "a"}, "options.field: unknown field 'answer'"),
        ({"regex": "a", "expect": "no"}, "options.expect: expected true or false"),
    ],
)
def test_bad_options_are_clear_errors(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        check_record(RECORD, options)


def test_layer1_criterion_from_config_fails_an_apologising_session():
    config = eval_config_from_dict(
        {
            "criteria": {
                "no_apology": {
                    "threshold": 1.0,
                    "options": {"kind": "layer1", "field": "response_concat", "regex": "(?i)sorry", "expect": False},
                },
                "asked_about_weather": {
                    "options": {"kind": "layer1", "field": "prompt_concat", "contains": "weather", "ignore_case": True}
                },
                "broken": {"options": {"kind": "layer1", "regex": "["}},
            }
        }
    )
    trajectory = Trajectory(
        session_id="s",
        turns=[Turn(index=0, trace_id="t", user_input="Weather in Oslo?", final_response="Sorry, no idea.")],
    )
    case = EvalCase(
        eval_id="c",
        conversation=[Invocation(invocation_id="c-1", user_content=MessageContent.user("Weather in Oslo?"))],
    )
    result = score_session(trajectory, case, config)
    by_name = {c.criterion: c for c in result.criterion_results}
    assert (by_name["no_apology"].score, by_name["no_apology"].passed) == (0.0, False)
    assert by_name["no_apology"].details["match"] == "Sorry"
    assert (by_name["asked_about_weather"].score, by_name["asked_about_weather"].passed) == (1.0, True)
    assert by_name["broken"].error.startswith("options.regex: invalid regular expression '['")
    assert not result.passed
