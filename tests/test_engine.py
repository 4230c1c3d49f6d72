"""The engine end to end: a real SDK TracerProvider, EvalSpanProcessor, a real SQLite file."""

import json
import sqlite3
import sys
import threading

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import Engine, EvalSpanProcessor, QueueFull
from otel_eval.models import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent
from otel_eval.spans import SpanRecord
from tests.polling import wait_until

GOLDEN = EvalSet(
    eval_set_id="weather",
    eval_cases=[
        EvalCase(
            eval_id="tokyo",
            conversation=[
                Invocation(
                    invocation_id="t1",
                    user_content=MessageContent.user("What's the weather in Tokyo?"),
                    expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": "Tokyo"})],
                    expected_final_response=MessageContent.assistant("It is 22°C and sunny in Tokyo."),
                )
            ],
        )
    ],
)


def run_turn(tracer, session_id, question, city, answer, end=False):
    """One agent turn with OpenInference attributes: AGENT root → LLM (tool call) → TOOL → LLM."""
    with tracer.start_as_current_span("agent.invoke") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        root.set_attribute("session.id", session_id)
        root.set_attribute("input.value", question)
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("session.id", session_id)
            llm.set_attribute("llm.input_messages.0.message.role", "user")
            llm.set_attribute("llm.input_messages.0.message.content", question)
            prefix = "llm.output_messages.0.message.tool_calls.0.tool_call."
            llm.set_attribute(prefix + "id", "call_1")
            llm.set_attribute(prefix + "function.name", "get_weather")
            llm.set_attribute(prefix + "function.arguments", json.dumps({"city": city}))
        with tracer.start_as_current_span("get_weather") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("session.id", session_id)
            tool.set_attribute("tool.name", "get_weather")
            tool.set_attribute("input.value", json.dumps({"city": city}))
            tool.set_attribute("input.mime_type", "application/json")
            tool.set_attribute("output.value", f"22°C and sunny in {city}")
        root.set_attribute("output.value", answer)
        if end:
            root.set_attribute("otel_eval.session.end", True)


def provider_with(processor, version="1.0.0"):
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent", "service.version": version}))
    provider.add_span_processor(processor)
    return provider


def evaluations(db):
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT session_id, revision, case_id, matched_by, passed, superseded FROM evaluations ORDER BY session_id, revision"
    ).fetchall()
    conn.close()
    return rows


def test_session_is_scored_once_after_it_ends(tmp_path):
    db = tmp_path / "e.db"
    results = []
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=0.1, session_idle=0.3, on_result=results.append)
    provider = provider_with(processor)
    tracer = provider.get_tracer("test")
    run_turn(tracer, "sess-pass", "What's the weather in Tokyo?", "Tokyo", "It is 22°C and sunny in Tokyo.")
    run_turn(tracer, "sess-fail", "what's the weather in tokyo?", "Kyoto", "It is 22°C and sunny in Kyoto.")
    assert processor.engine.flush(5)
    wait_until(lambda: len(results) == 2, what="both sessions scored")
    # A marker session, scored only after the ticks of its own idle time: had any of them scored
    # the first two again, those results would have come before it.
    run_turn(tracer, "sess-marker", "What's the weather in Tokyo?", "Tokyo", "It is 22°C and sunny in Tokyo.")
    wait_until(lambda: any(r.session_id == "sess-marker" for r in results), what="the marker session scored")
    provider.shutdown()
    by_session = {r.session_id: r for r in results}
    assert sorted(r.session_id for r in results) == ["sess-fail", "sess-marker", "sess-pass"]  # each once
    assert by_session["sess-pass"].passed and by_session["sess-pass"].eval_id == "tokyo"
    failing = [c.criterion for c in by_session["sess-fail"].criterion_results if not c.passed and not c.skipped]
    assert not by_session["sess-fail"].passed and "trajectory_match" in failing
    assert evaluations(db) == [
        ("sess-fail", 1, "tokyo", "exact", 0, 0),
        ("sess-marker", 1, "tokyo", "exact", 1, 0),
        ("sess-pass", 1, "tokyo", "exact", 1, 0),
    ]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 9
    assert conn.execute("SELECT level, COUNT(*) FROM agent_data GROUP BY level").fetchall() == [
        ("span", 9),
        ("trace", 3),
    ]
    assert conn.execute("SELECT agent_version FROM evaluations LIMIT 1").fetchone()[0] == "1.0.0"


def test_explicit_end_scores_without_waiting_for_idle(tmp_path):
    results = []
    processor = EvalSpanProcessor(
        db=tmp_path / "e.db", golden=GOLDEN, trace_quiet=0.1, session_idle=3600, on_result=results.append
    )
    tracer = provider_with(processor).get_tracer("test")
    run_turn(tracer, "sess-end", "What's the weather in Tokyo?", "Tokyo", "It is 22°C and sunny in Tokyo.", end=True)
    wait_until(lambda: results, what="the ended session scored")
    assert [r.session_id for r in results] == ["sess-end"]
    processor.shutdown()


