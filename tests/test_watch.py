"""``otel-eval watch``: the snapshot of a real engine-written database, incremental reads, the frame."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console

from examples.weather_agent import run_session
from examples.weather_agent.agent import agent_resource
from otel_eval.errors import InputError
from otel_eval.processor import EvalSpanProcessor
from otel_eval.read.database import first_key_at_or_after
from otel_eval.read.feed import EvaluationFeed
from otel_eval.read.times import iso_utc, parse_iso
from otel_eval.watch import (
    Watcher,
    add_watch_arguments,
    render,
    snapshot,
    watch_main,
)

GOLDEN = [Path("examples/golden/weather.evalset.json"), Path("examples/golden/weather.trajectory.json")]
ROOT = Path(__file__).resolve().parent.parent

#: (version, session id, user turns): passes, a tool error that is retried, SQL, small talk, and
#: the regressed 2.0.0 failing two cases.
SESSIONS = [
    ("1.0.0", "s1", ["What's the weather in Tokyo?"]),
    ("1.0.0", "s2", ["What's the weather in Berln?"]),
    ("1.0.0", "s3", ["Show me the top 10 users by revenue"]),
    ("1.0.0", "s4", ["Tell me a joke"]),
    ("2.0.0", "s5", ["What's the weather in Tokyo?"]),
    ("2.0.0", "s6", ["Show me the top 10 users by revenue"]),
]
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z: a fixed clock for exact windows


def record_sessions(db: Path, sessions=SESSIONS) -> None:
    """Run the example agent through a real EvalSpanProcessor; shutdown scores every session."""
    by_version: dict[str, list] = {}
    for version, sid, turns in sessions:
        by_version.setdefault(version, []).append((sid, turns))
    for version, runs in by_version.items():
        processor = EvalSpanProcessor(db=db, golden=[ROOT / g for g in GOLDEN], trace_quiet=600, session_idle=600)
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(processor)
        for sid, turns in runs:
            run_session(provider, sid, turns, version=version)
        provider.shutdown()


def set_times(db: Path, created: dict[str, float], received_ns: int | None = None) -> None:
    """Pin evaluation times (and every span's receive time) so windows give exact answers."""
    conn = sqlite3.connect(db)
    with conn:
        for sid, at in created.items():
            conn.execute("UPDATE evaluations SET created_at = ? WHERE session_id = ?", (iso_utc(at), sid))
        if received_ns is not None:
            conn.execute("UPDATE spans SET received_ns = ?", (received_ns,))
    conn.close()


@pytest.fixture(scope="module")
def weather_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("watch") / "otel-eval.db"
    record_sessions(db)
    # s1 two hours ago (outside a 1 h window), the others one minute apart, newest last.
    set_times(db, {"s1": T0 - 7200, "s2": T0 - 300, "s3": T0 - 240, "s4": T0 - 180, "s5": T0 - 120, "s6": T0 - 60})
    conn = sqlite3.connect(db)
    with conn:
        # 24 spans were stored; 12 of them arrived in the last minute.
        conn.execute("UPDATE spans SET received_ns = ?", (int((T0 - 600) * 1e9),))
        conn.execute("UPDATE spans SET received_ns = ? WHERE rowid > 12", (int((T0 - 30) * 1e9),))
    conn.close()
    return db


def test_snapshot_of_an_engine_database_has_exact_window_aggregates(weather_db: Path):
    snap = snapshot([weather_db], window_s=3600, now=T0)
    assert snap["totals"] == {
        "sessions": 5,
        "matched": 4,
        "passed": 2,
        "failed": 2,
        "not_evaluated": 0,
        "unmatched": 1,
        "unhealthy": 1,
        "pass_rate": 0.5,
        "avg_score": 0.7656,
    }
    assert snap["cases"] == [
        {
            "case_id": "weather_tokyo",
            "sessions": 1,
            "passed": 0,
            "not_evaluated": 0,
            "pass_rate": 0.0,
            "avg_score": 0.3125,
        },
        {
            "case_id": "top_users_by_revenue",
            "sessions": 2,
            "passed": 1,
            "not_evaluated": 0,
            "pass_rate": 0.5,
            "avg_score": 0.875,
        },
        {
            "case_id": "berlin_typo_retry",
            "sessions": 1,
            "passed": 1,
            "not_evaluated": 0,
            "pass_rate": 1.0,
            "avg_score": 1.0,
        },
    ]
    assert snap["versions"] == [
        {"agent_version": "1.0.0", "sessions": 2, "passed": 2, "not_evaluated": 0, "pass_rate": 1.0, "avg_score": 1.0},
        {
            "agent_version": "2.0.0",
            "sessions": 2,
            "passed": 0,
            "not_evaluated": 0,
            "pass_rate": 0.0,
            "avg_score": 0.5312,
        },
    ]
    assert [(r["session_id"], r["verdict"], r["score"], r["failing"]) for r in snap["latest"]] == [
        ("s6", "fail", 0.75, ["table_usage"]),
        ("s5", "fail", 0.3125, ["trajectory_match", "response_match"]),
        ("s4", "unmatched", None, []),
        ("s3", "pass", 1.0, []),
        ("s2", "pass", 1.0, []),
    ]
    assert snap["latest"][0]["created_at"] == "2027-01-15T07:59:00.000Z"
    assert snap["unmatched"] == [
        {"session_id": "s4", "created_at": "2027-01-15T07:57:00.000Z", "query": "Tell me a joke"}
    ]
    assert snap["unhealthy"] == [
        {
            "session_id": "s2",
            "created_at": "2027-01-15T07:55:00.000Z",
            "case_id": "berlin_typo_retry",
            "reasons": ["1 tool error"],
        }
    ]
    assert snap["ingest"] == {"spans": 12, "rate_window_s": 60.0, "spans_per_s": 0.2}
    assert snap["sessions"] == {
        "open": 0,
        "ended": 0,
        "next_session": None,
        "next_due_in_s": None,
        "trace_quiet_s": 5.0,
        "session_idle_s": 60.0,
    }
    assert snap["databases"] == [{"path": str(weather_db), "status": "ok"}]
    assert snap["generated_at"] == "2027-01-15T08:00:00.000Z"
    json.dumps(snap)  # the --json output


def test_a_wider_window_takes_in_the_older_session_and_a_later_clock_drops_old_ones(weather_db: Path):
    wide = snapshot([weather_db], window_s=3 * 3600, now=T0)
    assert wide["totals"]["sessions"] == 6
    assert wide["cases"][0] == {
        "case_id": "top_users_by_revenue",
        "sessions": 2,
        "passed": 1,
        "not_evaluated": 0,
        "pass_rate": 0.5,
        "avg_score": 0.875,
    }
    assert {c["case_id"]: c["pass_rate"] for c in wide["cases"]}["weather_tokyo"] == 0.5
    # 150 s later with a 5 minute window: s4 (T0-180) has slid out, s5 (T0-120) and s6 (T0-60) remain.
    later = snapshot([weather_db], window_s=300, now=T0 + 150)
    assert [r["session_id"] for r in later["latest"]] == ["s6", "s5"]
    assert later["ingest"]["spans"] == 0


def test_two_databases_are_summed(weather_db: Path, tmp_path: Path):
    other = tmp_path / "second.db"
    record_sessions(other, [("2.0.0", "x1", ["What's the weather in Tokyo?"])])
    set_times(other, {"x1": T0 - 10}, received_ns=int((T0 - 5) * 1e9))
    snap = snapshot([weather_db, other], window_s=3600, now=T0)
    assert snap["totals"]["sessions"] == 6
    assert snap["cases"][0] == {
        "case_id": "weather_tokyo",
        "sessions": 2,
        "passed": 0,
        "not_evaluated": 0,
        "pass_rate": 0.0,
        "avg_score": 0.3125,
    }
    assert snap["latest"][0]["session_id"] == "x1"
    assert snap["ingest"]["spans"] == 12 + 4


def test_refresh_reads_only_new_evaluations_and_replaces_a_rescored_session(tmp_path: Path):
    db = tmp_path / "live.db"
    record_sessions(db, [("2.0.0", "a", ["What's the weather in Tokyo?"])])
    watcher = Watcher([db], window_s=3600)
    first = watcher.snapshot()
    assert first["totals"]["failed"] == 1
    feed = watcher.feeds[str(db)]
    seen = feed.last_id
    assert feed.poll() == []  # nothing new: nothing read

    # The same session gets a late turn from the fixed agent: re-scored as revision 2.
    record_sessions(
        db, [("1.0.0", "a", ["What's the weather in Tokyo?"]), ("1.0.0", "b", ["What's the weather in Berln?"])]
    )
    second = watcher.snapshot()
    assert feed.last_id == seen + 2
    assert second["totals"]["sessions"] == 2
    assert {r["session_id"]: r["verdict"] for r in second["latest"]} == {"a": "fail", "b": "pass"}
    revisions = (
        sqlite3.connect(db)
        .execute("SELECT revision, superseded FROM evaluations WHERE session_id = 'a' ORDER BY revision")
        .fetchall()
    )
    assert revisions == [(1, 1), (2, 0)]
    watcher.close()


def test_feed_positions_by_time_without_reading_older_rows(weather_db: Path):
    feed = EvaluationFeed(weather_db)
    feed.seek(T0 - 150)
    rows = feed.poll()
    assert [r.session_id for r in rows] == ["s5", "s6"]
    assert rows[1].failing == ("table_usage",)
    assert rows[1].health["tool_calls"] == 1
    feed.seek(None)
    assert feed.poll() == []
    feed.close()


def test_first_key_at_or_after_bisects_a_table_with_gaps(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, at INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, 10), (2, 10), (5, 20), (9, 30), (40, 40), (41, 50)])
    assert first_key_at_or_after(conn, "t", "id", "at", 5) == 1
    assert first_key_at_or_after(conn, "t", "id", "at", 10) == 1
    assert first_key_at_or_after(conn, "t", "id", "at", 11) == 5
    assert first_key_at_or_after(conn, "t", "id", "at", 30) == 9
    assert first_key_at_or_after(conn, "t", "id", "at", 31) == 40
    assert first_key_at_or_after(conn, "t", "id", "at", 50) == 41
    assert first_key_at_or_after(conn, "t", "id", "at", 51) is None
    conn.execute("DELETE FROM t")
    assert first_key_at_or_after(conn, "t", "id", "at", 0) is None


