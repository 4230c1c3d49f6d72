"""``rubric_based_final_response_quality_v1``: google-adk's ``RubricBasedFinalResponseQualityV1Evaluator``
prompt (``evaluation/rubric_based_final_response_quality_v1.py``). Parsing and aggregation are
the rubric metrics' own (:mod:`.rubrics`)."""

from __future__ import annotations

from collections.abc import Sequence

from . import prompts
from .invocation import (
    NO_GROUNDING,
    AdkInvocation,
    JudgeRubric,
    developer_instructions,
    response_text,
    text_of,
    tool_calls_and_responses_json,
    tool_declarations_json,
)
from .rubrics import FINAL_RESPONSE_QUALITY, properties_text

RUBRIC_TYPE = FINAL_RESPONSE_QUALITY


def prompt(actual: AdkInvocation, rubrics: Sequence[JudgeRubric], include_intermediate: bool = False) -> str:
    """``format_auto_rater_prompt``. The developer instructions are those of the agent that wrote
    the invocation's first event (else the first agent known); unknown to the app details, that
    agent is an error, as in ADK."""
    instructions, declarations = "", "Agent has no tools."
    app = actual.app_details
    if app is not None:
        agent = None
        if actual.events:
            agent = actual.events[0].author
        elif app.agent_details:
            agent = next(iter(app.agent_details))
        if agent:
            instructions = developer_instructions(app, agent)
        declarations = tool_declarations_json(app)
    return prompts.RUBRIC_BASED_FINAL_RESPONSE_QUALITY_V1.format(
        developer_instructions=instructions,
        tool_declarations=declarations,
        user_input=text_of(actual.user_content),
        response_steps=tool_calls_and_responses_json(actual),
        grounding_metadata=NO_GROUNDING,
        final_response=response_text(actual, include_intermediate) or "",
        rubrics=properties_text(rubrics),
    )
