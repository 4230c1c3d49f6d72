"""Big sessions are scored in a lane of their own (issue 34.2): a small session that ends after a
big one is not held behind it, in a thread (in-process) or in worker processes (the collector)."""

from __future__ import annotations

import json
import sqlite3
import threading

from otel_eval import Engine, EngineSettings
from otel_eval.engine import workers
from otel_eval.spans import SpanRecord
from tests.polling import wait_until
from tests.test_engine import GOLDEN


def conversation(session_id: str, turns: int, trace_base: int) -> list[SpanRecord]:
    """``turns`` turns of the Tokyo weather question (OpenInference: agent → LLM → tool → LLM),
    four spans each, one trace a turn."""
    spans = []
    common = {"session.id": session_id}
    for turn in range(turns):
        trace = f"{trace_base + turn:032x}"
        t0 = 1_000_000 * turn
        root = f"{turn + 1:08x}00000001"
        spans += [
            SpanRecord(
                trace,
                root,
                None,
                "agent.invoke",
                t0,
                t0 + 900,
                attributes={
                    **common,
                    "openinference.span.kind": "AGENT",
                    "input.value": "What's the weather in Tokyo?",
                    "output.value": "It is 22°C and sunny in Tokyo.",
                },
            ),
            SpanRecord(
                trace,
                f"{turn + 1:08x}00000002",
                root,
                "llm",
                t0 + 100,
                t0 + 200,
                attributes={
                    **common,
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": "What's the weather in Tokyo?",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(
                        {"city": "Tokyo"}
                    ),
                },
            ),
            SpanRecord(
                trace,
                f"{turn + 1:08x}00000003",
                root,
                "get_weather",
                t0 + 300,
                t0 + 400,
                attributes={
                    **common,
                    "openinference.span.kind": "TOOL",
                    "tool.name": "get_weather",
                    "input.value": json.dumps({"city": "Tokyo"}),
                    "output.value": "22°C and sunny",
                },
            ),
            SpanRecord(
                trace,
                f"{turn + 1:08x}00000004",
                root,
                "llm",
                t0 + 500,
                t0 + 800,
                attributes={
                    **common,
                    "openinference.span.kind": "LLM",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "It is 22°C and sunny in Tokyo.",
                },
            ),
        ]
    return spans


#: Turns of the big session: just enough spans to take the big sessions' lane.
BIG_TURNS = -(-workers.BIG_SESSION_SPANS // 4)


def status(db, session_id: str) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT status FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else ""


def evaluated(db) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT session_id, revision FROM evaluations ORDER BY session_id, revision").fetchall()
    finally:
        conn.close()


def hold_scoring_of(monkeypatch, session_id: str) -> threading.Event:
    """Scoring ``session_id`` (in this process) waits until the returned event is set: the big
    session stays in flight for as long as the test needs it."""
    release = threading.Event()
    real = workers.score_stored_session

    def held(store, sid, context):
        if sid == session_id:
            assert release.wait(60), "the test never released the held session"
        return real(store, sid, context)

    monkeypatch.setattr(workers, "score_stored_session", held)
    return release


def test_in_process_a_small_session_is_scored_while_a_big_one_is_in_flight(tmp_path, monkeypatch):
    """Scoring in a thread (``score_workers=0``, as EvalSpanProcessor does): the big session is
    held in scoring until the small one, which ended after it, is stored. With one queue the
    small one would wait behind it for good."""
    release = hold_scoring_of(monkeypatch, "big")
    db = tmp_path / "e.db"
    engine = Engine(db, golden=[GOLDEN], settings=EngineSettings(trace_quiet=3600, session_idle=3600)).start()
    try:
        engine.ingest(conversation("big", BIG_TURNS, 1))
        engine.ingest(conversation("small", 1, 10_000))
        assert engine.end_session("big") and engine.end_session("small")  # the big one is handed on first
        wait_until(lambda: status(db, "small") == "scored", what="the small session stored beside the big one")
        assert status(db, "big") == "ended"
    finally:
        release.set()
    assert engine.wait_idle(60)
    engine.close()
    assert evaluated(db) == [("big", 1), ("small", 1)]  # each scored once


def test_with_worker_processes_a_small_session_is_stored_before_a_big_one_that_ended_first(tmp_path):
    """The collector's way (a score worker process): the big session goes to a worker process
    of its own, started for it, and the small one is stored while it is still being scored."""
    db = tmp_path / "e.db"
    settings = EngineSettings(trace_quiet=3600, session_idle=3600, score_workers=1, score_when_idle=False)
    engine = Engine(db, golden=[GOLDEN], settings=settings).start()
    try:
        engine.ingest(conversation("big", BIG_TURNS, 1))
        engine.ingest(conversation("small", 1, 10_000))
        assert engine.end_session("big") and engine.end_session("small")
        wait_until(lambda: status(db, "small") == "scored", timeout=60, what="the small session stored")
        assert status(db, "big") == "ended", "the small session waited for the big one"
        assert len(engine.worker_pids()) == 2  # the small sessions' worker and the big one's
        assert engine.wait_idle(120)
    finally:
        engine.close()
    assert evaluated(db) == [("big", 1), ("small", 1)]


def test_the_big_lanes_worker_process_stops_when_idle_and_starts_again_for_the_next(tmp_path, monkeypatch):
    """What a giant left in its worker's memory goes back with the process; the next big session
    starts a new one."""
    monkeypatch.setattr(workers, "BIG_LANE_IDLE_SECONDS", 0.2)
    db = tmp_path / "e.db"
    settings = EngineSettings(trace_quiet=3600, session_idle=3600, score_workers=1, score_when_idle=False)
    engine = Engine(db, golden=[GOLDEN], settings=settings).start()
    try:
        assert len(engine.worker_pids()) == 1  # started at the first big session, not before
        for n, session_id in enumerate(("big-1", "big-2")):
            engine.ingest(conversation(session_id, BIG_TURNS, 1 + n * 10_000))
            engine.end_session(session_id)
            wait_until(lambda: status(db, session_id) == "scored", timeout=120)
            wait_until(lambda: len(engine.worker_pids()) == 1, timeout=30, what="the big lane's worker gone when idle")
    finally:
        engine.close()
    assert evaluated(db) == [("big-1", 1), ("big-2", 1)]


def test_a_restart_scores_the_ended_sessions_it_resumes_in_their_lanes(tmp_path, monkeypatch):
    """Sessions left 'ended' by a stop (or a crash) are handed to the lane their size says."""
    db = tmp_path / "e.db"
    first = Engine(db, golden=[GOLDEN], settings=EngineSettings(trace_quiet=3600, session_idle=3600)).start()
    first.ingest(conversation("big", BIG_TURNS, 1))
    first.ingest(conversation("small", 1, 10_000))
    first.close()  # both still open: mark them ended as a stop between end and scoring leaves them
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET status = 'ended'")
    conn.close()
    release = hold_scoring_of(monkeypatch, "big")
    engine = Engine(db, golden=[GOLDEN], settings=EngineSettings(trace_quiet=3600, session_idle=3600)).start()
    try:
        wait_until(lambda: status(db, "small") == "scored", what="the small session scored beside the big one")
        assert status(db, "big") == "ended"
    finally:
        release.set()
    assert engine.wait_idle(60)
    engine.close()
    assert evaluated(db) == [("big", 1), ("small", 1)]
