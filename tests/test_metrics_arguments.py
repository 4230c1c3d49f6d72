from __future__ import annotations

import pytest

from otel_eval.models.arguments import ArgumentPolicy, argument_diff, arguments_equal, values_equal
from otel_eval.models.evalset import ExpectedToolCall


def test_numbers_compare_across_int_float_and_numeric_strings():
    assert arguments_equal({"n": 1}, {"n": 1.0})
    assert arguments_equal({"n": 1}, {"n": "1"})
    assert arguments_equal({"n": "1.50"}, {"n": 1.5})
    assert arguments_equal({"n": 0.1}, {"n": "0.1"})
    assert not arguments_equal({"n": 1}, {"n": 2})
    assert not arguments_equal({"n": 1}, {"n": "one"})


def test_booleans_are_not_numbers():
    assert not values_equal(True, 1)
    assert values_equal(True, "true")
    assert not values_equal(False, "true")


def test_json_string_arguments_are_parsed_at_any_level():
    assert arguments_equal({"city": "Tokyo", "days": 3}, '{"city": "Tokyo", "days": "3"}')
    assert arguments_equal({"filter": {"a": 1, "b": [1, 2]}}, {"filter": '{"a": 1.0, "b": [1, 2]}'})
    assert not arguments_equal({"filter": {"a": 1}}, {"filter": '{"a": 2}'})


def test_ignore_value_matches_anything_including_absence():
    assert arguments_equal({"city": "Tokyo", "ts": "IGNORE"}, {"city": "Tokyo", "ts": 12345})
    assert arguments_equal({"city": "Tokyo", "ts": "IGNORE"}, {"city": "Tokyo"})
    assert arguments_equal({"q": {"k": "IGNORE", "v": 1}}, {"q": {"k": [1, 2], "v": 1}})


def test_nested_structures_are_compared_recursively():
    assert arguments_equal({"a": [{"x": 1}, {"y": [1, 2]}]}, {"a": [{"x": 1.0}, {"y": ["1", 2]}]})
    assert not arguments_equal({"a": [1, 2]}, {"a": [2, 1]})
    assert not arguments_equal({"a": [1, 2]}, {"a": [1, 2, 3]})
    assert not arguments_equal({"a": {"x": 1}}, {"a": {"x": 1, "y": 2}})
    assert arguments_equal({"a": {"x": 1}}, {"a": {"x": 1, "y": 2}}, mode="subset")


def test_modes():
    expected, actual = {"city": "Paris"}, {"city": "Paris", "units": "C"}
    assert not arguments_equal(expected, actual)  # exact: the extra key counts
    assert arguments_equal(expected, actual, mode="subset")
    assert not arguments_equal({"city": "Paris", "units": "C"}, {"city": "Paris"}, mode="subset")
    assert arguments_equal({"city": "Paris"}, {"city": "Rome"}, mode="ignore")
    with pytest.raises(ValueError, match="unknown argument mode 'fuzzy'"):
        arguments_equal({}, {}, mode="fuzzy")


def test_keys_restrict_the_comparison():
    assert arguments_equal({"q": "x", "ts": 1}, {"q": "x", "ts": 2, "extra": 3}, keys=["q"])
    assert not arguments_equal({"q": "x"}, {"q": "y"}, keys=["q"])


def test_case_and_whitespace_folding():
    assert not arguments_equal({"q": "New  York"}, {"q": "new york"})
    assert arguments_equal({"q": "New  York"}, {"q": "new york "}, fold_case=True, fold_whitespace=True)
    assert not arguments_equal({"q": "New  York"}, {"q": "new york"}, fold_case=True)


def test_argument_diff_names_every_key_with_its_status():
    diff = argument_diff({"a": 1, "b": "x", "c": "IGNORE", "d": 4}, {"a": "1", "b": "y", "c": 3, "e": 5})
    assert diff == [
        {"key": "a", "expected": 1, "actual": "1", "status": "equal"},
        {"key": "b", "expected": "x", "actual": "y", "status": "different"},
        {"key": "c", "expected": "IGNORE", "actual": 3, "status": "ignored"},
        {"key": "d", "expected": 4, "status": "missing"},
        {"key": "e", "actual": 5, "status": "extra"},
    ]


