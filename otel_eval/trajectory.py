"""A session's spans as a trajectory: turns, ordered tool calls, responses.

``build_trajectory`` is the only place that knows how readings of different span types combine
into what the agent *did*; the metrics only ever see :class:`Trajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class ActualCall:
    """One tool call the agent made, as executed."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: Optional[str] = None
    result: Any = None
    error: Optional[str] = None
    span_id: Optional[str] = None
    start_ns: int = 0
    turn: int = 0
    """Index of the turn (0-based) the call belongs to."""
    group: Optional[str] = None
    """Calls issued together in one LLM response share a group id (parallel tool calls)."""
    agent: Optional[str] = None
    """Name of the (sub-)agent that made the call, when known."""
    depth: int = 0
    """0 for the root agent's calls, 1 for calls made inside a sub-agent reached through a tool, ..."""

    @property
    def succeeded(self) -> bool:
        return self.error is None


@dataclass
class Turn:
    """One user turn: one trace, in start order."""

    index: int
    trace_id: str
    user_input: Optional[str] = None
    final_response: Optional[str] = None
    calls: list[ActualCall] = field(default_factory=list)
    start_ns: int = 0
    end_ns: int = 0
    retrieved_documents: list[str] = field(default_factory=list)
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    span_count: int = 0


@dataclass
class Trajectory:
    session_id: str
    turns: list[Turn] = field(default_factory=list)
    user_id: Optional[str] = None
    agent_version: Optional[str] = None
    service_name: Optional[str] = None
    case_hint: Optional[str] = None
    """An explicit golden case id found on the spans (``otel_eval.case_id`` attribute or baggage)."""

    @property
    def query(self) -> Optional[str]:
        """The session's first user input: what it is matched to a golden case on."""
        for turn in self.turns:
            if turn.user_input:
                return turn.user_input
        return None

    @property
    def final_response(self) -> Optional[str]:
        for turn in reversed(self.turns):
            if turn.final_response:
                return turn.final_response
        return None

    @property
    def calls(self) -> list[ActualCall]:
        return [call for turn in self.turns for call in turn.calls]

    def sql_sources(self) -> list[str]:
        """Texts SQL may appear in: final responses and tool results (a sub-agent answers as a tool result)."""
        from .conventions.base import as_text

        texts: list[str] = []
        for turn in self.turns:
            for call in turn.calls:
                text = as_text(call.result)
                if text:
                    texts.append(text)
            if turn.final_response:
                texts.append(turn.final_response)
        return texts
