"""The golden and result models of the evalset seed, and their JSON files."""

import json

import pytest

from otel_eval.errors import InputError
from otel_eval.models import (
    CriterionConfig,
    EvalCase,
    EvalConfig,
    EvalSet,
    ExpectedToolCall,
    Invocation,
    MatchType,
    MessageContent,
    StepType,
    TrajectoryStep,
)


def test_message_content_helpers():
    assert MessageContent.user("Hello!").role == "user"
    assert MessageContent.assistant("Hi").get_text() == "Hi"
    parts = MessageContent(role="assistant", content=[{"text": "a"}, {"image": "x"}, {"text": "b"}])
    assert parts.get_text() == "a\nb"


def test_tool_call_matches_with_and_without_arguments():
    expected = ExpectedToolCall(name="get_weather", args={"city": "Tokyo"})
    assert expected.matches(ExpectedToolCall(name="get_weather", args={"city": "Tokyo"}))
    assert not expected.matches(ExpectedToolCall(name="get_weather", args={"city": "Paris"}))
    assert expected.matches(ExpectedToolCall(name="get_weather", args={"city": "Paris"}), check_args=False)
    assert not expected.matches(ExpectedToolCall(name="get_forecast", args={"city": "Tokyo"}), check_args=False)
    with_id = ExpectedToolCall(name="get_weather", args={"city": "Tokyo"}, call_id="c1")
    assert not with_id.matches(
        ExpectedToolCall(name="get_weather", args={"city": "Tokyo"}, call_id="c2"), check_call_id=True
    )
    assert ExpectedToolCall(name="t", args={"n": 1}).matches(ExpectedToolCall(name="t", args={"n": 1.0}))
    assert ExpectedToolCall(name="t", args={"q": "IGNORE"}).matches(ExpectedToolCall(name="t", args={"q": "x"}))


def test_trajectory_step_factories():
    node = TrajectoryStep.node("agent_node", timestamp=1.5)
    tool = TrajectoryStep.tool("get_weather", args={"city": "Tokyo"}, timestamp=2.0)
    assert (node.step_type, node.name, node.timestamp) == (StepType.NODE, "agent_node", 1.5)
    assert (tool.step_type, tool.args) == (StepType.TOOL, {"city": "Tokyo"})


def test_default_config_has_the_seed_thresholds():
    config = EvalConfig.default()
    assert config.criteria["trajectory_match"].threshold == 0.8
    assert config.criteria["trajectory_match"].match_type is MatchType.EXACT
    assert config.criteria["response_match"].threshold == 0.7
    assert config.criteria["llm_judge"].threshold == 0.7
    assert config.criteria["llm_judge"].judge_model == "gpt-4o-mini"
    assert CriterionConfig().threshold == 0.8


def test_evalset_round_trip(tmp_path):
    eval_set = EvalSet(
        eval_set_id="weather_agent_v1",
        name="Weather Agent Tests",
        eval_cases=[
            EvalCase(
                eval_id="basic",
                conversation=[
                    Invocation(
                        invocation_id="turn_1",
                        user_content=MessageContent.user("What's the weather in Tokyo?"),
                        expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": "Tokyo"})],
                        expected_final_response=MessageContent.assistant("22°C and sunny."),
                        expected_sql=False,
                    )
                ],
                tags=["weather"],
            )
        ],
    )
    path = tmp_path / "w.evalset.json"
    eval_set.save(path)
    assert EvalSet.load(path) == eval_set
    assert json.loads(path.read_text(encoding="utf-8"))["eval_cases"][0]["conversation"][0]["user_content"] == {
        "role": "user",
        "content": "What's the weather in Tokyo?",
        "metadata": {},
    }


@pytest.mark.parametrize(
    "text, location, reason",
    [
        ('{"eval_cases": []}', "$.eval_set_id", "missing required field"),
        (
            '{"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [{"invocation_id": "t"}]}]}',
            "$.eval_cases[0].conversation[0].user_content",
            "missing required field",
        ),
        ('{"eval_set_id": "x", "eval_cases": [{"eval_id": 5}]}', "$.eval_cases[0].eval_id", "string"),
        ('{"eval_set_id": "x",', "$", "invalid JSON"),
    ],
)
def test_bad_evalset_file_names_file_path_and_reason(tmp_path, text, location, reason):
    path = tmp_path / "bad.evalset.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        EvalSet.load(path)
    assert info.value.source == str(path)
    assert info.value.location == location
    assert reason in info.value.reason


def test_missing_evalset_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        EvalSet.load(tmp_path / "nope.json")


def test_criterion_kind_may_be_written_beside_threshold():
    cfg = CriterionConfig.model_validate({"threshold": 1.0, "kind": "layer1", "options": {"field": "response_concat"}})
    assert cfg.options == {"field": "response_concat", "kind": "layer1"}