def test_policy_per_tool_override_with_named_comparators():
    policy = ArgumentPolicy.from_options(
        {
            "args_mode": "exact",
            "tools": {
                "search": {"mode": "subset", "comparators": {"query": "text"}},
                "tag": {"comparators": {"labels": "unordered"}},
            },
        }
    )
    assert policy.equal("search", {"query": "Best  Pizza"}, {"query": "best pizza", "limit": 5})
    assert not policy.equal("lookup", {"query": "Best  Pizza"}, {"query": "best pizza"})
    assert policy.equal("tag", {"labels": ["a", "b", "a"]}, {"labels": ["b", "a", "a"]})
    assert not policy.equal("tag", {"labels": ["a", "b"]}, {"labels": ["a", "a"]})
    assert policy.diff("search", {"query": "x"}, {"query": "y", "limit": 5})[1]["status"] == "extra"


def test_policy_rejects_unknown_names_instead_of_running_config_code():
    with pytest.raises(ValueError, match=r"options.tools.search.comparators.q: unknown comparator 'lambda a, b: True'"):
        ArgumentPolicy.from_options({"tools": {"search": {"comparators": {"q": "lambda a, b: True"}}}})
    with pytest.raises(ValueError, match=r"options.args_mode: unknown argument mode 'loose'"):
        ArgumentPolicy.from_options({"args_mode": "loose"})


def test_contains_and_numeric_close_comparators():
    policy = ArgumentPolicy.from_options({"comparators": {"q": "contains", "x": "numeric_close"}})
    assert policy.equal("t", {"q": "pizza", "x": 0.3}, {"q": "Best PIZZA in town", "x": 0.1 + 0.2})
    assert not policy.equal("t", {"q": "pasta", "x": 0.3}, {"q": "Best PIZZA in town", "x": 0.3})
    assert not policy.equal("t", {"q": "pizza", "x": 0.3}, {"q": "pizza", "x": 0.31})


def test_evalset_toolcall_matches_uses_these_rules():
    assert ExpectedToolCall(name="get_weather", args={"days": 1}).matches(
        ExpectedToolCall(name="get_weather", args={"days": "1"})
    )
    assert not ExpectedToolCall(name="get_weather", args={"days": 1}).matches(
        ExpectedToolCall(name="get_forecast", args={"days": 1})
    )


# --- issue 10 rule 4: a string equals a number only in canonical decimal form ---------------------

from decimal import Decimal  # noqa: E402

from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.parametrize(
    "text, number",
    [
        ("10", 10),
        ("10", 10.0),
        ("10.5", 10.5),
        ("10.50", 10.5),
        ("10.0", 10),
        ("0", 0),
        ("-3", -3),
        ("-0", 0),
        ("-0.0", 0.0),
        ("0.1", 0.1),
        ("0.30000000000000004", 0.1 + 0.2),
        ("1000", 1e3),
        ("12345678901234567890", 12345678901234567890),
    ],
)
def test_canonical_decimal_strings_equal_their_number(text, number):
    assert values_equal(text, number) and values_equal(number, text)
    assert arguments_equal({"n": text}, {"n": number}) and arguments_equal({"n": number}, {"n": text})


@pytest.mark.parametrize(
    "text, number",
    [
        ("02139", 2139),  # a zip code is not a number
        ("007", 7),
        ("00", 0),
        ("0.5", 0.50001),
        ("1e3", 1000),
        ("1E3", 1000.0),
        ("1e0", 1),
        ("10e-1", 1),
        ("+5", 5),
        (" 10", 10),
        ("10 ", 10),
        ("\t10\n", 10),
        (".5", 0.5),
        ("5.", 5),
        ("1_000", 1000),
        ("1,000", 1000),
        ("0x10", 16),
        ("٣", 3),  # an Arabic-Indic digit is text, not a decimal numeral
        ("0.3", 0.1 + 0.2),
        ("NaN", float("nan")),
        ("Infinity", float("inf")),
        ("10000000000000001", 10**16),
        ("1.5", 1),
    ],
)
def test_other_numeric_looking_strings_do_not_equal_the_number(text, number):
    assert not values_equal(text, number) and not values_equal(number, text)
    assert not arguments_equal({"zip": text}, {"zip": number})


def test_booleans_equal_only_booleans_and_their_own_words():
    for other in (1, 0, "1", "0", 1.0, "yes", " true", "True "):
        assert not values_equal(True, other) and not values_equal(other, True), other
    assert not values_equal(False, 0) and not values_equal(False, "0") and not values_equal(False, None)
    assert values_equal(True, "true") and values_equal("TRUE", True) and values_equal(False, "False")
    assert not arguments_equal({"flag": True}, {"flag": 1})


