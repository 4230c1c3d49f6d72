"""The offline embedding step of the golden matcher: paraphrases the fuzzy step misses are
matched, unrelated or substituted queries are not, and a user's own model can be plugged in."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from otel_eval.golden import GoldenIndex, load_golden
from otel_eval.golden.embedding import (
    EmbeddingScorer,
    TfidfEmbedder,
    dense_cosine,
    hashed_ngram_embed,
    numbers_in,
    text_features,
)
from otel_eval.models.evalset import EvalCase, EvalSet, Invocation, MessageContent

GOLDEN = Path(__file__).resolve().parents[1] / "examples" / "golden"
SETS = [load_golden(GOLDEN / "weather.evalset.json"), load_golden(GOLDEN / "weather.trajectory.json")]

PARAPHRASES = {
    "Tell me the weather in Tokyo": ("weather_tokyo", 67.01),
    "List the top 10 users ranked by revenue": ("top_users_by_revenue", 63.13),
    "What are your refund policies?": ("refund_policy", 67.08),
    "how many users were active last month": ("active_users_last_month", 79.41),
    "Compare weather in Paris vs London": ("compare_paris_london", 86.79),
    "London forecast for the next 3 days": ("london_forecast_3_days", 95.59),
}


def case(eval_id: str, query: str) -> EvalCase:
    return EvalCase(
        eval_id=eval_id,
        conversation=[Invocation(invocation_id=f"{eval_id}-1", user_content=MessageContent.user(query))],
    )


@pytest.mark.parametrize("query", sorted(PARAPHRASES))
def test_paraphrases_fuzzy_misses_are_matched_by_embedding(query):
    eval_id, score = PARAPHRASES[query]
    assert GoldenIndex(SETS).match(query).method == "unmatched"  # off by default
    match = GoldenIndex(SETS, embedding_threshold=60).match(query)
    assert (match.method, match.eval_id, match.score) == ("embedding", eval_id, score)
    assert match.evidence["reason"] == f"embedding similarity {score:.2f} >= 60 (tfidf-char-ngrams)"
    assert match.evidence["embedding"]["nearest"][0]["eval_id"] == eval_id


def test_off_by_default_leaves_no_embedding_evidence():
    match = GoldenIndex(SETS).match("Tell me the weather in Tokyo")
    assert match.method == "unmatched" and "embedding" not in match.evidence


@pytest.mark.parametrize("query", ["Tell me a joke", "What's the weather in Lima?", "Book me a flight to Tokyo"])
def test_unrelated_queries_stay_unmatched(query):
    match = GoldenIndex(SETS, embedding_threshold=60).match(query)
    assert (match.method, match.case) == ("unmatched", None)
    assert match.evidence["reason"].endswith("; no case with embedding similarity >= 60")


def test_a_substituted_city_or_number_is_not_a_paraphrase():
    index = GoldenIndex(SETS, embedding_threshold=60)
    london = index.match("What's the weather in London?")
    assert london.method == "unmatched"
    assert london.evidence["embedding"]["rejected"][0]["eval_id"] == "paris_followup"
    assert london.evidence["embedding"]["rejected"][0]["reason"] == (
        "word(s) 'london', 'paris' differ between query and case and tell other golden cases apart"
    )
    paris = index.match("Forecast for Paris for the next 3 days")
    assert paris.method == "unmatched"
    assert paris.evidence["embedding"]["rejected"][0]["eval_id"] == "london_forecast_3_days"
    top5 = index.match("List the top 5 users ranked by revenue", case_hint=None)
    assert top5.method == "unmatched"
    five = GoldenIndex(SETS, embedding_threshold=50).match("List the top 5 users ranked by revenue")
    assert five.evidence["embedding"]["rejected"] == [
        {
            "eval_set_id": "weather",
            "eval_id": "top_users_by_revenue",
            "query": "Show me the top 10 users by revenue",
            "score": 57.68,
            "reason": "numbers differ: query ['5'], case ['10']",
        }
    ]


def test_a_case_the_fuzzy_word_guard_rejected_is_not_rescued():
    match = GoldenIndex(SETS, embedding_threshold=60).match("What's the weather in Paris today?")
    assert match.method == "unmatched"
    assert match.evidence["embedding"]["rejected"][0] == {
        "eval_set_id": "weather_agent",
        "eval_id": "paris_followup",
        "query": "What's the weather in Paris?",
        "score": 74.59,
        "reason": "rejected by the fuzzy word guard",
    }


def test_earlier_steps_still_win():
    index = GoldenIndex(SETS, embedding_threshold=60)
    assert index.match("What's the weather in Tokyo?").method == "exact"
    assert (index.match("Whats the wether in Tokyo").method, index.match("Whats the wether in Tokyo").eval_id) == (
        "fuzzy",
        "weather_tokyo",
    )


def test_cases_within_the_margin_are_ambiguous():
    copies = EvalSet(
        eval_set_id="db",
        eval_cases=[
            case("monthly", "How many active users did we have last month?"),
            case("monthly_v2", "How many active users did we have last month"),
        ],
    )
    other = EvalSet(eval_set_id="other", eval_cases=[case("refund", "What is your refund policy?")])
    match = GoldenIndex([copies, other], embedding_threshold=60).match("how many users were active last month")
    assert match.method == "ambiguous" and match.case is None
    assert sorted(c["eval_id"] for c in match.evidence["candidates"]) == ["monthly", "monthly_v2"]
    assert match.evidence["reason"].startswith("2 cases within 2 of the best embedding similarity")


def test_a_case_hint_naming_an_eval_set_limits_the_embedding_step():
    index = GoldenIndex(SETS, embedding_threshold=60)
    assert index.match("List the top 10 users ranked by revenue", case_hint="weather").eval_id == "top_users_by_revenue"
    scoped = index.match("List the top 10 users ranked by revenue", case_hint="weather_agent")
    assert scoped.method == "unmatched"
    assert {c["eval_set_id"] for c in scoped.evidence["embedding"]["nearest"]} == {"weather_agent"}


def test_a_user_supplied_model_is_called_once_for_the_golden_queries():
    calls: list[list[str]] = []

    def my_model(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return hashed_ngram_embed(texts, dim=512)

    index = GoldenIndex(SETS, embedding_threshold=70, embed=my_model)
    first = index.match("Tell me the weather in Tokyo")
    second = index.match("List the top 10 users ranked by revenue")
    assert (first.method, first.eval_id) == ("embedding", "weather_tokyo")
    assert (second.method, second.eval_id) == ("embedding", "top_users_by_revenue")
    assert first.evidence["embedding"]["model"] == "my_model"
    assert len(calls) == 3 and len(calls[0]) == 8  # the 8 distinct golden queries, then one per session
    assert calls[1:] == [["tell me the weather in tokyo"], ["list the top 10 users ranked by revenue"]]


def test_a_model_returning_the_wrong_number_of_vectors_is_recorded_not_raised():
    index = GoldenIndex(SETS, embedding_threshold=70, embed=lambda texts: [[1.0, 0.0]])
    match = index.match("Tell me the weather in Tokyo")
    assert match.method == "unmatched"
    assert "returned 1 vectors for 8 texts" in match.evidence["embedding"]["error"]
    assert "the embedding step failed" in match.evidence["reason"]


def test_settings_are_checked():
    with pytest.raises(ValueError, match="embed is given but embedding_threshold is not"):
        GoldenIndex(SETS, embed=hashed_ngram_embed)
    with pytest.raises(ValueError, match="between 0 and 100"):
        GoldenIndex(SETS, embedding_threshold=0.6 * 1000)


def test_features_numbers_and_vectors():
    assert sorted(text_features("Hi")) == ["c: hi", "c: hi ", "c:hi ", "w:hi"]
    assert numbers_in("Top 10 users for 2024, 3.5 days") == ["10", "2024", "3.5"]
    vector = hashed_ngram_embed(["weather in Tokyo"], dim=64)[0]
    assert len(vector) == 64 and math.isclose(sum(x * x for x in vector), 1.0)
    assert hashed_ngram_embed(["weather in Tokyo"], dim=64)[0] == vector  # stable: CRC-32, not hash()
    assert dense_cosine([1.0, 0.0], [0.0, 2.0]) == 0.0 and dense_cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        dense_cosine([1.0], [1.0, 2.0])
    tfidf = TfidfEmbedder().fit(["weather in tokyo", "weather in paris"])
    # "weather" is in both documents, "tokyo" in one: the rarer word weighs more.
    assert tfidf.idf["w:tokyo"] > tfidf.idf["w:weather"]
    assert EmbeddingScorer([]).similarities("anything") == []


def test_a_thousand_cases_each_paraphrase_finds_its_own_city():
    rng = random.Random(3)
    names = sorted(
        {"".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3)) for _ in range(1200)}
    )[:1000]
    eval_set = EvalSet(
        eval_set_id="cities",
        eval_cases=[case(f"c{n}", f"What is the current weather forecast for {name}?") for n, name in enumerate(names)],
    )
    index = GoldenIndex([eval_set], embedding_threshold=50)
    for n in rng.sample(range(1000), 20):
        match = index.match(f"{names[n]} weather forecast right now")
        assert (match.method, match.eval_id) == ("embedding", f"c{n}"), match.evidence
