from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.metrics.response import contains, exact_match, regex_match, rouge1, rouge1_f, rouge_tokens

PAIRS = [
    ("The weather in Tokyo is 22°C with clear skies.", "The weather in Tokyo is 22°C and sunny."),
    ("The cat sat on the mat", "the cat sat on the mat"),
    ("The cat sat on the mat", "A dog lay on a rug"),
    ("", ""),
    ("", "something"),
    ("something", ""),
    ("hello world", "hello hello hello world"),
    ("the the the", "the"),
    ("Ünïcödé naïve café", "unicode naive cafe"),
    ("Total revenue: $1,234.56 in Q3-2024", "total revenue 1 234 56 in q3 2024"),
    ("It's 5 o'clock", "its 5 oclock"),
    ("New York City", "new-york city!!!"),
    ("SELECT name FROM users;", "select NAME from USERS"),
    ("running runs ran runner", "run running runs"),
    ("The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."),
    ("alpha beta gamma delta", "delta gamma beta alpha"),
    ("one two three four five", "one two three"),
    ("one two three", "one two three four five"),
    ("123 456 789", "123 789 000"),
    ("Tab\tseparated\nlines here", "tab separated lines"),
    ("emoji 😀 text", "emoji text 😀"),
    ("under_score and snake_case", "under score and snake case"),
    ("Paris is the capital of France.", "The capital of France is Paris."),
    ("I cannot help with that.", "Sure! Paris is lovely in spring."),
    ("a a a b b c", "a b c c c"),
    ("Flights: LH400 FRA→JFK 10:05", "LH400 departs FRA at 10:05 to JFK"),
    ("generalization generalize generally", "general generalized generalizing"),
    ("The agents were evaluating trajectories", "agent evaluated trajectory"),
    ("MIXED case Words", "mixed CASE words"),
    ("punctuation... everywhere!?", "punctuation everywhere"),
]


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_rouge1_equals_google_rouge_score(use_stemmer):
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=use_stemmer)
    for reference, candidate in PAIRS:
        theirs = scorer.score(reference, candidate)["rouge1"]
        ours = rouge1(reference, candidate, use_stemmer=use_stemmer)
        assert (ours.precision, ours.recall, ours.fmeasure) == pytest.approx(
            (theirs.precision, theirs.recall, theirs.fmeasure), abs=1e-12), (reference, candidate)


def test_rouge1_exact_values():
    assert rouge1_f("The cat sat on the mat", "the cat sat on the mat") == 1.0
    # reference 6 tokens, candidate 5, overlap 4 (the x2, cat, sat) → P=0.8, R=4/6, F=8/11
    assert rouge1_f("the cat sat on the mat", "the cat sat the dog") == pytest.approx(8 / 11)
    assert rouge1_f("", "") == 0.0
    assert rouge_tokens("Ünïcödé naïve café!") == ["n", "c", "d", "na", "ve", "caf"]


def test_exact_and_contains():
    assert exact_match("Paris", "  Paris ")
    assert not exact_match("Paris", "paris")
    assert exact_match("Paris", "paris", fold_case=True)
    assert not exact_match("Paris", None)
    assert contains("paris", "The capital is PARIS.")
    assert not contains("paris", "The capital is PARIS.", fold_case=False)
    assert not contains("Rome", "The capital is Paris.")


def test_regex_match_and_bad_patterns_are_errors():
    assert regex_match(r"\b\d+ ?°C\b", "It is 22 °C today")
    assert not regex_match(r"^Sorry", "I can help")
    assert regex_match(r"^sorry", "Sorry, no", ignore_case=True)
    with pytest.raises(ValueError, match=r"invalid regex pattern '\(unclosed': missing \), unterminated subpattern"):
        regex_match("(unclosed", "text")
    with pytest.raises(ValueError, match="non-empty string"):
        regex_match("", "text")
    with pytest.raises(ValueError, match="the limit is 2000"):
        regex_match("a" * 2001, "text")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_rouge1_is_bounded_and_symmetric_in_f(reference, candidate):
    f = rouge1_f(reference, candidate)
    assert 0.0 <= f <= 1.0
    assert f == pytest.approx(rouge1_f(candidate, reference))