def test_the_rule_applies_inside_nested_objects_and_lists():
    assert arguments_equal(
        {"filter": {"zip": "02139", "ids": [1, "2", 3.0]}}, {"filter": {"zip": "02139", "ids": ["1", 2, "3"]}}
    )
    assert not arguments_equal({"filter": {"zip": "02139"}}, {"filter": {"zip": 2139}})
    assert not arguments_equal({"rows": [{"n": "1e3"}]}, {"rows": [{"n": 1000}]})
    assert not arguments_equal({"flags": [True]}, {"flags": [1]})
    # an object spelled as JSON text is read when the other side is an object, with the same rule
    assert arguments_equal({"filter": {"zip": "02139"}}, {"filter": '{"zip": "02139"}'})
    assert not arguments_equal({"filter": {"zip": "02139"}}, {"filter": '{"zip": 2139}'})


def test_two_strings_compare_as_text_even_when_they_spell_numbers_or_json():
    assert not values_equal("10", "10.0")
    assert not values_equal("02139", "2139")
    assert not values_equal('{"a": 1}', '{"a":1}')
    assert values_equal("02139", "02139")


def test_numeric_close_comparator_reads_strings_by_the_same_rule():
    policy = ArgumentPolicy.from_options({"comparators": {"zip": "numeric_close"}})
    assert policy.equal("t", {"zip": 2139}, {"zip": "2139.0000001"})
    assert not policy.equal("t", {"zip": 2139}, {"zip": "02139"})
    assert not policy.equal("t", {"zip": 1000}, {"zip": "1e3"})


finite_floats = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.integers())
def test_property_an_int_equals_its_decimal_text_and_nothing_padded(n):
    assume(len(str(abs(n))) < 4000)
    assert values_equal(n, str(n)) and values_equal(str(n), n)
    digits = str(abs(n))
    sign = "-" if n < 0 else ""
    assert not values_equal(n, f"{sign}0{digits}")  # a leading zero changes the value's text
    assert not values_equal(n, f"{str(n)}e0")
    assert not values_equal(n, f" {n}") and not values_equal(n, f"{n} ")
    if n >= 0:
        assert not values_equal(n, f"+{n}")


@settings(max_examples=300, deadline=None)
@given(finite_floats)
def test_property_a_float_equals_its_plain_decimal_text(x):
    plain = format(Decimal(repr(x)), "f")  # shortest round-trip digits, never an exponent
    assert values_equal(x, plain) and values_equal(plain, x)
    assert not values_equal(x, f"{repr(x)}e0") or "e" in repr(x)
    assert not values_equal(x, "0" + plain.lstrip("-")) or x < 0


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    finite_floats,
    st.text(max_size=8).filter(lambda s: s != "IGNORE"),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values, json_values)
def test_property_equality_is_symmetric_and_reflexive_and_nests(a, b):
    assert values_equal(a, a)
    assert values_equal(a, b) == values_equal(b, a)
    assert values_equal([a], [b]) == values_equal(a, b)
    assert values_equal({"k": a}, {"k": b}) == values_equal(a, b)


# --- differential: same JSON types on both sides → google-adk's own answer ----------------------


