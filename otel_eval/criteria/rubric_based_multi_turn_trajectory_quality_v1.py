"""``rubric_based_multi_turn_trajectory_quality_v1``: google-adk's metric of that name, with ADK's semantics
(:mod:`otel_eval.judging.adk.rubric_based_multi_turn_trajectory_quality_v1`,
:mod:`otel_eval.judging.adk.rubrics`),
on the user's judge endpoint through the judge pool (:mod:`.adk_judge`).

The judge reads the whole conversation once, on its last turn (every turn's user input, the
agents' texts, tool calls and outputs, final responses), and gives a yes/no verdict on each
rubric (ADK's prompt); the turns before the last are not evaluated.
"""

from __future__ import annotations

from .adk_judge import AdkJudgeMetric


class RubricBasedMultiTurnTrajectoryQuality(AdkJudgeMetric):
    """google-adk's ``rubric_based_multi_turn_trajectory_quality_v1``: rubric verdicts on the whole
    conversation, judged once at its last turn."""

    kind = "rubric_based_multi_turn_trajectory_quality_v1"
    description = (
        "google-adk's judge: yes/no verdicts on rubrics about the whole conversation, judged once on its last turn"
    )
