"""The conventions contract (conventions/base.Convention) holds for every listed dialect, and its
optional ingest hook agrees with a full read on real captured spans."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.conventions import CONVENTIONS, DETECTION_ORDER
from otel_eval.conventions.base import Convention
from otel_eval.readers import read_spans
from tests.paths import FIXTURES

CAPTURES = sorted((FIXTURES / "realclients").glob("*.otlp.json")) + [FIXTURES / "noveum" / "dataset.json"]
#: OTLP requests captured from the frameworks' own packages (tests/test_captures.py).
PACKAGE_CAPTURES = sorted((Path(__file__).parent / "data" / "captures").glob("*.traces.pb"))


def test_every_listed_dialect_defines_the_whole_protocol():
    for module in CONVENTIONS:
        assert isinstance(module, Convention), module.__name__
        assert module.quick_span_type is None or callable(module.quick_span_type), module.NAME
        assert module.tool_observations is None or callable(module.tool_observations), module.NAME
        assert isinstance(module.SEQUENTIAL_NESTING, bool), module.NAME
    assert len(set(DETECTION_ORDER)) == len(CONVENTIONS)  # the stored name tells the dialect


@pytest.mark.parametrize("capture", CAPTURES + PACKAGE_CAPTURES, ids=lambda p: p.name)
def test_the_ingest_span_type_is_what_a_full_read_finds(capture):
    spans = read_spans(capture)
    checked = 0
    for span in spans:
        module = next((c for c in CONVENTIONS if c.detect(span)), None)
        if module is None or module.quick_span_type is None:
            continue
        assert module.quick_span_type(span) == module.read(span).span_type, (module.NAME, span.name)
        checked += 1
    assert checked or capture.parent.name == "noveum", "every dialect of these captures has an ingest hook"


def _failed(status="error", message="", attributes=None, exception=None):
    from otel_eval.spans import SpanEvent, SpanRecord

    events = (SpanEvent("exception", 5, exception),) if exception else ()
    return SpanRecord(
        "ab" * 16,
        "cd" * 8,
        None,
        "tool",
        1,
        9,
        status=status,
        status_message=message,
        attributes=attributes or {},
        events=events,
    )


def test_a_failed_span_reads_as_one_line_the_same_in_every_dialect():
    from otel_eval.conventions import base

    traceback = "ValueError('Unknown city')\nTraceback (most recent call last):\n  File ...\nValueError: Unknown city"
    exception = {"exception.type": "ValueError", "exception.message": "Unknown city"}
    assert base.span_error(_failed(message=traceback, exception=exception)) == "ValueError: Unknown city"
    assert base.span_error(_failed(message=traceback)) == "ValueError('Unknown city')"
    assert base.span_error(_failed(status="unset", attributes={"error.type": "timeout"})) == "timeout"
    assert base.span_error(_failed(message="upstream 503", attributes={"error.type": "HTTPError"})) == (
        "HTTPError: upstream 503"
    )
    assert base.span_error(_failed()) == "error"
    assert base.span_error(_failed(status="ok")) is None
    for module in CONVENTIONS:  # no dialect keeps a rule of its own
        assert getattr(module, "span_error", base.span_error) is base.span_error, module.NAME


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.text(st.sampled_from("ab.\n0"), max_size=6), max_size=6),
    prefixes=st.lists(st.text(st.sampled_from("ab.0"), min_size=1, max_size=3), min_size=1, max_size=2),
)
def test_property_the_quick_key_check_never_misses_a_prefix(keys, prefixes):
    # A "maybe" may be wrong (it only costs a search); a "no" never is.
    from otel_eval.conventions.base import any_key_starts, may_have_key_starting

    attributes = dict.fromkeys(keys, 1)
    if any(any_key_starts(attributes, prefix) for prefix in prefixes):
        assert may_have_key_starting(attributes, *prefixes)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.text(st.sampled_from("ab.\n0"), max_size=6), max_size=6),
    prefix=st.text(st.sampled_from("ab.\n0"), min_size=1, max_size=3),
)
def test_property_the_key_prefix_test_is_exactly_a_key_by_key_test(keys, prefix):
    from otel_eval.conventions.base import any_key_starts

    attributes = dict.fromkeys(keys, 1)
    assert any_key_starts(attributes, prefix) == any(key.startswith(prefix) for key in attributes)
