"""The SQLite store: schema, idempotent span writes, revisions, parameterised SQL."""

import json
import sqlite3

from otel_eval.models.agent_data import AgentData, ToolCall, ToolSchema
from otel_eval.models.results import CriterionResult, EvalCaseResult
from otel_eval.read.spans import stored_spans
from otel_eval.span_rows import span_row
from otel_eval.spans import SpanRecord
from otel_eval.store import ENDED, OPEN, SCHEMA_VERSION, SCORED, EvaluationRows, Store
from otel_eval.store.session_rows import session_span_rows


def span(span_id="00000000000000a1", trace_id="0" * 31 + "1", parent=None, **attrs):
    return SpanRecord(
        trace_id=trace_id, span_id=span_id, parent_span_id=parent, name="s", start_ns=1, end_ns=2, attributes=attrs
    )


def test_schema_wal_and_version(tmp_path):
    path = tmp_path / "e.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert {
        "spans",
        "agent_data",
        "sessions",
        "traces",
        "evaluations",
        "criterion_results",
        "golden_cases",
        "log_events",
        "trajectory_evaluations",
        "daily_pass_rate",
    } <= tables
    view_cols = [r[1] for r in conn.execute("PRAGMA table_info(trajectory_evaluations)")]
    assert view_cols == [
        "evaluation_id",
        "session_id",
        "test_query",
        "expected_tool",
        "actual_tool",
        "expected_table",
        "actual_table",
        "sql_generated",
        "tool_selection_correct",
        "table_usage_correct",
        "sql_generation_correct",
        "evaluation_timestamp",
        "evaluator_config",
        "verdict",
    ]
    agent_cols = {r[1] for r in conn.execute("PRAGMA table_info(agent_data)")}
    assert set(AgentData.model_fields) | {"session_id", "level", "trace_id", "span_id"} <= agent_cols


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "e.db"
    sqlite3.connect(path).execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    try:
        Store(path)
    except RuntimeError as exc:
        assert "newer" in str(exc)
    else:
        raise AssertionError("opened a database from a newer version")


def test_span_insert_is_idempotent_and_reports_new_rows(tmp_path):
    store = Store(tmp_path / "e.db")
    rows = [(span_row(span("00000000000000a1")), "s1"), (span_row(span("00000000000000a2")), "s1")]
    with store.transaction():
        assert store.insert_spans(rows, 10) == [True, True]
        store.touch_traces([("0" * 31 + "1", "s1", None, 0, 0, 2)], 10)  # as ingest does: sessions are read by trace
    with store.transaction():
        assert store.insert_spans(rows + [(span_row(span("00000000000000a3")), "s1")], 11) == [False, False, True]
    assert store.counts()["spans"] == 3
    assert [s.span_id for s in stored_spans(store.conn, store.path, "s1")[0]] == [
        "00000000000000a1",
        "00000000000000a2",
        "00000000000000a3",
    ]


def test_agent_data_json_columns_and_trace_level_upsert(tmp_path):
    store = Store(tmp_path / "e.db")
    data = AgentData(
        task_id="t",
        turn_id="a",
        tool_calls=[ToolCall(tool_name="get_weather", parameters={"city": "Tokyo"}, call_id="c1")],
    )
    with store.transaction():
        store.upsert_agent_data([("t", "a", "s1", "span", data), ("t", "a", "s1", "trace", data)])
        store.upsert_agent_data([("t", "a", "s1", "trace", data.model_copy(update={"agent_response": "done"}))])
    rows = store.conn.execute(
        "SELECT level, json(tool_calls), agent_response FROM agent_data ORDER BY level"
    ).fetchall()
    call = (
        '[{"tool_name":"get_weather","parameters":{"city":"Tokyo"},"call_id":"c1"}]'  # valid JSON, as SQLite reads it
    )
    assert rows == [("span", call, None), ("trace", call, "done")]


