"""What ADK's invocation holds beyond a turn's tool calls, read from one trace's spans: each
agent's instructions and tool declarations (ADK's ``app_details``), and the model's responses in
order (their texts are ADK's intermediate responses).

``adk eval`` records ``app_details`` from the model requests of the invocation's own agents
(``EvaluationGenerator._get_app_details_by_invocation_id``): an agent's first model request gives
its instructions and tools. The same is read here from the LLM spans: the first LLM span of each
agent gives its system prompt and tool definitions. Spans inside a tool call (an ``AgentTool``'s
agent, which runs in a session of its own) are left out, as ADK's invocation leaves them out.

The view is plain JSON, built once per judged trace (:func:`trace_view`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .from_trajectory import DEFAULT_AUTHOR

CONTEXT_KEY = "adk"
"""The judge context (``score_session``'s ``judge_context()``) holds trace id → (system
instructions, tool definitions), and ``(CONTEXT_KEY, trace id)`` → the trace's view."""


def _tool_dict(tool: Any) -> dict[str, Any]:
    return tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else dict(tool)


def _is_call(m: Any) -> bool:
    reading = m.reading
    return reading.span_type == "tool" and reading.tool is not None and not reading.is_wrapper


def _placement(m: Any, by_id: dict[str, Any]) -> tuple[str | None, bool]:
    """(the nearest agent above the span, whether a tool call is above it)."""
    agent, inside = None, False
    seen = {m.span.span_id}
    parent = by_id.get(m.span.parent_span_id) if m.span.parent_span_id else None
    while parent is not None and parent.span.span_id not in seen:
        seen.add(parent.span.span_id)
        if _is_call(parent):
            inside = True
        elif agent is None and parent.reading.span_type == "agent" and parent.reading.agent_name:
            agent = parent.reading.agent_name
        parent = by_id.get(parent.span.parent_span_id) if parent.span.parent_span_id else None
    return agent, inside


def trace_view(members: Sequence[Any]) -> dict[str, Any]:
    """``{"agents": {name: {"instructions", "tools"}}, "responses": [{"agent", "text", "calls",
    "start_ns"}], "tool_ends": {span id: end time}}`` of one trace's mapped spans
    (``otel_eval.mapping.MappedSpan``), LLM spans inside a tool call left out; ``responses`` in
    start order; ``tool_ends``: when each tool span ended (ADK yields a call's response then)."""
    by_id = {m.span.span_id: m for m in members}
    roots = [m for m in members if not m.span.parent_span_id or m.span.parent_span_id not in by_id]
    root_agent = next((m.reading.agent_name for m in roots if m.reading.agent_name), None)
    agents: dict[str, dict[str, Any]] = {}
    responses = []
    tool_ends = {}
    for m in sorted(members, key=lambda m: (m.span.start_ns, m.span.end_ns)):
        if _is_call(m):
            tool_ends[m.span.span_id] = m.span.end_ns
        if m.reading.span_type != "llm":
            continue
        agent, inside = _placement(m, by_id)
        if inside:
            continue
        agent = agent or m.reading.agent_name or root_agent or DEFAULT_AUTHOR
        if agent not in agents:
            agents[agent] = {
                "instructions": m.reading.system_prompt or "",
                "tools": [_tool_dict(t) for t in m.reading.tools_available or []],
            }
        responses.append(
            {
                "agent": agent,
                "text": m.reading.response or None,
                "calls": len(m.reading.requested_calls or ()),
                "start_ns": m.span.start_ns,
            }
        )
    return {"agents": agents, "responses": responses, "tool_ends": tool_ends}
