"""A session's turns and its golden case as the ADK invocations ADK's judge prompts read.

``adk eval`` judges invocations it builds from the agent's events
(``EvaluationGenerator.convert_events_to_eval_invocations``); otel-eval has the agent's spans.
From a turn it builds the same shape:

* ``user_content``: the turn's user input (else the golden invocation's);
* ``final_response``: the turn's final answer;
* ``intermediate_data.invocation_events``: per model step, one event with its function calls
  (calls of one model response together, as ADK records them), then one event with their
  responses; the author is the (sub-)agent that made the calls. Calls made inside another tool
  call (an ``AgentTool``'s agent) are left out, as ADK's invocation leaves them out. A tool's
  result is its response as ADK records a function tool's: a JSON object as is, anything else as
  ``{"result": value}``, an error as ``{"error": message}``;
* ``app_details``: the agent's system instructions and tool definitions, when the spans recorded
  them (each tool as a genai ``FunctionDeclaration`` with its JSON schema as
  ``parameters_json_schema``, all in one ``Tool``, as ADK declares function tools);
* ``rubrics``: the case's and the golden invocation's rubrics, as ADK copies them onto the
  actual invocation.

What spans do not carry — the texts a model wrote *between* tool calls, grounding metadata, the
instructions of sub-agents other than the first — is missing from these invocations (docs/adk.md
lists it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .invocation import (
    AdkInvocation,
    AgentDetails,
    AppDetails,
    Content,
    FunctionCall,
    FunctionResponse,
    InvocationEvent,
    InvocationEvents,
    JudgeRubric,
    Part,
    RubricContent,
)

DEFAULT_AUTHOR = "agent"
"""The author of events whose agent the spans do not name."""


def _response(call: Any) -> dict[str, Any]:
    if call.error:
        return {"error": str(call.error)}
    result = call.result
    if isinstance(result, str) and result.lstrip().startswith("{"):
        try:
            parsed = json.loads(result)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    if isinstance(result, dict):
        return result
    return {"result": result}


def _steps(calls: Sequence[Any]) -> list[list[Any]]:
    """Calls grouped as the model issued them: consecutive calls of one model step (or one
    parallel group) by one agent together."""
    out: list[list[Any]] = []
    for call in calls:
        if out:
            last = out[-1][-1]
            same_step = call.step is not None and call.step == last.step
            same_group = call.step is None and call.group is not None and call.group == last.group
            if (same_step or same_group) and call.agent == last.agent:
                out[-1].append(call)
                continue
        out.append([call])
    return out


def _model_event(author: str, calls: Sequence[Any], text: str | None = None) -> InvocationEvent:
    """A model response's event: its text, then its function calls."""
    parts = ([Part(text=text)] if text else []) + [
        Part(function_call=FunctionCall(id=c.call_id, args=dict(c.args or {}), name=c.name)) for c in calls
    ]
    return InvocationEvent(author=author, content=Content(role="model", parts=parts))


def _responses_event(author: str, calls: Sequence[Any]) -> InvocationEvent | None:
    if not calls:
        return None
    return InvocationEvent(
        author=author,
        content=Content(
            role="user",
            parts=[
                Part(function_response=FunctionResponse(id=c.call_id, name=c.name, response=_response(c)))
                for c in calls
            ],
        ),
    )


