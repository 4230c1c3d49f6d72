"""Rescoring stored sessions as new revisions, and a golden set's own criteria (Big Sky
evaluators) applied per case — both against SQLite files written by the real engine."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from examples.weather_agent import run_session
from otel_eval import EvalSpanProcessor
from otel_eval.errors import InputError
from otel_eval.read.evaluations import StoredEvaluation, current_evaluations
from otel_eval.read.times import parse_since
from otel_eval.rescore import add_rescore_arguments, rescore, rescore_main

GOLDEN = Path(__file__).resolve().parents[1] / "examples" / "golden"
EVALSET = GOLDEN / "weather.evalset.json"
TRAJECTORY = GOLDEN / "weather.trajectory.json"
SESSIONS = {"tokyo": "What's the weather in Tokyo?", "sql": "Show me the top 10 users by revenue"}


def run_agent(
    db: Path,
    golden: list,
    sessions: dict[str, str] = SESSIONS,
    versions=("1.0.0", "2.0.0"),
    results: list | None = None,
) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    processor = EvalSpanProcessor(
        db=db, golden=golden, trace_quiet=60, session_idle=60, on_result=results.append if results is not None else None
    )
    provider.add_span_processor(processor)
    for version in versions:
        for name, query in sessions.items():
            run_session(provider, f"{name}-{version}", [query], version=version)
    provider.shutdown()


def latest(db: Path) -> dict[str, StoredEvaluation]:
    return {r.session_id: r for r in current_evaluations([db])}


def failing(row: StoredEvaluation) -> list[str]:
    return sorted(c.criterion for c in row.criteria if not c.skipped and not c.passed)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Scored live against the EvalSet only: the SQL sessions have no golden case yet."""
    path = tmp_path / "eval.db"
    run_agent(path, [EVALSET])
    return path


def test_a_new_golden_set_matches_sessions_that_were_unmatched(db):
    before = latest(db)
    assert {sid: (r.case_id, r.revision) for sid, r in before.items()} == {
        "tokyo-1.0.0": ("weather_tokyo", 1),
        "sql-1.0.0": (None, 1),
        "tokyo-2.0.0": ("weather_tokyo", 1),
        "sql-2.0.0": (None, 1),
    }

    changes = rescore(db, golden=[EVALSET, TRAJECTORY])

    assert [
        (c.session_id, c.before_verdict, c.after_verdict, c.after_case, c.before_revision, c.after_revision)
        for c in changes
    ] == [
        ("tokyo-1.0.0", "pass", "pass", "weather_tokyo", 1, 2),
        ("sql-1.0.0", "unmatched", "pass", "top_users_by_revenue", 1, 2),
        ("tokyo-2.0.0", "fail", "fail", "weather_tokyo", 1, 2),
        ("sql-2.0.0", "unmatched", "fail", "top_users_by_revenue", 1, 2),
    ]
    assert [c.session_id for c in changes if c.verdict_changed] == ["sql-1.0.0", "sql-2.0.0"]
    after = latest(db)
    assert failing(after["sql-2.0.0"]) == ["table_usage"] and after["sql-2.0.0"].revision == 2
    conn = sqlite3.connect(db)
    # The first revisions are kept, superseded; the sessions stay scored.
    assert conn.execute("SELECT COUNT(*), SUM(superseded) FROM evaluations").fetchone() == (8, 4)
    assert conn.execute("SELECT DISTINCT status FROM sessions").fetchall() == [("scored",)]
    assert conn.execute("SELECT revision FROM sessions WHERE session_id = 'sql-1.0.0'").fetchone() == (2,)
    # The sets it used are now the stored golden: a later rescore without --golden uses them.
    assert conn.execute("SELECT COUNT(*) FROM golden_cases WHERE eval_set_id = 'weather'").fetchone() == (3,)
    assert [c.after_case for c in rescore(db)] == ["weather_tokyo", "top_users_by_revenue"] * 2


