"""Trajectory verdicts mean what the match type says (issue 10, rules 1, 2, 3, 5 and 7).

Each rule on real spans (the real-client captures, or spans made by the real OTel SDK the way a
GenAI-instrumented agent makes them), and differential tests against google-adk's own
``TrajectoryEvaluator`` (the ``reference_oracle`` fixture) on generated trajectories.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval.mapping import map_spans
from otel_eval.models.evalset import (
    CriterionConfig,
    EvalCase,
    EvalConfig,
    ExpectedToolCall,
    Invocation,
    MatchType,
    MessageContent,
)
from otel_eval.otlp_json import read_trace_file
from otel_eval.report import trajectory_rows
from otel_eval.scoring import score_session
from otel_eval.spans import from_otlp, from_sdk_span
from otel_eval.trajectory import ActualToolCall, Trajectory, Turn, build_trajectory
from tests.paths import FIXTURES

Call = tuple[str, dict[str, Any]]


# --- helpers ---------------------------------------------------------------------------------------


def case_of(*expected: list[Call] | None) -> EvalCase:
    """A case with one invocation per argument: None = not said, [] = no tool, else these calls."""
    return EvalCase(
        eval_id="case",
        conversation=[
            Invocation(
                invocation_id=f"inv-{i}",
                user_content=MessageContent.user(f"question {i}"),
                expected_tool_trajectory=None
                if calls is None
                else [ExpectedToolCall(name=n, args=a) for n, a in calls],
            )
            for i, calls in enumerate(expected)
        ],
    )


def criterion(trajectory: Trajectory, case: EvalCase, name: str = "trajectory_match", **cfg: Any):
    """The named criterion's result (the default config when nothing else is asked), and the session's."""
    use_default = not cfg and name == "trajectory_match"
    config = EvalConfig.default() if use_default else EvalConfig(criteria={name: CriterionConfig(**cfg)})
    result = score_session(trajectory, case, config)
    return next(c for c in result.criterion_results if c.criterion == name), result


def captured(framework: str, scenario: str) -> Trajectory:
    spans = [
        s
        for r in read_trace_file(str(FIXTURES / f"realclients/{framework}.otlp.json"))
        for s in from_otlp(r.resource_spans).spans
    ]
    session = f"{framework}-{scenario}"
    mine = [m for m in map_spans(spans) if m.session_id == session]
    assert mine, session
    return build_trajectory(session, mine)


def genai_agent(steps: list[list[tuple[str, dict[str, Any], str | None]]], question: str = "q") -> Trajectory:
    """One agent turn as the OTel GenAI instrumentations record it, made with the real SDK: each
    step is one model response (a chat span asking for these tool calls), then one tool span per
    call (status ERROR with the given message when the call failed); a last chat span answers."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.verdicts")
    ids = itertools.count(1)
    session = {"session.id": "verdicts"}
    with tracer.start_as_current_span(
        "invoke_agent assistant",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "assistant",
            **session,
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
        },
    ):
        for step in steps:
            requested = [(f"call_{next(ids)}", name, args, error) for name, args, error in step]
            with tracer.start_as_current_span(
                "chat model",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "model",
                    **session,
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {"type": "tool_call", "id": cid, "name": name, "arguments": args}
                                    for cid, name, args, _ in requested
                                ],
                            }
                        ]
                    ),
                },
            ):
                pass
            for cid, name, args, error in requested:
                with tracer.start_as_current_span(
                    f"execute_tool {name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        **session,
                        "gen_ai.tool.call.id": cid,
                        "gen_ai.tool.call.arguments": json.dumps(args),
                    },
                ) as span:
                    if error:
                        span.set_status(Status(StatusCode.ERROR, error))
        with tracer.start_as_current_span(
            "chat model",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "model",
                **session,
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
                ),
            },
        ):
            pass
    provider.shutdown()
    spans = [from_sdk_span(s) for s in exporter.get_finished_spans()]
    return build_trajectory("verdicts", map_spans(spans))


def ok(name: str, **args: Any) -> tuple[str, dict[str, Any], None]:
    return name, args, None


def failed(name: str, error: str, **args: Any) -> tuple[str, dict[str, Any], str]:
    return name, args, error


def as_oracle_calls(calls: list[Any]) -> list[dict[str, Any]]:
    return [{"name": c.name, "args": c.args} for c in calls]


# --- rule 1: EXACT means exact ---------------------------------------------------------------------

WORKFLOW = [
    ("search_flights", {"to": "Lisbon"}),
    ("check_seat", {"flight": "TP1"}),
    ("book", {"flight": "TP1"}),
    ("send_receipt", {"email": "a@b.c"}),
]


