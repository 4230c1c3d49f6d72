"""``rubric_based_tool_use_quality_v1``: google-adk's ``RubricBasedToolUseV1Evaluator`` prompt
(``evaluation/rubric_based_tool_use_quality_v1.py``). Parsing and aggregation are the rubric
metrics' own (:mod:`.rubrics`)."""

from __future__ import annotations

from collections.abc import Sequence

from . import prompts
from .invocation import AdkInvocation, JudgeRubric, text_of, tool_calls_and_responses_json, tool_declarations_json
from .rubrics import TOOL_USE_QUALITY, properties_text

RUBRIC_TYPE = TOOL_USE_QUALITY


def prompt(actual: AdkInvocation, rubrics: Sequence[JudgeRubric]) -> str:
    """``format_auto_rater_prompt``: the tools available, the user's input, the calls made with
    their responses, the rubrics."""
    declarations = (
        tool_declarations_json(actual.app_details) if actual.app_details is not None else "Agent has no tools."
    )
    return prompts.RUBRIC_BASED_TOOL_USE_QUALITY_V1.format(
        tool_declarations=declarations,
        user_input=text_of(actual.user_content),
        tool_usage=tool_calls_and_responses_json(actual),
        rubrics=properties_text(rubrics),
    )
