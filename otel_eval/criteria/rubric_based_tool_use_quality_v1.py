"""``rubric_based_tool_use_quality_v1``: google-adk's metric of that name, with ADK's semantics
(:mod:`otel_eval.judging.adk.rubric_based_tool_use_quality_v1`, :mod:`otel_eval.judging.adk.rubrics`),
on the user's judge endpoint through the judge pool (:mod:`.adk_judge`).

Per turn the judge gives a yes/no verdict on each rubric about the tool calls and their
responses (ADK's prompt); per rubric the samples vote; the score is the mean of every verdict.
"""

from __future__ import annotations

from .adk_judge import AdkJudgeMetric


class RubricBasedToolUseQuality(AdkJudgeMetric):
    """google-adk's ``rubric_based_tool_use_quality_v1``: rubric verdicts on how the tools were used and
    what they returned."""

    kind = "rubric_based_tool_use_quality_v1"
    description = (
        "google-adk's judge: yes/no verdicts on rubrics about the tool calls and their results; the mean verdict"
    )
