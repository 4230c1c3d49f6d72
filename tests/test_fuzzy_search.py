"""The bounded fuzzy search gives exactly what a rapidfuzz scan of every golden query gives: the
same hits, scores and order, so the same match and evidence."""

from __future__ import annotations

import pickle
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz, process

from otel_eval.golden import GoldenIndex, fuzzy_search
from otel_eval.golden.fuzzy_search import QueryTable
from otel_eval.models.evalset import EvalCase, EvalSet, Invocation, MessageContent

# A small alphabet makes near-equal strings and equal scores (ties) common; rapidfuzz scores
# strings longer than 64 characters another way.
texts = st.text(alphabet="ab cd", max_size=24) | st.text(alphabet="abc de", min_size=60, max_size=150)
cutoffs = st.floats(min_value=0, max_value=100) | st.sampled_from([0.0, 50.0, 80.0, 90.0, 100.0])


def bound_always():
    """Tables here are small: the character bound only runs when told to, whatever the size."""
    return mock.patch.object(fuzzy_search, "_BOUND_FROM", 0)


class FullScan(QueryTable):
    """The search as it was: rapidfuzz over every query."""

    def above(self, query, cutoff):
        return tuple(process.extract(query, self.queries, scorer=fuzz.ratio, score_cutoff=cutoff, limit=None))

    def nearest(self, query, limit, found=()):
        return tuple(process.extract(query, self.queries, scorer=fuzz.ratio, limit=limit))


@given(st.lists(texts, max_size=40, unique=True), texts, cutoffs)
def test_above_is_a_scan_of_every_query(queries, query, cutoff):
    expected = FullScan(queries).above(query, cutoff)
    assert QueryTable(queries).above(query, cutoff) == expected
    with bound_always():
        assert QueryTable(queries).above(query, cutoff) == expected


@given(st.lists(texts, max_size=40, unique=True), texts, st.integers(min_value=1, max_value=8))
def test_nearest_is_a_scan_of_every_query(queries, query, limit):
    with bound_always():
        assert QueryTable(queries).nearest(query, limit) == FullScan(queries).nearest(query, limit)


@given(st.lists(texts, max_size=40, unique=True), texts, st.integers(min_value=1, max_value=8), cutoffs)
def test_nearest_from_the_hits_of_a_search_above_a_cutoff(queries, query, limit, cutoff):
    with bound_always():
        table = QueryTable(queries, remember=0)
        found = table.above(query, cutoff)
        assert table.nearest(query, limit, found=found) == FullScan(queries).nearest(query, limit)


# Many characters, some in no golden query; the counters shrunk so that characters share them
# and copies past the second are not counted: the bound must hold all the same.
wide_texts = st.text(alphabet="ab cdéü世界-", max_size=24) | st.text(alphabet="abc deéü世", min_size=60, max_size=150)


@given(st.lists(wide_texts, max_size=40, unique=True), wide_texts, cutoffs)
def test_above_with_shared_counters_and_few_copies_counted(queries, query, cutoff):
    with bound_always(), mock.patch.multiple(fuzzy_search, _OWN_COUNTERS=2, _SHARED_COUNTERS=3, _COPIES_COUNTED=2):
        assert QueryTable(queries).above(query, cutoff) == FullScan(queries).above(query, cutoff)


def _index(queries, table_class, **kwargs):
    cases = [
        EvalCase(eval_id=f"c{n}", conversation=[Invocation(invocation_id="1", user_content=MessageContent.user(q))])
        for n, q in enumerate(queries)
    ]
    index = GoldenIndex([EvalSet(eval_set_id="s", eval_cases=cases)], **kwargs)
    index._table = table_class(index._queries)
    return index


words = st.sampled_from(
    [
        "what's",
        "the",
        "weather",
        "wether",
        "in",
        "paris",
        "london",
        "top",
        "10",
        "5",
        "users",
        "user",
        "by",
        "revenue",
        "show",
        "me",
        "please",
    ]
)
sentences = st.lists(words, min_size=1, max_size=9).map(" ".join)


@settings(max_examples=150)
@given(
    st.lists(sentences, min_size=1, max_size=30),
    sentences,
    st.sampled_from([70.0, 80.0, 90.0, 95.0]),
    st.sampled_from([0.0, 2.0, 5.0]),
)
def test_the_match_and_its_evidence_are_those_of_the_full_scan(queries, query, threshold, margin):
    with bound_always():
        new = _index(queries, QueryTable, fuzzy_threshold=threshold, ambiguity_margin=margin).match(query)
    old = _index(queries, FullScan, fuzzy_threshold=threshold, ambiguity_margin=margin).match(query)
    assert (new.method, new.eval_id, new.score, new.evidence) == (old.method, old.eval_id, old.score, old.evidence)


def test_a_repeated_query_is_answered_from_memory_and_a_pickled_table_forgets():
    table = QueryTable(["what's the weather in paris", "weather in london", "top 10 users by revenue"])
    first = table.above("whats the weather in paris", 80)
    assert [choice for choice, _, _ in first] == ["what's the weather in paris"]
    assert table.above("whats the weather in paris", 80) is first
    copy = pickle.loads(pickle.dumps(table))
    again = copy.above("whats the weather in paris", 80)
    assert again == first and again is not first
