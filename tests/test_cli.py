"""The otel-eval command, run as a user runs it (a subprocess)."""

import json
import sqlite3
import subprocess
import sys

from tests.paths import FIXTURES, REPO

GOLDEN = [
    str(REPO / "examples" / "golden" / "weather.evalset.json"),
    str(REPO / "examples" / "golden" / "weather.trajectory.json"),
]


def otel_eval(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    )


def test_evaluate_noveum_dataset_stores_span_and_trace_records(tmp_path):
    db = tmp_path / "e.db"
    run = otel_eval("evaluate", FIXTURES / "noveum" / "dataset.json", "--db", db)
    assert run.returncode == 0, run.stderr
    assert "62 spans from 1 file(s)" in run.stdout
    assert "10 sessions, 0 matched a golden case" in run.stdout
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT level, COUNT(*) FROM agent_data GROUP BY level ORDER BY level").fetchall() == [
        ("span", 62),
        ("trace", 10),
    ]
    assert conn.execute("SELECT COUNT(*) FROM evaluations WHERE case_id IS NULL").fetchone()[0] == 10


def test_evaluate_otlp_capture_against_golden_sets_as_json(tmp_path):
    db = tmp_path / "e.db"
    args = ["evaluate", FIXTURES / "realclients" / "langgraph_openinference.otlp.json", "--db", db, "--json"]
    for g in GOLDEN:
        args += ["--golden", g]
    run = otel_eval(*args)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["spans"] == 116
    assert out["summary"]["sessions"] == 6 and out["summary"]["matched"] == 6
    by_session = {s["session_id"]: s for s in out["sessions"]}
    s4 = by_session["langgraph_openinference-s4-sql"]
    assert s4["case_id"] == "top_users_by_revenue" and s4["passed"] is True
    assert {c["criterion"]: c["passed"] for c in s4["criteria"] if not c["skipped"]}["table_usage"] is True

    report = otel_eval("report", "--db", db, "--session", "langgraph_openinference-s5-tool-error")
    assert report.returncode == 0, report.stderr
    assert "get_weather(city='Berlin') │ get_weather(city='Berlin')" in report.stdout
    assert "get_weather(city='Berln')" in report.stdout and "failed (ValueError: Unknown city: 'Berln'" in report.stdout

    summary = json.loads(otel_eval("report", "--db", db, "--json").stdout)["summary"]
    assert summary["sessions"] == 6 and summary["passed"] + summary["failed"] == 6


def test_golden_validate_reports_file_path_and_reason(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"query": "q", "expected_tool_use": [{"tool_input": {}}]}]))
    run = otel_eval("golden", "validate", bad)
    assert run.returncode == 1
    assert f"{bad}: at $[0].expected_tool_use[0]" in run.stdout and "tool_name" in run.stdout
    good = otel_eval("golden", "validate", *GOLDEN)
    assert good.returncode == 0 and "0 problem(s) in 2 file(s)" in good.stdout


def test_errors_are_one_clear_line_not_a_traceback(tmp_path):
    run = otel_eval("evaluate", tmp_path / "missing.json", "--db", tmp_path / "e.db")
    assert run.returncode == 2
    assert run.stderr.strip() == f"otel-eval: error: {tmp_path / 'missing.json'}: at $: file not found"
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    run = otel_eval("evaluate", garbage, "--db", tmp_path / "e.db")
    assert run.returncode == 2 and "invalid JSON" in run.stderr and "Traceback" not in run.stderr
    run = otel_eval("report", "--db", tmp_path / "none.db")
    assert run.returncode == 2 and "database file not found" in run.stderr


def test_help_explains_commands():
    run = otel_eval("--help")
    assert run.returncode == 0
    for command in ("evaluate", "report", "collect", "inspect", "golden"):
        assert command in run.stdout
    collect = otel_eval("collect", "--help")
    assert collect.returncode == 0 and "--trace-quiet SECONDS" in collect.stdout and "--golden PATH" in collect.stdout


def test_every_subcommand_is_wired_on_a_real_database(tmp_path):
    db = tmp_path / "e.db"
    args = ["evaluate", FIXTURES / "realclients" / "openai_otel_genai.otlp.json", "--db", db]
    for g in GOLDEN:
        args += ["--golden", g]
    assert otel_eval(*args).returncode == 0

    watch = otel_eval("watch", "--db", db, "--once", "--json")
    assert watch.returncode == 0, watch.stderr
    assert json.loads(watch.stdout)["totals"]["sessions"] == 6

    rescore = otel_eval("rescore", "--db", db)
    assert rescore.returncode == 0, rescore.stderr
    assert "rescored 6 session(s); 0 changed verdict" in rescore.stdout
    revisions = sqlite3.connect(db).execute("SELECT MAX(revision) FROM evaluations").fetchone()[0]
    assert revisions == 2

    out = tmp_path / "vertex.jsonl"
    export = otel_eval("export", "--format", "vertex", "--db", db, "-o", out)
    assert export.returncode == 0, export.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 6 and all(r["request"]["contents"][0]["role"] == "user" for r in records)

    compare = otel_eval("compare", "--db", db, "--baseline", "1.0.0", "--candidate", "9.9.9", "--json")
    assert compare.returncode == 2
    assert "no evaluations of agent version '9.9.9'; versions present: 1.0.0 (6 sessions)" in compare.stderr

    inspect = otel_eval("inspect", "--db", db, "--session", "openai_otel_genai-s1-weather", "--json")
    assert inspect.returncode == 0, inspect.stderr
    assert inspect.stdout.count("gen_ai.tool.name") >= 1
    assert otel_eval("ui", "--help").returncode == 0


def test_evaluate_joins_a_logs_capture_to_its_spans(tmp_path):
    """Semantic Kernel sends its messages only as OTLP log records: a logs capture given beside
    the spans is read as log records (not refused as a malformed trace file) and stored."""
    captures = REPO / "tests" / "data" / "captures"
    both = otel_eval(
        "evaluate",
        captures / "semantic_kernel.traces.pb",
        captures / "semantic_kernel.logs.pb",
        "--db",
        tmp_path / "both.db",
    )
    assert both.returncode == 0, both.stderr
    assert "38 spans and 132 log records from 2 file(s)" in both.stdout
    conn = sqlite3.connect(tmp_path / "both.db")
    assert conn.execute("SELECT COUNT(*) FROM log_events").fetchone()[0] > 0
