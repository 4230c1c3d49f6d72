"""What a session's trajectory is: its turns and the tool calls made in them, as the metrics see them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..json_text import as_text


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
        """Whether the call returned without an error (a failed call is still a call the agent made)."""
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
    """What an agent did in one session, turn by turn, with what its spans say about the session
    (user, agent version, service, case hint): all that the metrics see."""

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
        """The session's answer: the last turn's that has one (a closing turn may say nothing)."""
        for turn in reversed(self.turns):
            if turn.final_response:
                return turn.final_response
        return None

    @property
    def calls(self) -> list[ActualToolCall]:
        """Every tool call of the session, turn after turn, in the order made."""
        return [call for turn in self.turns for call in turn.calls]

    def sql_sources(self) -> list[str]:
        """Texts SQL may appear in, over every turn (see :meth:`Turn.sql_sources`)."""
        return [text for turn in self.turns for text in turn.sql_sources()]

    def sql_values(self) -> list[Any]:
        """:meth:`sql_sources` without encoding arguments and results (see :meth:`Turn.sql_values`)."""
        return [value for turn in self.turns for value in turn.sql_values()]
