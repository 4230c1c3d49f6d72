"""Truncation: oversized text is cut at the limit with a visible marker keeping the original length."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.conventions.base import ExecutedToolCall, Reading, RequestedToolCall
from otel_eval.truncation import (
    DEFAULT_LIMIT,
    is_truncated,
    marker,
    original_length,
    truncate_reading,
    truncate_text,
    truncate_value,
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
    value = {
        "docs": ["a" * 10, "short"],
        "n": 3,
        "nested": {"sql": "SELECT " + "c" * 20},
        "t": ("zzzzzz",),
        "none": None,
    }
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
        convention="genai",
        span_type="tool",
        agent_name="a" * 50,
        user_input="u" * 50,
        system_prompt="s" * 50,
        response="r" * 50,
        requested_calls=[RequestedToolCall("get", {"q": "w" * 50}, "id-1")],
        tool=ExecutedToolCall("get", {"q": "w" * 50}, "id-1", result={"rows": ["x" * 50]}, error="e" * 50),
        parameters={"q": "w" * 50},
        retrieval_query=["k" * 50],
        retrieved_documents=["d" * 50, "ok"],
        session_id="s" * 50,
        input_tokens=7,
        sources={"agent_task": "input.value"},
    )
    cut = truncate_reading(reading, 10)
    tail = marker(50)
    assert (cut.user_input, cut.system_prompt, cut.response) == ("u" * 10 + tail, "s" * 10 + tail, "r" * 10 + tail)
    assert cut.requested_calls == [RequestedToolCall("get", {"q": "w" * 10 + tail}, "id-1")]
    assert cut.tool == ExecutedToolCall(
        "get", {"q": "w" * 10 + tail}, "id-1", {"rows": ["x" * 10 + tail]}, "e" * 10 + tail
    )
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


def _walked(reading: Reading, limit: int) -> Reading:
    """The reading as the value-by-value walk cuts it (what the quick path must agree with)."""
    from otel_eval.truncation import _cut_value

    return Reading(
        convention=reading.convention,
        user_input=_cut_value(reading.user_input, limit),
        parameters=_cut_value(reading.parameters, limit),
        requested_calls=[
            RequestedToolCall(c.name, _cut_value(c.args, limit), c.call_id) for c in reading.requested_calls
        ],
        tool=None
        if reading.tool is None
        else ExecutedToolCall(
            reading.tool.name,
            _cut_value(reading.tool.args, limit),
            reading.tool.call_id,
            _cut_value(reading.tool.result, limit),
            _cut_value(reading.tool.error, limit),
        ),
        retrieved_documents=_cut_value(reading.retrieved_documents, limit),
    )


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(max_size=40), min_size=6, max_size=6),
    nested=st.recursive(
        # Leaves the quick check's encoder writes in several bytes (non-ASCII, escapes) or refuses
        # (100-bit integers, lone surrogates, NaN is written as null): it must still agree.
        st.none()
        | st.integers()
        | st.integers(min_value=2**64, max_value=2**100)
        | st.floats()
        | st.text(st.characters(blacklist_categories=()), max_size=40),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.tuples(inner, inner)
            | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=3)
        ),
        max_leaves=8,
    ),
    limit=st.integers(min_value=1, max_value=60),
)
def test_property_a_reading_is_cut_exactly_where_a_value_is_too_long(texts, nested, limit):
    # Readings whose content all fits come back as they are without a walk; any other is walked.
    reading = Reading(
        convention="genai",
        user_input=texts[0],
        parameters={"q": texts[1], "n": nested},
        requested_calls=[RequestedToolCall("get", {"q": texts[2]}, "id")],
        tool=ExecutedToolCall("get", {"q": texts[3]}, "id", result=nested, error=texts[4]),
        retrieved_documents=[texts[5]],
    )
    cut = truncate_reading(reading, limit)
    expected = _walked(reading, limit)
    assert (cut.user_input, cut.parameters, cut.requested_calls, cut.tool, cut.retrieved_documents) == (
        expected.user_input,
        expected.parameters,
        expected.requested_calls,
        expected.tool,
        expected.retrieved_documents,
    )


def test_a_reading_with_nothing_too_long_is_kept_whole():
    reading = Reading(
        convention="genai",
        user_input="hi",
        parameters={"q": "w" * 10},
        tool=ExecutedToolCall("get", {"q": "w"}, "id", result={"rows": [[1, "x" * 10]]}),
    )
    assert truncate_reading(reading, 200) is reading
    longer = Reading(convention="genai", tool=ExecutedToolCall("get", {}, "id", result={"rows": [[1, "x" * 11]]}))
    assert truncate_reading(longer, 10).tool.result == {"rows": [[1, "x" * 10 + marker(11)]]}


def _longest_text(value) -> int:
    """The length of the longest string the walk would cut in ``value``."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return max(map(_longest_text, value), default=0)
    return 0


@settings(max_examples=500, deadline=None)
@given(
    value=st.recursive(
        st.none()
        | st.integers()
        | st.integers(min_value=2**64, max_value=2**100)
        | st.floats()
        | st.text(st.sampled_from('a"\\\n') | st.characters(blacklist_categories=()), max_size=30),
        lambda inner: (
            st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
        ),
        max_leaves=4,
    ),
    shortfall=st.integers(min_value=0, max_value=3),
)
def test_property_the_quick_check_never_passes_a_text_over_the_limit(value, shortfall):
    # Limits just under the longest text: the encoding's overhead must not hide a text that is too long.
    from otel_eval.truncation import _fits

    longest = _longest_text(value)
    limit = max(1, longest - shortfall)
    reading = Reading(convention="genai", tool=ExecutedToolCall("get", {}, "id", result=value))
    if _fits(reading, limit):
        assert longest <= limit


def test_arguments_nested_deeper_than_orjson_goes_still_map_unchanged():
    """orjson refuses more than 254 levels; such a reading must still be settled by the quick
    check, not by the recursive walk, which a value ~500 levels deep would overflow."""
    deep: dict = {"leaf": "x"}
    for _ in range(500):
        deep = {"d": deep}
    reading = Reading(convention="genai", span_type="llm", parameters=deep)
    assert truncate_reading(reading).parameters == deep
