"""Truncation: oversized text is cut at the limit with a visible marker keeping the original length."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from otel_eval.conventions.base import Reading, RequestedToolCall, ExecutedToolCall
from otel_eval.truncation import (
    DEFAULT_LIMIT, is_truncated, marker, original_length, truncate_reading, truncate_text, truncate_value,
)


def test_short_text_is_unchanged_and_long_text_is_cut_with_the_original_length():
    assert truncate_text("abcdef", 6) == "abcdef"
    assert truncate_text("abcdefgh", 3) == "abc…[truncated, 8 chars]"
    assert original_length("abc…[truncated, 8 chars]") == 8
    assert original_length("abc") is None


def test_default_limit_is_64_kib_of_text():
    assert DEFAULT_LIMIT == 65536
    prompt = "x" * 183422
    cut = truncate_text(prompt)
    assert cut == "x" * 65536 + "…[truncated, 183422 chars]"
    assert truncate_text("y" * 65536) == "y" * 65536


def test_structures_keep_their_shape_and_every_string_is_cut():
    value = {"docs": ["a" * 10, "short"], "n": 3, "nested": {"sql": "SELECT " + "c" * 20}, "t": ("zzzzzz",), "none": None}
    assert truncate_value(value, 5) == {
        "docs": ["aaaaa" + marker(10), "short"],
        "n": 3,
        "nested": {"sql": "SELEC" + marker(27)},
        "t": ("zzzzz" + marker(6),),
        "none": None,
    }
    assert value["docs"][0] == "a" * 10  # the input is not mutated


def test_truncating_twice_keeps_the_first_marker():
    once = truncate_text("q" * 100, 10)
    assert truncate_text(once, 10) == once
    assert truncate_text(once, 4) == "qqqq" + marker(100)


@pytest.mark.parametrize("limit", [0, -1, 2.5, True, None])
def test_a_limit_that_is_not_a_positive_int_is_refused(limit):
    with pytest.raises(ValueError, match="truncation limit must be a positive number of characters"):
        truncate_text("abc", limit)


def test_truncate_reading_cuts_content_and_keeps_identity():
    reading = Reading(
        convention="genai", span_type="tool", agent_name="a" * 50, user_input="u" * 50, system_prompt="s" * 50,
        response="r" * 50, requested_calls=[RequestedToolCall("get", {"q": "w" * 50}, "id-1")],
        tool=ExecutedToolCall("get", {"q": "w" * 50}, "id-1", result={"rows": ["x" * 50]}, error="e" * 50),
        parameters={"q": "w" * 50}, retrieval_query=["k" * 50], retrieved_documents=["d" * 50, "ok"],
        session_id="s" * 50, input_tokens=7, sources={"agent_task": "input.value"},
    )
    cut = truncate_reading(reading, 10)
    tail = marker(50)
    assert (cut.user_input, cut.system_prompt, cut.response) == ("u" * 10 + tail, "s" * 10 + tail, "r" * 10 + tail)
    assert cut.requested_calls == [RequestedToolCall("get", {"q": "w" * 10 + tail}, "id-1")]
    assert cut.tool == ExecutedToolCall("get", {"q": "w" * 10 + tail}, "id-1", {"rows": ["x" * 10 + tail]}, "e" * 10 + tail)
    assert cut.parameters == {"q": "w" * 10 + tail}
    assert (cut.retrieval_query, cut.retrieved_documents) == (["k" * 10 + tail], ["d" * 10 + tail, "ok"])
    assert (cut.agent_name, cut.session_id, cut.input_tokens) == ("a" * 50, "s" * 50, 7)
    assert reading.user_input == "u" * 50 and reading.tool.result == {"rows": ["x" * 50]}


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), limit=st.integers(min_value=1, max_value=120))
def test_property_cut_text_keeps_a_prefix_and_says_how_long_it_was(text, limit):
    cut = truncate_text(text, limit)
    if len(text) <= limit or (is_truncated(text)):
        assert len(cut) <= len(text)
    else:
        assert cut == text[:limit] + marker(len(text))
        assert original_length(cut) == len(text)
    assert truncate_text(cut, limit) == cut
