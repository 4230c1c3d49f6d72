"""google-adk 2.13's judge prompt templates, verbatim, one module per metric
(``google/adk/evaluation/*.py``; Copyright 2026 Google LLC, Apache License 2.0).

Copied, not rewritten: a judge answers the prompt it is given, so ADK's verdicts need ADK's
words. tests/test_adk_judge_metrics.py checks each template against the installed google-adk's.
Placeholders are ``str.format`` fields, as ADK fills them (``{{`` is a literal brace).

Every metric module of the judge reads its template as ``prompts.NAME``, so the templates are
named here too.
"""

from .final_response_match_v2 import FINAL_RESPONSE_MATCH_V2
from .hallucinations_v1 import HALLUCINATIONS_V1_SEGMENTER, HALLUCINATIONS_V1_VALIDATOR
from .rubric_based_final_response_quality_v1 import RUBRIC_BASED_FINAL_RESPONSE_QUALITY_V1
from .rubric_based_multi_turn_trajectory_quality_v1 import RUBRIC_BASED_MULTI_TURN_TRAJECTORY_QUALITY_V1
from .rubric_based_tool_use_quality_v1 import RUBRIC_BASED_TOOL_USE_QUALITY_V1

__all__ = [
    "FINAL_RESPONSE_MATCH_V2",
    "HALLUCINATIONS_V1_SEGMENTER",
    "HALLUCINATIONS_V1_VALIDATOR",
    "RUBRIC_BASED_FINAL_RESPONSE_QUALITY_V1",
    "RUBRIC_BASED_MULTI_TURN_TRAJECTORY_QUALITY_V1",
    "RUBRIC_BASED_TOOL_USE_QUALITY_V1",
]