def test_duplicates_and_child_before_parent_across_batches(tmp_path):
    engine = Engine(tmp_path / "e.db", golden=[GOLDEN], trace_quiet=3600, session_idle=3600).start()
    trace = "ab" * 16
    root = SpanRecord(
        trace,
        "00000000000000r1".replace("r", "a"),
        None,
        "agent.invoke",
        1,
        10,
        attributes={
            "openinference.span.kind": "AGENT",
            "input.value": "What's the weather in Tokyo?",
            "output.value": "sunny",
        },
    )
    child = SpanRecord(
        trace,
        "00000000000000c1",
        root.span_id,
        "get_weather",
        2,
        3,
        attributes={"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Tokyo"}'},
    )
    first = engine.ingest([child])
    again = engine.ingest([child, root])
    assert (first.stored, first.duplicates) == (1, 0)
    assert (again.stored, again.duplicates) == (1, 1)
    results = []
    engine.add_listener(results.append)
    engine.close(score_open=True)
    assert [(r.session_id, r.eval_id, r.passed) for r in results] == [(trace, "tokyo", False)]
    conn = sqlite3.connect(tmp_path / "e.db")
    assert conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 2
    assert conn.execute("SELECT span_count, trace_count FROM sessions").fetchone() == (2, 1)


def test_late_span_rescored_as_new_revision(tmp_path):
    db = tmp_path / "e.db"
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1).start()
    trace = "cd" * 16
    root = SpanRecord(
        trace,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        10,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": "late",
            "input.value": "What's the weather in Tokyo?",
            "output.value": "It is 22°C and sunny in Tokyo.",
        },
    )
    engine.ingest([root])
    wait_until(lambda: len(evaluations(db)) == 1)
    tool = SpanRecord(
        trace,
        "00000000000000a2",
        root.span_id,
        "get_weather",
        2,
        3,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "session.id": "late",
            "input.value": '{"city": "Tokyo"}',
        },
    )
    engine.ingest([tool])
    wait_until(lambda: len(evaluations(db)) == 2)
    engine.close()
    assert evaluations(db) == [("late", 1, "tokyo", "exact", 0, 1), ("late", 2, "tokyo", "exact", 1, 0)]


def test_restart_resumes_open_sessions_and_scores_each_once(tmp_path):
    db = tmp_path / "e.db"
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=3600).start()
    root = SpanRecord(
        "ef" * 16,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        10,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": "resumed",
            "input.value": "What's the weather in Tokyo?",
        },
    )
    engine.ingest([root])
    engine.close(score_open=False)  # like SIGTERM: committed, left open
    assert evaluations(db) == []
    results = []
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.2, on_result=results.append).start()
    wait_until(lambda: len(results) == 1)
    # Marker sessions, scored only after the ticks of their own idle time: a second scoring of
    # "resumed", in this engine or the next one, would come before them.
    engine.ingest([_marker_span("marker-1", "e1" * 16)])
    wait_until(lambda: any(r.session_id == "marker-1" for r in results), what="marker-1 scored")
    engine.close(score_open=True)
    assert [r.session_id for r in results] == ["resumed", "marker-1"]
    results = []
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.2, on_result=results.append).start()
    engine.ingest([_marker_span("marker-2", "e2" * 16)])
    wait_until(lambda: any(r.session_id == "marker-2" for r in results), what="marker-2 scored")
    engine.close(score_open=True)
    assert [r.session_id for r in results] == ["marker-2"]
    assert evaluations(db) == [
        ("marker-1", 1, "tokyo", "exact", 0, 0),
        ("marker-2", 1, "tokyo", "exact", 0, 0),
        ("resumed", 1, "tokyo", "exact", 0, 0),
    ]


def test_a_span_sent_again_after_a_restart_is_stored_and_counted_once(tmp_path):
    """After a restart the engine knows no trace of a scored session: a re-sent span of one is
    still found stored (not counted, not re-opening its session), while a new trace's spans,
    which the writer no longer looks up one by one, are all counted."""
    db = tmp_path / "e.db"
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1).start()
    engine.ingest([_marker_span("first", "f1" * 16)])
    engine.close(score_open=True)
    assert evaluations(db) == [("first", 1, "tokyo", "exact", 0, 0)]

    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1).start()
    result = engine.ingest([_marker_span("first", "f1" * 16), _marker_span("second", "f2" * 16)])
    child = SpanRecord(
        "f2" * 16, "00000000000000a2", "00000000000000a1", "tool", 2, 3, attributes={"session.id": "second"}
    )
    twice = engine.ingest([child, child])  # the same span twice in one batch: stored once
    engine.close(score_open=True)

    assert (result.stored, result.duplicates) == (1, 1)
    assert (twice.stored, twice.duplicates) == (1, 1)
    with sqlite3.connect(db) as conn:
        spans = dict(conn.execute("SELECT session_id, count(*) FROM spans GROUP BY session_id").fetchall())
        counted = dict(conn.execute("SELECT session_id, span_count FROM sessions").fetchall())
    assert spans == {"first": 1, "second": 2}
    assert counted == {"first": 1, "second": 2}
    assert evaluations(db) == [("first", 1, "tokyo", "exact", 0, 0), ("second", 1, "tokyo", "exact", 0, 0)]


def _marker_span(session_id, trace_id):
    return SpanRecord(
        trace_id,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        10,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": session_id,
            "input.value": "What's the weather in Tokyo?",
        },
    )


