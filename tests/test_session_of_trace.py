"""One trace, one session, whatever the batch cuts (issue 29, item 7).

google-adk's ``AgentTool`` runs its agent in a throwaway session of its own, whose
``gen_ai.conversation.id`` is on the inner spans; the turn belongs to the session named nearest
its root. Spans end children first, so the inner id usually reaches the collector first: the
same trace is sent here in every order and every batch cut, through a real engine and SQLite file.
"""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from otel_eval import Engine
from otel_eval.spans import SpanRecord

TRACE = "ab" * 16
OUTER, INNER = "adk-session-7", "3f9c2d6e-inner-agent-tool-uuid"


def span(span_id: str, parent: str | None, name: str, start: int, end: int, **attributes) -> SpanRecord:
    return SpanRecord(TRACE, span_id, parent, name, start, end, attributes=attributes)


def adk_turn() -> list[SpanRecord]:
    """An ADK turn whose root agent calls a sub-agent through AgentTool, in end order."""
    genai = {"gen_ai.operation.name": "invoke_agent"}
    return [
        span(
            "00000000000000e5",
            "00000000000000e4",
            "execute_tool get_weather",
            5,
            6,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": '{"city": "Tokyo"}',
                "gen_ai.conversation.id": INNER,
            },
        ),
        span(
            "00000000000000e4",
            "00000000000000e3",
            "invoke_agent weather_agent",
            4,
            7,
            **{**genai, "gen_ai.agent.name": "weather_agent", "gen_ai.conversation.id": INNER},
        ),
        span(
            "00000000000000e3",
            "00000000000000e2",
            "execute_tool weather_agent",
            3,
            8,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "weather_agent",
                "gen_ai.tool.call.arguments": '{"request": "Tokyo"}',
                "gen_ai.conversation.id": OUTER,
            },
        ),
        span(
            "00000000000000e2",
            "00000000000000e1",
            "invoke_agent root_agent",
            2,
            9,
            **{**genai, "gen_ai.agent.name": "root_agent", "gen_ai.conversation.id": OUTER},
        ),
        span("00000000000000e1", None, "invocation", 1, 10),
    ]


def sessions_after(tmp_path, batches: list[list[SpanRecord]]) -> list[tuple[str, int]]:
    db = tmp_path / "order.db"
    db.unlink(missing_ok=True)
    engine = Engine(db, trace_quiet=3600, session_idle=3600).start()
    try:
        for batch in batches:
            engine.ingest(batch)
    finally:
        engine.close(score_open=False)
    conn = sqlite3.connect(db)
    try:
        spans = conn.execute("SELECT session_id, COUNT(*) FROM spans GROUP BY session_id").fetchall()
        assert conn.execute("SELECT session_id FROM sessions").fetchall() == [(OUTER,)], spans
        return spans
    finally:
        conn.close()


@pytest.mark.parametrize("cut", range(1, 5))
def test_an_agent_tools_inner_conversation_never_splits_the_turn_in_end_order(tmp_path, cut):
    spans = adk_turn()
    assert sessions_after(tmp_path, [spans[:cut], spans[cut:]]) == [(OUTER, 5)]


def test_every_arrival_order_of_the_spans_gives_the_one_outer_session(tmp_path):
    for order in itertools.permutations(adk_turn()):
        assert sessions_after(tmp_path, [[s] for s in order]) == [(OUTER, 5)], [s.name for s in order]


def test_the_whole_trace_in_one_batch_belongs_to_the_outer_session(tmp_path):
    assert sessions_after(tmp_path, [adk_turn()]) == [(OUTER, 5)]
