"""Each criterion a unit (issue 31.1): the registry, docs/metrics.md and ``otel-eval criteria``
name the same criteria, and a criterion class registered here (one class, one registration, no
other change) is configured, checked and scored like the built-in ones."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_eval.criteria import REGISTRY, Criterion, CriterionOptions, Expectation, Skip
from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalConfig, Invocation, MessageContent
from otel_eval.scoring import config_problems, score_session
from otel_eval.trajectory import Trajectory, Turn

REPO = Path(__file__).resolve().parent.parent


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def _doc_sections() -> dict[str, str]:
    """Criterion → its section's text, from the headings of docs/metrics.md's "Every criterion"."""
    page = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    part = page.split("\n## Every criterion\n", 1)[1].split("\n## ", 1)[0]
    pieces = re.split(r"^### `([a-z0-9_]+)`$", part, flags=re.M)
    return dict(zip(pieces[1::2], pieces[2::2]))


def test_the_registry_the_docs_and_the_criteria_command_name_the_same_criteria():
    kinds = REGISTRY.kinds()
    assert "trajectory_match" in kinds and "health" in kinds and "token_usage_v1" in kinds

    sections = _doc_sections()
    assert list(sections) == kinds, "docs/metrics.md needs one section per registered criterion, in registry order"

    listed = _cli("criteria")
    assert listed.returncode == 0, listed.stderr
    printed = re.findall(r"^([a-z0-9_]+)(?: \(also: ([^)]*)\))?: ", listed.stdout, flags=re.M)
    assert [kind for kind, _ in printed] == kinds
    assert {kind: also.split(", ") for kind, also in printed if also} == {
        k: REGISTRY.aliases_of(k) for k in kinds if REGISTRY.aliases_of(k)
    }

    as_json = _cli("criteria", "--json")
    assert as_json.returncode == 0, as_json.stderr
    entries = json.loads(as_json.stdout)
    assert [e["kind"] for e in entries] == kinds

    for entry in entries:  # each docs section says what the code says
        section = sections[entry["kind"]]
        assert entry["description"] in section, entry["kind"]
        threshold = "none" if entry["informational"] else f"{entry['default_threshold']:g}"
        assert f"* Default threshold: {threshold}" in section, entry["kind"]
        for alias in entry["aliases"]:
            assert f"`{alias}`" in section, (entry["kind"], alias)
        listed_options = re.search(r"^\* Options: (.*)$", section, flags=re.M).group(1)
        assert sorted(re.findall(r"`([a-z_]+)`", listed_options)) == [o for o in entry["options"] if o != "kind"]


def test_criteria_help_is_listed_in_the_top_level_help():
    assert "criteria" in _cli("--help").stdout


def test_the_default_config_uses_each_criterion_default_threshold():
    for name, cfg in EvalConfig.default().criteria.items():
        assert cfg.threshold == REGISTRY[name].default_threshold, name


def test_google_adk_metric_names_resolve_to_criteria():
    for name in REGISTRY.adk_metrics():
        assert REGISTRY.criterion_for(name, CriterionConfig()) is not None, name
    assert REGISTRY.kind_of("response_match_score", CriterionConfig()) == "response_match"


# --- a criterion of the test's own -------------------------------------------------------------


class _AnswerLengthOptions(CriterionOptions):
    max_words: int = 50


class _AnswerLength(Criterion):
    """A criterion no module of otel-eval knows: at most ``max_words`` words in each turn's answer,
    checked on the turns whose invocation has an expected final response."""

    kind = "answer_length_for_test"
    description = "1 when the answer has at most options.max_words words, else 0; averaged"
    Options = _AnswerLengthOptions
    default_threshold = 1.0
    expectation = Expectation(
        "expected_final_response",
        lambda inv: inv.expected_final_response is not None,
        "the case has no expected final response",
    )

    def score(
        self, trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, judge: Any = None, name: str = ""
    ) -> tuple[float, dict[str, Any]]:
        limit = cfg.options.get("max_words", 50)
        words = [len((t.final_response or "").split()) for t in trajectory.turns]
        if not words:
            raise Skip("no turn answered")
        return sum(w <= limit for w in words) / len(words), {"words": words, "max_words": limit}


class _JudgedForTest(Criterion):
    """A judge criterion of the test's own, answered by the judge pool through its request hook."""

    kind = "judged_for_test"
    description = "a judge criterion the pool answers"
    judge = True

    def judge_request(
        self, name: str, cfg: CriterionConfig, trajectory: Trajectory, case: EvalCase | None, context: Any
    ) -> dict[str, Any]:
        return {
            "criterion": name,
            "threshold": cfg.threshold,
            "turns": [
                {"turn": t.index, "messages": [{"role": "user", "content": t.final_response or ""}]}
                for t in trajectory.turns
            ],
        }


