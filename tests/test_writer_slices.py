"""A big session's agent rows are written a slice a writer round (issue 34.2): what is handed to
the writer after it is not held behind its commit, and what ends up stored is what one commit
would have left."""

from __future__ import annotations

from otel_eval.engine import writer as writer_module
from otel_eval.engine.queue_items import Stop
from otel_eval.models.agent_data import AgentData, ToolCall
from otel_eval.pipeline import commit_evaluation
from otel_eval.store import agent_data_params
from tests.polling import wait_until
from tests.test_store import _scored, _store_with_sessions
from tests.test_writer import Recorded, finished

#: Agent rows a round writes, in these tests (the engine's is thousands).
SLICE = 8


def big(n: int, spans: int, text: str = "") -> object:
    """Session ``s{n}``'s evaluation with ``spans`` span rows and a trace row (many slices' worth)."""
    rows = _scored(n)
    agent_rows = [
        (
            f"t{n}",
            f"{i:016x}",
            f"s{n}",
            "span",
            AgentData(
                agent_response=f"answer {i}{text}",
                system_prompt="You are careful." if i % 3 else None,
                tool_calls=[ToolCall(tool_name="lookup", parameters={"i": i}, call_id=f"c{i}")] if i % 2 else [],
            ),
        )
        for i in range(spans)
    ]
    agent_rows.append((f"t{n}", "trace", f"s{n}", "trace", AgentData(agent_task=f"question {n}")))
    rows.agent_params = agent_data_params(agent_rows)
    return finished(n, rows)


def agent_data(store) -> list[tuple]:
    """The ``agent_data`` view as a reader sees it, but its row ids (the order rows were written in)."""
    return [row[1:] for row in store.conn.execute("SELECT * FROM agent_data ORDER BY trace_id, span_id, level")]


def test_an_evaluation_handed_in_after_a_big_one_is_stored_first_and_the_big_ones_rows_are_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "AGENT_ROWS_PER_ROUND", SLICE)
    store = _store_with_sessions(tmp_path / "e.db", 2)
    recorded = Recorded()
    writer = recorded.writer(store)
    writer.put(big(0, 10 * SLICE))
    writer.put(finished(1))
    writer.start()
    wait_until(lambda: len(recorded.stored) == 2)
    writer.put(Stop())
    writer.join(10)
    # Both were in the writer's first round: in one piece they were committed together, the big one first.
    assert recorded.stored == [("s1", 1), ("s0", 1)]
    assert recorded.given_up == []

    reference = _store_with_sessions(tmp_path / "one-piece.db", 2)
    with reference.transaction():
        commit_evaluation(reference, big(0, 10 * SLICE).finished)
        commit_evaluation(reference, finished(1).finished)
    assert agent_data(store) == agent_data(reference)
    assert len(agent_data(store)) == 10 * SLICE + 1 + 3  # s0's span and trace rows, s1's three
    status = "SELECT session_id, status, revision FROM sessions ORDER BY session_id"
    assert store.conn.execute(status).fetchall() == reference.conn.execute(status).fetchall()


def test_slices_a_full_disk_refuses_are_written_once_there_is_room(tmp_path, monkeypatch):
    # A page limit on the writer's connection stands in for the disk: the round writing a slice
    # fails as a whole, the writer reports it, and once there is room the slices go on from where
    # they were; the evaluation is stored once, nothing given up.
    monkeypatch.setattr(writer_module, "AGENT_ROWS_PER_ROUND", SLICE)
    store = _store_with_sessions(tmp_path / "e.db", 1)
    recorded = Recorded()
    writer = recorded.writer(store)
    store.conn.execute(f"PRAGMA max_page_count={store.conn.execute('PRAGMA page_count').fetchone()[0]}")
    writer.put(big(0, 4 * SLICE, text="x" * 4000))
    writer.start()
    wait_until(lambda: not writer.health().ok, what="the writer reporting the full disk")
    assert recorded.stored == []
    store.conn.execute("PRAGMA max_page_count=1073741823")
    wait_until(lambda: recorded.stored == [("s0", 1)])
    writer.put(Stop())
    writer.join(10)
    assert recorded.given_up == [] and writer.health().ok
    assert store.conn.execute("SELECT COUNT(*) FROM agent_data WHERE session_id = 's0'").fetchone() == (4 * SLICE + 1,)


def test_a_stop_stores_the_rest_of_a_big_evaluation_in_its_last_round(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "AGENT_ROWS_PER_ROUND", SLICE)
    store = _store_with_sessions(tmp_path / "e.db", 1)
    recorded = Recorded()
    writer = recorded.writer(store)
    writer.put(big(0, 10 * SLICE))
    writer.put(Stop())
    writer.start()
    writer.join(10)
    assert recorded.stored == [("s0", 1)] and recorded.given_up == []
    assert store.conn.execute("SELECT COUNT(*) FROM agent_data WHERE session_id = 's0'").fetchone() == (10 * SLICE + 1,)
    assert store.conn.execute("SELECT status FROM sessions WHERE session_id = 's0'").fetchone() == ("scored",)