def test_iso_round_trip():
    assert iso_utc(T0 + 0.25) == "2027-01-15T08:00:00.250Z"
    assert parse_iso("2027-01-15T08:00:00.250Z") == T0 + 0.25
    assert parse_iso("2027-01-15T08:00:00Z") == T0


def test_missing_database_is_shown_as_waiting(tmp_path: Path):
    snap = snapshot([tmp_path / "not-yet.db"], window_s=600, now=T0)
    assert snap["databases"] == [{"path": str(tmp_path / "not-yet.db"), "status": "database file not found"}]
    assert snap["totals"]["sessions"] == 0
    console = Console(record=True, width=250)
    console.print(render(snap))
    text = console.export_text()
    assert "not-yet.db: database file not found (waiting for the collector to create it)" in text
    assert "No evaluations in the window yet." in text


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_watch_arguments(parser)
    return parser.parse_args(list(argv))


def test_watch_once_prints_one_frame(tmp_path: Path):
    db = tmp_path / "otel-eval.db"
    record_sessions(db, SESSIONS[3:])
    console = Console(record=True, width=140)
    assert watch_main(_args("--db", str(db), "--once", "--window", "30"), console=console) == 0
    text = console.export_text()
    assert "3 sessions: 0 passed, 2 failed, 0 not evaluated, 1 unmatched, 0 unhealthy; pass rate 0%" in text
    assert "last 30 min" in text
    row = next(line for line in text.splitlines() if "│ s5 " in line)
    assert "FAIL" in row and "0.31" in row and "trajectory_match, response_match" in row
    assert any("Tell me a joke" in line for line in text.splitlines())


