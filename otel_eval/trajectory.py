"""A session's spans as a trajectory: turns, ordered tool calls, responses.

``build_trajectory`` is the only place that knows how readings of different span types combine
into what the agent *did*; the metrics only ever see :class:`Trajectory`.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .conventions import google_adk
from .conventions.base import span_error
from .json_text import as_text, parse_json_maybe
from .mapping import CASE_ATTRIBUTES, agent_version_of, first_attribute

if TYPE_CHECKING:
    from .mapping import MappedSpan


@dataclass
class ActualToolCall:
    """One tool call the agent made, as executed: a tool span's :class:`ExecutedToolCall` paired
    with the :class:`RequestedToolCall` that asked for it (the roles of every tool-call class:
    :class:`~otel_eval.conventions.base.RequestedToolCall`)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    result: Any = None
    error: str | None = None
    span_id: str | None = None
    start_ns: int = 0
    turn: int = 0
    """Index of the turn (0-based) the call belongs to."""
    group: str | None = None
    """Calls issued together in one LLM response share a group id (parallel tool calls)."""
    step: int | None = None
    """Which model step (LLM response, 0-based within the turn) issued the call; None when the
    turn shows no model step. Calls of one step were issued together: never retries of each other."""
    agent: str | None = None
    """Name of the (sub-)agent that made the call, when known."""
    depth: int = 0
    """0 for the root agent's calls, 1 for calls made inside a sub-agent reached through a tool, ..."""
    inside_call: bool = False
    """Made inside another tool call: by an agent run as a tool (ADK's ``AgentTool``, which runs it
    in a session of its own, so ``adk eval`` never counts its calls), or by a tool's own tool."""

    @property
    def succeeded(self) -> bool:
        return self.error is None


@dataclass
class Turn:
    """One user turn: one trace, in start order; for google-adk, one ADK invocation (the traces
    whose model spans share its invocation id: a task agent's question and the user's answer)."""

    index: int
    trace_id: str
    """The turn's (first) trace."""
    user_input: str | None = None
    final_response: str | None = None
    answer_source: str | None = None
    """Where the final response was read (``inspect`` shows it): the root's output or a model's text."""
    calls: list[ActualToolCall] = field(default_factory=list)
    start_ns: int = 0
    end_ns: int = 0
    retrieved_documents: list[str] = field(default_factory=list)
    llm_calls: int = 0
    """Model calls: one per call, however many spans show it (ADK's legacy ``call_llm`` span and
    the ``generate_content`` span inside it are one call)."""
    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls_inside_calls: int = 0
    """Of ``llm_calls``, those made inside a tool call (by an agent run as a tool: ADK's
    ``AgentTool`` runs it in a session of its own, so its model calls are no part of the
    invocation ADK's efficiency metrics count; or by a tool's own model call)."""
    input_tokens_inside_calls: int = 0
    output_tokens_inside_calls: int = 0
    span_count: int = 0
    trace_ids: list[str] = field(default_factory=list)
    """Every trace of the turn, in start order (one, but for an ADK invocation resumed in another trace)."""

    def sql_sources(self) -> list[str]:
        """Where this turn's SQL may be, as text: tool-call arguments (``execute_sql(query=...)``,
        as JSON, so values under "sql"/"query" keys are found), tool results (a sub-agent answers
        as a tool result) and the final response. :meth:`sql_values` without the encoding."""
        return [text for text in map(as_text, self.sql_values()) if text]

    def sql_values(self) -> list[Any]:
        """Where this turn's SQL may be: tool-call arguments, tool results and the final response,
        the arguments and results as they are, not as JSON text: :func:`otel_eval.metrics.sql.find_sql` searches a value as it would its JSON
        text, and encoding the value only for the finder to parse it back was most of the time
        spent on a turn's sources."""
        values: list[Any] = []
        for call in self.calls:
            if call.args:
                values.append(call.args)
            result = call.result
            if result is not None and not (isinstance(result, str) and not result):
                values.append(result)
        if self.final_response:
            values.append(self.final_response)
        return values


