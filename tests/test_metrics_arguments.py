from __future__ import annotations

import pytest

from otel_eval.metrics.arguments import ArgumentPolicy, argument_diff, arguments_equal, values_equal
from otel_eval.models.evalset import ToolCall


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
    policy = ArgumentPolicy.from_options({
        "args_mode": "exact",
        "tools": {
            "search": {"mode": "subset", "comparators": {"query": "text"}},
            "tag": {"comparators": {"labels": "unordered"}},
        },
    })
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
    assert ToolCall(name="get_weather", args={"days": 1}).matches(ToolCall(name="get_weather", args={"days": "1"}))
    assert not ToolCall(name="get_weather", args={"days": 1}).matches(ToolCall(name="get_forecast", args={"days": 1}))
