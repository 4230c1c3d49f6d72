"""Data models: AgentData (per span / per trace), the EvalSet golden family, and results."""

from .agent_data import AgentData, ToolCall, ToolResult, ToolSchema
from .evalset import (
    IGNORE,
    CriterionConfig,
    EvalCase,
    EvalConfig,
    EvalSet,
    Invocation,
    MatchType,
    MessageContent,
    Rubric,
    SessionInput,
    StepType,
    TrajectoryStep,
)
from .evalset import ExpectedToolCall
from .results import (
    FAILED,
    NOT_EVALUATED,
    PASSED,
    CriterionResult,
    CriterionStats,
    EvalCaseResult,
    EvalReport,
    EvalSummary,
    verdict_of,
)

__all__ = [
    "AgentData", "ToolCall", "ToolResult", "ToolSchema",
    "IGNORE", "CriterionConfig", "EvalCase", "EvalConfig", "EvalSet", "Invocation", "MatchType",
    "MessageContent", "Rubric", "SessionInput", "StepType", "TrajectoryStep", "ExpectedToolCall",
    "CriterionResult", "CriterionStats", "EvalCaseResult", "EvalReport", "EvalSummary",
    "PASSED", "FAILED", "NOT_EVALUATED", "verdict_of",
]