@dataclass
class Trajectory:
    session_id: str
    turns: list[Turn] = field(default_factory=list)
    user_id: str | None = None
    agent_version: str | None = None
    service_name: str | None = None
    case_hint: str | None = None
    """An explicit golden case id found on the spans (``otel_eval.case_id`` attribute or baggage)."""

    @property
    def query(self) -> str | None:
        """The session's first user input: what it is matched to a golden case on."""
        for turn in self.turns:
            if turn.user_input:
                return turn.user_input
        return None

    @property
    def final_response(self) -> str | None:
        for turn in reversed(self.turns):
            if turn.final_response:
                return turn.final_response
        return None

    @property
    def calls(self) -> list[ActualToolCall]:
        return [call for turn in self.turns for call in turn.calls]

    def sql_sources(self) -> list[str]:
        """Texts SQL may appear in, over every turn (see :meth:`Turn.sql_sources`)."""
        return [text for turn in self.turns for text in turn.sql_sources()]

    def sql_values(self) -> list[Any]:
        """:meth:`sql_sources` without encoding arguments and results (see :meth:`Turn.sql_values`)."""
        return [value for turn in self.turns for value in turn.sql_values()]


# --- building --------------------------------------------------------------------------------


@dataclass
class _Request:
    """A tool call an LLM (or agent) span asked for, waiting to be paired with a tool span."""

    mapped: Any
    call: Any
    group: str | None
    order: int = 0
    used: bool = False


_START_ORDER = operator.attrgetter("span.start_ns", "span.end_ns", "span.span_id")
"""A trace's spans in start order (ties by end, then id); the tuple is made in C, not by a lambda."""


def build_trajectory(session_id: str, mapped: Sequence[MappedSpan]) -> Trajectory:
    """A session's mapped spans → its trajectory: one turn per trace, ordered by root start.

    Robust to what arrives over the wire: spans in any order (children before parents),
    duplicates (first copy kept), missing roots (the earliest orphan stands in), missing attributes.
    """
    by_trace: dict[str, dict[str, Any]] = {}  # trace id → span id → the span's first copy
    for m in mapped:
        span = m.span
        by_trace.setdefault(span.trace_id, {}).setdefault(span.span_id, m)

    traces = []
    for trace_id, spans in by_trace.items():
        if all(_sets_up_only(m) for m in spans.values()):
            continue
        members = sorted(spans.values(), key=_START_ORDER)
        roots = _roots(members)
        llms = [m for m in members if m.reading.span_type == "llm"]
        traces.append((roots[0].span.start_ns, trace_id, members, roots, llms))
    traces.sort(key=lambda t: (t[0], t[1]))

    trajectory = Trajectory(session_id=session_id)
    for index, parts in enumerate(_turns_of(traces)):
        trajectory.turns.append(_build_turn(index, parts))

    # The session's attributes: the first span that has each, roots first, turn by turn. One
    # pass over the spans for all four, stopping once each is found.
    user_id = agent_version = service_name = case_hint = None
    for _, _, members, roots, _ in traces:
        if len(roots) == 1:
            root = roots[0]
            ordered = [root, *(x for x in members if x is not root)]
        else:
            # By identity: one object per (trace, span) after the dedup above, and comparing
            # MappedSpans by value would compare whole spans.
            root_ids = {id(r) for r in roots}
            ordered = [*roots, *(x for x in members if id(x) not in root_ids)]
        for m in ordered:
            if user_id is None and m.data.user_id:
                user_id = m.data.user_id
            if agent_version is None:
                agent_version = agent_version_of(m.span) or None
            if service_name is None and m.span.resource.get("service.name"):
                service_name = str(m.span.resource["service.name"])
            if case_hint is None:
                case_hint = first_attribute(m.span, CASE_ATTRIBUTES, resource_too=False) or None
            if user_id is not None and agent_version is not None and service_name is not None and case_hint is not None:
                break
        else:
            continue
        break
    trajectory.user_id, trajectory.agent_version = user_id, agent_version
    trajectory.service_name, trajectory.case_hint = service_name, case_hint
    return trajectory