def events_of(
    calls: Sequence[Any],
    responses: Sequence[dict[str, Any]] = (),
    final: bool = False,
    tool_ends: dict[str, int] | None = None,
    author: str = DEFAULT_AUTHOR,
) -> list[InvocationEvent]:
    """The invocation events of a turn, in the order ADK yields them (see the module's notes).

    ``responses``: the model's responses (:func:`otel_eval.judging.adk.trace_view.trace_view`).
    Each group of calls goes in the event of the response that asked for it (the latest one of
    the calls' agent that started before the group's first call: a model span may end after the
    calls it asked for started), with that response's text; the other responses' texts are events
    of their own. A response's event is placed at its start, the event of its calls' responses at
    the end of the last of those calls (``tool_ends``: tool span id → end time): so the branches
    of a parallel agent interleave, and a sub-agent run as a tool answers after its own events,
    as in ADK. The last response with text only is the final answer: as ADK does, its event is
    kept without content (its text is the invocation's final response). A call no tool span ran
    (a delegation to a task agent) has no response event, as in ADK. ``final``: the turn has a
    final answer (its event is added at the end when no response shows it)."""
    steps = _steps([c for c in calls if not c.inside_call])
    final_index = (
        next((i for i in range(len(responses) - 1, -1, -1) if responses[i]["text"] and not responses[i]["calls"]), None)
        if final
        else None
    )
    assigned: dict[int, list[Any]] = {}
    timeline: list[tuple[tuple[int, int, int], InvocationEvent]] = []

    def answered(group: Sequence[Any]) -> list[Any]:
        if tool_ends is None:
            return list(group)
        return [c for c in group if c.span_id in tool_ends]

    def ended(group: Sequence[Any], started: int) -> int:
        ends = [tool_ends[c.span_id] for c in group if tool_ends is not None and c.span_id in tool_ends]
        return max(ends) if ends else started

    for j, step in enumerate(steps):
        started = min((c.start_ns for c in step if c.start_ns), default=0)
        asking = [i for i, r in enumerate(responses) if r["calls"] and (not started or r["start_ns"] <= started)]
        same_agent = [i for i in asking if responses[i]["agent"] == (step[0].agent or responses[i]["agent"])]
        candidates = same_agent or asking
        chosen = candidates[-1] if candidates else None
        who = step[0].agent or author
        if chosen is None:
            timeline.append(((started, 0, j), _model_event(who, step)))
        else:
            assigned.setdefault(chosen, []).extend(step)
            who = responses[chosen]["agent"]
        reply = _responses_event(who, answered(step))
        if reply is not None:
            timeline.append(((ended(step, started), 1, j), reply))
    for i, response in enumerate(responses):
        if i == final_index:
            timeline.append(((response["start_ns"], 0, -1), InvocationEvent(author=response["agent"], content=None)))
            continue
        asked = assigned.get(i, [])
        if asked or response["text"]:
            timeline.append(((response["start_ns"], 0, -1), _model_event(response["agent"], asked, response["text"])))
    events = [e for _, e in sorted(timeline, key=lambda item: item[0])]
    if final and final_index is None:
        events.append(InvocationEvent(author=events[-1].author if events else author, content=None))
    return events