def test_processor_never_blocks_or_raises_when_queue_is_full(tmp_path):
    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, max_queue_spans=5, trace_quiet=3600, session_idle=3600)
    tracer = provider_with(processor).get_tracer("test")
    blocker = sqlite3.connect(db, timeout=30)
    blocker.execute("BEGIN IMMEDIATE")  # the writer cannot commit: the queue fills up
    try:

        def end_50_spans():
            for i in range(50):
                with tracer.start_as_current_span(f"s{i}"):
                    pass

        agent = threading.Thread(target=end_50_spans)
        agent.start()
        agent.join(30)  # only turns a hang into a failure
        # All 50 spans ended while the writer could not store a single one: ending a span never waited for room.
        assert not agent.is_alive(), "ending a span blocked while the ingest queue was full"
        assert processor.dropped_spans > 0
    finally:
        blocker.rollback()
        blocker.close()
    processor.shutdown()
    stored = sqlite3.connect(db).execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    assert stored + processor.dropped_spans == 50


def test_ingest_raises_queue_full_for_a_caller_that_waits(tmp_path):
    db = tmp_path / "e.db"
    engine = Engine(db, max_queue_spans=2, trace_quiet=3600, session_idle=3600).start()
    blocker = sqlite3.connect(db, timeout=30)
    blocker.execute("BEGIN IMMEDIATE")

    def mk(i):
        return SpanRecord("12" * 16, f"{i:016x}", None, "s", 1, 2)

    try:
        engine.ingest([mk(1), mk(2)], wait=False)
        with pytest.raises(QueueFull):
            engine.ingest([mk(3)], wait=False)
    finally:
        blocker.rollback()
        blocker.close()
    engine.close()
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 2


def test_a_reader_bug_stores_the_span_and_a_scoring_bug_is_recorded_not_lost(tmp_path, monkeypatch):
    """Fault injection: a convention that raises and a scorer that raises."""
    from otel_eval import session_evaluation
    from otel_eval.conventions import openinference

    def broken(span):
        raise KeyError("boom")

    monkeypatch.setattr(openinference, "read", broken)
    monkeypatch.setattr(
        session_evaluation, "score_session", lambda *a, **k: 1 / 0
    )  # the scorer session_evaluation calls
    db = tmp_path / "e.db"
    engine = Engine(db, golden=[GOLDEN], trace_quiet=3600, session_idle=3600).start()
    span = SpanRecord(
        "aa" * 16,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        2,
        attributes={"openinference.span.kind": "AGENT", "session.id": "buggy"},
    )
    assert engine.ingest([span]).stored == 1
    engine.close(score_open=True)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT convention FROM spans").fetchall() == [("openinference",)]
    assert conn.execute("SELECT session_id, passed, matched_by, error FROM evaluations").fetchall() == [
        ("buggy", 0, "error", "evaluation failed: ZeroDivisionError: division by zero")
    ]
    assert conn.execute("SELECT status FROM sessions").fetchall() == [("scored",)]


def test_a_second_engine_on_the_same_database_is_refused(tmp_path):
    from otel_eval.errors import OtelEvalError

    db = tmp_path / "e.db"
    first = Engine(db).start()
    with pytest.raises(OtelEvalError, match="already in use by otel-eval pid"):
        Engine(db).start()
    first.close()
    Engine(db).start().close()  # free again once the first one closed


def test_a_clean_stop_removes_the_lock_file_and_a_killed_engines_file_is_taken_over(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "e.db"
    lock = tmp_path / "e.db.lock"
    engine = Engine(db).start()
    assert lock.read_text().startswith("otel-eval pid")
    engine.close()
    assert not lock.exists()

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from otel_eval.engine import Engine; Engine(sys.argv[1]).start(); "
                "print('started', flush=True); time.sleep(60)"
            ),
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "started"
    finally:
        holder.kill()
        holder.wait()
    assert lock.exists()  # kill -9 leaves the file, but not the flock
    Engine(db).start().close()
    assert not lock.exists()


def tokyo_session(trace_id: str, session_id: str) -> list[SpanRecord]:
    """An OpenInference agent span and its get_weather tool call: GOLDEN's "tokyo" case, passed."""
    root = SpanRecord(
        trace_id,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        10,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": session_id,
            "input.value": "What's the weather in Tokyo?",
            "output.value": "It is 22°C and sunny in Tokyo.",
        },
    )
    tool = SpanRecord(
        trace_id,
        "00000000000000a2",
        root.span_id,
        "get_weather",
        2,
        3,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "session.id": session_id,
            "input.value": '{"city": "Tokyo"}',
        },
    )
    return [root, tool]


def test_scoring_in_a_worker_process_gives_the_same_results(tmp_path):
    results = []
    db = tmp_path / "e.db"
    engine = Engine(
        db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1, score_workers=1, on_result=results.append
    ).start()
    engine.ingest(tokyo_session("5a" * 16, "worker"))
    wait_until(lambda: len(results) == 1, timeout=30)
    engine.close()
    assert (results[0].session_id, results[0].eval_id, results[0].passed) == ("worker", "tokyo", True)
    assert evaluations(db) == [("worker", 1, "tokyo", "exact", 1, 0)]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT span_type FROM spans ORDER BY span_id").fetchall() == [("agent",), ("tool",)]
    assert conn.execute("SELECT level, COUNT(*) FROM agent_data GROUP BY level").fetchall() == [
        ("span", 2),
        ("trace", 1),
    ]


