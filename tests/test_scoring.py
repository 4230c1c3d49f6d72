from __future__ import annotations

import json

import pytest

from otel_eval.metrics.judge import Judge, LRUCache
from otel_eval.models.evalset import (
    CriterionConfig,
    EvalCase,
    EvalConfig,
    ExpectedToolCall,
    Invocation,
    MatchType,
    MessageContent,
    Rubric,
)
from otel_eval.scoring import build_report, score_session
from otel_eval.trajectory import ActualToolCall, Trajectory, Turn
from tests.test_judge import FakeLLM


@pytest.fixture(autouse=True)
def no_judge_env(monkeypatch):
    for name in ("OTEL_EVAL_JUDGE_BASE_URL", "OTEL_EVAL_JUDGE_API_KEY", "OTEL_EVAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)


def inv(i, text, calls=None, response=None, **extra):
    """``calls`` None: the case does not say which tools (not checked); []: no tool may be called."""
    return Invocation(
        invocation_id=f"turn_{i}",
        user_content=MessageContent.user(text),
        expected_tool_trajectory=None if calls is None else [ExpectedToolCall(name=n, args=a) for n, a in calls],
        expected_final_response=MessageContent.assistant(response) if response else None,
        **extra,
    )


def turn(i, calls=(), response=None, **kw):
    return Turn(
        index=i,
        trace_id=f"t{i}",
        final_response=response,
        calls=[c if isinstance(c, ActualToolCall) else ActualToolCall(name=c[0], args=c[1], turn=i) for c in calls],
        **kw,
    )


WEATHER = EvalCase(
    eval_id="weather",
    name="Tokyo weather",
    conversation=[
        inv(
            1,
            "What's the weather in Tokyo?",
            [("get_weather", {"city": "Tokyo"})],
            "The weather in Tokyo is 22°C with clear skies.",
        ),
    ],
)


def by_name(result):
    return {c.criterion: c for c in result.criterion_results}


def test_perfect_session_passes_with_default_config_and_judge_skipped():
    traj = Trajectory(
        "s1", [turn(0, [("get_weather", {"city": "Tokyo"})], "The weather in Tokyo is 22°C with clear skies.")]
    )
    result = score_session(traj, WEATHER, EvalConfig.default())
    crit = by_name(result)
    assert list(crit) == [
        "trajectory_match",
        "response_match",
        "llm_judge",
        "tool_selection",
        "sql_generation",
        "table_usage",
        "health",
    ]
    assert (crit["trajectory_match"].score, crit["trajectory_match"].passed) == (1.0, True)
    assert crit["response_match"].score == 1.0
    for skipped, reason in [
        ("llm_judge", "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"),
        ("tool_selection", "the case sets no expected tool selection"),
        ("sql_generation", "the case does not say whether SQL is expected"),
        ("table_usage", "the case expects no tables"),
    ]:
        assert crit[skipped].skipped and crit[skipped].details["reason"] == reason
    assert crit["health"].passed and not crit["health"].skipped
    assert result.passed and result.score == 1.0
    assert (result.eval_id, result.name, result.session_id) == ("weather", "Tokyo weather", "s1")


def test_partial_trajectory_fails_the_match_and_partial_credit_is_a_named_criterion():
    case = EvalCase(eval_id="c", conversation=[inv(1, "q", [("a", {}), ("b", {}), ("c", {}), ("d", {})])])
    traj = Trajectory("s", [turn(0, [("a", {}), ("c", {}), ("b", {})])])
    for match_type in MatchType:  # 3 of 4 tools: no match type holds, whatever the threshold below 1
        config = EvalConfig(criteria={"trajectory_match": CriterionConfig(threshold=0.5, match_type=match_type)})
        tm = by_name(score_session(traj, case, config))["trajectory_match"]
        assert (tm.score, tm.passed, tm.details["measure"]) == (0.0, False, "adk_match_avg")
    detail = tm.details["per_turn"][0]
    assert detail["missing"] == [{"expected_index": 3, "name": "d", "args": {}}]
    assert (detail["recall"], detail["precision"], detail["satisfied"]) == (0.75, 1.0, False)

    graded = score_session(
        traj,
        case,
        EvalConfig(
            criteria={
                "trajectory_recall": CriterionConfig(threshold=0.7),
                "trajectory_precision": CriterionConfig(threshold=1.0),
                "trajectory_f1": CriterionConfig(threshold=0.9),
                "trajectory_in_order_score": CriterionConfig(threshold=0.5),
                "used_c": CriterionConfig(threshold=1.0, options={"kind": "single_tool_use", "tool_name": "c"}),
                "used_d": CriterionConfig(threshold=1.0, options={"kind": "single_tool_use", "tool_name": "d"}),
            }
        ),
    )
    crit = by_name(graded)
    assert {n: (c.score, c.passed, c.details["measure"]) for n, c in crit.items() if n != "health"} == {
        "trajectory_recall": (0.75, True, "recall"),
        "trajectory_precision": (1.0, True, "precision"),
        "trajectory_f1": (round(6 / 7, 6), False, "f1"),
        "trajectory_in_order_score": (round(4 / 7, 6), True, "in_order_f1"),  # a, then b or c: 2 of 4 and 2 of 3
        "used_c": (1.0, True, "single_tool_use"),
        "used_d": (0.0, False, "single_tool_use"),
    }

    hidden = score_session(
        traj,
        case,
        EvalConfig(
            criteria={"trajectory_match": CriterionConfig(match_type=MatchType.ANY_ORDER, options={"graded": True})}
        ),
    )
    assert by_name(hidden)["trajectory_match"].error.startswith(
        "options.graded: partial credit is a criterion of its own; use trajectory_in_order_score"
    )


def test_argument_mismatch_is_reported_per_argument():
    traj = Trajectory(
        "s", [turn(0, [("get_weather", {"city": "Kyoto"})], "The weather in Tokyo is 22°C with clear skies.")]
    )
    tm = by_name(score_session(traj, WEATHER, EvalConfig.default()))["trajectory_match"]
    assert tm.score == 0.0
    assert tm.details["per_turn"][0]["argument_mismatches"][0]["arguments"] == [
        {"key": "city", "expected": "Tokyo", "actual": "Kyoto", "status": "different"}
    ]


def test_multi_turn_scores_turn_by_turn_and_reports_the_gap():
    case = EvalCase(
        eval_id="mt",
        conversation=[
            inv(1, "Weather in Paris?", [("get_weather", {"city": "Paris"})]),
            inv(2, "Tomorrow?", [("get_forecast", {"city": "Paris", "days": 1})]),
            inv(3, "Umbrella?", [], response="Yes, bring an umbrella."),
        ],
    )
    traj = Trajectory(
        "s",
        [
            turn(0, [("get_weather", {"city": "Paris"})], "Sunny"),
            turn(1, [("get_forecast", {"city": "Paris", "days": "1"})], "Rain"),
        ],
    )
    crit = by_name(score_session(traj, case, EvalConfig.default()))
    tm = crit["trajectory_match"]
    # turns 1 and 2 match; the missing third turn expects no calls and made none → exact too
    assert tm.score == 1.0
    assert tm.details["turns"] == {"expected": 3, "actual": 2, "missing_turns": [2], "unscored_extra_turns": []}
    assert [t["turn_present"] for t in tm.details["per_turn"]] == [True, True, False]
    rm = crit["response_match"]
    assert (rm.score, rm.passed) == (0.0, False)  # the third turn never happened: empty answer
    assert rm.details["per_turn"][0]["actual"] is None


def test_extra_turns_are_reported_not_scored():
    traj = Trajectory(
        "s",
        [
            turn(0, [("get_weather", {"city": "Tokyo"})], "The weather in Tokyo is 22°C with clear skies."),
            turn(1, [("other", {})], "more"),
        ],
    )
    tm = by_name(score_session(traj, WEATHER, EvalConfig.default()))["trajectory_match"]
    assert tm.score == 1.0 and tm.details["turns"]["unscored_extra_turns"] == [1]


def test_seed_checks_tool_selection_sql_and_tables():
    case = EvalCase(
        eval_id="rev",
        conversation=[
            inv(
                1,
                "Show me the top 10 users by revenue",
                [("call_db_agent", {"question": "IGNORE"})],
                expected_tool_selection="call_db_agent",
                expected_sql=True,
                expected_tables=["user_revenue_table"],
            )
        ],
    )
    db_result = json.dumps(
        {"sql": "SELECT user, SUM(rev) FROM `proj.ds.user_revenue_table` GROUP BY user LIMIT 10", "rows": 10}
    )
    traj = Trajectory(
        "s",
        [
            turn(
                0,
                [
                    ActualToolCall(name="call_db_agent", args={"question": "top users"}, result=db_result),
                    ActualToolCall(name="run_query", args={"sql": "SELECT 1 FROM dual"}, depth=1),
                ],
                "Here are the top 10 users.",
            )
        ],
    )
    crit = by_name(score_session(traj, case, EvalConfig.default()))
    assert crit["tool_selection"].score == 1.0
    assert crit["tool_selection"].details["per_turn"][0]["actual_tool"] == "call_db_agent"
    assert crit["tool_selection"].details["measure"] == "first_tool_match"
    assert crit["sql_generation"].score == 1.0
    assert crit["sql_generation"].details["per_turn"][0]["sql"] == [
        "SELECT user, SUM(rev) FROM `proj.ds.user_revenue_table` GROUP BY user LIMIT 10",
        "SELECT 1 FROM dual",
    ]
    table = crit["table_usage"]
    assert (table.score, table.details["per_turn"][0]["found"]) == (1.0, ["user_revenue_table"])
    assert table.details["per_turn"][0]["actual_tables"] == ["proj.ds.user_revenue_table", "dual"]
    # the sub-agent's run_query (depth 1) is not an extra call of the root agent
    tm = crit["trajectory_match"]
    assert tm.score == 1.0 and tm.details["per_turn"][0]["max_depth"] == 0


def test_sql_expected_but_not_generated_and_wrong_table():
    case = EvalCase(
        eval_id="x",
        conversation=[
            inv(
                1,
                "q",
                expected_tool_selection="call_db_agent",
                expected_sql=False,
                expected_tables=["orders", "customers"],
            )
        ],
    )
    traj = Trajectory("s", [turn(0, [("call_ds_agent", {})], "```sql\nselect * from orders\n```")])
    crit = by_name(score_session(traj, case, EvalConfig.default()))
    assert crit["tool_selection"].score == 0.0
    assert crit["sql_generation"].score == 0.0 and crit["sql_generation"].details["per_turn"][0]["sql_generated"]
    assert crit["table_usage"].score == 0.5 and crit["table_usage"].details["per_turn"][0]["missing"] == ["customers"]
    assert crit["trajectory_match"].skipped


def test_response_methods_and_bad_regex_is_an_error_that_fails_the_case():
    traj = Trajectory("s", [turn(0, [("get_weather", {"city": "Tokyo"})], "It is 22°C in Tokyo, with clear skies!")])

    def run(**options):
        cfg = EvalConfig(criteria={"response_match": CriterionConfig(threshold=0.7, options=options)})
        return score_session(traj, WEATHER, cfg)

    rouge = by_name(run())["response_match"]
    # reference 10 tokens, candidate 9, overlap 8 (is, 22, c, in, tokyo, with, clear, skies): F = 16/19
    assert rouge.score == round(16 / 19, 6)
    assert by_name(run(method="contains"))["response_match"].score == 0.0
    assert by_name(run(method="regex", pattern=r"\d+°C"))["response_match"].score == 1.0
    bad = run(method="regex", pattern="([")
    assert by_name(bad)["response_match"].error.startswith("invalid regex pattern '([':")
    assert not bad.passed
    unknown = by_name(run(method="bleu"))["response_match"]
    assert (
        unknown.error
        == "options.method: unknown response method 'bleu'; expected one of rouge1, adk_rouge1, exact, contains, regex"
    )


def test_unknown_criterion_is_an_error_and_options_kind_reuses_a_metric():
    traj = Trajectory(
        "s", [turn(0, [("get_weather", {"city": "Tokyo"})], "The weather in Tokyo is 22°C with clear skies.")]
    )
    cfg = EvalConfig(
        criteria={
            "trajectory_macth": CriterionConfig(),
            "response_exact": CriterionConfig(threshold=1.0, options={"kind": "response_match", "method": "exact"}),
        }
    )
    result = score_session(traj, WEATHER, cfg)
    crit = by_name(result)
    assert crit["trajectory_macth"].error.startswith("unknown criterion 'trajectory_macth'")
    assert crit["response_exact"].score == 1.0 and crit["response_exact"].details["kind"] == "response_match"
    assert not result.passed and result.score == 0.5


def test_disabled_criteria_are_not_reported():
    cfg = EvalConfig(
        criteria={"trajectory_match": CriterionConfig(enabled=False), "health": CriterionConfig(enabled=False)}
    )
    result = score_session(Trajectory("s"), WEATHER, cfg)
    assert result.criterion_results == [] and result.score == 0.0
    assert result.verdict == "not_evaluated" and not result.passed  # nothing checked is no PASS


def test_health_limit_fails_the_case_but_not_the_score():
    traj = Trajectory(
        "s", [turn(0, [("get_weather", {"city": "Tokyo"})] * 3, "The weather in Tokyo is 22°C with clear skies.")]
    )
    cfg = EvalConfig(
        criteria={
            "trajectory_match": CriterionConfig(match_type=MatchType.IN_ORDER),
            "health": CriterionConfig(threshold=1.0, options={"max_repeated_calls": 1}),
        }
    )
    result = score_session(traj, WEATHER, cfg)
    crit = by_name(result)
    assert crit["trajectory_match"].passed
    assert (crit["health"].passed, crit["health"].score) == (False, 0.0)
    assert crit["health"].details["violations"][0]["reason"] == "repeated_calls = 2 exceeds 1"
    assert not result.passed and result.score == 1.0


def test_unmatched_session_gets_health_only():
    traj = Trajectory("s9", [turn(0, [("x", {})], "ok")])
    result = score_session(traj, None, EvalConfig.default())
    assert [c.criterion for c in result.criterion_results] == ["health"]
    assert (result.eval_id, result.passed, result.score, result.session_id) == ("", False, 0.0, "s9")


def test_llm_judge_through_a_real_endpoint_and_failure_is_not_evaluated():
    scores = json.dumps({"scores": {"correctness": {"score": 4, "reason": "close"}}})
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": scores}}]}).encode()
    traj = Trajectory("s", [turn(0, [("get_weather", {"city": "Tokyo"})], "Sunny in Tokyo")])
    with FakeLLM([(200, body), (500, b"down")]) as llm:
        cfg = EvalConfig(criteria={"llm_judge": CriterionConfig(threshold=0.7, options={"base_url": llm.url})})
        judge = Judge.from_config(cfg.criteria["llm_judge"], cache=LRUCache())
        ok = by_name(score_session(traj, WEATHER, cfg, judge=judge))["llm_judge"]
        judge.max_retries, judge.sleep = 0, lambda s: None
        traj2 = Trajectory("s2", [turn(0, [], "Something else")])
        failed = score_session(traj2, WEATHER, cfg, judge=judge)
    assert (ok.score, ok.passed) == (0.75, True)
    assert ok.details["per_turn"][0]["rubrics"]["correctness"]["reason"] == "close"
    fj = by_name(failed)["llm_judge"]
    # Our judge failing is not the agent failing: not evaluated with the reason, never a FAIL.
    assert fj.error.startswith("turn 0: HTTP 500 from ") and fj.skipped and fj.details["judge"] == "unavailable"
    assert failed.verdict == "not_evaluated"
    assert (
        "Reference answer:\nThe weather in Tokyo is 22°C with clear skies."
        in llm.requests[0]["body"]["messages"][1]["content"]
    )


def test_rubric_based_alias_uses_the_judge():
    cfg = EvalConfig(criteria={"rubric_based": CriterionConfig(rubrics=[Rubric(name="clarity", description="clear?")])})
    result = score_session(Trajectory("s"), WEATHER, cfg)
    assert by_name(result)["rubric_based"].skipped


def test_build_report_summary_and_stats():
    good = Trajectory(
        "a", [turn(0, [("get_weather", {"city": "Tokyo"})], "The weather in Tokyo is 22°C with clear skies.")]
    )
    bad = Trajectory("b", [turn(0, [("get_weather", {"city": "Osaka"})], "No idea")])
    config = EvalConfig(
        criteria={
            "trajectory_match": CriterionConfig(threshold=0.8),
            "response_match": CriterionConfig(threshold=0.7),
            "llm_judge": CriterionConfig(options={"api_key": "sk-secret"}),
        }
    )
    results = [
        score_session(good, WEATHER, config),
        score_session(bad, WEATHER, config),
        score_session(bad, None, config),
    ]
    report = build_report(results, "weather_set", config, eval_set_name="Weather")
    s = report.summary
    assert (s.total_cases, s.passed_cases, s.failed_cases, s.pass_rate) == (2, 1, 1, 0.5)
    assert s.avg_score == pytest.approx(0.5, abs=1e-6)
    tm = s.criterion_stats["trajectory_match"]
    assert (tm.evaluated, tm.passed, tm.skipped, tm.pass_rate, tm.avg_score) == (2, 1, 0, 0.5, 0.5)
    assert (s.criterion_stats["llm_judge"].skipped, s.criterion_stats["llm_judge"].evaluated) == (2, 0)
    assert report.config_used["criteria"]["llm_judge"]["options"]["api_key"] == "***"
    assert len(report.results) == 2
    everything = build_report(results, "weather_set", config, include_unmatched=True)
    assert (everything.summary.total_cases, everything.summary.passed_cases) == (3, 1)
    empty = build_report([], "none", config)
    assert (empty.summary.total_cases, empty.summary.pass_rate, empty.summary.avg_score) == (0, 0.0, 0.0)
