"""The Datasette canned queries, run as Datasette would (read-only SQLite) on an engine-written database."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.test_watch import ROOT, SESSIONS, T0, iso_utc, record_sessions

METADATA = ROOT / "examples/datasette/metadata.json"
EXPECTED_QUERIES = {
    "worst_cases",
    "regressions_by_version",
    "unmatched_queries",
    "slowest_sessions",
    "tool_error_sessions",
    "criterion_failures",
}


@pytest.fixture(scope="module")
def queries() -> dict:
    metadata = json.loads(METADATA.read_text())
    return metadata["databases"]["otel-eval"]["queries"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("datasette") / "otel-eval.db"
    record_sessions(path, SESSIONS + [("1.0.0", "s7", ["Tell me a joke"])])
    conn = sqlite3.connect(path)
    with conn:
        # Pinned times: sessions one minute apart; s3 took 9 s, s6 4 s, s1 2.5 s, the rest 1 s.
        for i, sid in enumerate(["s1", "s2", "s3", "s4", "s5", "s6", "s7"]):
            start = int((T0 + 60 * i) * 1e9)
            seconds = {"s3": 9.0, "s6": 4.0, "s1": 2.5}.get(sid, 1.0)
            conn.execute(
                "UPDATE traces SET start_ns = ?, end_ns = ? WHERE session_id = ?",
                (start, start + int(seconds * 1e9), sid),
            )
            conn.execute("UPDATE evaluations SET created_at = ? WHERE session_id = ?", (iso_utc(T0 + 60 * i), sid))
    conn.close()
    return path


def run(db: Path, sql: str) -> list[dict]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def test_metadata_declares_the_canned_queries(queries):
    assert set(queries) == EXPECTED_QUERIES
    for name, query in queries.items():
        assert query["title"] and query["description"], name
        assert not re.search(r"(?<![\w:]):[A-Za-z_]", query["sql"]), (
            f"{name} has a named parameter Datasette would ask for"
        )


def test_worst_cases(db, queries):
    rows = run(db, queries["worst_cases"]["sql"])
    assert [
        (r["case_id"], r["sessions"], r["passed"], r["pass_rate"], r["avg_score"], r["failing_criteria"]) for r in rows
    ] == [
        ("weather_tokyo", 2, 1, 0.5, 0.6563, "response_match, trajectory_match"),
        ("top_users_by_revenue", 2, 1, 0.5, 0.875, "table_usage"),
        ("berlin_typo_retry", 1, 1, 1.0, 1.0, None),
    ]
    assert rows[0]["last_seen"] == iso_utc(T0 + 240)


def test_regressions_by_version(db, queries):
    rows = run(db, queries["regressions_by_version"]["sql"])
    assert [
        (
            r["case_id"],
            r["previous_version"],
            r["previous_pass_rate"],
            r["agent_version"],
            r["pass_rate"],
            r["pass_rate_drop"],
            r["avg_score"],
        )
        for r in rows
    ] == [
        ("top_users_by_revenue", "1.0.0", 1.0, "2.0.0", 0.0, 1.0, 0.75),
        ("weather_tokyo", "1.0.0", 1.0, "2.0.0", 0.0, 1.0, 0.3125),
    ]


def test_unmatched_queries(db, queries):
    rows = run(db, queries["unmatched_queries"]["sql"])
    assert rows == [
        {
            "query": "Tell me a joke",
            "sessions": 2,
            "users": 1,
            "agent_versions": "1.0.0",
            "first_seen": iso_utc(T0 + 180),
            "last_seen": iso_utc(T0 + 360),
        }
    ]


def test_slowest_sessions(db, queries):
    rows = run(db, queries["slowest_sessions"]["sql"])
    assert [(r["session_id"], r["duration_ms"], r["traces"], r["case_id"], r["passed"]) for r in rows[:4]] == [
        ("s3", 9000.0, 1, "top_users_by_revenue", 1),
        ("s6", 4000.0, 1, "top_users_by_revenue", 0),
        ("s1", 2500.0, 1, "weather_tokyo", 1),
        ("s2", 1000.0, 1, "berlin_typo_retry", 1),
    ]
    assert len(rows) == 7
    assert rows[1]["spans"] == 4


def test_tool_error_sessions(db, queries):
    rows = run(db, queries["tool_error_sessions"]["sql"])
    assert rows == [
        {
            "session_id": "s2",
            "case_id": "berlin_typo_retry",
            "passed": 1,
            "agent_version": "1.0.0",
            "tool_errors": 1,
            "tool_calls": 2,
            "tool_error_rate": 0.5,
            "failed_tool_spans": "get_weather",
            "query": "What's the weather in Berln?",
            "created_at": iso_utc(T0 + 60),
        }
    ]


def test_criterion_failures(db, queries):
    rows = {r["criterion"]: r for r in run(db, queries["criterion_failures"]["sql"])}
    assert (
        rows["trajectory_match"]["evaluated"],
        rows["trajectory_match"]["failed"],
        rows["trajectory_match"]["pass_rate"],
    ) == (5, 1, 0.8)
    assert (rows["table_usage"]["evaluated"], rows["table_usage"]["failed"], rows["table_usage"]["skipped"]) == (
        2,
        1,
        3,
    )
    assert rows["llm_judge"]["evaluated"] == 0 and rows["llm_judge"]["pass_rate"] is None
    assert list(rows)[:2] == ["response_match", "table_usage"]


def test_rescored_sessions_count_once(tmp_path, queries):
    path = tmp_path / "otel-eval.db"
    record_sessions(path, [("2.0.0", "a", ["What's the weather in Tokyo?"])])
    record_sessions(path, [("1.0.0", "a", ["What's the weather in Tokyo?"])])  # a late turn: revision 2
    rows = run(path, queries["worst_cases"]["sql"])
    assert [(r["case_id"], r["sessions"]) for r in rows] == [("weather_tokyo", 1)]


def test_metadata_for_any_file_name_keys_the_queries_as_datasette_names_the_files(tmp_path, queries):
    """``otel-eval datasette-metadata`` for files not called otel-eval.db: Datasette names a
    database by its file stem, adding _2, _3 to repeats; each gets the descriptions and queries."""
    import subprocess
    import sys

    from otel_eval.datasette import datasette_names, metadata_for

    assert json.loads(METADATA.read_text()) == metadata_for(["otel-eval.db"])  # the example is the default
    assert datasette_names(["a/prod.db", "b/prod.db", "prod_2.db", "c/prod.db"]) == [
        "prod",
        "prod_2",
        "prod_2_2",
        "prod_3",
    ]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_eval.cli",
            "datasette-metadata",
            str(tmp_path / "eu-prod.db"),
            str(tmp_path / "us" / "eu-prod.sqlite"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    metadata = json.loads(run.stdout)
    assert list(metadata["databases"]) == ["eu-prod", "eu-prod_2"]
    for entry in metadata["databases"].values():
        assert entry["queries"] == queries and set(entry["tables"]) >= {"evaluations", "sessions"}


def test_canned_queries_run_on_a_database_under_another_name(db, tmp_path):
    """The same queries, read from the generated metadata, on the file renamed."""
    from otel_eval.datasette import metadata_for

    renamed = tmp_path / "staging.db"
    renamed.write_bytes(db.read_bytes())
    for query in metadata_for([renamed])["databases"]["staging"]["queries"].values():
        run(renamed, query["sql"])  # every query runs
    assert {
        r["case_id"]
        for r in run(renamed, metadata_for([renamed])["databases"]["staging"]["queries"]["worst_cases"]["sql"])
    } >= {"weather_tokyo"}