@pytest.mark.parametrize("score_workers", [0, 1])
def test_without_a_result_listener_workers_keep_no_full_result(tmp_path, score_workers):
    """Listeners that read only the event's fields (the collector's /metrics and alerts) say so:
    then nobody pays for the full result (encoding it was ~3% of a score worker's CPU), and
    reading it says why it is not there. What is stored is the same."""
    db = tmp_path / "e.db"
    events = []
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1, score_workers=score_workers)
    engine.on_evaluation(events.append, with_result=False)
    engine.start()
    engine.ingest(tokyo_session("5b" * 16, "lean"))
    wait_until(lambda: len(events) == 1, timeout=30)
    engine.close()
    event = events[0]
    assert (event.session_id, event.case_id, event.verdict, event.matched) == ("lean", "tokyo", "passed", True)
    with pytest.raises(LookupError, match="with_result=True"):
        _ = event.result
    assert evaluations(db) == [("lean", 1, "tokyo", "exact", 1, 0)]
    criteria = sqlite3.connect(db).execute("SELECT COUNT(*) FROM criterion_results").fetchone()[0]
    assert criteria > 0


def test_oversized_values_are_cut_with_a_marker_and_the_raw_span_kept_whole(tmp_path):
    db = tmp_path / "e.db"
    engine = Engine(db, trace_quiet=3600, session_idle=3600, max_value_chars=1000).start()
    answer = "x" * 100_000
    span = SpanRecord(
        "7b" * 16,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        2,
        attributes={"openinference.span.kind": "AGENT", "input.value": "hi", "output.value": answer},
    )
    engine.ingest([span])
    engine.close(score_open=True)
    conn = sqlite3.connect(db)
    stored = conn.execute("SELECT agent_response FROM agent_data WHERE level = 'span'").fetchone()[0]
    assert stored.startswith("x" * 1000) and stored.endswith("[truncated, 100000 chars]")
    assert len(stored) < 1100
    raw = json.loads(conn.execute("SELECT raw FROM spans").fetchone()[0])
    assert raw["attributes"]["output.value"] == answer


def test_while_no_spans_arrive_the_engine_scores_waiting_sessions_beside_its_worker_process(tmp_path):
    """A backlog (after a burst, at a restart) drains on both cores: while sessions wait for the
    worker process and ingest is idle, the engine's own process scores them too. Each session is
    scored once, and the same whichever process scored it."""
    from otel_eval import EngineSettings

    db = tmp_path / "e.db"
    settings = EngineSettings(trace_quiet=3600, session_idle=3600, score_workers=1, score_when_idle=True)
    engine = Engine(db, golden=[GOLDEN], settings=settings).start()
    sessions = 600
    for n in range(sessions):
        engine.ingest(tokyo_session(f"{n + 1:032x}", f"backlog-{n}"), wait=False)
    engine.close(score_open=True)  # ends every session at once: the backlog
    assert engine.stats()["sessions_scored_idle"] > 0
    conn = sqlite3.connect(db)
    try:
        assert conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT session_id), MAX(revision) FROM evaluations"
        ).fetchone() == (sessions, sessions, 1)
        assert conn.execute("SELECT DISTINCT case_id, matched_by, passed, score FROM evaluations").fetchall() == [
            ("tokyo", "exact", 1, 1.0)
        ]
        # Every criterion's result (score, verdict, details) is one and the same for all sessions.
        assert {
            count
            for (count,) in conn.execute(
                "SELECT COUNT(*) FROM criterion_results GROUP BY criterion, score, passed, details"
            )
        } == {sessions}
    finally:
        conn.close()


def test_the_engine_leaves_the_backlog_to_its_workers_while_spans_keep_arriving(tmp_path, monkeypatch):
    """Idle means idle: while spans arrive (a trickle, well inside INGEST_IDLE_SECONDS), the
    collector's process keeps its GIL for ingest, however long the backlog."""
    import time

    from otel_eval import EngineSettings
    from otel_eval.engine import core

    monkeypatch.setattr(core, "INGEST_IDLE_SECONDS", 1.0)  # a trickle every 10 ms is far inside it
    settings = EngineSettings(trace_quiet=0.05, session_idle=0.2, score_workers=1, score_when_idle=True)
    engine = Engine(tmp_path / "e.db", golden=[GOLDEN], settings=settings).start()
    try:
        for n in range(2000):  # they end together: a backlog for the worker
            engine.ingest(tokyo_session(f"{n + 1:032x}", f"burst-{n}"), wait=False)
        backlog_seen = 0
        for trickle in range(300):  # three seconds of it, time for an idle engine to have scored some
            engine.ingest(tokyo_session(f"{trickle + 1:016x}" * 2, f"trickle-{trickle}"), wait=False)
            backlog_seen = max(backlog_seen, engine.stats()["sessions_awaiting_score"])
            time.sleep(0.01)  # the trickle under test: a batch every 10 ms, never idle for INGEST_IDLE_SECONDS
        assert backlog_seen > 100
        assert engine.stats()["sessions_scored_idle"] == 0
    finally:
        engine.close()