#: GenAI operations that set an agent up rather than run it: a trace of nothing else (AutoGen
#: traces ``create_agent`` when the agent is built) is no turn of the conversation.
_SET_UP_OPERATIONS = frozenset({"create_agent"})


def _sets_up_only(m: Any) -> bool:
    return m.span.attributes.get("gen_ai.operation.name") in _SET_UP_OPERATIONS


def _roots(members: list[Any]) -> list[Any]:
    """True roots first (no parent), then orphans whose parent never arrived; by start time."""
    ids = {m.span.span_id for m in members}
    roots = [m for m in members if not m.span.parent_span_id or m.span.parent_span_id not in ids]
    roots.sort(key=lambda m: (bool(m.span.parent_span_id), m.span.start_ns, m.span.end_ns))
    return roots or members[:1]


_Trace = tuple[int, str, list[Any], list[Any], list[Any]]
"""(root start, trace id, members in start order, roots, model spans) of one trace."""


def _turns_of(traces: list[_Trace]) -> list[list[_Trace]]:
    """The traces of each turn, turns in start order: one trace each, except that traces of one
    google-adk invocation are one turn, as ``adk eval`` lists invocations (grouped by invocation id
    in order of first appearance): a ``task`` agent that asks the user is resumed by the answer,
    in a new trace under the same invocation id. Traces without ADK's invocation id are turns
    of their own."""
    turns: list[list[_Trace]] = []
    by_invocation: dict[str, list[_Trace]] = {}
    for trace in traces:
        invocation = _adk_invocation(trace[2], trace[4])
        if invocation is None:
            turns.append([trace])
        elif invocation in by_invocation:
            by_invocation[invocation].append(trace)
        else:
            by_invocation[invocation] = [trace]
            turns.append(by_invocation[invocation])
    return turns


def _adk_invocation(members: list[Any], llms: list[Any]) -> str | None:
    """The ADK invocation id of a trace's own model calls: the model span nearest the root that
    carries one (an ``AgentTool``'s agent, deeper inside a tool call, runs an invocation of its own);
    None for a trace no model span of which carries one (every framework but ADK)."""
    found = []
    key = google_adk.INVOCATION_ID
    for m in llms:
        if m.span.attributes.get(key):  # asked of every model span: google_adk's reader only for ADK's
            found.append((m, google_adk.invocation_id(m.span)))
    if len(found) <= 1:
        return found[0][1] if found else None
    by_id = {m.span.span_id: m for m in members}

    def depth(m: Any) -> int:
        n, seen, parent = 0, {m.span.span_id}, m.span.parent_span_id
        while parent in by_id and parent not in seen:
            seen.add(parent)
            n, parent = n + 1, by_id[parent].span.parent_span_id
        return n

    return min(found, key=lambda pair: depth(pair[0]))[1]  # min keeps the first of equal depths


def _build_turn(index: int, parts: list[_Trace]) -> Turn:
    """One turn of one trace or more (an ADK invocation resumed in another trace): the first
    trace's user input, every trace's calls in order, the last trace's answer."""
    if len(parts) == 1:
        _, trace_id, members, roots, llms = parts[0]
        user_input = _user_input(roots, llms, members)
        final_response, answer_source = _final_response(roots, llms)
    else:
        trace_id = parts[0][1]
        members = [m for part in parts for m in part[2]]
        roots = [r for part in parts for r in part[3]]
        llms = [m for part in parts for m in part[4]]
        user_input = next(
            (
                found
                for _, _, trace_members, trace_roots, trace_llms in parts
                for found in (_user_input(trace_roots, trace_llms, trace_members),)
                if found
            ),
            None,
        )
        final_response = answer_source = None
        for _, _, _, trace_roots, trace_llms in reversed(parts):
            final_response, answer_source = _final_response(trace_roots, trace_llms)
            if final_response is not None:
                break
    root = roots[0]
    turn = Turn(
        index=index,
        trace_id=trace_id,
        trace_ids=[part[1] for part in parts],
        start_ns=min(m.span.start_ns for m in members),
        end_ns=max(m.span.end_ns for m in members),
        span_count=len(members),
        user_input=user_input,
        final_response=final_response,
        answer_source=answer_source,
    )
    by_id = {m.span.span_id: m for m in members}
    tools = [m for m in members if _is_call(m)]
    _count_model_calls(turn, llms, tools, by_id)

    observations = _observations(members)
    turn.calls = _calls(index, members, root, observations, by_id, tools)
    hooked = {m.span.span_id for m in members if _has_hook(m)}  # a span id names one member (deduplicated)
    recovered = {call.span_id: call.result for call in turn.calls if call.span_id in hooked} if hooked else {}
    for m in members:
        documents = m.reading.retrieved_documents
        if not documents:
            continue
        if m.span.span_id in recovered:  # the span's own output was not the observation
            text = as_text(recovered[m.span.span_id])
            documents = [text] if text else []
        turn.retrieved_documents.extend(documents)
    return turn