@pytest.fixture
def registered():
    REGISTRY.register(_AnswerLength, aliases=("answer_words_for_test",))
    REGISTRY.register(_JudgedForTest)
    try:
        yield
    finally:
        REGISTRY.unregister(_AnswerLength.kind)
        REGISTRY.unregister(_JudgedForTest.kind)


def _case(expected: str | None) -> EvalCase:
    return EvalCase(
        eval_id="c",
        conversation=[
            Invocation(
                invocation_id="i0",
                user_content=MessageContent.user("hello"),
                expected_final_response=MessageContent.assistant(expected) if expected else None,
            )
        ],
    )


def _session(answer: str) -> Trajectory:
    return Trajectory("s1", [Turn(index=0, trace_id="t0", final_response=answer)])


def test_a_registered_criterion_is_scored_with_no_other_change(registered):
    config = EvalConfig(
        criteria={
            "answer_length_for_test": CriterionConfig(options={"max_words": 3}),
            "short": CriterionConfig(threshold=1.0, options={"kind": "answer_length_for_test", "max_words": 10}),
            "answer_words_for_test": CriterionConfig(options={"max_words": 2}),
        }
    )
    result = score_session(_session("it is sunny today"), _case("Sunny."), config)
    by_name = {c.criterion: c for c in result.criterion_results}
    assert (by_name["answer_length_for_test"].score, by_name["answer_length_for_test"].passed) == (0.0, False)
    assert by_name["answer_length_for_test"].details == {"words": [4], "max_words": 3}
    assert (by_name["short"].passed, by_name["short"].details["kind"]) == (True, "answer_length_for_test")
    assert by_name["answer_words_for_test"].passed is False  # the alias runs the same criterion
    assert result.verdict == "failed"

    # its expectation: a case without it skips the criterion, with the reason
    skipped = score_session(_session("it is sunny today"), _case(None), config)
    assert {
        c.criterion: (c.skipped, c.details.get("reason")) for c in skipped.criterion_results if c.criterion != "health"
    } == {n: (True, "the case has no expected final response") for n in config.criteria}
    assert skipped.verdict == "not_evaluated"

    # its options model: a misspelled option is refused at start and, if scored, an error
    bad = EvalConfig(criteria={"answer_length_for_test": CriterionConfig(options={"max_word": 3})})
    assert config_problems(bad) == [
        (
            "$.criteria.answer_length_for_test.options.max_word",
            "unknown option 'max_word' for answer_length_for_test (did you mean 'max_words'?)",
        )
    ]
    [errored, _health] = score_session(_session("it is sunny"), _case("Sunny."), bad).criterion_results
    assert (
        errored.error == "options.max_word: unknown option 'max_word' for answer_length_for_test "
        "(did you mean 'max_words'?)"
    )

    # it is listed, from the registry
    from otel_eval.criteria_listing import describe_criteria

    [entry] = [e for e in describe_criteria() if e["kind"] == "answer_length_for_test"]
    assert (entry["aliases"], entry["needs"], entry["options"]) == (
        ["answer_words_for_test"],
        "expected_final_response",
        ["kind", "max_words"],
    )


def test_a_registered_judge_criterion_is_left_to_the_judge_pool_through_its_request_hook(registered, monkeypatch):
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", "http://127.0.0.1:9")
    config = EvalConfig(criteria={"judged_for_test": CriterionConfig(threshold=0.6)})
    requests: list = []
    result = score_session(_session("it is sunny"), _case("Sunny."), config, judge_requests=requests)
    [judged, _health] = result.criterion_results
    assert (judged.skipped, judged.details["judge"]) == (True, "pending")
    assert requests == [
        {
            "criterion": "judged_for_test",
            "threshold": 0.6,
            "turns": [{"turn": 0, "messages": [{"role": "user", "content": "it is sunny"}]}],
        }
    ]


def test_an_unregistered_criterion_is_unknown_again(registered):
    REGISTRY.unregister(_AnswerLength.kind)
    config = EvalConfig(criteria={"answer_length_for_test": CriterionConfig()})
    [(where, reason)] = config_problems(config)
    assert where == "$.criteria.answer_length_for_test" and reason.startswith(
        "unknown criterion 'answer_length_for_test'"
    )