def test_without_score_when_idle_only_the_worker_processes_score(tmp_path):
    from otel_eval import EngineSettings

    settings = EngineSettings(trace_quiet=3600, session_idle=3600, score_workers=1)
    engine = Engine(tmp_path / "e.db", golden=[GOLDEN], settings=settings).start()
    for n in range(200):
        engine.ingest(tokyo_session(f"{n + 1:032x}", f"backlog-{n}"), wait=False)
    engine.close(score_open=True)
    assert engine.stats()["sessions_scored_idle"] == 0
    assert evaluations(tmp_path / "e.db")[-1][1:] == (1, "tokyo", "exact", 1, 0)


def test_a_killed_score_worker_is_replaced(tmp_path):
    import os
    import signal

    results = []
    db = tmp_path / "e.db"
    engine = Engine(
        db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1, score_workers=1, on_result=results.append
    ).start()
    first = SpanRecord(
        "6c" * 16,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        2,
        attributes={"openinference.span.kind": "AGENT", "session.id": "before"},
    )
    engine.ingest([first])
    wait_until(lambda: len(results) == 1, timeout=30)
    for pid in engine.worker_pids():  # kill the worker as the OOM killer would
        os.kill(pid, signal.SIGKILL)
    # The first session after the kill finds the pool broken (left 'ended' for the next start)
    # or already on a fresh worker; either way the one after it is scored by a new worker.
    engine.ingest(
        [
            SpanRecord(
                "6d" * 16,
                "00000000000000a1",
                None,
                "agent.invoke",
                1,
                2,
                attributes={"openinference.span.kind": "AGENT", "session.id": "after"},
            )
        ]
    )
    wait_until(lambda: engine.stats()["sessions_awaiting_score"] == 0 and not engine.is_open("after"), timeout=30)
    engine.ingest(
        [
            SpanRecord(
                "6e" * 16,
                "00000000000000a1",
                None,
                "agent.invoke",
                1,
                2,
                attributes={"openinference.span.kind": "AGENT", "session.id": "again"},
            )
        ]
    )
    wait_until(lambda: any(r.session_id == "again" for r in results), timeout=30)
    engine.close()


def test_embedding_threshold_matches_a_paraphrase_in_the_live_engine(tmp_path):
    from tests.paths import REPO

    golden = [
        REPO / "examples" / "golden" / "weather.evalset.json",
        REPO / "examples" / "golden" / "weather.trajectory.json",
    ]
    span = SpanRecord(
        "8e" * 16,
        "00000000000000a1",
        None,
        "agent.invoke",
        1,
        2,
        attributes={"openinference.span.kind": "AGENT", "input.value": "List the top 10 users ranked by revenue"},
    )
    for threshold, expected in ((None, "unmatched"), (60.0, "embedding")):
        results = []
        engine = Engine(
            tmp_path / f"{expected}.db",
            golden=golden,
            trace_quiet=3600,
            session_idle=3600,
            embedding_threshold=threshold,
            on_result=results.append,
        ).start()
        engine.ingest([span])
        engine.close(score_open=True)
        matched_by = (
            sqlite3.connect(tmp_path / f"{expected}.db").execute("SELECT matched_by FROM evaluations").fetchone()
        )
        assert matched_by == (expected,)


def test_a_batch_sqlite_refuses_fails_alone_and_the_rest_of_its_group_commits(tmp_path):
    """Group commit: batches that wait together are committed together, each in its own savepoint."""
    from otel_eval.engine import EngineUnavailable

    db = tmp_path / "e.db"
    engine = Engine(db, trace_quiet=3600, session_idle=3600).start()
    good = SpanRecord("21" * 16, "00000000000000a1", None, "agent.invoke", 1, 2)
    bad = SpanRecord("22" * 16, "00000000000000a1", None, "agent.invoke", 2**63, 2**63 + 1)  # no SQLite INTEGER
    also_good = SpanRecord("23" * 16, "00000000000000a1", None, "agent.invoke", 1, 2)
    blocker = sqlite3.connect(db, timeout=30)
    blocker.execute("BEGIN IMMEDIATE")  # the three batches queue up behind it and go in one group
    outcomes = {}

    def send(name, span):
        try:
            outcomes[name] = engine.ingest([span]).stored
        except Exception as exc:
            outcomes[name] = exc

    import threading

    senders = [
        threading.Thread(target=send, args=(n, s)) for n, s in (("good", good), ("bad", bad), ("also_good", also_good))
    ]
    for t in senders:
        t.start()
    wait_until(lambda: engine.stats()["queue_depth"] == 3)
    blocker.rollback()
    blocker.close()
    for t in senders:
        t.join(30)
    assert outcomes["good"] == 1 and outcomes["also_good"] == 1
    assert isinstance(outcomes["bad"], OverflowError) and not isinstance(outcomes["bad"], EngineUnavailable)
    assert engine.stats()["spans_stored"] == 2  # counts only what was committed
    engine.close()
    assert {r[0] for r in sqlite3.connect(db).execute("SELECT trace_id FROM spans")} == {"21" * 16, "23" * 16}