def test_a_changed_config_rescored_with_the_stored_golden(tmp_path):
    db = tmp_path / "eval.db"
    run_agent(db, [EVALSET, TRAJECTORY])
    config_file = tmp_path / "eval.toml"
    config_file.write_text("[criteria.table_usage]\nenabled = false\n")
    from otel_eval.criteria_file import load_eval_config

    changes = rescore(db, config=load_eval_config(config_file))
    assert {c.session_id: (c.before_verdict, c.after_verdict) for c in changes} == {
        "tokyo-1.0.0": ("pass", "pass"),
        "sql-1.0.0": ("pass", "pass"),
        "tokyo-2.0.0": ("fail", "fail"),
        "sql-2.0.0": ("fail", "pass"),
    }
    row = latest(db)["sql-2.0.0"]
    assert "table_usage" not in [c.criterion for c in row.criteria]
    conn = sqlite3.connect(db)
    hashes = conn.execute(
        "SELECT revision, config_hash FROM evaluations WHERE session_id = 'sql-2.0.0' ORDER BY revision"
    ).fetchall()
    assert hashes[0][1] != hashes[1][1]  # the rows say which config judged them


def test_session_and_since_filters(db):
    assert [c.session_id for c in rescore(db, sessions=["sql-2.0.0"])] == ["sql-2.0.0"]
    assert rescore(db, since="2999-01-01T00:00:00Z") == []
    assert len(rescore(db, since="2000-01-01")) == 4
    with pytest.raises(InputError, match="no session 'nope' in this database"):
        rescore(db, sessions=["nope"])
    with pytest.raises(InputError, match="not an ISO-8601 time: 'yesterday'"):
        rescore(db, since="yesterday")
    assert parse_since("1970-01-01T00:00:01Z") == 1_000_000_000
    assert parse_since("1970-01-01T01:00:01+01:00") == 1_000_000_000
    with pytest.raises(InputError, match="database file not found"):
        rescore(db.parent / "missing.db")


def test_open_sessions_are_left_to_the_live_engine(tmp_path):
    db = tmp_path / "eval.db"
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    processor = EvalSpanProcessor(db=db, golden=[EVALSET], trace_quiet=60, session_idle=60)
    provider.add_span_processor(processor)
    run_session(provider, "still-open", ["What's the weather in Tokyo?"])
    processor.engine.close(score_open=False)  # committed, never ended
    with pytest.raises(InputError, match="session 'still-open' is open, not scored yet"):
        rescore(db, sessions=["still-open"])
    assert rescore(db) == []
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status, revision FROM sessions").fetchall() == [("open", 0)]


def test_progress_is_reported_per_session(db):
    seen = []
    rescore(db, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def _args(argv):
    parser = argparse.ArgumentParser()
    add_rescore_arguments(parser)
    return parser.parse_args(argv)


def test_cli_prints_which_sessions_changed_verdict(db, capsys):
    assert rescore_main(_args(["--db", str(db), "--golden", str(EVALSET), "--golden", str(TRAJECTORY), "--json"])) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"] == {
        "rescored": 4,
        "changed": 2,
        "verdict_changed": 2,
        "transitions": {"unmatched -> fail": 1, "unmatched -> pass": 1},
        "before": {"fail": 1, "pass": 1, "unmatched": 2},
        "after": {"fail": 2, "pass": 2},
    }
    sql2 = next(s for s in data["sessions"] if s["session_id"] == "sql-2.0.0")
    assert {
        k: sql2[k]
        for k in (
            "agent_version",
            "before_case",
            "after_case",
            "before_verdict",
            "after_verdict",
            "matched_by",
            "after_revision",
        )
    } == {
        "agent_version": "2.0.0",
        "before_case": None,
        "after_case": "top_users_by_revenue",
        "before_verdict": "unmatched",
        "after_verdict": "fail",
        "matched_by": "exact",
        "after_revision": 2,
    }

    from rich.console import Console

    console = Console(record=True, width=160)
    assert rescore_main(_args(["--db", str(db), "--session", "tokyo-2.0.0"]), console=console) == 0
    assert "rescored 1 session(s); 0 changed verdict" in console.export_text()


# --- a golden set's own criteria (Big Sky evaluators) ----------------------------------------