def _same_type_pair(depth: int = 2) -> st.SearchStrategy:
    """(expected, actual) of one JSON type at every common position; small pools make equal pairs common."""
    numbers = st.one_of(
        st.sampled_from([0, 1, -1, 2, 1.0, 0.0, -0.0, 2.5, 0.1, 10, 10.0, 1e16, 10**16]), finite_floats, st.integers()
    )
    texts = st.one_of(
        st.sampled_from(
            ["", "a", "A", "10", "10.0", "02139", "2139", "true", "1e3", '{"a": 1}', '{"a":1}', " a", "é", "e\u0301"]
        ),
        st.text(max_size=5),
    ).filter(lambda s: s != "IGNORE")
    near_misses = st.sampled_from(
        [
            ("10", "10.0"),
            ("02139", "2139"),
            ('{"a": 1}', '{"a":1}'),
            ("true", "True"),
            ("1e3", "1000"),
            (1, 1.0),
            (0.0, -0.0),
            (1e16, 10**16),
            (10**16 + 1, 1e16),
            ("é", "e\u0301"),
            ("a", " a"),
        ]
    )
    scalar_pairs = st.one_of(
        near_misses,
        near_misses.map(lambda p: p[::-1]),
        st.tuples(numbers, numbers),
        st.tuples(texts, texts),
        st.tuples(st.booleans(), st.booleans()),
        st.just((None, None)),
        json_values.map(lambda v: (v, v)),
    )
    if depth == 0:
        return scalar_pairs
    inner = _same_type_pair(depth - 1)
    keys = st.sampled_from(["a", "b", "c", "zip"])

    def as_lists(pairs_and_extra):
        pairs, extra, on_actual = pairs_and_extra
        expected, actual = [p[0] for p in pairs], [p[1] for p in pairs]
        (actual if on_actual else expected).extend(extra)
        return expected, actual

    def as_dicts(pairs_and_extra):
        pairs, extra, on_actual = pairs_and_extra
        expected, actual = {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        side = actual if on_actual else expected
        for k, v in extra.items():
            side.setdefault(k, v)
        return expected, actual

    lists = st.tuples(st.lists(inner, max_size=3), st.lists(json_values, max_size=1), st.booleans()).map(as_lists)
    dicts = st.tuples(
        st.dictionaries(keys, inner, max_size=3),
        st.dictionaries(st.sampled_from(["x", "y"]), json_values, max_size=1),
        st.booleans(),
    ).map(as_dicts)
    return st.one_of(scalar_pairs, lists, dicts)


args_pairs = st.tuples(
    st.dictionaries(st.sampled_from(["city", "zip", "limit", "filter"]), _same_type_pair(), max_size=3),
    st.dictionaries(st.sampled_from(["units", "page"]), json_values, max_size=1),
    st.booleans(),
).map(
    lambda t: (
        {k: p[0] for k, p in t[0].items()} | ({} if t[2] else t[1]),
        {k: p[1] for k, p in t[0].items()} | (t[1] if t[2] else {}),
    )
)


@settings(max_examples=60, deadline=None)
@given(st.lists(args_pairs, min_size=1, max_size=25))
def test_differential_same_json_types_agree_with_google_adk(reference_oracle, pairs):
    answer = reference_oracle.ask(
        {
            "op": "adk_trajectory",
            "match_type": "EXACT",
            "threshold": 1.0,
            "invocations": [
                {"expected": [{"name": "lookup", "args": e}], "actual": [{"name": "lookup", "args": a}]}
                for e, a in pairs
            ],
        }
    )
    for (expected, actual), adk in zip(pairs, answer["per_invocation"]):
        assert arguments_equal(expected, actual) == (adk == 1.0), (expected, actual, adk)


def test_differential_adk_sees_string_and_number_as_different_where_we_widen(reference_oracle):
    """The one place we part from ADK, on purpose: a canonical decimal string against a number."""
    pairs = [({"limit": 10}, {"limit": "10"}), ({"zip": 2139}, {"zip": "02139"}), ({"n": 1000}, {"n": "1e3"})]
    answer = reference_oracle.ask(
        {
            "op": "adk_trajectory",
            "match_type": "EXACT",
            "threshold": 1.0,
            "invocations": [
                {"expected": [{"name": "t", "args": e}], "actual": [{"name": "t", "args": a}]} for e, a in pairs
            ],
        }
    )
    assert answer["per_invocation"] == [0.0, 0.0, 0.0]
    assert [arguments_equal(e, a) for e, a in pairs] == [True, False, False]


# --- the rule on real spans: LangGraph/OpenInference capture, S3 get_forecast(city=Paris, days=1) ----


@pytest.fixture(scope="module")
def followup_trajectory():
    from otel_eval.mapping import map_spans
    from otel_eval.otlp_json import read_trace_file
    from otel_eval.spans import from_otlp
    from otel_eval.trajectory import build_trajectory
    from tests.paths import FIXTURES

    capture = FIXTURES / "realclients/langgraph_openinference.otlp.json"
    spans = [s for r in read_trace_file(str(capture)) for s in from_otlp(r.resource_spans).spans]
    mapped = [m for m in map_spans(spans) if m.session_id == "langgraph_openinference-s3-followup"]
    return build_trajectory("langgraph_openinference-s3-followup", mapped)


@pytest.mark.parametrize(
    "days, passes", [(1, True), ("1", True), (1.0, True), ("01", False), ("1e0", False), (True, False), ("+1", False)]
)
def test_golden_forecast_days_on_real_spans(followup_trajectory, days, passes):
    from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalConfig, Invocation, MessageContent
    from otel_eval.scoring import score_session

    assert followup_trajectory.turns[1].calls[0].args == {"city": "Paris", "days": 1}
    case = EvalCase(
        eval_id="followup",
        conversation=[
            Invocation(
                invocation_id="t0",
                user_content=MessageContent.user("What's the weather in Paris?"),
                expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": "Paris"})],
            ),
            Invocation(
                invocation_id="t1",
                user_content=MessageContent.user("What about tomorrow?"),
                expected_tool_trajectory=[ExpectedToolCall(name="get_forecast", args={"city": "Paris", "days": days})],
            ),
        ],
    )
    config = EvalConfig(criteria={"trajectory_match": CriterionConfig(threshold=1.0)})
    result = {c.criterion: c for c in score_session(followup_trajectory, case, config).criterion_results}
    assert result["trajectory_match"].passed is passes, result["trajectory_match"].details