def test_a_full_disk_answers_retryably_and_the_writer_carries_on(tmp_path):
    """SQLite's own "database or disk is full" (a page limit on the writer's connection stands in for
    the disk): the caller gets StorageUnavailable, health says why, nothing is half stored, and once
    there is room again the same engine stores the retried batch."""
    from otel_eval.engine import StorageUnavailable

    db = tmp_path / "e.db"
    engine = Engine(db, trace_quiet=3600, session_idle=3600).start()
    conn = engine._writer.store.conn  # the writer's own connection: the "disk" it writes to
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")
    big = [SpanRecord("31" * 16, f"{i:016x}", None, "s", 1, 2, attributes={"text": "x" * 4000}) for i in range(1, 50)]
    with pytest.raises(StorageUnavailable, match="full"):
        engine.ingest(big)
    assert not engine.health().ok and "full" in (engine.health_problem() or "")
    assert engine.stats()["spans_stored"] == 0 and not engine.is_open("31" * 16)
    conn.execute("PRAGMA max_page_count=1073741823")  # room again
    assert engine.ingest(big).stored == len(big)  # the exporter's retry
    assert engine.health_problem() is None and engine.is_open("31" * 16)
    engine.close()
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM spans").fetchone()[0] == len(big)


def test_a_processor_can_take_an_engine_and_listeners_get_what_was_stored(tmp_path):
    """EvalSpanProcessor(engine=...) as SimpleSpanProcessor(exporter); EvaluationStored carries what
    the forwarder, alerts and /metrics would otherwise read back from SQLite."""
    from otel_eval import EngineSettings, EvaluationStored

    db = tmp_path / "e.db"
    settings = EngineSettings(trace_quiet=0.05, session_idle=3600)
    engine = Engine(db, golden=[GOLDEN], settings=settings)
    events: list[EvaluationStored] = []
    engine.on_evaluation(events.append)
    processor = EvalSpanProcessor(engine=engine)
    assert processor.engine is engine and engine.settings == settings
    tracer = provider_with(processor, version="3.1.0").get_tracer("test")
    run_turn(tracer, "injected", "What's the weather in Tokyo?", "Tokyo", "It is 22°C and sunny in Tokyo.", end=True)
    processor.force_flush()
    wait_until(lambda: len(events) == 1)
    processor.shutdown()
    event = events[0]
    conn = sqlite3.connect(db)
    trace_id, root = conn.execute("SELECT trace_id, root_span_id FROM traces").fetchone()
    evaluation_id, revision = conn.execute("SELECT id, revision FROM evaluations").fetchone()
    assert (event.session_id, event.result.eval_id, event.result.passed, event.matched) == (
        "injected",
        "tokyo",
        True,
        True,
    )
    assert (event.evaluation_id, event.revision, event.agent_version) == (evaluation_id, revision, "3.1.0")
    assert (event.trace_ids, event.root_span_ids) == ((trace_id,), (root,))


def test_a_large_golden_set_leaves_few_objects_in_the_engines_process(tmp_path):
    """A running engine keeps golden cases as text, parsed when a session matches one: a parsed
    case is ~35 objects that every full cyclic-GC pass walks, on the agent's own thread in-process.
    Matching and scoring still find the case."""
    import gc

    gc.collect()
    before = len(gc.get_objects())
    cases = [
        EvalCase(
            eval_id=f"case-{i}",
            conversation=[
                Invocation(
                    invocation_id="1",
                    user_content=MessageContent.user(f"What is the weather in city number {i}?"),
                    expected_final_response=MessageContent(role="model", content=[{"text": f"Sunny in {i}."}]),
                    expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": str(i)})],
                )
            ],
        )
        for i in range(2000)
    ]
    eval_set = EvalSet(eval_set_id="big", eval_cases=cases)
    engine = Engine(tmp_path / "e.db", golden=[eval_set], trace_quiet=3600, session_idle=3600).start()
    del eval_set, cases
    gc.collect()
    grown = len(gc.get_objects()) - before
    try:
        assert grown < 5 * 2000, f"{grown} objects for 2,000 cases"
        match = engine.golden_index.match("what is the weather in city number 1234?")
        assert (match.method, match.eval_id, match.case.conversation[0].expected_final_response.get_text()) == (
            "exact",
            "case-1234",
            "Sunny in 1234.",
        )
        assert engine.golden_summary[0][1:] == ("big", 2000)
    finally:
        engine.close()


def test_an_engine_with_score_worker_processes_still_answers_golden_lookups(tmp_path):
    engine = Engine(tmp_path / "e.db", golden=[GOLDEN], score_workers=1, trace_quiet=3600, session_idle=3600).start()
    try:
        assert engine.golden_index.case("weather", "tokyo") is not None
    finally:
        engine.close()


def stall_commits(monkeypatch) -> threading.Event:
    """The writer's evaluation commits (one, or a round of more) wait until the event is set."""
    from otel_eval.engine import writer

    gate = threading.Event()
    real_commit, real_commit_group = writer.commit_evaluation, writer.commit_evaluations

    def slow_commit(store, finished):
        gate.wait(30)
        return real_commit(store, finished)

    def slow_commit_group(store, group):
        gate.wait(30)
        return real_commit_group(store, group)

    monkeypatch.setattr(writer, "commit_evaluation", slow_commit)
    monkeypatch.setattr(writer, "commit_evaluations", slow_commit_group)
    return gate


