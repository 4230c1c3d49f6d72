"""Thresholds at the boundary: a score just below the threshold FAILS (issue 10, rules 1 and 7).

The ADK measures (``trajectory_match`` and ``tool_trajectory_avg_score``: the mean of per-turn 0/1
verdicts; ``response_match_score``: ADK's ROUGE-1) PASS exactly when google-adk's evaluator says
PASSED, which compares the unrounded mean with ``>=``. Before, the score was rounded to six places
and given a 1e-9 tolerance before the comparison, so 2/3 met a threshold of 0.666667 and a ROUGE
F of 0.8421052… met 0.8421053 – both FAILED in ADK. Every other criterion decides on the unrounded
score too (a tolerance only for float noise), so a rounded display never turns a FAIL into a PASS.
"""

from __future__ import annotations

import math

import pytest

from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalConfig, Invocation, MatchType, MessageContent
from otel_eval.scoring import score_session
from tests.test_trajectory_verdicts import captured, case_of


def crit(trajectory, case, name, threshold, **cfg):
    result = score_session(trajectory, case, EvalConfig(criteria={name: CriterionConfig(threshold=threshold, **cfg)}))
    return next(c for c in result.criterion_results if c.criterion == name)


def just_above(score: float) -> list[float]:
    """Thresholds a hair above ``score``: its six-place rounding (when that rounds up) and score + 5e-10."""
    up = math.ceil(score * 1e6) / 1e6
    return sorted({t for t in (up, score + 5e-10) if t > score})


FOLLOWUP = [("get_weather", {"city": "Paris"})], [("get_forecast", {"city": "Paris", "days": 2})], []
"""Turn 1 right, turn 2 wrong (days), turn 3 missing from the session and expected to call nothing:
two of three turns hold, as ADK counts them."""


@pytest.mark.parametrize("name", ["trajectory_match", "tool_trajectory_avg_score"])
def test_two_of_three_turns_do_not_meet_a_threshold_above_two_thirds(reference_oracle, name):
    trajectory = captured("openai_otel_genai", "s3-followup")
    case = case_of(*FOLLOWUP)
    actual = [[{"name": c.name, "args": c.args} for c in turn.calls] for turn in trajectory.turns] + [[]]
    for threshold in [*just_above(2 / 3), 2 / 3, 0.6666]:
        adk = reference_oracle.ask(
            {
                "op": "adk_trajectory",
                "match_type": "EXACT",
                "threshold": threshold,
                "invocations": [
                    {"actual": a, "expected": [{"name": n, "args": args} for n, args in e]}
                    for a, e in zip(actual, FOLLOWUP)
                ],
            }
        )
        ours = crit(trajectory, case, name, threshold, match_type=MatchType.EXACT)
        assert adk["score"] == ours.score == 2 / 3
        assert ours.passed is (adk["status"] == "PASSED"), threshold
    assert not crit(trajectory, case, name, 0.666667).passed


def test_response_match_score_decides_at_the_boundary_as_adk(reference_oracle):
    trajectory = captured("openai_otel_genai", "s1-weather")  # "It's currently 22°C and sunny in Tokyo."
    reference = "It is 22 degrees and sunny in Tokyo today."
    case = EvalCase(
        eval_id="c",
        conversation=[
            Invocation(
                invocation_id="t",
                user_content=MessageContent.user("What's the weather in Tokyo?"),
                expected_final_response=MessageContent.assistant(reference),
            )
        ],
    )
    exact = reference_oracle.ask(
        {
            "op": "adk_response_match",
            "threshold": 0.5,
            "invocations": [{"expected": reference, "actual": trajectory.final_response}],
        }
    )["score"]
    assert round(exact, 6) != exact  # a score the six-place rounding moves
    for threshold in [*just_above(exact), exact]:
        adk = reference_oracle.ask(
            {
                "op": "adk_response_match",
                "threshold": threshold,
                "invocations": [{"expected": reference, "actual": trajectory.final_response}],
            }
        )
        ours = crit(trajectory, case, "response_match_score", threshold)
        assert ours.score == adk["score"]
        assert ours.passed is (adk["status"] == "PASSED"), threshold


def test_a_rounded_score_never_turns_a_fail_into_a_pass():
    """rouge-score's number (not an ADK name): decided on the unrounded F, shown rounded."""
    trajectory = captured("openai_otel_genai", "s1-weather")
    reference = "It is 22 degrees and sunny in Tokyo today."
    case = EvalCase(
        eval_id="c",
        conversation=[
            Invocation(
                invocation_id="t",
                user_content=MessageContent.user("q"),
                expected_final_response=MessageContent.assistant(reference),
            )
        ],
    )
    from otel_eval.metrics.response import rouge1

    f = rouge1(reference, trajectory.final_response).fmeasure
    threshold = math.ceil(f * 1e6) / 1e6
    assert threshold > f + 1e-9
    result = crit(trajectory, case, "response_match", threshold)
    assert not result.passed and result.score == round(f, 6)
    assert crit(trajectory, case, "response_match", f).passed
