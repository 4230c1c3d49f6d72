"""Session query / case hint → golden case: case_id, exact, fuzzy, ambiguous, unmatched."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.golden import GoldenIndex, normalize_query
from otel_eval.models.evalset import EvalCase, EvalSet, Invocation, MessageContent


def case(eval_id: str, *queries: str) -> EvalCase:
    return EvalCase(
        eval_id=eval_id,
        conversation=[
            Invocation(invocation_id=f"{eval_id}-{n}", user_content=MessageContent.user(q))
            for n, q in enumerate(queries, 1)
        ],
    )


WEATHER = EvalSet(
    eval_set_id="weather",
    eval_cases=[
        case("tokyo", "What's the weather in Tokyo?", "And tomorrow?"),
        case("paris", "weather in Paris"),
        case("top10", "Show me the top 10 users by revenue"),
        case("long_paris", "What's the weather in Paris right now for my trip next week"),
    ],
)
DB = EvalSet(
    eval_set_id="db",
    eval_cases=[
        case("top10", "Show me the top 10 users by revenue"),
        case("monthly", "How many active users did we have last month?"),
        case("monthly_copy", "How many active users did we have last month?"),
    ],
)


@pytest.fixture
def index() -> GoldenIndex:
    return GoldenIndex([WEATHER, DB])


def test_normalisation():
    assert normalize_query("  What\u2019s the   weather in\tTOKYO?!  ") == "what's the weather in tokyo"
    assert normalize_query("\uff37eather\u3000in Paris\u3002") == "weather in paris"  # NFKC full-width
    assert normalize_query("Is 2+2 = 4?") == "is 2+2 = 4"
    assert normalize_query(None) == ""


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalisation_is_idempotent_and_a_query_always_matches_its_own_case(text):
    once = normalize_query(text)
    assert normalize_query(once) == once
    if once:
        match = GoldenIndex([EvalSet(eval_set_id="s", eval_cases=[case("only", text)])]).match(text)
        assert (match.method, match.eval_id) == ("exact", "only")


def test_exact_after_normalisation_on_the_first_user_message(index):
    match = index.match("what’s the weather in TOKYO")
    assert (match.method, match.eval_id, match.eval_set_id, match.score) == ("exact", "tokyo", "weather", 100.0)
    assert match.evidence["normalized"] == "what's the weather in tokyo"
    assert index.match("And tomorrow?").method == "unmatched"  # later turns are not what a session matches on


def test_fuzzy_tolerates_typos_but_not_a_different_word(index):
    typo = index.match("Whats the wether in Tokio?")
    assert (typo.method, typo.eval_id) == ("fuzzy", "tokyo")
    assert typo.score == 92.31
    assert typo.evidence["candidates"][0] == {
        "eval_set_id": "weather",
        "eval_id": "tokyo",
        "query": "What's the weather in Tokyo?",
        "score": 92.31,
    }

    london = index.match("weather in London")
    assert (london.method, london.case) == ("unmatched", None)
    # A long query: ratio 90.76 clears the threshold, the word guard still says no.
    long_london = index.match("What's the weather in London right now for my trip next week")
    assert long_london.method == "unmatched"
    assert long_london.evidence["rejected"] == [
        {
            "eval_set_id": "weather",
            "eval_id": "long_paris",
            "query": "What's the weather in Paris right now for my trip next week",
            "score": 90.76,
            "differing_words": {"query": ["london"], "case": ["paris"]},
        }
    ]
    assert long_london.score == 90.76

    top5 = index.match("Show me the top 5 users by revenue", case_hint="db")
    assert top5.method == "unmatched"
    assert top5.evidence["rejected"][0]["differing_words"] == {"query": ["5"], "case": ["10"]}


def test_case_hint_wins_and_can_be_qualified(index):
    by_id = index.match("something else entirely", case_hint="paris")
    assert (by_id.method, by_id.eval_id, by_id.score) == ("case_id", "paris", 100.0)
    qualified = index.match(None, case_hint="db/top10")
    assert (qualified.method, qualified.eval_set_id, qualified.eval_id) == ("case_id", "db", "top10")


def test_same_query_in_two_sets_is_ambiguous_unless_a_hint_picks_one(index):
    both = index.match("Show me the top 10 users by revenue")
    assert (both.method, both.case, both.score) == ("ambiguous", None, 100.0)
    assert [(c["eval_set_id"], c["eval_id"]) for c in both.evidence["candidates"]] == [
        ("weather", "top10"),
        ("db", "top10"),
    ]

    by_set = index.match("Show me the top 10 users by revenue", case_hint="weather")
    assert (by_set.method, by_set.eval_set_id, by_set.eval_id) == ("exact", "weather", "top10")
    by_shared_id = index.match("Show me the top 10 users by revenue", case_hint="top10")
    assert by_shared_id.method == "ambiguous"  # the id is in both sets and so is the query
    assert index.match("How many active users did we have last month", case_hint="db").method == "ambiguous"


def test_fuzzy_candidates_within_the_margin_are_ambiguous():
    sets = [
        EvalSet(
            eval_set_id="s",
            eval_cases=[
                case("a", "please summarise the quarterly report"),
                case("b", "please summarize the quarterly reports"),
            ],
        )
    ]
    index = GoldenIndex(sets)
    match = index.match("please summarise the quarterly reports")  # 98.67 vs 97.37: within the default 2.0
    assert (match.method, match.case, match.score) == ("ambiguous", None, 98.67)
    assert [(c["eval_id"], c["score"]) for c in match.evidence["candidates"]] == [("a", 98.67), ("b", 97.37)]
    narrow = GoldenIndex(sets, ambiguity_margin=1.0).match("please summarise the quarterly reports")
    assert (narrow.method, narrow.eval_id, narrow.score) == ("fuzzy", "a", 98.67)
    assert index.match("please summarise the quarterly report").method == "exact"


def test_unknown_hint_and_empty_query_are_states_not_errors(index):
    unknown = index.match("weather in Paris", case_hint="nope")
    assert (unknown.method, unknown.eval_id) == ("exact", "paris")
    assert unknown.evidence["hint_scope"] == "case hint 'nope' names no loaded case or eval set; ignored"
    empty = index.match("   ")
    assert (empty.method, empty.score, empty.evidence["reason"]) == ("unmatched", 0.0, "no user input to match on")
    json.dumps(index.match("weather in Lisbon").evidence)  # evidence is stored as JSON


def test_threshold_is_configurable(index):
    assert index.match("Whats the wether in Tokio?").method == "fuzzy"
    strict = GoldenIndex([WEATHER], fuzzy_threshold=95.0).match("Whats the wether in Tokio?")
    assert (strict.method, strict.score) == ("unmatched", 92.31)


def test_get_and_cases(index):
    assert len(index.cases) == 7
    assert index.get("paris").query == "weather in Paris"
    assert index.get("db/top10") == DB.eval_cases[0]  # an equal case, parsed from what the index keeps
    assert index.get("missing") is None
    with pytest.raises(LookupError, match="in several eval sets"):
        index.get("top10")


def test_ten_thousand_cases_hundred_queries():
    rng = random.Random(7)
    cities = [f"city{n:05d}" for n in range(10_000)]
    verbs = ["show", "list", "count", "plot"]
    queries = [f"{rng.choice(verbs)} the weather history of {city} for last year" for city in cities]
    big = GoldenIndex([EvalSet(eval_set_id="big", eval_cases=[case(f"c{n}", q) for n, q in enumerate(queries)])])
    assert len(big) == 10_000
    picks = rng.sample(range(10_000), 100)
    for k, n in enumerate(picks):
        query = queries[n]
        if k % 3 == 0:
            query = query.upper() + " ?"
            expected_method = "exact"
        elif k % 3 == 1:
            query = query.replace("weather", "wether")
            expected_method = "fuzzy"
        else:
            query = query.replace(cities[n], cities[n].replace("city0", "city1"))  # a city no case has
            expected_method = "unmatched"
        match = big.match(query)
        assert match.method == expected_method, (query, match.evidence)
        assert match.eval_id == (None if expected_method == "unmatched" else f"c{n}")


def test_a_big_index_adds_almost_nothing_to_the_garbage_collectors_walk():
    # In-process, every full pass of the cyclic GC walks what the engine keeps, on whichever
    # thread allocates: often the agent's. 5,000 cases must not mean 5,000 more objects to walk.
    import gc

    sets = [
        EvalSet(
            eval_set_id="big",
            eval_cases=[case(f"c{n}", f"weather history of city{n:05d} last year") for n in range(5_000)],
        )
    ]
    gc.collect()
    before = len(gc.get_objects())
    big = GoldenIndex(sets)
    big.match("weather history of city00042 last year")  # lookups made, one case parsed
    gc.collect()  # what a full pass leaves tracked
    assert len(gc.get_objects()) - before < 500
    assert big.match("wether history of city00042 last year").eval_id == "c42"  # still matches, fuzzily


def _live_cases() -> int:
    import gc

    return sum(1 for o in gc.get_objects() if type(o) is EvalCase)


def test_a_large_golden_set_asked_once_per_case_keeps_no_parsed_case_alive():
    # In-process the engine shares the agent's garbage collector: every parsed case kept alive
    # reaches its oldest generation and brings on full collections that walk the agent's heap.
    many = EvalSet(
        eval_set_id="many", eval_cases=[case(f"c{n}", f"question number {n} about revenue") for n in range(3000)]
    )
    index = GoldenIndex([many])
    del many
    before = _live_cases()
    for n in range(3000):
        match = index.match(f"question number {n} about revenue")
        assert (match.method, match.eval_id) == ("exact", f"c{n}")
        assert match.case is not None and match.case.query == f"question number {n} about revenue"
        del match
    assert _live_cases() == before


def test_a_case_asked_for_again_is_kept_parsed_and_stays_equal(index):
    first = index.case("weather", "tokyo")
    second = index.case("weather", "tokyo")
    assert first == second == next(c for c in WEATHER.eval_cases if c.eval_id == "tokyo")
    assert index.case("weather", "tokyo") is second  # the second ask kept it: no parsing from now on
    assert index.case("weather", "paris") is not index.case("weather", "paris")  # asked once each time before