def test_missing_one_of_four_tools_fails_exact_at_the_default_threshold():
    trajectory = genai_agent([[ok(n, **a)] for n, a in WORKFLOW[:3]])
    tm, result = criterion(trajectory, case_of(WORKFLOW))
    assert (tm.score, tm.passed, tm.threshold) == (0.0, False, 0.8)
    assert tm.details["per_turn"][0]["missing"] == [
        {"expected_index": 3, "name": "send_receipt", "args": {"email": "a@b.c"}}
    ]
    assert not result.passed


def test_an_unexpected_destructive_call_between_expected_ones_fails_exact_but_not_in_order():
    steps = [
        [ok(WORKFLOW[0][0], **WORKFLOW[0][1])],
        [ok(WORKFLOW[1][0], **WORKFLOW[1][1])],
        [ok("delete_account", user="alice")],
        [ok(WORKFLOW[2][0], **WORKFLOW[2][1])],
        [ok(WORKFLOW[3][0], **WORKFLOW[3][1])],
    ]
    trajectory = genai_agent(steps)
    exact, result = criterion(trajectory, case_of(WORKFLOW))
    assert (exact.score, exact.passed) == (0.0, False) and not result.passed
    assert [r["kind"] for r in trajectory_rows(exact.details["per_turn"][0])] == ["match"] * 4 + ["extra"]
    in_order, _ = criterion(trajectory, case_of(WORKFLOW), threshold=0.8, match_type=MatchType.IN_ORDER)
    assert (in_order.score, in_order.passed) == (1.0, True)
    assert criterion(trajectory, case_of(WORKFLOW), threshold=0.8, match_type=MatchType.ANY_ORDER)[0].passed


def test_the_agent_doing_exactly_the_workflow_passes_every_match_type():
    trajectory = genai_agent([[ok(n, **a)] for n, a in WORKFLOW])
    for match_type in MatchType:
        assert criterion(trajectory, case_of(WORKFLOW), match_type=match_type)[0].score == 1.0


def test_calls_of_one_model_response_are_an_unordered_group_for_trajectory_match_only():
    trajectory = captured("openai_otel_genai", "s2-multi-tool")  # Paris, London asked for in one response
    swapped = [("get_weather", {"city": "London"}), ("get_weather", {"city": "Paris"})]
    for match_type in (MatchType.EXACT, MatchType.IN_ORDER):
        assert criterion(trajectory, case_of(swapped), match_type=match_type)[0].score == 1.0
    # ADK's own evaluator compares in recorded order, and the ADK-named criterion is its number.
    adk, _ = criterion(trajectory, case_of(swapped), name="tool_trajectory_avg_score", threshold=1.0)
    assert adk.score == 0.0


def test_multi_turn_score_is_the_mean_of_per_turn_verdicts():
    trajectory = captured("langgraph_openinference", "s3-followup")
    right = [("get_weather", {"city": "Paris"})]
    wrong = [("get_forecast", {"city": "Paris", "days": 2})]
    tm, result = criterion(trajectory, case_of(right, wrong))
    assert (tm.score, tm.passed) == (0.5, False)
    assert [t["score"] for t in tm.details["per_turn"]] == [1.0, 0.0]
    passing, _ = criterion(trajectory, case_of(right, wrong), threshold=0.5)
    assert passing.passed


# --- rule 2: partial credit is named ------------------------------------------------------------------


def test_every_trajectory_criterion_names_its_measure():
    trajectory = genai_agent([[ok(n, **a)] for n, a in WORKFLOW[:3]])
    config = EvalConfig(
        criteria={
            "trajectory_match": CriterionConfig(),
            "tool_trajectory_avg_score": CriterionConfig(match_type=MatchType.IN_ORDER),
            "trajectory_precision": CriterionConfig(threshold=1.0),
            "trajectory_recall": CriterionConfig(threshold=0.75),
            "trajectory_f1": CriterionConfig(),
            "trajectory_in_order_score": CriterionConfig(),
            "booked": CriterionConfig(threshold=1.0, options={"kind": "single_tool_use", "tool_name": "book"}),
        }
    )
    crit = {c.criterion: c for c in score_session(trajectory, case_of(WORKFLOW), config).criterion_results}
    got = {n: (c.details["measure"], c.score, c.passed) for n, c in crit.items() if n != "health"}
    assert got == {
        "trajectory_match": ("adk_match_avg", 0.0, False),
        "tool_trajectory_avg_score": ("adk_match_avg", 0.0, False),
        "trajectory_precision": ("precision", 1.0, True),
        "trajectory_recall": ("recall", 0.75, True),
        "trajectory_f1": ("f1", round(6 / 7, 6), True),
        "trajectory_in_order_score": ("in_order_f1", round(6 / 7, 6), True),
        "booked": ("single_tool_use", 1.0, True),
    }
    for c in crit.values():
        if c.criterion != "health":
            assert all(turn["measure"] == c.details["measure"] for turn in c.details["per_turn"])
    assert crit["booked"].details["kind"] == "single_tool_use"