def test_a_writer_that_falls_behind_holds_scoring_back_and_loses_nothing(tmp_path, monkeypatch):
    """At most MAX_WAITING_EVALUATIONS scored records wait for the writer: past that, the score
    worker waits (the sessions stay 'ended' ids), so a slow disk cannot grow memory without bound."""
    import time

    from otel_eval.engine import core, workers

    monkeypatch.setattr(core, "MAX_WAITING_EVALUATIONS", 2)
    monkeypatch.setattr(core, "MAX_WAITING_FROM_PROCESSES", 50)  # not this engine's: it scores in a thread
    gate = stall_commits(monkeypatch)
    real_score = workers.score_stored_session
    scored = []

    def counted_score(store, session_id, context):
        finished = real_score(store, session_id, context)
        scored.append(session_id)
        return finished

    monkeypatch.setattr(workers, "score_stored_session", counted_score)
    db = tmp_path / "e.db"
    sessions = [f"s{i}" for i in range(6)]
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1).start()
    try:
        engine.ingest(
            [
                SpanRecord(
                    f"{i + 1:032x}",
                    f"{i + 1:016x}",
                    None,
                    "agent.invoke",
                    1,
                    2,
                    attributes={"openinference.span.kind": "AGENT", "session.id": s},
                )
                for i, s in enumerate(sessions)
            ]
        )
        # One record is in the writer's stalled commit, one waits for it, the worker holds the third.
        wait_until(lambda: len(scored) >= 3, what="the worker scoring up to the limit")
        time.sleep(0.3)  # what is tested is that nothing happens: time for a worker past the bound to score a fourth
        assert len(scored) == 3, "the worker went on scoring while the writer was behind"
    finally:
        gate.set()
    assert engine.wait_idle(10)
    engine.close()
    assert sorted(row[0] for row in evaluations(db)) == sessions  # each stored once, none lost


def test_records_from_worker_processes_wait_for_the_writer_up_to_their_own_bound(tmp_path, monkeypatch):
    """With score worker processes the bound is MAX_WAITING_FROM_PROCESSES: while the writer is
    stuck in a commit, no more than that many scored records are handed to it, and nothing is lost."""
    import time

    from otel_eval.engine import core, writer

    monkeypatch.setattr(core, "MAX_WAITING_FROM_PROCESSES", 2)
    monkeypatch.setattr(core, "MAX_WAITING_EVALUATIONS", 50)  # the threads' bound: not this engine's
    gate = stall_commits(monkeypatch)
    real_put = writer.Writer.put
    handed = []

    def counted_put(self, item):
        if isinstance(item, writer.StoreEvaluation):
            handed.append(item)
        return real_put(self, item)

    monkeypatch.setattr(writer.Writer, "put", counted_put)
    db = tmp_path / "e.db"
    sessions = [f"s{i}" for i in range(8)]
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1, score_workers=1).start()
    try:
        engine.ingest(
            [
                SpanRecord(
                    f"{i + 1:032x}",
                    f"{i + 1:016x}",
                    None,
                    "agent.invoke",
                    1,
                    2,
                    attributes={"openinference.span.kind": "AGENT", "session.id": s},
                )
                for i, s in enumerate(sessions)
            ]
        )
        wait_until(lambda: len(handed) >= 2, what="records handed to the stalled writer")
        time.sleep(1.0)  # nothing may happen: time in which the worker process has long scored all eight
        assert len(handed) == 2, "more records were handed to a writer that was behind than the bound allows"
    finally:
        gate.set()
    assert engine.wait_idle(20)
    engine.close()
    assert len(handed) == len(sessions)
    assert sorted(row[0] for row in evaluations(db)) == sessions  # each stored once, none lost


def test_one_processor_on_two_providers_keeps_each_spans_resource(tmp_path):
    """The processor converts a provider's Resource once per round: spans of two providers that
    take turns must still each carry their own."""
    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600)
    tracers = {version: provider_with(processor, version).get_tracer("test") for version in ("1.0.0", "2.0.0")}
    for i in range(6):
        version = ("1.0.0", "2.0.0")[i % 2]
        with tracers[version].start_as_current_span(f"step-{i}") as span:
            span.set_attribute("session.id", f"s-{version}")
    assert processor.force_flush()
    conn = sqlite3.connect(db)
    stored = {
        (json.loads(raw)["name"], json.loads(raw)["resource"]["service.version"])
        for (raw,) in conn.execute("SELECT raw FROM spans")
    }
    conn.close()
    processor.shutdown()
    assert stored == {(f"step-{i}", ("1.0.0", "2.0.0")[i % 2]) for i in range(6)}