def test_watch_once_json_and_errors(tmp_path: Path):
    db = tmp_path / "otel-eval.db"
    record_sessions(db, SESSIONS[4:5])
    console = Console(record=True, width=200)
    assert watch_main(_args("--db", str(db), "--once", "--json"), console=console) == 0
    data = json.loads(console.export_text())
    assert data["totals"]["failed"] == 1
    assert data["window_s"] == 3600.0
    with pytest.raises(InputError) as missing:
        watch_main(_args("--db", str(tmp_path / "nope.db"), "--once"), console=console)
    assert missing.value.source == str(tmp_path / "nope.db")
    assert missing.value.reason == "database file not found"
    with pytest.raises(InputError) as bad:
        watch_main(_args("--db", str(db), "--once", "--window", "0"), console=console)
    assert bad.value.location == "--window"


def test_watch_once_on_a_missing_database_is_a_one_line_error_naming_it(tmp_path: Path):
    """The live view waits for the collector to create the file (shown above); --once has
    nothing to wait for: one line naming the file, exit status 2."""
    import subprocess
    import sys

    missing = tmp_path / "nope.db"
    run = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "watch", "--once", "--db", str(missing)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 2
    assert run.stderr == f"otel-eval: error: {missing}: at $: database file not found\n"
    assert run.stdout == ""
    assert not missing.exists()  # reading never creates it
