from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.metrics.alignment import _blocks, align
from otel_eval.models.evalset import ExpectedToolCall, MatchType
from otel_eval.trajectory import ActualToolCall


def E(name, **args):
    return ExpectedToolCall(name=name, args=args)


def A(name, error=None, group=None, step=None, **args):
    return ActualToolCall(name=name, args=args, error=error, group=group, step=step)


def test_identical_trajectories_satisfy_every_mode():
    al = align([E("search", q="x"), E("book", id=1)], [A("search", q="x"), A("book", id="1")])
    assert (al.exact_match, al.in_order_match, al.any_order_match) == (True, True, True)
    assert (al.precision, al.recall, al.f1) == (1.0, 1.0, 1.0)
    assert al.subset and al.superset


def test_swapped_order_is_any_order_but_not_in_order():
    al = align([E("a"), E("b")], [A("b"), A("a")])
    assert (al.exact_match, al.in_order_match, al.any_order_match) == (False, False, True)
    assert al.matched_in_order == 1
    assert al.in_order_recall == 0.5
    assert al.in_order_f1 == 0.5  # P = R = 1/2
    assert al.f1 == 1.0
    diff = al.diff()
    assert [m["in_order"] for m in diff["matched"]].count(False) == 1
    assert len(diff["out_of_order"]) == 1


def test_extras_allowed_by_in_order_but_not_exact_and_lower_precision():
    al = align([E("a"), E("c")], [A("a"), A("b"), A("c")])
    assert (al.exact_match, al.in_order_match, al.any_order_match) == (False, True, True)
    assert al.precision == pytest.approx(2 / 3)
    assert al.recall == 1.0
    assert al.f1 == pytest.approx(0.8)
    assert al.in_order_f1 == pytest.approx(0.8)
    assert al.diff()["extra"] == [{"actual_index": 1, "name": "b", "args": {}}]
    assert not al.subset and al.superset


def test_three_of_four_tools_give_recall_075():
    al = align([E("a"), E("b"), E("c"), E("d")], [A("a"), A("b"), A("c")])
    assert al.recall == 0.75
    assert al.precision == 1.0
    assert al.in_order_recall == 0.75
    assert al.in_order_f1 == pytest.approx(6 / 7)
    assert not any(al.satisfies(m) for m in MatchType)  # a missing call fails every match type
    assert al.diff()["missing"] == [{"expected_index": 3, "name": "d", "args": {}}]
    assert al.subset and not al.superset


def test_duplicates_count_as_often_as_they_occur():
    two_expected = [E("search", q="x"), E("search", q="x")]
    once = align(two_expected, [A("search", q="x")])
    assert once.matched == 1 and once.recall == 0.5 and not once.any_order_match
    twice = align([E("search", q="x")], [A("search", q="x"), A("search", q="x")])
    assert twice.matched == 1 and twice.precision == 0.5 and twice.in_order_match and not twice.exact_match


def test_arguments_decide_matching_unless_check_args_is_off():
    al = align([E("weather", city="Paris")], [A("weather", city="Rome")])
    assert al.matched == 0
    mismatch = al.diff()["argument_mismatches"]
    assert mismatch == [
        {
            "name": "weather",
            "expected_index": 0,
            "actual_index": 0,
            "arguments": [{"key": "city", "expected": "Paris", "actual": "Rome", "status": "different"}],
        }
    ]
    assert align([E("weather", city="Paris")], [A("weather", city="Rome")], check_args=False).exact_match


def test_ignore_arguments_and_argument_options():
    assert align([E("run", sql="IGNORE", limit=10)], [A("run", sql="SELECT 1", limit="10")]).exact_match
    al = align([E("s", q="x")], [A("s", q="x", page=2)], arg_options={"args_mode": "subset"})
    assert al.exact_match


def test_maximum_matching_is_not_fooled_by_greedy_choices():
    # The first actual call could match either expected call; a greedy pass would take the wrong one.
    expected = [E("f", a="IGNORE"), E("f", a=1)]
    actual = [A("f", a=1), A("f", a=2)]
    assert align(expected, actual).matched == 2
    assert align(list(reversed(expected)), actual).matched == 2


def test_retried_call_is_a_retry_not_an_extra_call():
    al = align(
        [E("query", sql="SELECT 1")], [A("query", error="syntax error", sql="SELEC 1"), A("query", sql="SELECT 1")]
    )
    assert al.exact_match
    assert al.precision == 1.0
    assert al.diff()["extra"] == []
    assert al.diff()["retries"] == [
        {
            "actual_index": 0,
            "name": "query",
            "args": {"sql": "SELEC 1"},
            "error": "syntax error",
            "retried_by": 1,
            "retry_succeeded": True,
        }
    ]


def test_failed_call_without_retry_still_counts():
    al = align([E("a")], [A("b", error="boom"), A("a")])
    assert al.retried == {} and al.diff()["retries"] == []
    assert al.precision == 0.5 and not al.exact_match and al.in_order_match


