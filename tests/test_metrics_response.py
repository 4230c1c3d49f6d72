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
    from rouge_score import rouge_scorer  # a test dependency: missing, the test fails rather than skips

    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=use_stemmer)
    for reference, candidate in PAIRS:
        theirs = scorer.score(reference, candidate)["rouge1"]
        ours = rouge1(reference, candidate, use_stemmer=use_stemmer)
        assert (ours.precision, ours.recall, ours.fmeasure) == pytest.approx(
            (theirs.precision, theirs.recall, theirs.fmeasure), abs=1e-12
        ), (reference, candidate)


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


# --- issue 10 rule 7: the ROUGE numbers equal the reference tools' own ---------------------------

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from otel_eval.metrics.response import adk_rouge1, adk_tokens  # noqa: E402
from tests.paths import REPO  # noqa: E402

WORDS = [
    "The",
    "weather",
    "in",
    "Tokyo",
    "is",
    "22°C",
    "sunny",
    "running",
    "runs",
    "ran",
    "generalization",
    "agents",
    "café",
    "naïve",
    "Straße",
    "généralement",
    "Ünïcödé",
    "e\u0301te\u0301",
    "Ἀθῆναι",
    "东京",
    "天气很好",
    "晴れです",
    "カタカナ",
    "한국어",
    "ภาษาไทย",
    "สวัสดีครับ",
    "ລາວ",
    "ខ្មែរ",
    "မြန်မာ",
    "नमस्ते",
    "مرحبا",
    "Привет",
    "ＡＢＣ",
    "ﬁnd",
    "İstanbul",
    "x²",
    "½",
    "٣٤",
    "3.14",
    "1,000",
    "$5",
    "10:05",
    "😀",
    "don't",
    "snake_case",
    "well-known",
    "FRA→JFK",
    "!!!",
    "...",
    "?",
    "\n",
    "\t",
    "",
]
words = st.one_of(st.sampled_from(WORDS), st.text(max_size=6))
texts = st.builds(lambda ws, sep: sep.join(ws), st.lists(words, max_size=14), st.sampled_from([" ", "", "\n", ", "]))


@st.composite
def text_pairs(draw):
    """(reference, candidate): unrelated texts, or the candidate made from the reference's words."""
    reference_words = draw(st.lists(words, max_size=14))
    reference = " ".join(reference_words)
    if draw(st.booleans()):
        return reference, draw(texts)
    kept = draw(st.permutations(reference_words))[: draw(st.integers(0, len(reference_words)))]
    return reference, " ".join(kept + draw(st.lists(words, max_size=3)))


FIXED = PAIRS + [
    ("東京の天気は晴れです", "東京は晴れ"),
    ("ภาษาไทยง่ายมาก", "ภาษาไทยยาก"),
    ("Il fait beau à Paris aujourd'hui", "il fait très beau à paris"),
    ("ＡＢＣ ﬁnd ½", "ABC find 1⁄2"),
    ("İstanbul", "istanbul"),
    ("The agents were running quickly", "agent runs quick"),
    ("", ""),
    ("", "anything"),
    ("!!!", "???"),
]


def test_adk_rouge1_equals_google_adk_on_fixed_cases(reference_oracle):
    answer = reference_oracle.ask(
        {
            "op": "adk_response_match",
            "threshold": 0.8,
            "invocations": [{"expected": reference, "actual": candidate} for reference, candidate in FIXED],
        }
    )
    ours = [adk_rouge1(reference, candidate).fmeasure for reference, candidate in FIXED]
    assert ours == answer["per_invocation"]
    assert sum(ours) / len(ours) == answer["score"]


def test_adk_tokens_keep_unicode_words_and_split_cjk_and_thai():
    assert adk_tokens("The Café is running! 東京は ภาษา ＡＢＣ") == [
        "the",
        "café",
        "is",
        "run",
        "東",
        "京",
        "は",
        "ภ",
        "า",
        "ษ",
        "า",
        "abc",
    ]
    assert adk_rouge1("東京の天気", "東京").fmeasure == pytest.approx(2 * (1.0 * 0.4) / 1.4)
    assert rouge1_f("東京の天気", "東京") == 0.0  # rouge-score's own tokenizer drops every CJK character


@settings(max_examples=60, deadline=None)
@given(st.lists(text_pairs(), min_size=1, max_size=20))
def test_differential_adk_response_match_on_generated_texts(reference_oracle, pairs):
    answer = reference_oracle.ask(
        {
            "op": "adk_response_match",
            "threshold": 0.8,
            "invocations": [{"expected": reference, "actual": candidate} for reference, candidate in pairs],
        }
    )
    ours = [adk_rouge1(reference, candidate).fmeasure for reference, candidate in pairs]
    assert ours == answer["per_invocation"], pairs
    assert sum(ours) / len(ours) == answer["score"]


@settings(max_examples=40, deadline=None)
@given(st.lists(text_pairs(), min_size=1, max_size=10), st.booleans())
def test_differential_rouge1_equals_rouge_score_on_generated_texts(reference_oracle, pairs, use_stemmer):
    for reference, candidate in pairs:
        theirs = reference_oracle.ask(
            {"op": "rouge1", "target": reference, "prediction": candidate, "use_stemmer": use_stemmer}
        )
        ours = rouge1(reference, candidate, use_stemmer=use_stemmer)
        assert (ours.precision, ours.recall, ours.fmeasure) == (
            theirs["precision"],
            theirs["recall"],
            theirs["score"],
        ), (reference, candidate)