# --- rule 3: retries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["langgraph_openinference", "openai_otel_genai", "google_adk_legacy"])
def test_a_failed_call_retried_in_a_later_model_step_is_neither_expected_nor_extra(framework, reference_oracle):
    trajectory = captured(framework, "s5-tool-error")  # get_weather(Berln) fails; the model retries Berlin
    tm, result = criterion(trajectory, case_of([("get_weather", {"city": "Berlin"})]))
    assert (tm.score, tm.passed) == (1.0, True)
    turn = tm.details["per_turn"][0]
    assert (turn["missing"], turn["extra"]) == ([], [])
    assert [(r["args"], r["retry_succeeded"]) for r in turn["retries"]] == [({"city": "Berln"}, True)]
    assert [r["kind"] for r in trajectory_rows(turn)] == ["match", "retry"]
    # A golden listing the failed attempt and the corrected call, as the agent made them.
    both = [("get_weather", {"city": "Berln"}), ("get_weather", {"city": "Berlin"})]
    tm_both, _ = criterion(trajectory, case_of(both))
    assert tm_both.score == 1.0 and tm_both.details["per_turn"][0]["retries"] == []
    # google-adk counts the failed attempt as a call: its EXACT fails on the single expected call.
    adk, _ = criterion(
        trajectory, case_of([("get_weather", {"city": "Berlin"})]), name="tool_trajectory_avg_score", threshold=1.0
    )
    oracle = reference_oracle.ask(
        {
            "op": "adk_trajectory",
            "match_type": "EXACT",
            "threshold": 1.0,
            "invocations": [
                {
                    "actual": as_oracle_calls(trajectory.calls),
                    "expected": [{"name": "get_weather", "args": {"city": "Berlin"}}],
                }
            ],
        }
    )
    assert adk.score == oracle["score"] == 0.0


def test_a_failed_and_a_successful_call_of_one_response_are_two_calls_not_a_retry():
    trajectory = genai_agent([[failed("get_weather", "unknown city", city="Paris"), ok("get_weather", city="London")]])
    assert [(c.args["city"], c.step, c.error is None) for c in trajectory.calls] == [
        ("Paris", 0, False),
        ("London", 0, True),
    ]
    both = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})]
    tm, _ = criterion(trajectory, case_of(both))
    assert (tm.score, tm.details["per_turn"][0]["retries"]) == (1.0, [])
    # Expecting London only: the failed Paris call is an extra call, never "retried".
    london, _ = criterion(trajectory, case_of([("get_weather", {"city": "London"})]))
    rows = trajectory_rows(london.details["per_turn"][0])
    assert london.score == 0.0
    assert [(r["kind"], (r["actual"] or {}).get("args")) for r in rows] == [
        ("match", {"city": "London"}),
        ("extra", {"city": "Paris"}),
    ]


def test_a_call_is_never_both_not_called_and_retried():
    trajectory = captured("openai_otel_genai", "s5-tool-error")
    # The golden expects the attempt's arguments only: it pairs with the failed attempt.
    tm, _ = criterion(trajectory, case_of([("get_weather", {"city": "Berln"})]))
    kinds = [r["kind"] for r in trajectory_rows(tm.details["per_turn"][0])]
    assert kinds == ["match", "extra"] and tm.score == 0.0
    for expected in ([("get_weather", {"city": "Berlin"})], [("get_weather", {"city": "Rome"})], []):
        turn = criterion(trajectory, case_of(expected))[0].details["per_turn"][0]
        retried = {r["actual_index"] for r in turn["retries"]}
        assert not retried & {m["actual_index"] for m in turn["argument_mismatches"]}
        assert not retried & {e["actual_index"] for e in turn["extra"]}
        assert not retried & {m["actual_index"] for m in turn["matched"]}


# --- rule 5: empty means none, absent means not checked -----------------------------------------------


