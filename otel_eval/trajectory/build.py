"""A session's mapped spans → its turns: one per trace (one per ADK invocation, and the traces of
a hand-written tool loop's model calls together), each with its user input, answer, model calls
and tokens; the tool calls come from :mod:`.calls`."""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..conventions import google_adk
from ..json_text import as_text, parse_json_maybe
from ..mapping import CASE_ATTRIBUTES, agent_version_of, first_attribute
from .calls import has_call_hook, hooked_observations, is_tool_call, turn_tool_calls
from .model import Trajectory, Turn

if TYPE_CHECKING:
    from ..mapping import MappedSpan


RESPONSE_ID = "gen_ai.response.id"
"""The provider's id of a model response: spans that carry the same one traced the same call."""

_START_ORDER = operator.attrgetter("span.start_ns", "span.end_ns", "span.span_id")
"""A trace's spans in start order (ties by end, then id); the tuple is made in C, not by a lambda."""


def build_trajectory(session_id: str, mapped: Sequence[MappedSpan]) -> Trajectory:
    """A session's mapped spans → its trajectory: one turn per trace (see :func:`_turns_of` for the
    traces that share a turn), ordered by root start.

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
    in a new trace under the same invocation id. A trace whose first model call is sent back the
    results of the previous turn's tool calls is that turn's next step (:func:`_continues`).
    Other traces are turns of their own."""
    turns: list[list[_Trace]] = []
    by_invocation: dict[str, list[_Trace]] = {}
    for trace in traces:
        invocation = _adk_invocation(trace[2], trace[4])
        if invocation is None:
            if turns and _continues(trace, turns[-1]):
                turns[-1].append(trace)
            else:
                turns.append([trace])
        elif invocation in by_invocation:
            by_invocation[invocation].append(trace)
        else:
            by_invocation[invocation] = [trace]
            turns.append(by_invocation[invocation])
    return turns


def _continues(trace: _Trace, turn: list[_Trace]) -> bool:
    """Whether ``trace`` is the next step of ``turn``'s tool loop rather than a turn of its own.

    An agent written by hand leaves a trace per model call when its model client's
    instrumentation is all that traces it, or a trace per step when it opens a span for each.
    Such a trace continues the turn before it when its first model call is sent the results of
    calls that turn's model asked for (the call ids match). Where one side has no ids (Gemini's
    calls and results; LiteLLM records the calls without theirs), a trace continues the turn only
    when it is a bare model call (every root a model call) that answers the same user message. A
    new user message starts a new turn: results sent before it are no longer after the newest
    user message, so the first call of that trace carries none."""
    _, _, _, roots, llms = trace
    if not llms:
        return False
    first = llms[0].reading
    results = first.tool_results()
    if not results:
        return False
    ids = {r.call_id for r in results if r.call_id}
    asked = {c.call_id for part in turn for m in part[4] for c in m.reading.requested_calls if c.call_id} if ids else ()
    if asked:
        return not ids.isdisjoint(asked)
    if any(r.reading.span_type != "llm" for r in roots):
        return False
    _, _, members, turn_roots, turn_llms = turn[0]
    return first.user_input is not None and first.user_input == _user_input(turn_roots, turn_llms, members)


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
    tools = [m for m in members if is_tool_call(m)]
    _count_model_calls(turn, llms, tools, by_id)

    observations = hooked_observations(members)
    turn.calls = turn_tool_calls(index, members, root, observations, by_id, tools)
    hooked = {m.span.span_id for m in members if has_call_hook(m)}  # a span id names one member (deduplicated)
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
    schema's ``call_llm`` and the ``generate_content`` span inside it) are one call, and so are
    model spans of one response (``gen_ai.response.id``: a client library that traces its own
    calls, as the anthropic SDK does, beside an instrumentation of the same call); its tokens
    counted once. Of them, those made inside a tool call (``tools``) are counted apart too."""
    calls: dict[Any, list[Any]] = {}  # one key per call → [span, input tokens, output tokens]
    event_key = google_adk.EVENT_ID
    for m in llms:
        attributes = m.span.attributes
        event = attributes.get(event_key)  # google_adk.model_call_id, inline: asked of every model span
        if event:
            key: Any = ("adk event", event)
        else:
            response = attributes.get(RESPONSE_ID)
            key = ("response", response) if response else m.span.span_id
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
    root_text: str | None = None
    root_name = ""  # the span the text was read from, named in the answer's source
    for m in roots:
        if m.reading.span_type in ("agent", "chain") and m.reading.response:
            root_text, root_name = m.reading.response, m.span.name
            break
    model_text: str | None = None
    model_name = ""
    for m in reversed(llms):
        if m.reading.response and not m.reading.requested_calls:
            model_text, model_name = m.reading.response, m.span.name
            break
    if model_text is None:  # a last response that also asked for tools still said something
        for m in reversed(llms):
            if m.reading.response and m.reading.response.strip():
                model_text, model_name = m.reading.response, m.span.name
                break
    if root_text is not None and (model_text is None or not looks_like_object_dump(root_text)):
        suffix = " (an object dump: no model text in the turn)" if looks_like_object_dump(root_text) else ""
        return root_text, f"root output of {root_name!r}{suffix}"
    if model_text is not None:
        why = " (the root's output is an object dump)" if root_text is not None else ""
        return model_text, f"last model text, span {model_name!r}{why}"
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