def test_session_lifecycle_and_revisions(tmp_path):
    store = Store(tmp_path / "e.db")
    hostile = "x'); DROP TABLE spans; --"
    with store.transaction():
        assert store.touch_session(hostile, "attribute", 3, 100, False) == ""
        store.set_session_status(hostile, ENDED, "idle", 200)
    result = EvalCaseResult(
        eval_id="case-1",
        passed=True,
        score=1.0,
        criterion_results=[CriterionResult(criterion="trajectory_match", score=1.0, passed=True, threshold=0.8)],
    )
    common = dict(
        eval_set_id="set",
        matched_by="exact",
        match_score=100.0,
        config_hash="h",
        agent_version="1.0",
        query="q",
        columns={"expected_tool": "a", "actual_tool": "a"},
        details={},
        session_fields={},
    )
    ev1, rev1 = store.record_evaluation(hostile, result, **common)
    assert rev1 == 1 and store.sessions_with_status(SCORED)[0].session_id == hostile
    with store.transaction():  # a late span re-opens the session
        assert store.touch_session(hostile, "attribute", 1, 300, False) == SCORED
    assert store.sessions_with_status(OPEN)[0].session_id == hostile
    with store.transaction():
        store.set_session_status(hostile, ENDED, "idle", 400)
    ev2, rev2 = store.record_evaluation(hostile, result.model_copy(update={"passed": False, "score": 0.5}), **common)
    assert rev2 == 2
    rows = store.conn.execute("SELECT revision, superseded, passed FROM evaluations ORDER BY revision").fetchall()
    assert rows == [(1, 1, 1), (2, 0, 0)]
    assert store.conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0] == 0  # the table is still there
    view = store.conn.execute("SELECT session_id, expected_tool, actual_tool FROM trajectory_evaluations").fetchall()
    assert view == [(hostile, "a", "a")]


def test_a_read_only_store_cannot_write(tmp_path):
    """What a score worker holds: SQLite itself refuses its writes, so a worker can never store
    an evaluation behind the engine's one writer (nor after its engine died)."""
    import pytest

    db = tmp_path / "e.db"
    Store(db).close()
    reader = Store.open_read_only(db)
    try:
        assert reader.counts()["sessions"] == 0
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            with reader.transaction():
                reader.conn.execute("INSERT INTO sessions (session_id, status) VALUES ('x', 'open')")
    finally:
        reader.close()