def test_parallel_group_is_unordered_for_exact_and_in_order():
    expected = [E("plan"), E("weather", city="Paris"), E("weather", city="Rome"), E("answer")]
    actual = [A("plan"), A("weather", group="g1", city="Rome"), A("weather", group="g1", city="Paris"), A("answer")]
    al = align(expected, actual)
    assert al.exact_match and al.in_order_match
    # Without the group, the swapped start order is an order error.
    ungrouped = [A("plan"), A("weather", city="Rome"), A("weather", city="Paris"), A("answer")]
    assert not align(expected, ungrouped).exact_match
    assert align(expected, ungrouped).matched_in_order == 3


def test_group_does_not_reorder_across_groups():
    expected = [E("a"), E("b")]
    actual = [A("b", group="g1"), A("a", group="g2")]
    assert not align(expected, actual).in_order_match


def test_first_call_only_compares_only_the_first_expected_call_too():
    # Big Sky's matchToolCall: tool_calls[0] of the example against tool_calls[0] of the run.
    al = align([E("get_weather"), E("get_weather")], [A("get_weather")], first_call_only=True)
    assert al.exact_match and len(al.expected) == 1


def test_first_call_only_compares_the_first_effective_call():
    al = align([E("call_db_agent")], [A("call_db_agent"), A("call_ds_agent")], first_call_only=True)
    assert al.exact_match and [c.name for c in al.actual] == ["call_db_agent"]


def test_first_call_only_with_no_call_expected_counts_a_first_call_with_arguments_only():
    # Big Sky's matchToolCall compares the first call's arguments with {} when no call is expected.
    quiet = align([], [A("get_time"), A("get_weather", city="Paris")], first_call_only=True)
    assert quiet.exact_match and quiet.actual == []
    assert quiet.summary()["passed_over"] == {"name": "get_time", "args": {}}
    assert not align([], [A("get_weather", city="Paris")], first_call_only=True).exact_match
    assert align([], [A("get_weather", city="Paris")], first_call_only=True, check_args=False).exact_match
    assert not align([], [A("get_time")]).exact_match  # only with first_call_only
    assert "passed_over" not in align([], []).summary()


def test_single_tool_use_and_empty_cases():
    al = align([], [A("a")])
    assert al.single_tool_use("a") and not al.single_tool_use("b")
    assert (al.precision, al.recall, al.f1) == (0.0, 1.0, 0.0)
    # An explicit empty expectation means "no tool": any call fails every match type.
    assert not any(al.satisfies(m) for m in MatchType)
    empty = align([], [])
    assert empty.exact_match and empty.f1 == 1.0
    none_done = align([E("a")], [])
    assert (none_done.precision, none_done.recall, none_done.f1) == (1.0, 0.0, 0.0)


def test_failed_attempt_listed_in_the_golden_pairs_with_it():
    attempt, fixed = A("weather", error="unknown city", step=0, city="Berln"), A("weather", step=1, city="Berlin")
    both = align([E("weather", city="Berln"), E("weather", city="Berlin")], [attempt, fixed])
    assert both.exact_match and both.diff()["retries"] == [] and both.precision == 1.0
    only_fix = align([E("weather", city="Berlin")], [attempt, fixed])
    assert only_fix.exact_match and only_fix.neutral == [0]
    diff = only_fix.diff()
    assert (diff["missing"], diff["extra"], [r["actual_index"] for r in diff["retries"]]) == ([], [], [0])


def test_same_arguments_retry_pairs_the_later_call_and_sets_the_attempt_aside():
    # Either call could pair with the expectation; pairing the successful one leaves nothing extra.
    al = align(
        [E("weather", city="Paris")],
        [A("weather", error="timeout", step=0, city="Paris"), A("weather", step=1, city="Paris")],
    )
    assert al.exact_match and al.pairs == [(0, 1)] and al.neutral == [0]


def test_calls_of_one_model_step_are_never_retries_of_each_other():
    paris = A("weather", error="unknown city", group="r1", step=0, city="Paris")
    london = A("weather", group="r1", step=0, city="London")
    al = align([E("weather", city="London")], [paris, london])
    assert al.retried == {}
    assert not al.exact_match and al.diff()["extra"][0]["args"] == {"city": "Paris"}
    assert align([E("weather", city="Paris"), E("weather", city="London")], [paris, london]).exact_match
    # The same two calls from two model steps: the failed one was retried.
    later = A("weather", step=1, city="London")
    assert align([E("weather", city="London")], [A("weather", error="x", step=0, city="Paris"), later]).exact_match


def test_unretried_attempt_and_an_unexpected_call_still_count():
    al = align([E("a"), E("c")], [A("a", step=0), A("drop_table", step=1), A("c", step=2)])
    assert al.in_order_match and not al.exact_match
    assert al.diff()["extra"] == [{"actual_index": 1, "name": "drop_table", "args": {}}]


def test_no_call_shown_as_both_missing_and_retried():
    # The golden expects the failed attempt's arguments; the agent's later call differs.
    al = align(
        [E("weather", city="Berln")],
        [A("weather", error="unknown", step=0, city="Berln"), A("weather", step=1, city="Berlin")],
    )
    diff = al.diff()
    assert diff["missing"] == [] and diff["retries"] == []
    assert [m["actual_index"] for m in diff["matched"]] == [0]
    assert diff["extra"] == [{"actual_index": 1, "name": "weather", "args": {"city": "Berlin"}}]