def _count_model_calls(turn: Turn, llms: list[Any], tools: list[Any], by_id: dict[str, Any]) -> None:
    """The turn's model calls and tokens, each call once: model spans of one ADK event (the legacy
    schema's ``call_llm`` and the ``generate_content`` span inside it) are one call, its tokens
    counted once. Of them, those made inside a tool call (``tools``) are counted apart too."""
    calls: dict[Any, list[Any]] = {}  # one key per call → [span, input tokens, output tokens]
    event_key = google_adk.EVENT_ID
    for m in llms:
        event = m.span.attributes.get(event_key)  # google_adk.model_call_id, inline: asked of every model span
        key = ("adk event", event) if event else m.span.span_id
        call = calls.get(key)
        if call is None:
            calls[key] = [m, m.reading.input_tokens, m.reading.output_tokens]
        else:  # another span of the same call: counts it carried that the first did not
            call[1] = call[1] if call[1] is not None else m.reading.input_tokens
            call[2] = call[2] if call[2] is not None else m.reading.output_tokens
    input_tokens = output_tokens = 0
    for call in calls.values():
        input_tokens += call[1] or 0
        output_tokens += call[2] or 0
    turn.llm_calls, turn.input_tokens, turn.output_tokens = len(calls), input_tokens, output_tokens
    if not tools or not calls:
        return
    tool_calls = None
    for m, input_tokens, output_tokens in calls.values():
        span = m.span
        # Only a model span within a tool span's time can be inside it: the parents are walked for those.
        if not any(t.span.start_ns <= span.start_ns and span.end_ns <= t.span.end_ns for t in tools):
            continue
        if tool_calls is None:
            tool_calls = {t.span.span_id for t in tools}
        if _inside(m, tool_calls, by_id):
            turn.llm_calls_inside_calls += 1
            turn.input_tokens_inside_calls += input_tokens or 0
            turn.output_tokens_inside_calls += output_tokens or 0


def _inside(m: Any, span_ids: set[str], by_id: dict[str, Any]) -> bool:
    """Is one of the span's ancestors one of ``span_ids``?"""
    seen, parent = {m.span.span_id}, m.span.parent_span_id
    while parent and parent not in seen:
        if parent in span_ids:
            return True
        seen.add(parent)
        ancestor = by_id.get(parent)
        parent = ancestor.span.parent_span_id if ancestor is not None else None
    return False


def _user_input(roots: list[Any], llms: list[Any], members: list[Any]) -> str | None:
    for m in roots:
        if m.reading.span_type in ("agent", "chain") and m.reading.user_input:
            return m.reading.user_input
    for m in llms:
        if m.reading.user_input:
            return m.reading.user_input
    return next((m.reading.user_input for m in members if m.reading.user_input), None)