BIGSKY = {
    "name": "Weather tool calls",
    "data": [
        {
            "id": "tokyo",
            "inputs": {"messages": [{"role": "user", "content": "What's the weather in Tokyo?"}]},
            "outputs": {
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "IGNORE"}}}
                    ],
                }
            },
        }
    ],
    "evaluators": [
        {"key": "tool", "function": "chat:matchToolCall"},
        {"key": "now", "function": "chat:includeString", "arguments": {"string": "currently"}},
    ],
}


def test_big_sky_evaluators_are_the_criteria_of_their_cases_live_and_when_rescored(tmp_path):
    golden = tmp_path / "weather.bigsky.json"
    golden.write_text(json.dumps(BIGSKY))
    db = tmp_path / "eval.db"
    results: list = []
    run_agent(db, [golden, TRAJECTORY], results=results)

    by_session = {r.session_id: r for r in results}
    tokyo1, tokyo2 = by_session["tokyo-1.0.0"], by_session["tokyo-2.0.0"]
    # Only what the dataset asks (first tool call by name, "currently" in the answer), plus health.
    assert [(c.criterion, c.passed, c.skipped) for c in tokyo1.criterion_results] == [
        ("trajectory_match", True, False),
        ("response_match", True, False),
        ("health", True, False),
    ]
    assert (tokyo1.eval_id, tokyo1.passed) == ("tokyo", True)
    response = tokyo1.criterion_results[1]
    assert (response.threshold, response.details["method"], response.details["pattern"]) == (1.0, "regex", "currently")
    # 2.0.0 asks for a forecast and answers "Tomorrow in Tokyo: ...": both criteria fail.
    assert [(c.criterion, c.passed) for c in tokyo2.criterion_results] == [
        ("trajectory_match", False),
        ("response_match", False),
        ("health", True),
    ]
    # A case of another set in the same engine keeps the run config's criteria.
    sql_criteria = [c.criterion for c in by_session["sql-1.0.0"].criterion_results]
    assert sql_criteria == [
        "trajectory_match",
        "response_match",
        "llm_judge",
        "tool_selection",
        "sql_generation",
        "table_usage",
        "health",
    ]
    conn = sqlite3.connect(db)
    details = dict(conn.execute("SELECT session_id, details FROM evaluations").fetchall())
    assert json.loads(details["tokyo-1.0.0"])["criteria_from"] == "eval set weather"
    assert "criteria_from" not in json.loads(details["sql-1.0.0"])

    # Rescoring from the stored golden rebuilds the Big Sky set with its criteria.
    changes = {c.session_id: c for c in rescore(db)}
    assert (changes["tokyo-1.0.0"].after_verdict, changes["tokyo-2.0.0"].after_verdict) == ("pass", "fail")
    assert [c.criterion for c in latest(db)["tokyo-2.0.0"].criteria] == [
        "trajectory_match",
        "response_match",
        "health",
    ]


def test_rescore_takes_the_live_engines_path_agent_rows_and_a_scoring_error_included(db, monkeypatch):
    """One pipeline for the engine and rescore: the session's AgentData rows are rewritten with
    its new revision, and a scorer that raises is stored as that revision's error, not a crash."""
    from otel_eval import session_evaluation

    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM agent_data WHERE session_id = 'tokyo-1.0.0'")
    conn.commit()
    monkeypatch.setattr(
        session_evaluation, "score_session", lambda *a, **k: 1 / 0
    )  # the scorer session_evaluation calls
    changes = rescore(db, sessions=["tokyo-1.0.0"])
    assert [(c.session_id, c.after_revision, c.matched_by) for c in changes] == [("tokyo-1.0.0", 2, "error")]
    rows = conn.execute("SELECT level, COUNT(*) FROM agent_data WHERE session_id = 'tokyo-1.0.0' GROUP BY level")
    assert dict(rows.fetchall()) == {"span": 4}  # (the trace aggregate needs a successful evaluation)
    error = conn.execute("SELECT error FROM evaluations WHERE session_id = 'tokyo-1.0.0' AND revision = 2").fetchone()
    assert error == ("evaluation failed: ZeroDivisionError: division by zero",)
    conn.close()
