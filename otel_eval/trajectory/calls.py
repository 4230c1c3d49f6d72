"""A turn's tool calls: each tool span paired with the call a model (or agent) asked for, the
model step that asked, the agent that made it and, where a convention recovers it, its result."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..conventions.base import span_error
from ..json_text import as_text, parse_json_maybe
from ..spans import SpanRecord
from .model import ActualToolCall


@dataclass
class _Request:
    """A tool call an LLM (or agent) span asked for, waiting to be paired with a tool span."""

    mapped: Any
    call: Any
    group: str | None
    order: int = 0
    used: bool = False


def turn_tool_calls(
    turn: int, members: list[Any], root: Any, observations: dict[str, Any], by_id: dict[str, Any], tools: list[Any]
) -> list[ActualToolCall]:
    """The turn's tool calls in the order the agent made them: tool spans paired with the calls the
    model asked for, or those requests alone when no tool span was traced. ``by_id``: the turn's
    members by span id, ``tools``: those that are tool calls."""
    requests = _requests(members)
    step_of = _steps(members, requests)
    if not tools:  # nothing executed was traced: what the model asked for is the best record
        given_for = _results_sent_back(members, requests)
        fallback = []
        for r in requests:
            agent, depth, inside_call = _agent_of(r.mapped, by_id, root)
            given = given_for.get(id(r))
            result = observations.get(r.mapped.span.span_id)
            error = None
            if given is not None:
                result = given.value if result is None else result
                error = failure_of(given.value, given.is_error)
            fallback.append(
                ActualToolCall(
                    name=r.call.name,
                    args=dict(r.call.args),
                    call_id=r.call.call_id,
                    result=result,
                    error=error,
                    span_id=r.mapped.span.span_id,
                    start_ns=r.mapped.span.end_ns,
                    turn=turn,
                    group=r.group,
                    step=step_of(r.mapped, None),
                    agent=agent,
                    depth=depth,
                    inside_call=inside_call,
                )
            )
        return fallback
    claimed_ids = {m.reading.tool.call_id for m in tools if m.reading.tool.call_id}
    calls = []
    orders: dict[str, int] = {}
    for m in tools:
        tool = m.reading.tool
        name = tool.name
        request = _match(m, requests, claimed_ids)
        if request is None:
            request = _match_by_arguments(m, requests)
            if request is not None:
                name = request.call.name
        args = dict(tool.args)
        call_id = tool.call_id
        result, group, asked_by = tool.result, None, None
        if request is not None:
            asked_by = request.mapped
            request.used = True
            orders[m.span.span_id] = request.order
            call_id = call_id or request.call.call_id
            group = request.group
            if _bare(args, request.call.args):
                args = dict(request.call.args)
        if has_call_hook(m):
            result = observations.get(request.mapped.span.span_id) if request is not None else None
        error = tool.error
        if error is None and m.span.status == "error":
            error = m.span.status_message or "error"
        agent, depth, inside_call = _agent_of(m, by_id, root)
        calls.append(
            ActualToolCall(
                name=name,
                args=args,
                call_id=call_id,
                result=result,
                error=error,
                span_id=m.span.span_id,
                start_ns=m.span.start_ns,
                turn=turn,
                group=group,
                step=step_of(asked_by, m),
                agent=agent,
                depth=depth,
                inside_call=inside_call,
            )
        )
    for r, delegate in _delegations(members, requests):
        agent, depth, inside_call = _agent_of(r.mapped, by_id, root)
        orders[delegate.span.span_id] = r.order
        calls.append(
            ActualToolCall(
                name=r.call.name,
                args=dict(r.call.args),
                call_id=r.call.call_id,
                result=delegate.reading.response,
                error=span_error(delegate.span),
                span_id=delegate.span.span_id,
                start_ns=delegate.span.start_ns,
                turn=turn,
                group=r.group,
                step=step_of(r.mapped, None),
                agent=agent,
                depth=depth,
                inside_call=inside_call,
            )
        )
    return _parallel_in_request_order(calls, orders)


_FAILED_RESULT = re.compile(r"\s*(?:error|exception)\b[^:\n]{0,60}:", re.IGNORECASE)
"""A result text that opens by saying it failed: ``Error: Unknown city``, ``Error executing tool
'x': ...``, ``Exception: ...``."""


def failure_of(value: Any, flagged: bool = False) -> str | None:
    """The error a tool result sent back to the model reports, or None when it reads as a success.
    ``flagged``: the message's shape said the call failed (Anthropic's ``is_error``). Without such
    a field a loop reports a failure in the result itself: OpenAI's tool messages have none, so
    the text says it (``Error: ...``); Gemini's ``functionResponse`` puts it under ``error``, as
    the google-genai SDK asks (``output`` for a result). A failed call is then a retried attempt
    when the model calls the tool again (:mod:`otel_eval.metrics.alignment`)."""
    if type(value) is str:
        if flagged or _FAILED_RESULT.match(value):
            return value or "error"
        return None
    if isinstance(value, dict) and value.get("error") not in (None, "", False) and "output" not in value:
        return as_text(value["error"]) or "error"
    return (as_text(value) or "error") if flagged else None


def _results_sent_back(members: list[Any], requests: list[_Request]) -> dict[int, Any]:
    """Each request's result as the turn's model calls were later sent it (a ``ToolResponse``),
    keyed by ``id(request)``: where an untraced tool loop's results are recorded
    (:meth:`Reading.tool_results`). By call id; a call recorded without one (Gemini's, or
    LiteLLM's, whose results do carry theirs) takes the n-th result named X for the n-th call of
    X that has no id, in the order of the latest model call's input, which holds every result of
    the turn so far."""
    by_call_id: dict[str, Any] = {}
    latest: list[Any] = []
    for m in members:
        if m.reading.span_type != "llm":
            continue
        results = m.reading.tool_results()
        for given in results:
            if given.call_id:
                by_call_id.setdefault(given.call_id, given)
        if len(results) >= len(latest):
            latest = results
    claimed = {r.call.call_id for r in requests if r.call.call_id}
    by_name: dict[str, list[Any]] = {}
    for given in latest:
        if given.name and given.call_id not in claimed:
            by_name.setdefault(given.name, []).append(given)
    found: dict[int, Any] = {}
    for r in requests:
        call_id = r.call.call_id
        if call_id:
            if call_id in by_call_id:
                found[id(r)] = by_call_id[call_id]
        elif by_name.get(r.call.name):
            found[id(r)] = by_name[r.call.name].pop(0)
    return found


def _delegations(members: list[Any], requests: list[_Request]) -> list[tuple[_Request, Any]]:
    """Calls the model asked for that no tool span carried out but an agent of that name did:
    a delegation with no tool span of its own (an ADK ``task``-mode sub-agent: the parent's call
    ``booker(request=...)`` runs ``invoke_agent booker`` beside the parent, not inside a tool span).
    Each pairs with the first agent span of that name that started after the request and no
    other delegation took; a call no agent ran (a model asking for a tool that was never run) stays
    out, as before."""
    open_requests = [r for r in requests if not r.used]
    if not open_requests:
        return []
    agents = [m for m in members if m.reading.span_type == "agent" and m.reading.agent_name]
    found: list[tuple[_Request, Any]] = []
    taken: set[str] = set()
    for r in open_requests:
        for m in agents:
            if (
                m.reading.agent_name == r.call.name
                and m.span.span_id not in taken
                and m.span.start_ns >= r.mapped.span.start_ns
            ):
                taken.add(m.span.span_id)
                r.used = True
                found.append((r, m))
                break
    return found


def _steps(members: list[Any], requests: list[_Request]) -> Callable[[Any, Any], int | None]:
    """``step_of(requesting span, tool span) -> Optional[int]``: the model step that issued a call.

    A call paired with the LLM (or agent) span that asked for it belongs to that span's step. A
    tool span paired with no request belongs to the latest LLM response that ended before it
    started: two such calls after one response were issued together. A turn without LLM spans
    shows no steps (None)."""
    asking = {r.mapped.span.span_id for r in requests}
    llms = [m for m in members if m.reading.span_type == "llm"]
    steps = [m for m in members if m.span.span_id in asking or m.reading.span_type == "llm"]
    index = {m.span.span_id: i for i, m in enumerate(steps)}

    def step_of(requester: Any, tool: Any) -> int | None:
        if requester is not None:
            return index[requester.span.span_id]
        if tool is None or not llms:
            return None
        before = [index[m.span.span_id] for m in llms if m.span.end_ns <= tool.span.start_ns]
        return max(before) if before else -1

    return step_of


def _parallel_in_request_order(calls: list[ActualToolCall], orders: dict[str, int]) -> list[ActualToolCall]:
    """Start order, except that parallel calls (one group) keep the order the LLM asked for
    them in, at the place of the group's first start: their start order is thread timing."""
    anchor: dict[str, int] = {}
    for call in calls:
        if call.group is not None:
            anchor[call.group] = min(anchor.get(call.group, call.start_ns), call.start_ns)

    def key(call: ActualToolCall) -> tuple[int, int, int]:
        if call.group is None:
            return (call.start_ns, 0, 0)
        return (anchor[call.group], 1, orders.get(call.span_id or "", 0))

    return sorted(calls, key=key)


def is_tool_call(m: Any) -> bool:
    """Is the span a tool call of the trajectory: a tool span that is no wrapper around another
    tool span and no answer tool (the answer is the turn's response, not a step)?"""
    return (
        m.reading.span_type == "tool"
        and m.reading.tool is not None
        and not m.reading.is_wrapper
        and m.reading.tool.name not in ANSWER_TOOLS
    )


#: Tools a framework makes the model call to give its answer (smolagents' ``final_answer``):
#: the turn's answer, never a step of its trajectory.
ANSWER_TOOLS = frozenset({"final_answer"})


def _requests(members: list[Any]) -> list[_Request]:
    """Calls the LLM spans asked for, in order; the agent spans' only when no LLM span asked
    (an agent's action usually repeats an LLM decision); the chain spans' when neither did
    (Mastra lists a model step's calls on the step, not on its ``chat`` span)."""
    out: list[_Request] = []
    for span_type in ("llm", "agent", "chain"):
        for m in members:
            if m.reading.span_type != span_type or not m.reading.requested_calls:
                continue
            calls = [call for call in m.reading.requested_calls if call.name not in ANSWER_TOOLS]
            if not calls:
                continue
            group = m.span.span_id if len(calls) > 1 else None
            out.extend(_Request(m, call, group, len(out) + i) for i, call in enumerate(calls))
        if out:
            break
    return out


def _match(m: Any, requests: list[_Request], claimed_ids: set[str]) -> _Request | None:
    """The request a tool span carried out: same call id, else the earliest unused request
    for the same tool made before the span started (ids other tool spans claim go last)."""
    tool = m.reading.tool
    open_requests = [r for r in requests if not r.used]
    if tool.call_id:
        for r in open_requests:
            if r.call.call_id == tool.call_id:
                return r
    same_name = [r for r in open_requests if r.call.name == tool.name]
    if tool.call_id:
        same_name = [r for r in same_name if not r.call.call_id]
    before = [r for r in same_name if r.mapped.span.start_ns <= m.span.start_ns] or same_name
    # Parallel calls of one tool without call ids: the request that asked for these arguments,
    # else the earliest (tool spans of one response may start in any order).
    before.sort(
        key=lambda r: (
            r.call.call_id in claimed_ids if r.call.call_id else False,
            not _same_call(tool.args, r.call.args),
        )
    )
    return before[0] if before else None


def _match_by_arguments(m: Any, requests: list[_Request]) -> _Request | None:
    """The request a tool span whose name no request of the turn carries, and that has no call id,
    carried out: the earliest open request made before it with the same arguments (the call then
    takes the requested name). OpenLLMetry JS names a LangChain tool run by the tool's class
    (``DynamicStructuredTool``), and only a run that returned names its tool."""
    tool = m.reading.tool
    if not tool.args or tool.call_id or any(r.call.name == tool.name for r in requests):
        return None
    for r in requests:
        if not r.used and r.mapped.span.start_ns <= m.span.start_ns and r.call.args == tool.args:
            return r
    return None


def _same_call(args: dict[str, Any], requested: dict[str, Any]) -> bool:
    """Do the tool span's arguments say what the request said (by name, or as its bare value)?"""
    return args == requested or (bool(args) and _bare(args, requested))


def _bare(args: dict[str, Any], requested: dict[str, Any]) -> bool:
    """The tool span had only a bare value (``{"input": v}``) or nothing, and the LLM's call says
    the same with argument names: the LLM's arguments are the better record."""
    if not requested or args == requested:
        return False
    if not args:
        return True
    if set(args) != {"input"} or set(requested) == {"input"}:
        return False
    values = list(requested.values())
    if len(values) != 1:
        return False
    # The bare text may have been read as JSON ("3.10" → 3.1, "1e3" → 1000.0): the same reading
    # of the model's text counts as the same value, so the model's "3.10" is kept as text.
    text, bare = as_text(values[0]), args["input"]
    read = parse_json_maybe(text)
    return text == as_text(bare) or (type(read) is type(bare) and read == bare)


def _agent_of(m: Any, by_id: dict[str, Any], root: Any) -> tuple[str | None, int, bool]:
    """(agent name, depth, inside a call): depth counts the tool calls (and agents of another name
    not reached through a tool) between the root and the span; the agent is the innermost of them."""
    root_agent = root.reading.agent_name
    if _sequential(m):
        return root_agent, 0, False
    chain = []
    seen = {m.span.span_id}
    parent = by_id.get(m.span.parent_span_id) if m.span.parent_span_id else None
    while parent is not None and parent.span.span_id not in seen:
        seen.add(parent.span.span_id)
        chain.append(parent)
        parent = by_id.get(parent.span.parent_span_id) if parent.span.parent_span_id else None
    depth, current, through_tool, inside_call = 0, None, False, False
    for ancestor in reversed(chain):
        reading = ancestor.reading
        if is_tool_call(ancestor):
            depth += 1
            current, through_tool, inside_call = reading.tool.name, True, True
        elif reading.span_type == "agent" and reading.agent_name:
            if current is not None and reading.agent_name != current and not through_tool:
                depth += 1
            current, through_tool = reading.agent_name, False
    return current or root_agent, depth, inside_call


@functools.lru_cache(maxsize=64)
def _convention_traits(name: str) -> tuple[Any, bool, bool]:
    """(module, has a call hook, nests sequentially) of a convention name: asked for every span
    of every turn, so looked up once per name (the convention modules never change)."""
    from ..conventions import CONVENTIONS

    module = next((c for c in CONVENTIONS if c.NAME == name), None)
    if module is None:
        return None, False, False
    return module, module.tool_observations is not None, module.SEQUENTIAL_NESTING


def has_call_hook(m: Any) -> bool:
    """Does the span's convention recover tool results the tool span does not carry (its
    ``tool_observations`` hook)? Such a call's result comes from :func:`hooked_observations`."""
    return m is not None and _convention_traits(m.reading.convention)[1]


def _sequential(m: Any) -> bool:
    return _convention_traits(m.reading.convention)[2]


def hooked_observations(members: list[Any]) -> dict[str, Any]:
    """What the conventions with a ``tool_observations`` hook recover of the turn's tool results,
    by the span id of the span that asked for the call."""
    found: dict[str, Any] = {}
    modules: dict[str, tuple[Any, list[SpanRecord]]] = {}  # convention name → (its module, its spans)
    for m in members:
        module, hooked, _ = _convention_traits(m.reading.convention)
        if hooked:
            modules.setdefault(module.NAME, (module, []))[1].append(m.span)
    for module, spans in modules.values():
        found.update(module.tool_observations(spans))
    return found