def test_stemming_is_a_runtime_dependency_not_a_test_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = [
        d.split(";")[0].split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in project["dependencies"]
    ]
    assert "nltk" in runtime or "rouge-score" in runtime
    assert rouge1("running runners", "run runner", use_stemmer=True).fmeasure == 1.0


# --- the criteria on real spans: LangGraph/OpenInference capture, S3 (two turns) ----------------


@pytest.fixture(scope="module")
def followup():
    from otel_eval.mapping import map_spans
    from otel_eval.otlp_json import read_trace_file
    from otel_eval.spans import from_otlp
    from otel_eval.trajectory import build_trajectory
    from tests.paths import FIXTURES

    capture = FIXTURES / "realclients/langgraph_openinference.otlp.json"
    spans = [s for r in read_trace_file(str(capture)) for s in from_otlp(r.resource_spans).spans]
    mapped = [m for m in map_spans(spans) if m.session_id == "langgraph_openinference-s3-followup"]
    return build_trajectory("langgraph_openinference-s3-followup", mapped)


EXPECTED_ANSWERS = ["Paris is cloudy at 18°C right now.", "Tomorrow Paris will be sunny, around 20 °C!"]


def _case(answers):
    from otel_eval.models.evalset import EvalCase, Invocation, MessageContent

    return EvalCase(
        eval_id="followup",
        conversation=[
            Invocation(
                invocation_id=f"t{i}",
                user_content=MessageContent.user("q"),
                expected_final_response=MessageContent.assistant(a),
            )
            for i, a in enumerate(answers)
        ],
    )


def _criteria(trajectory, case, criteria):
    from otel_eval.models.evalset import CriterionConfig, EvalConfig
    from otel_eval.scoring import score_session

    config = EvalConfig(criteria={name: CriterionConfig(threshold=t, options=o) for name, (t, o) in criteria.items()})
    return {c.criterion: c for c in score_session(trajectory, case, config).criterion_results}


def test_response_match_score_is_adks_number_on_real_spans(reference_oracle, followup):
    actual = [turn.final_response for turn in followup.turns]
    assert actual == ["It's 18°C and cloudy in Paris right now.", "Tomorrow in Paris it should be 20°C and sunny."]
    adk = reference_oracle.ask(
        {
            "op": "adk_response_match",
            "threshold": 0.6,
            "invocations": [{"expected": e, "actual": a} for e, a in zip(EXPECTED_ANSWERS, actual)],
        }
    )
    result = _criteria(followup, _case(EXPECTED_ANSWERS), {"response_match_score": (0.6, {})})["response_match_score"]
    assert result.score == pytest.approx(adk["score"], abs=1e-6)
    assert result.passed is (adk["status"] == "PASSED")
    assert [t["score"] for t in result.details["per_turn"]] == pytest.approx(adk["per_invocation"], abs=1e-6)
    assert result.details["method"] == "adk_rouge1"


def test_response_match_keeps_rouge_scores_number_on_real_spans(reference_oracle, followup):
    results = _criteria(
        followup,
        _case(EXPECTED_ANSWERS),
        {"response_match": (0.5, {}), "stemmed": (0.5, {"kind": "response_match", "use_stemmer": True})},
    )
    for name, use_stemmer in (("response_match", False), ("stemmed", True)):
        per_turn = [
            reference_oracle.ask(
                {"op": "rouge1", "target": e, "prediction": t.final_response, "use_stemmer": use_stemmer}
            )["score"]
            for e, t in zip(EXPECTED_ANSWERS, followup.turns)
        ]
        assert results[name].score == pytest.approx(sum(per_turn) / 2, abs=1e-6), name
        assert results[name].details["method"] == "rouge1"


def test_response_match_score_refuses_another_method(followup):
    result = _criteria(followup, _case(EXPECTED_ANSWERS), {"response_match_score": (0.8, {"method": "exact"})})[
        "response_match_score"
    ]
    assert not result.passed and "response_match_score is google-adk's ROUGE-1" in result.error


@settings(max_examples=25, deadline=None)
@given(st.lists(text_pairs(), min_size=1, max_size=5))
def test_differential_response_match_score_criterion_averages_invocations_like_adk(reference_oracle, pairs):
    from otel_eval.trajectory import Trajectory, Turn

    trajectory = Trajectory(
        "s", [Turn(index=i, trace_id=f"t{i}", final_response=candidate) for i, (_, candidate) in enumerate(pairs)]
    )
    adk = reference_oracle.ask(
        {
            "op": "adk_response_match",
            "threshold": 0.5,
            "invocations": [{"expected": reference, "actual": candidate} for reference, candidate in pairs],
        }
    )
    result = _criteria(trajectory, _case([reference for reference, _ in pairs]), {"response_match_score": (0.5, {})})[
        "response_match_score"
    ]
    assert result.score == pytest.approx(adk["score"], abs=1e-6)