def test_a_version_3_database_keeps_every_agent_data_row_and_stores_shared_texts_once(tmp_path):
    """Schema 4 keeps system prompts and tool schemas once: the migrated file reads the same
    rows, in the same columns, through ``agent_data``; rows can still be deleted through it."""
    from tests.old_schema import database_at_version

    db = database_at_version(tmp_path / "v3.db", 3)
    conn = sqlite3.connect(db)
    prompt, tools = "You are a weather agent. " * 40, '[{"name": "get_weather", "description": "w"}]'
    conn.executemany(
        "INSERT INTO agent_data (trace_id, span_id, session_id, level, system_prompt, tools_available, agent_task,"
        " agent_exit) VALUES (?,?,?,?,?,?,?,?)",
        [
            ("t1", "a", "s1", "span", prompt, tools, "weather?", 0),
            ("t1", "b", "s1", "span", prompt, tools, None, 0),
            ("t1", "t1", "s1", "trace", None, "[]", "weather?", 1),
            ("t2", "c", "s2", "span", "other", tools, "x", 0),
        ],
    )
    conn.commit()
    before_columns = [r[1] for r in conn.execute("PRAGMA table_info(agent_data)")]
    before = conn.execute("SELECT * FROM agent_data ORDER BY id").fetchall()
    conn.close()

    Store(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [r[1] for r in conn.execute("PRAGMA table_info(agent_data)")] == before_columns
    assert conn.execute("SELECT * FROM agent_data ORDER BY id").fetchall() == before
    assert sorted(t for (t,) in conn.execute("SELECT text FROM agent_texts")) == sorted({prompt, tools, "[]", "other"})
    conn.execute("DELETE FROM agent_data WHERE session_id = 's2'")
    assert conn.execute("SELECT COUNT(*) FROM agent_data_rows").fetchone() == (3,)
    conn.close()


def test_a_version_4_database_drops_the_session_indexes_and_still_reads_a_session(tmp_path):
    """Schema 5 finds a session's spans and agent rows through its traces; their session indexes go."""
    from otel_eval.read.spans import session_agent_data
    from tests.old_schema import database_at_version

    db = database_at_version(tmp_path / "v4.db", 4)
    conn = sqlite3.connect(db)
    conn.executemany(
        "INSERT INTO traces (trace_id, session_id) VALUES (?, ?)", [("t1", "s1"), ("t2", "s1"), ("t3", "s2")]
    )
    conn.executemany(
        "INSERT INTO agent_data_rows (trace_id, span_id, session_id, level, agent_task, agent_exit) VALUES (?,?,?,?,?,?)",
        [
            ("t1", "a", "s1", "span", "weather?", 0),
            ("t2", "b", "s1", "span", "and rain?", 0),
            ("t2", "t2", "s1", "trace", "and rain?", 1),
            ("t3", "c", "s2", "span", "other", 0),
        ],
    )
    conn.commit()
    conn.executemany(
        "INSERT INTO spans (trace_id, span_id, session_id, start_ns, end_ns, raw) VALUES (?,?,?,?,?,?)",
        [
            (
                t,
                s,
                sess,
                start,
                start + 1,
                json.dumps(
                    {
                        "trace_id": t,
                        "span_id": s,
                        "parent_span_id": None,
                        "name": s,
                        "start_ns": start,
                        "end_ns": start + 1,
                    }
                ),
            )
            for t, s, sess, start in [("t2", "b", "s1", 20), ("t1", "a", "s1", 10), ("t3", "c", "s2", 5)]
        ],
    )
    conn.commit()
    assert "idx_agent_data_rows_session_id" in {r[1] for r in conn.execute("PRAGMA index_list(agent_data_rows)")}
    assert "idx_spans_session_id" in {r[1] for r in conn.execute("PRAGMA index_list(spans)")}
    conn.close()

    Store(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert {r[1] for r in conn.execute("PRAGMA index_list(agent_data_rows)")} == {
        "idx_agent_data_rows_trace_id_span_id_level"
    }
    found = session_agent_data(conn, "s1")
    assert sorted(found) == [("t1", "a", "span"), ("t2", "b", "span"), ("t2", "t2", "trace")]
    assert found[("t2", "t2", "trace")] == {"agent_task": "and rain?", "agent_exit": True}
    assert list(session_agent_data(conn, "s2")) == [("t3", "c", "span")]
    assert {r[1] for r in conn.execute("PRAGMA index_list(spans)")} == {"sqlite_autoindex_spans_1"}
    conn.close()
    store = Store(db)
    try:
        spans, _ = stored_spans(store.conn, store.path, "s1")
        assert [(s.trace_id, s.span_id) for s in spans] == [("t1", "a"), ("t2", "b")]
        assert [json.loads(raw)["span_id"] for raw, _, _ in session_span_rows(store.conn, "s2")] == ["c"]
    finally:
        store.close()


def test_sessions_that_share_a_system_prompt_store_it_once(tmp_path):
    store = Store(tmp_path / "e.db")
    prompt = "You are a careful agent. " * 100
    tools = [ToolSchema(name="get_weather", description="Weather for a city.")]
    rows = [
        (f"t{i}", f"s{i}", f"session-{i}", "span", AgentData(system_prompt=prompt, tools_available=tools))
        for i in range(20)
    ]
    with store.transaction():
        store.upsert_agent_data(rows)
    assert store.conn.execute("SELECT COUNT(*) FROM agent_texts").fetchone() == (2,)  # the prompt, the tool list
    assert {
        r
        for r in store.conn.execute("SELECT system_prompt, json_extract(tools_available, '$[0].name') FROM agent_data")
    } == {(prompt, "get_weather")}
    store.close()


def test_agent_data_fields_no_row_sets_are_written_as_null_and_cleared_on_rescoring(tmp_path):
    # Columns that no row of a batch sets go into the statement as NULL literals (not bound):
    # a re-scored row must still lose a field it no longer has, and batches whose rows leave
    # different columns empty must combine.
    from otel_eval.store import agent_data_params

    store = Store(tmp_path / "e.db")
    first = agent_data_params([("t", "a", "s1", "span", AgentData(agent_response="hello", metadata="m"))])
    second = agent_data_params([("t", "b", "s1", "span", AgentData(ground_truth="g"))])
    assert first.null_columns != second.null_columns
    with store.transaction():
        store.upsert_agent_data_params(first + second)
    assert store.conn.execute(
        "SELECT span_id, agent_response, metadata, ground_truth FROM agent_data ORDER BY id"
    ).fetchall() == [("a", "hello", "m", None), ("b", None, None, "g")]
    with store.transaction():
        store.upsert_agent_data([("t", "a", "s1", "span", AgentData())])
    assert store.conn.execute("SELECT agent_response, metadata FROM agent_data WHERE span_id = 'a'").fetchall() == [
        (None, None)
    ]
    store.close()


def test_a_rolled_back_shared_text_is_stored_again(tmp_path):
    # The Store remembers which shared texts it stored, to skip them next time; a rollback must
    # make it forget them, or later rows would point at a text that is not there.
    store = Store(tmp_path / "e.db")
    rows = [("t", "a", "s1", "span", AgentData(system_prompt="You are careful."))]
    try:
        with store.transaction():
            store.upsert_agent_data(rows)
            raise RuntimeError("the group fails after the rows were written")
    except RuntimeError:
        pass
    with store.transaction():
        store.upsert_agent_data(rows)
    assert store.conn.execute("SELECT system_prompt FROM agent_data").fetchall() == [("You are careful.",)]
    store.close()


def _many_spans(count: int, traces: int) -> list[SpanRecord]:
    return [
        span(
            span_id=f"{n + 1:016x}",
            trace_id=f"{n % traces + 1:032x}",
            parent=None if n < traces else f"{n % traces + 1:016x}",
        )
        for n in range(count)
    ]


def test_a_batch_larger_than_one_statement_is_stored_whole_once(tmp_path):
    # 2,500 spans cross the most rows one statement takes (2,048): every span is stored once,
    # a span twice in the batch counts once, and a re-send stores nothing.
    store = Store(tmp_path / "e.db")
    spans = _many_spans(2_500, traces=300)
    with store.transaction():
        fresh = store.insert_spans([(span_row(s), "sess") for s in spans + spans[:5]], 1)
    assert fresh == [True] * 2_500 + [False] * 5
    assert store.conn.execute("SELECT COUNT(*), COUNT(DISTINCT span_id) FROM spans").fetchone() == (2_500, 2_500)
    with store.transaction():
        assert store.insert_spans([(span_row(s), "sess") for s in spans], 2) == [False] * 2_500


def test_traces_and_sessions_touched_in_bulk_add_up_as_one_by_one(tmp_path):
    # Under SQLite's smallest parameter limit (999 before 3.32) every row still goes in, and a
    # trace named twice in one call adds both counts, as two calls would.
    store = Store(tmp_path / "e.db")
    if not hasattr(store.conn, "setlimit"):  # Python 3.10: the limit cannot be lowered from Python
        return
    store.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    rows = [(f"{n:032x}", "sess", None, n, n + 1, 1) for n in range(1, 400)]
    with store.transaction():
        store.touch_traces(rows + rows[:10], received_ns=5)
    counts = dict(store.conn.execute("SELECT trace_id, span_count FROM traces").fetchall())
    assert len(counts) == 399
    assert [counts[f"{n:032x}"] for n in (1, 10, 11, 399)] == [2, 2, 1, 1]
    previous = store.touch_sessions([(f"s{n}", "attribute", 2, False) for n in range(600)], received_ns=5)
    assert previous == {}
    previous = store.touch_sessions([(f"s{n}", "attribute", 3, n == 7) for n in range(0, 600, 2)], received_ns=6)
    assert len(previous) == 300 and set(previous.values()) == {OPEN}
    assert store.conn.execute(
        "SELECT span_count, end_requested, first_received_ns, last_received_ns FROM sessions WHERE session_id = 's4'"
    ).fetchone() == (5, 0, 5, 6)
    assert store.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 600


def test_agent_rows_carry_the_prompt_digest_of_its_text_whether_remembered_or_not():
    # The digest of a system prompt is remembered by its text (every LLM span repeats the
    # agent's prompt): a copy of the text, a prompt too long to remember, and one seen again
    # after the memo started over all give the text's own digest.
    from otel_eval.store import agent_data_params
    from otel_eval.store import agent_rows as store_module
    from otel_eval.store.agent_rows import text_digest

    prompt = "You are a helpful agent. " * 10
    long_prompt = "x" * (store_module._CACHED_PROMPT + 1)
    for text in (prompt, "".join(list(prompt)), long_prompt, long_prompt, prompt):
        params = agent_data_params([("t", "a", "s1", "span", AgentData(system_prompt=text))])
        assert dict(params.texts)[text_digest(text)] == text
        assert bytes(params.full_rows()[0][store_module._PROMPT_AT]) == text_digest(text)
    store_module._prompt_digests.clear()
    params = agent_data_params([("t", "a", "s1", "span", AgentData(system_prompt=prompt))])
    assert bytes(params.full_rows()[0][store_module._PROMPT_AT]) == text_digest(prompt)


def _scored(n: int, *, fields: bool = True, prompt: str = "You are careful.") -> "EvaluationRows":
    """A varied evaluation of session ``s{n}`` (trace ``t{n}``): criteria skipped or not, AgentData
    rows that leave different columns NULL, a shared prompt on some, session fields or none (as
    an evaluation that failed has)."""
    from otel_eval.store import EvaluationRows, agent_data_params

    criteria = [
        CriterionResult(criterion="trajectory_match", score=n % 2, passed=n % 2 == 1, threshold=0.8),
        CriterionResult(
            criterion="response_match", score=0.25, passed=False, threshold=0.5, skipped=n % 3 == 0, details={"n": n}
        ),
    ]
    result = EvalCaseResult(eval_id=f"case-{n}", passed=n % 2 == 1, score=n / 10, criterion_results=criteria)
    span_data = AgentData(
        agent_response=f"answer {n}",
        system_prompt=prompt if n % 2 else None,
        tool_calls=[ToolCall(tool_name="lookup", parameters={"n": n}, call_id=f"c{n}")] if n % 4 else [],
    )
    trace_data = span_data.model_copy(update={"agent_task": f"question {n}"})
    params = agent_data_params(
        [
            (f"t{n}", "a", f"s{n}", "span", span_data),
            (f"t{n}", "b", f"s{n}", "span", AgentData()),
            (f"t{n}", "a", f"s{n}", "trace", trace_data),
        ]
    )
    return EvaluationRows.build(
        result,
        eval_set_id="set",
        matched_by="exact",
        match_score=100.0,
        config_hash="h",
        agent_version="1.0",
        query=f"question {n}",
        columns={"expected_tool": "lookup", "actual_tool": "lookup" if n % 4 else None},
        details={"match": n},
        session_fields={"user_id": f"u{n}", "query": f"question {n}", "trace_count": 1} if fields else {},
        agent_params=params,
        span_types=[(f"t{n}", "a", "agent")] if n == 5 else (),
    )


def _store_with_sessions(path, count: int) -> Store:
    store = Store(path)
    with store.transaction():
        for n in range(count):
            store.touch_session(f"s{n}", "attribute", 2, 100, False)
            store.insert_spans([(span_row(span(span_id="a", trace_id=f"t{n}")), f"s{n}")], 100)
            if n != 3:  # s3 was re-opened by a late span meanwhile: it must stay open
                store.set_session_status(f"s{n}", ENDED, "idle", 200)
    return store


def _contents(store: Store) -> dict:
    query = store.conn.execute
    return {
        "evaluations": query("SELECT * FROM evaluations ORDER BY id").fetchall(),
        "criteria": query("SELECT * FROM criterion_results ORDER BY id").fetchall(),
        "agent_data": query("SELECT * FROM agent_data ORDER BY trace_id, span_id, level").fetchall(),
        "texts": query("SELECT * FROM agent_texts ORDER BY digest").fetchall(),
        "sessions": query("SELECT * FROM sessions ORDER BY session_id").fetchall(),
        "span_types": query("SELECT trace_id, span_id, span_type FROM spans ORDER BY trace_id").fetchall(),
    }


def test_a_writer_round_stored_together_leaves_what_one_by_one_leaves(tmp_path, monkeypatch):
    # The writer stores a round's evaluations with one statement a table. Against one by one, on
    # a file where s2 was scored before (revision 2, the first superseded), s3 was re-opened
    # (it must stay open), s6's evaluation failed (no session fields), rows leave different
    # columns NULL and some share a prompt: every table ends up the same, ids and revisions too.
    from otel_eval.store import evaluations

    monkeypatch.setattr(evaluations, "now_iso", lambda: "2026-11-25T12:00:00.000Z")
    group = [(f"s{n}", _scored(n, fields=n != 6)) for n in range(8)]
    one, together = _store_with_sessions(tmp_path / "one.db", 8), _store_with_sessions(tmp_path / "together.db", 8)
    for store in (one, together):
        store.store_evaluation("s2", _scored(2))
        store.store_evaluation("s9", _scored(9))  # an evaluation of a session outside the group
    with one.transaction():
        expected_ids = [one.store_evaluation(session_id, rows) for session_id, rows in group]
    with together.transaction():
        ids = together.store_evaluations(group)
    assert ids == expected_ids
    assert ids[2][1] == 2 and ids[0][1] == 1
    stored = _contents(together)
    assert stored == _contents(one)
    assert [row[1] for row in stored["sessions"] if row[0] == "s3"] == [OPEN]
    assert len(stored["evaluations"]) == 10 and len(stored["criteria"]) == 20  # with s2 and s9 before
    assert len(stored["agent_data"]) == 27  # three rows a session (s9 too); s2 re-scored in place


def test_a_group_falls_back_to_one_by_one_where_order_decides(tmp_path, monkeypatch):
    # Two evaluations of one session in a round (a re-score asked for while the first waited):
    # the second is revision 2 and supersedes the first, exactly as one after the other.
    from otel_eval.store import evaluations

    monkeypatch.setattr(evaluations, "now_iso", lambda: "2026-11-25T12:00:00.000Z")
    group = [("s1", _scored(1)), ("s2", _scored(2)), ("s1", _scored(1, prompt="Another prompt."))]
    one, together = _store_with_sessions(tmp_path / "one.db", 3), _store_with_sessions(tmp_path / "together.db", 3)
    with one.transaction():
        expected = [one.store_evaluation(session_id, rows) for session_id, rows in group]
    with together.transaction():
        assert together.store_evaluations(group) == expected
    assert _contents(together) == _contents(one)
    assert together.conn.execute(
        "SELECT revision, superseded FROM evaluations WHERE session_id = 's1' ORDER BY revision"
    ).fetchall() == [(1, 1), (2, 0)]
