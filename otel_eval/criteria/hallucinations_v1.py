"""``hallucinations_v1``: google-adk's metric of that name, with ADK's semantics
(:mod:`otel_eval.judging.adk.hallucinations_v1`),
on the user's judge endpoint through the judge pool (:mod:`.adk_judge`).

Two judge calls per response, in sequence: the segmenter splits the final response (and, with
``evaluate_intermediate_nl_responses``, every text the agents wrote before it) into sentences,
the validator labels each against the instructions, the user prompt, the tools and the calls
before it; the score is the share supported or not applicable (ADK's prompts and parsing).
"""

from __future__ import annotations

from .adk_judge import AdkJudgeMetric


class Hallucinations(AdkJudgeMetric):
    """google-adk's ``hallucinations_v1``: the judge checks each sentence of the answers against what
    the agent was given and what its tools returned."""

    kind = "hallucinations_v1"
    description = (
        "google-adk's judge: the share of the answers' sentences the context supports (segmented, then validated)"
    )