# --- properties ---------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c"])
ARGS = st.fixed_dictionaries({}, optional={"x": st.sampled_from([1, 2, "IGNORE"])})
EXPECTED = st.lists(st.builds(lambda n, a: E(n, **a), NAMES, ARGS), max_size=6)
ACTUAL = st.lists(
    st.builds(
        lambda n, a, g, err: A(n, group=g, error=err, **{k: v for k, v in a.items() if v != "IGNORE"}),
        NAMES,
        ARGS,
        st.sampled_from([None, None, "g1", "g2"]),
        st.sampled_from([None, None, None, "boom"]),
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(EXPECTED, ACTUAL, st.randoms(use_true_random=False))
def test_scores_bounded_and_modes_nested_and_order_of_expected_irrelevant(expected, actual, rnd):
    al = align(expected, actual)
    for value in (al.precision, al.recall, al.f1, al.in_order_f1, al.in_order_recall, al.in_order_precision):
        assert 0.0 <= value <= 1.0
    if al.exact_match:
        assert al.in_order_match
    if al.in_order_match:
        assert al.any_order_match
    assert al.matched_in_order <= al.matched
    shuffled = list(expected)
    rnd.shuffle(shuffled)
    other = align(shuffled, actual)
    assert (other.matched, other.precision, other.recall, other.f1, other.any_order_match) == (
        al.matched,
        al.precision,
        al.recall,
        al.f1,
        al.any_order_match,
    )


@settings(max_examples=100, deadline=None)
@given(ACTUAL)
def test_a_trajectory_matches_itself_exactly(actual):
    # A parallel group counts at its first member's position (its members may start later).
    effective = align([], actual).actual
    expected = [E(effective[i].name, **effective[i].args) for block in _blocks(effective) for i in block]
    assert align(expected, actual).exact_match


STEPPED = st.lists(
    st.builds(
        lambda n, a, s, err: A(n, step=s, error=err, **{k: v for k, v in a.items() if v != "IGNORE"}),
        NAMES,
        ARGS,
        st.integers(0, 3),
        st.sampled_from([None, None, "boom"]),
    ),
    max_size=6,
).map(lambda calls: sorted(calls, key=lambda c: c.step))


@settings(max_examples=200, deadline=None)
@given(EXPECTED, STEPPED)
def test_each_call_is_shown_once_and_only_retried_attempts_are_set_aside(expected, actual):
    al = align(expected, actual)
    diff = al.diff()
    matched = [m["actual_index"] for m in diff["matched"]]
    extra = [e["actual_index"] for e in diff["extra"]]
    retried = [r["actual_index"] for r in diff["retries"]]
    assert sorted(matched + extra + retried) == list(range(len(actual)))
    assert sorted(
        [m["expected_index"] for m in diff["matched"]] + [m["expected_index"] for m in diff["missing"]]
    ) == list(range(len(expected)))
    for i in retried:  # a failed call, and a later model step called the same tool
        assert actual[i].error and any(c.name == actual[i].name and c.step > actual[i].step for c in actual[i + 1 :])
    # Retried attempts are set aside only when they pair with nothing: never "not called" as well.
    assert not any(
        e.name == actual[i].name and al.policy.equal(e.name, e.args, actual[i].args)
        for i in retried
        for e in (expected[m["expected_index"]] for m in diff["missing"])
    )


@settings(max_examples=200, deadline=None)
@given(EXPECTED, ACTUAL, st.sampled_from(list(MatchType)))
def test_without_groups_retries_or_empty_expectations_the_alignment_is_adks_rule(expected, actual, match_type):
    from otel_eval.metrics.alignment import adk_match

    plain = [A(c.name, **c.args) for c in actual]
    expected = [e for e in expected if e.args.get("x") != "IGNORE"]
    al = align(expected, plain, parallel_groups=False, collapse_retries=False, compare=lambda e, a: a.args == e.args)
    if expected or match_type is MatchType.EXACT:
        assert al.satisfies(match_type) == adk_match(expected, plain, match_type)


@settings(max_examples=200, deadline=None)
@given(EXPECTED, STEPPED)
def test_exact_holds_when_setting_aside_some_retried_attempts_leaves_exactly_the_expected_calls(expected, actual):
    from itertools import combinations

    from otel_eval.metrics.alignment import retried_by

    plain = [A(c.name, error=c.error, step=c.step, **c.args) for c in actual]  # no groups: order is strict
    al = align(expected, plain)
    candidates = sorted(retried_by(plain))
    policy = al.policy

    def pairwise(kept):
        return len(kept) == len(expected) and all(
            e.name == a.name and policy.equal(e.name, e.args, a.args) for e, a in zip(expected, kept)
        )

    brute = any(
        pairwise([c for i, c in enumerate(plain) if i not in aside])
        for k in range(len(candidates) + 1)
        for aside in combinations(candidates, k)
    )
    assert al.exact_match == brute