def tool_declaration(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The spans' tool definitions as one genai ``Tool`` of function declarations."""
    declarations = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        wrapped = tool.get("function")
        function: dict[Any, Any] = wrapped if isinstance(wrapped, dict) else tool  # OpenAI's wrapper
        name = function.get("name")
        if not name:
            continue
        declaration: dict[str, Any] = {}
        if function.get("description") is not None:
            declaration["description"] = function["description"]
        declaration["name"] = name
        schema = next(
            (
                function[k]
                for k in ("args_schema", "parameters", "input_schema", "parameters_json_schema")
                if isinstance(function.get(k), dict)
            ),
            None,
        )
        if schema is not None:
            declaration["parameters_json_schema"] = schema
        declarations.append(declaration)
    return [{"function_declarations": declarations}] if declarations else []


def rubrics_of(raw: Any) -> list[JudgeRubric]:
    """ADK rubric objects (``{rubric_id, rubric_content: {text_property}, type}``, either key
    spelling) from a golden file's ``rubrics``; others are left out."""
    out = []
    for item in raw or ():
        if not isinstance(item, dict):
            continue
        rid = item.get("rubric_id", item.get("rubricId"))
        content = item.get("rubric_content", item.get("rubricContent")) or {}
        text = content.get("text_property", content.get("textProperty")) if isinstance(content, dict) else None
        if isinstance(rid, str):
            out.append(
                JudgeRubric(
                    rubric_id=rid,
                    rubric_content=RubricContent(text_property=text),
                    description=item.get("description"),
                    type=item.get("type"),
                )
            )
    return out


def invocation_rubrics(case: Any, index: int) -> list[JudgeRubric]:
    """The rubrics ADK copies onto actual invocation ``index``: the case's, then the golden
    invocation's; a rubric id given by both is ADK's error."""
    rubrics = rubrics_of((case.metadata or {}).get("rubrics")) if case is not None else []
    if case is not None and index < len(case.conversation):
        seen = {r.rubric_id for r in rubrics}
        for rubric in rubrics_of((case.conversation[index].metadata or {}).get("rubrics")):
            if rubric.rubric_id in seen:
                raise ValueError(f"Rubric with rubric_id '{rubric.rubric_id}' already exists.")
            rubrics.append(rubric)
            seen.add(rubric.rubric_id)
    return rubrics


def actual_invocation(
    turn: Any,
    *,
    invocation_id: str = "",
    user_text: str | None = None,
    system: str | None = None,
    tools: Sequence[Any] | None = None,
    view: dict[str, Any] | None = None,
    rubrics: Sequence[JudgeRubric] = (),
) -> AdkInvocation:
    """A turn (``otel_eval.trajectory.Turn``) as the invocation ``adk eval`` would have built.
    ``view``: the trace's agents and model responses (:func:`~.trace_view.trace_view`); without
    it, the trace's system instructions and tool definitions (``system``, ``tools``) are the
    first agent's."""
    answer = turn.final_response if turn is not None else None
    responses = (view or {}).get("responses") or []
    events = events_of(
        turn.calls if turn is not None else [],
        responses,
        final=bool(answer),
        tool_ends=(view or {}).get("tool_ends") if view is not None else None,
    )
    agents = (view or {}).get("agents") or {}
    app = None
    if agents:
        app = AppDetails(
            agent_details={
                name: AgentDetails(
                    name=name,
                    instructions=agent.get("instructions") or "",
                    tool_declarations=tool_declaration(agent.get("tools") or []),
                )
                for name, agent in agents.items()
            }
        )
        for author in dict.fromkeys(e.author for e in events):  # an author the LLM spans did not show
            app.agent_details.setdefault(author, AgentDetails(name=author))
    elif system or tools:
        authors = list(dict.fromkeys(e.author for e in events)) or [DEFAULT_AUTHOR]
        declared = tool_declaration(tools or [])
        app = AppDetails(
            agent_details={
                name: AgentDetails(
                    name=name,
                    instructions=(system or "") if i == 0 else "",
                    tool_declarations=declared if i == 0 else [],
                )
                for i, name in enumerate(authors)
            }
        )
    text = (turn.user_input if turn is not None else None) or user_text or ""
    return AdkInvocation(
        invocation_id=invocation_id,
        user_content=Content.of_text(text, "user"),
        final_response=Content.of_text(answer, "model") if answer else None,
        intermediate_data=InvocationEvents(invocation_events=events),
        rubrics=list(rubrics) or None,
        app_details=app,
    )


def expected_invocation(invocation: Any) -> AdkInvocation:
    """A golden invocation (``otel_eval.models.evalset.Invocation``) as ADK's expected one: its
    user content, intermediate responses (as events) and final response."""
    events = [
        InvocationEvent(
            author=(m.metadata or {}).get("author") or DEFAULT_AUTHOR, content=Content.of_text(m.get_text(), "model")
        )
        for m in invocation.expected_intermediate_responses
        if m.get_text()
    ]
    final = invocation.expected_final_response
    return AdkInvocation(
        invocation_id=invocation.invocation_id,
        user_content=Content.of_text(invocation.user_content.get_text(), "user"),
        final_response=Content.of_text(final.get_text(), "model") if final is not None else None,
        intermediate_data=InvocationEvents(invocation_events=events),
    )