def test_a_failed_writer_round_gives_its_evaluations_back_and_scoring_goes_on(tmp_path, monkeypatch):
    """A bug that fails a whole writer round leaves its sessions 'ended' (scored at the next
    start), and must not keep their hand-off slots: past MAX_WAITING_EVALUATIONS such rounds,
    every worker would wait for ever and nothing would be scored again."""
    from otel_eval.engine import core, writer

    monkeypatch.setattr(core, "MAX_WAITING_EVALUATIONS", 1)
    real_group = writer.Writer._commit_group
    failures = []

    def failing_group(self, batches, evaluations):
        if evaluations and len(failures) < 3:
            failures.append([e.finished.session_id for e in evaluations])
            raise RuntimeError("a bug in the round")
        return real_group(self, batches, evaluations)

    monkeypatch.setattr(writer.Writer, "_commit_group", failing_group)
    db = tmp_path / "e.db"
    engine = Engine(db, golden=[GOLDEN], trace_quiet=0.05, session_idle=0.1).start()
    try:
        engine.ingest(
            [
                SpanRecord(
                    f"{i + 1:032x}",
                    f"{i + 1:016x}",
                    None,
                    "agent.invoke",
                    1,
                    2,
                    attributes={"openinference.span.kind": "AGENT", "session.id": f"s{i}"},
                )
                for i in range(5)
            ]
        )
        wait_until(
            lambda: len(failures) == 3 and len(evaluations(db)) == 2,
            what="two sessions scored after three failed rounds",
        )
        assert engine.wait_idle(10)
    finally:
        engine.close(timeout=5)  # a worker stuck waiting for a slot must not hang the test
    lost = {s for group in failures for s in group}
    assert len(lost) == 3 and {row[0] for row in evaluations(db)} == {f"s{i}" for i in range(5)} - lost
    conn = sqlite3.connect(db)
    assert {r[0] for r in conn.execute("SELECT session_id FROM sessions WHERE status = 'ended'")} == lost
    conn.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are set with a Linux fcntl")
def test_a_score_workers_answer_pipe_holds_many_answers_before_it_must_wait():
    # A worker writes its finished evaluations (~14 KiB pickled each) to a pipe that a thread of
    # the collector reads, a thread that waits for the GIL while ingest is busy. A default pipe
    # holds 64 KiB: the worker then stopped after four or five answers, a third of its time at
    # full load. Widened, the pipe takes 512 KiB (~35 answers) with nobody reading.
    import os

    from otel_eval.engine.workers import _widen_pipe

    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as answers:
        _widen_pipe(answers)
        os.set_blocking(write_end, False)
        written = 0
        try:
            while written < 512 * 1024:
                written += os.write(write_end, b"x" * 16384)
        except BlockingIOError:
            pass
        finally:
            os.close(write_end)
    assert written >= 512 * 1024, f"the pipe took only {written} bytes"


def test_spans_the_writer_cannot_store_yet_do_not_wait_as_sdk_spans(tmp_path):
    """While the writer is held up in a commit, the spans the agent ends are converted to records
    at once and the SDK's span objects are let go: an agent busy on the GIL starves the writer,
    and every full GC pass the agent's thread pays walks whatever waits (eleven tracked objects
    an SDK span, against one or two a record)."""
    import gc
    import weakref

    from opentelemetry.sdk.trace import SpanProcessor

    from otel_eval.processor import WAKE_AT

    class Watch(SpanProcessor):
        """Keeps a weak reference to each finished span, the object every processor receives."""

        def __init__(self):
            self.refs = []

        def on_end(self, span):
            self.refs.append(weakref.ref(span))

    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600)
    provider = provider_with(processor)
    watch = Watch()
    provider.add_span_processor(watch)
    tracer = provider.get_tracer("test")

    def end_spans(first: int, count: int) -> list:
        watch.refs = []
        for i in range(first, first + count):
            tracer.start_span(f"step-{i}", attributes={"session.id": "busy"}).end()
        return watch.refs

    def alive(refs: list) -> int:
        gc.collect()
        return sum(ref() is not None for ref in refs)

    blocker = sqlite3.connect(db, timeout=30)
    blocker.execute("BEGIN IMMEDIATE")  # the writer cannot commit
    try:
        first = end_spans(0, WAKE_AT)  # the writer takes these and waits for the lock with them
        wait_until(lambda: alive(first) == 0, what="the writer taking the first spans")
        second = end_spans(WAKE_AT, 3 * WAKE_AT)
        # Every 512 are converted at once; fewer wait for the writer's next round, as in
        # BatchSpanProcessor, and this writer is held up: at most 511 stay SDK spans.
        wait_until(
            lambda: alive(second) < WAKE_AT,
            what=lambda: (
                f"the SDK spans let go while the writer is held up ({alive(second)} of {len(second)} still alive)"
            ),
        )
    finally:
        blocker.rollback()
        blocker.close()
    processor.shutdown()
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 4 * WAKE_AT


def test_force_flush_stores_more_spans_than_one_writer_round_takes(tmp_path, monkeypatch):
    from otel_eval import processor as processor_module

    monkeypatch.setattr(processor_module, "SOURCE_ROUND", 7)
    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600)
    tracer = provider_with(processor).get_tracer("test")
    for i in range(50):
        tracer.start_span(f"step-{i}", attributes={"session.id": "many"}).end()
    assert processor.force_flush()
    stored = sqlite3.connect(db).execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    processor.shutdown()
    assert stored == 50


def test_in_process_otel_eval_leaves_the_agents_garbage_collector_alone(tmp_path):
    """The collector and its worker processes widen the young GC generation and freeze their
    golden index (``engine.own_process``); in an agent's process the GC is the agent's."""
    import gc

    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    processor = EvalSpanProcessor(db=tmp_path / "e.db", golden=GOLDEN, trace_quiet=0.1, session_idle=0.2)
    tracer = provider_with(processor).get_tracer("test")
    run_turn(tracer, "gc-alone", "What's the weather in Tokyo?", "Tokyo", "It is 22°C and sunny in Tokyo.", end=True)
    assert processor.force_flush()
    assert processor.engine.wait_idle(20)
    processor.shutdown()
    assert evaluations(tmp_path / "e.db")  # it did score the session
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
