"""Session and user keys a user can name (issue 29, item 6): ``--session-attribute`` and
``--user-attribute`` on the collector (flag, env, TOML) and ``evaluate``, ``EngineSettings`` in code."""

from __future__ import annotations

import json
import sqlite3

import pytest

from collector.config import load_config
from otel_eval import evaluate
from otel_eval.engine.settings import EngineSettings
from otel_eval.errors import InputError
from otel_eval.mapping import use_identity_attributes
from otel_eval.spans import SpanRecord


@pytest.fixture(autouse=True)
def built_in_keys_after():
    yield
    use_identity_attributes()


def turn(trace: str, conversation: str, question: str) -> list[SpanRecord]:
    """An OpenInference agent turn whose app files the session under a key of its own."""
    app = {"app.conversation_key": conversation, "app.customer": "cust-9"}
    return [
        SpanRecord(
            trace,
            trace[:16],
            None,
            "agent",
            1,
            10,
            attributes={"openinference.span.kind": "AGENT", "input.value": question, "output.value": "ok", **app},
        ),
        SpanRecord(
            trace,
            trace[16:],
            trace[:16],
            "get_weather",
            2,
            3,
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": json.dumps({"city": "Oslo"}),
                **app,
            },
        ),
    ]


def sessions(db) -> list[tuple[str, int]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT session_id, trace_count FROM sessions ORDER BY session_id").fetchall()
    finally:
        conn.close()


def test_two_turns_filed_under_the_apps_own_key_are_one_session_when_it_is_named(tmp_path):
    spans = turn("a" * 32, "conv-1", "weather?") + turn("b" * 32, "conv-1", "and tomorrow?")
    evaluate(spans, db=tmp_path / "plain.db")
    assert sessions(tmp_path / "plain.db") == [("a" * 32, 1), ("b" * 32, 1)]  # unnamed: a trace each

    results = evaluate(
        spans,
        db=tmp_path / "named.db",
        settings=EngineSettings(session_attributes=("app.conversation_key",), user_attributes=("app.customer",)),
    )
    assert sessions(tmp_path / "named.db") == [("conv-1", 2)]
    assert [r.session_id for r in results] == ["conv-1"]
    conn = sqlite3.connect(tmp_path / "named.db")
    assert conn.execute("SELECT DISTINCT user_id FROM agent_data WHERE user_id IS NOT NULL").fetchall() == [("cust-9",)]


def test_a_named_key_comes_before_the_built_in_ones(tmp_path):
    spans = turn("c" * 32, "conv-2", "weather?")
    for span in spans:
        span.attributes["session.id"] = "sdk-session"
    evaluate(spans, db=tmp_path / "e.db", settings=EngineSettings(session_attributes=("app.conversation_key",)))
    assert sessions(tmp_path / "e.db") == [("conv-2", 1)]


def test_the_collector_takes_the_keys_from_flags_env_and_toml(tmp_path):
    flags = load_config(
        ["--session-attribute", "app.sid", "--session-attribute", "x.sid", "--user-attribute", "app.uid"], environ={}
    )
    assert (flags.session_attribute, flags.user_attribute) == (["app.sid", "x.sid"], ["app.uid"])
    env = load_config([], environ={"OTEL_EVAL_SESSION_ATTRIBUTE": "app.sid, x.sid"})
    assert env.session_attribute == ["app.sid", "x.sid"]
    toml = tmp_path / "c.toml"
    toml.write_text('session_attribute = ["mastra.metadata.threadId"]\nuser-attribute = ["app.uid"]\n')
    from_file = load_config(["--config", str(toml)], environ={})
    assert (from_file.session_attribute, from_file.user_attribute) == (["mastra.metadata.threadId"], ["app.uid"])


def test_a_key_with_spaces_is_refused_naming_where_it_came_from():
    with pytest.raises(InputError) as err:
        load_config([], environ={"OTEL_EVAL_SESSION_ATTRIBUTE": "my session"})
    assert "OTEL_EVAL_SESSION_ATTRIBUTE" in str(err.value) and "'my session'" in str(err.value)


def test_collect_help_explains_both_flags(capsys):
    with pytest.raises(SystemExit):
        load_config(["--help"], environ={})
    out = " ".join(capsys.readouterr().out.split())
    assert "--session-attribute KEY" in out and "--user-attribute KEY" in out
    assert "ahead of the built-in ones" in out
