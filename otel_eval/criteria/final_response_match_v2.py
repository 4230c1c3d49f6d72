"""``final_response_match_v2``: google-adk's metric of that name, with ADK's semantics
(:mod:`otel_eval.judging.adk.final_response_match_v2`),
on the user's judge endpoint through the judge pool (:mod:`.adk_judge`).

Per turn the judge labels the agent's final response *valid* or *invalid* against the golden
invocation's (ADK's prompt and its label parsing); the samples of a turn vote, a tie is invalid;
the score is the share of valid turns. It needs the golden case: an unmatched session is never
judged.
"""

from __future__ import annotations

from .adk_judge import AdkJudgeMetric


class FinalResponseMatchV2(AdkJudgeMetric):
    """google-adk's ``final_response_match_v2``: an LLM judge decides whether each answer is valid
    against the golden one, where wording differs but meaning may not."""

    kind = "final_response_match_v2"
    description = (
        "google-adk's judge: is each turn's final answer valid against the expected one (a majority of "
        "num_samples labels); the share of valid turns"
    )
    needs_reference = True