def test_an_explicit_empty_expectation_fails_any_call_and_an_absent_one_is_skipped():
    trajectory = captured("langgraph_openinference", "s1-weather")  # calls get_weather(Tokyo)
    for match_type in MatchType:
        none_allowed, result = criterion(trajectory, case_of([]), match_type=match_type)
        assert (none_allowed.score, none_allowed.passed, none_allowed.skipped) == (0.0, False, False)
    quiet = Trajectory("q", [Turn(index=0, trace_id="t", final_response="hello")])
    assert criterion(quiet, case_of([]))[0].score == 1.0
    skipped, _ = criterion(trajectory, case_of(None))
    assert skipped.skipped and "does not say which tools" in skipped.details["reason"]
    assert criterion(trajectory, case_of(None), name="tool_trajectory_avg_score")[0].skipped


def test_only_the_turns_that_state_an_expectation_are_scored():
    trajectory = captured("openai_otel_genai", "s3-followup")  # get_weather(Paris); get_forecast(Paris, 1)
    tm, _ = criterion(trajectory, case_of(None, [("get_forecast", {"city": "Paris", "days": 1})]))
    assert tm.score == 1.0 and [t["turn"] for t in tm.details["per_turn"]] == [1]
    tm, _ = criterion(trajectory, case_of([], [("get_forecast", {"city": "Paris", "days": 1})]))
    assert tm.score == 0.5 and [t["score"] for t in tm.details["per_turn"]] == [0.0, 1.0]


# --- rule 7: tool_trajectory_avg_score is google-adk's number -----------------------------------------

NAMES = st.sampled_from(["a", "b", "c"])
ANY_VALUE = st.one_of(
    st.integers(-2, 2), st.sampled_from([0.5, 1.0, 2.0, -0.0, True, False]), st.sampled_from(["p", "q", "1", "01", ""])
)
"""Values where Python == and otel-eval's argument rule may disagree ("1" vs 1, True vs 1)."""
SAME_UNDER_BOTH = st.one_of(st.integers(-2, 2), st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from(["p", "q"]))
"""Values where both rules agree: numbers by value, non-numeric strings."""


@st.composite
def invocation(draw, values):
    args = st.dictionaries(st.sampled_from(["x", "y"]), values, max_size=2)
    expected = draw(st.lists(st.tuples(NAMES, args), max_size=4))
    actual = list(expected)
    for _ in range(draw(st.integers(0, 3))):  # drop, duplicate, insert, change arguments, swap
        edit = draw(st.sampled_from(["drop", "dup", "insert", "args", "swap"]))
        if edit == "insert" or not actual:
            actual.insert(draw(st.integers(0, len(actual))), (draw(NAMES), draw(args)))
            continue
        i = draw(st.integers(0, len(actual) - 1))
        if edit == "drop":
            actual.pop(i)
        elif edit == "dup":
            actual.insert(i, actual[i])
        elif edit == "args":
            actual[i] = (actual[i][0], draw(args))
        else:
            j = draw(st.integers(0, len(actual) - 1))
            actual[i], actual[j] = actual[j], actual[i]
    return expected, actual


def scored(
    invocations: list[tuple[list[Call], list[Call]]], name: str, match_type: str, check_args: bool, threshold: float
):
    case = case_of(*[expected for expected, _ in invocations])
    trajectory = Trajectory(
        "s",
        [
            Turn(index=i, trace_id=f"t{i}", calls=[ActualToolCall(name=n, args=a, turn=i) for n, a in actual])
            for i, (_, actual) in enumerate(invocations)
        ],
    )
    return criterion(
        trajectory, case, name=name, threshold=threshold, match_type=MatchType(match_type), check_args=check_args
    )[0]


def ask_adk(oracle, invocations, match_type: str, ignore_args: bool, threshold: float) -> dict[str, Any]:
    return oracle.ask(
        {
            "op": "adk_trajectory",
            "match_type": match_type,
            "ignore_args": ignore_args,
            "threshold": threshold,
            "invocations": [
                {
                    "expected": [{"name": n, "args": a} for n, a in expected],
                    "actual": [{"name": n, "args": a} for n, a in actual],
                }
                for expected, actual in invocations
            ],
        }
    )