def _final_response(roots: list[Any], llms: list[Any]) -> tuple[str | None, str | None]:
    """The turn's answer and where it came from (shown by ``inspect``).

    The answer is what the agent said last: the root agent's output when it is text, else the
    last assistant text a model produced in the turn. A root whose output is a framework
    object's repr (``StopEvent(result=...)``) or a serialized state (``{"messages": [...]}``)
    is not an answer while model text exists; it stands in only when nothing better does."""
    root_text = root_span = None
    for m in roots:
        if m.reading.span_type in ("agent", "chain") and m.reading.response:
            root_text, root_span = m.reading.response, m
            break
    model_text = model_span = None
    for m in reversed(llms):
        if m.reading.response and not m.reading.requested_calls:
            model_text, model_span = m.reading.response, m
            break
    if model_text is None:  # a last response that also asked for tools still said something
        for m in reversed(llms):
            if m.reading.response and m.reading.response.strip():
                model_text, model_span = m.reading.response, m
                break
    if root_text is not None and (model_text is None or not looks_like_object_dump(root_text)):
        suffix = " (an object dump: no model text in the turn)" if looks_like_object_dump(root_text) else ""
        return root_text, f"root output of {root_span.span.name!r}{suffix}"
    if model_text is not None:
        why = " (the root's output is an object dump)" if root_text is not None else ""
        return model_text, f"last model text, span {model_span.span.name!r}{why}"
    return None, None


_REPR = re.compile(r"^[A-Za-z_][\w.]*\((?:[A-Za-z_]\w*=|\)|'|\")|^<[\w.]+ object at 0x[0-9a-fA-F]+>")


def looks_like_object_dump(text: str) -> bool:
    """A framework object's repr (``StopEvent(result=...)``, ``<Foo object at 0x...>``) or a
    serialized state (a JSON object or list), as opposed to an answer in words."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped[0] in "{[":
        parsed = parse_json_maybe(stripped)
        return isinstance(parsed, (dict, list))
    return _REPR.match(stripped) is not None


def _calls(
    turn: int, members: list[Any], root: Any, observations: dict[str, Any], by_id: dict[str, Any], tools: list[Any]
) -> list[ActualToolCall]:
    """The turn's calls; ``by_id``: its members by span id, ``tools``: those that are tool calls."""
    requests = _requests(members)
    step_of = _steps(members, requests)
    if not tools:  # nothing executed was traced: what the model asked for is the best record
        fallback = []
        for r in requests:
            agent, depth, inside_call = _agent_of(r.mapped, by_id, root)
            fallback.append(
                ActualToolCall(
                    name=r.call.name,
                    args=dict(r.call.args),
                    call_id=r.call.call_id,
                    result=observations.get(r.mapped.span.span_id),
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
        if _has_hook(m):
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


def _is_call(m: Any) -> bool:
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
        if _is_call(ancestor):
            depth += 1
            current, through_tool, inside_call = reading.tool.name, True, True
        elif reading.span_type == "agent" and reading.agent_name:
            if current is not None and reading.agent_name != current and not through_tool:
                depth += 1
            current, through_tool = reading.agent_name, False
    return current or root_agent, depth, inside_call


def _convention_module(m: Any) -> Any:
    return _convention_traits(m.reading.convention)[0]


@functools.lru_cache(maxsize=64)
def _convention_traits(name: str) -> tuple[Any, bool, bool]:
    """(module, has a call hook, nests sequentially) of a convention name: asked for every span
    of every turn, so looked up once per name (the convention modules never change)."""
    from .conventions import CONVENTIONS

    module = next((c for c in CONVENTIONS if c.NAME == name), None)
    if module is None:
        return None, False, False
    return module, module.tool_observations is not None, module.SEQUENTIAL_NESTING


def _has_hook(m: Any) -> bool:
    return m is not None and _convention_traits(m.reading.convention)[1]


def _sequential(m: Any) -> bool:
    return _convention_traits(m.reading.convention)[2]


def _observations(members: list[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    modules = {}
    for m in members:
        module, hooked, _ = _convention_traits(m.reading.convention)
        if hooked:
            modules.setdefault(module.NAME, (module, []))[1].append(m.span)
    for module, spans in modules.values():
        found.update(module.tool_observations(spans))
    return found
