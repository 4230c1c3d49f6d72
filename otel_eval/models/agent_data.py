"""The AgentData record: NovaEval's agent model, one per span and one per trace.

Field names and types follow NovaEval's ``AgentData`` as used to produce its reference
``processed_agent_dataset.json``: ``trace`` is the JSON dump of the span's events,
``retrieval_query`` a list of queries and ``retrieved_context`` one list of documents per query.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field


class ToolSchema(BaseModel):
    name: str
    description: str
    args_schema: Optional[dict[str, Any]] = None
    return_schema: Optional[dict[str, Any]] = None


class ToolCall(BaseModel):
    tool_name: str
    parameters: dict[str, Any]
    call_id: str


class ToolResult(BaseModel):
    call_id: str
    result: Any
    success: bool
    error_message: Optional[str] = None


class AgentData(BaseModel):
    user_id: Optional[str] = None
    task_id: Optional[str] = None
    turn_id: Optional[str] = None

    ground_truth: Optional[str] = None
    expected_tool_call: Optional[ToolCall] = None

    agent_name: Optional[str] = None
    agent_role: Optional[str] = None
    agent_task: Optional[str] = None

    system_prompt: Optional[str] = None
    agent_response: Optional[str] = None
    trace: Optional[str] = None

    tools_available: list[ToolSchema] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parameters_passed: dict[str, Any] = Field(default_factory=dict)
    tool_call_results: list[ToolResult] = Field(default_factory=list)

    retrieval_query: Optional[list[str]] = None
    retrieved_context: Optional[list[list[str]]] = None

    exit_status: Optional[str] = None
    agent_exit: bool = False

    metadata: Optional[str] = None