THRESHOLDS = st.one_of(st.sampled_from([0.0, 0.5, 0.8, 1.0, 1 / 3, 2 / 3]), st.floats(0, 1))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(invocation(ANY_VALUE), min_size=1, max_size=3),
    st.sampled_from([m.value for m in MatchType]),
    st.booleans(),
    THRESHOLDS,
)
def test_tool_trajectory_avg_score_is_google_adks_number(
    reference_oracle, invocations, match_type, ignore_args, threshold
):
    ours = scored(invocations, "tool_trajectory_avg_score", match_type, not ignore_args, threshold)
    adk = ask_adk(reference_oracle, invocations, match_type, ignore_args, threshold)
    assert ours.score == adk["score"]
    assert [t["score"] for t in ours.details["per_turn"]] == adk["per_invocation"]
    assert ours.passed == (adk["status"] == "PASSED")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(invocation(SAME_UNDER_BOTH), min_size=1, max_size=3),
    st.sampled_from([m.value for m in MatchType]),
    st.booleans(),
)
def test_trajectory_match_agrees_with_adk_where_their_rules_coincide(
    reference_oracle, invocations, match_type, ignore_args
):
    """No parallel groups, no failed calls, arguments equal under both rules: trajectory_match's
    per-invocation verdicts are ADK's. The one stated difference: an explicit empty expectation
    under IN_ORDER / ANY_ORDER, which ADK passes whatever was called and otel-eval fails on any call."""
    ours = scored(invocations, "trajectory_match", match_type, not ignore_args, 0.8)
    adk = ask_adk(reference_oracle, invocations, match_type, ignore_args, 0.8)
    for (expected, actual), mine, theirs in zip(
        invocations, [t["score"] for t in ours.details["per_turn"]], adk["per_invocation"]
    ):
        if not expected and actual and match_type != "EXACT":
            assert (mine, theirs) == (0.0, 1.0)
        else:
            assert mine == theirs


# --- rule 2 and 3 as a user sees them: report --session and the dashboard -----------------------------


def test_report_and_dashboard_name_each_measure_and_show_a_retry_once(tmp_path):
    import re

    from otel_eval.read.database import open_database
    from otel_eval.read.sessions import session_overview
    from otel_eval.ui.markup import Links
    from otel_eval.ui.session_page import session_page
    from tests.test_cli import GOLDEN, otel_eval

    config = tmp_path / "criteria.toml"
    config.write_text(
        '[criteria.trajectory_match]\nthreshold = 0.8\n\n'
        '[criteria.trajectory_recall]\nthreshold = 1.0\n\n'
        '[criteria.tool_trajectory_avg_score]\nthreshold = 1.0\n'
    )
    db = tmp_path / "e.db"
    run = otel_eval(
        "evaluate",
        FIXTURES / "realclients" / "openai_otel_genai.otlp.json",
        "--db",
        db,
        "--config",
        config,
        *[arg for g in GOLDEN for arg in ("--golden", g)],
    )
    assert run.returncode == 0, run.stderr
    session = "openai_otel_genai-s5-tool-error"
    report = otel_eval("report", "--db", db, "--session", session)
    assert report.returncode == 0, report.stderr
    lines = {line.split(":")[0].strip(): line for line in report.stdout.splitlines() if "measure=" in line}
    assert "pass score=1.00 threshold=0.8 measure=adk_match_avg (EXACT)" in lines["trajectory_match"]
    assert "measure=recall" in lines["trajectory_recall"]
    assert "fail score=0.00 threshold=1.0 measure=adk_match_avg (EXACT)" in lines["tool_trajectory_avg_score"]
    # trajectory_match and trajectory_recall share one alignment: one table; ADK's (no retries) has its own.
    assert report.stdout.count("turn 1: expected vs actual") == 2
    assert "not called" not in report.stdout
    assert report.stdout.count("failed (ValueError: Unknown city: 'Berln'") == 1

    conn = open_database(db)
    try:
        page = session_page(Links("/ui"), session_overview(conn, session), [], {})
    finally:
        conn.close()
    measures = dict(re.findall(r'data-criterion="(\w+)"><td>\w+</td>.*?<td class="measure">([^<]*)</td>', page))
    assert {k: measures[k] for k in ("trajectory_match", "trajectory_recall", "tool_trajectory_avg_score")} == {
        "trajectory_match": "adk_match_avg (EXACT)",
        "trajectory_recall": "recall",
        "tool_trajectory_avg_score": "adk_match_avg (EXACT)",
    }
    tables = re.findall(r'<table class="traj"[^>]*data-criterion="(\w+)"><caption>([^<]*)</caption>(.*?)</table>', page)
    assert [(name, caption) for name, caption, _ in tables] == [
        ("trajectory_match", "trajectory_match · turn 1 · adk_match_avg (EXACT) · score 1.00"),
        ("tool_trajectory_avg_score", "tool_trajectory_avg_score · turn 1 · adk_match_avg (EXACT) · score 0.00"),
    ]
    assert re.findall(r'data-kind="(\w+)"', tables[0][2]) == ["match", "retry"]
    assert re.findall(r'data-kind="(\w+)"', tables[1][2]) == ["match", "extra"]
