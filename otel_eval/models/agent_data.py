"""The AgentData record: NovaEval's agent model, one per span and one per trace.

Field names and types follow NovaEval's ``AgentData`` as used to produce its reference
``processed_agent_dataset.json``: ``trace`` is the JSON dump of the span's events,
``retrieval_query`` a list of queries and ``retrieved_context`` one list of documents per query.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ToolSchema(BaseModel):
    """A tool the agent was offered (name, description, argument and return schemas), as its model call
    declared it."""

    name: str
    description: str
    args_schema: dict[str, Any] | None = None
    return_schema: dict[str, Any] | None = None


class ToolCall(BaseModel):
    """A tool call the agent's model requested, in NovaEval's spelling (``parameters``, not ``args``)."""

    tool_name: str
    parameters: dict[str, Any]
    call_id: str


class ToolResult(BaseModel):
    """What a tool call returned (or its error), tied to its call by ``call_id``."""

    call_id: str
    result: Any
    success: bool
    error_message: str | None = None


class AgentData(BaseModel):
    """One span's (or one trace's) agent activity in NovaEval's shape: what the agent was asked, told,
    offered and answered, and the tools it called; stored per span and per trace for analysis."""

    user_id: str | None = None
    task_id: str | None = None
    turn_id: str | None = None

    ground_truth: str | None = None
    expected_tool_call: ToolCall | None = None

    agent_name: str | None = None
    agent_role: str | None = None
    agent_task: str | None = None

    system_prompt: str | None = None
    agent_response: str | None = None
    trace: str | None = None

    tools_available: list[ToolSchema] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parameters_passed: dict[str, Any] = Field(default_factory=dict)
    tool_call_results: list[ToolResult] = Field(default_factory=list)

    retrieval_query: list[str] | None = None
    retrieved_context: list[list[str]] | None = None

    exit_status: str | None = None
    agent_exit: bool = False

    metadata: str | None = None
