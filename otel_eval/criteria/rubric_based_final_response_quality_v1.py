"""``rubric_based_final_response_quality_v1``: google-adk's metric of that name, with ADK's semantics
(:mod:`otel_eval.judging.adk.rubric_based_final_response_quality_v1`, :mod:`otel_eval.judging.adk.rubrics`),
on the user's judge endpoint through the judge pool (:mod:`.adk_judge`).

Per turn the judge gives a yes/no verdict on each rubric about the final answer, with the
agent's instructions, tools and tool calls as evidence (ADK's prompt); per rubric the samples
vote; the score is the mean of every verdict of every turn.
"""

from __future__ import annotations

from .adk_judge import AdkJudgeMetric


class RubricBasedFinalResponseQuality(AdkJudgeMetric):
    """google-adk's ``rubric_based_final_response_quality_v1``: yes/no rubric verdicts on the final
    answer, for qualities no golden answer pins down."""

    kind = "rubric_based_final_response_quality_v1"
    description = (
        "google-adk's judge: yes/no verdicts on rubrics about the final answer, the tool calls its "
        "evidence; the mean verdict"
    )
