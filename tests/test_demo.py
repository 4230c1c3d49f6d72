"""``make demo``'s sidecar path, end to end: a real ``python -m collector`` process, the stock
OTLP gRPC and HTTP exporters, the collector's own SQLite file."""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import pytest
from rich.console import Console

from examples.demo import FAIL, PASS, UNMATCHED, Judgement, Scenario, as_expected, build_parser, main
from examples.sidecar_demo import GRPC, run_sidecar_demo
from tests.stored_rows import stored_criterion, stored_evaluation

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the demo stops the collector with SIGTERM")


def recording_console() -> Console:
    return Console(record=True, width=250, color_system=None)


def stored(db: Path) -> dict[str, tuple]:
    """Per session, with the run id cut off: every evaluation (revision, superseded, case, passed)
    and how the session ended."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out: dict[str, tuple] = {}
        for sid, end_reason in conn.execute("SELECT session_id, end_reason FROM sessions"):
            evaluations = conn.execute(
                "SELECT revision, superseded, case_id, passed FROM evaluations WHERE session_id = ? ORDER BY id",
                (sid,),
            ).fetchall()
            out[sid.rsplit("-", 1)[0]] = (end_reason, evaluations)
        return out
    finally:
        conn.close()


def test_sidecar_mode_scores_every_session_once_through_both_exporters(tmp_path):
    console = recording_console()

    assert main(["--mode", "sidecar", "--db-dir", str(tmp_path / "dbs")], console=console) == 0

    text = console.export_text()
    db = tmp_path / "dbs" / "sidecar.db"
    assert not (tmp_path / "dbs" / "in-process.db").exists()
    # One evaluation per session (revision 1, current); explicit ends and idle ends both happened.
    assert stored(db) == {
        "sidecar-grpc-tokyo-v1.0.0": ("explicit", [(1, 0, "weather_tokyo", 1)]),
        "sidecar-grpc-followup-v1.0.0": ("idle", [(1, 0, "paris_followup", 1)]),
        "sidecar-grpc-tokyo-v2.0.0": ("explicit", [(1, 0, "weather_tokyo", 0)]),
        "sidecar-http-top-users-v1.0.0": ("explicit", [(1, 0, "top_users_by_revenue", 1)]),
        "sidecar-http-top-users-v2.0.0": ("idle", [(1, 0, "top_users_by_revenue", 0)]),
        "sidecar-http-small-talk-v1.0.0": ("idle", [(1, 0, None, 0)]),
    }
    # The failures are visible with their reason, as the collector scored them.
    assert re.search(
        r"● FAIL sidecar-grpc-tokyo-v2\.0\.0-\w+ → weather_tokyo \(score \d\.\d\d\)\s+failing: "
        r"trajectory_match, response_match",
        text,
    )
    assert re.search(
        r"● FAIL sidecar-http-top-users-v2\.0\.0-\w+ → top_users_by_revenue \(score \d\.\d\d\)\s+"
        r"failing: table_usage\n",
        text,
    )
    # The spans really came over both protocols, and the collector stopped cleanly with nothing left open.
    assert re.search(r'otel_eval_export_requests_total\{protocol="grpc",signal="traces",outcome="ok"\} [1-9]', text)
    assert re.search(r'otel_eval_export_requests_total\{protocol="http",signal="traces",outcome="ok"\} [1-9]', text)
    assert "otel_eval_sessions_scored_total 6\n" in text
    assert "collector: SIGTERM received" in text
    assert "0 sessions left open for the next start" in text
    assert "collector exited with status 0" in text
    assert f"6/6 sessions judged as expected. Database: {db}" in text
    assert f"sidecar: all sessions judged as expected; database: {db}" in text
    # The report is the project's report, read from the collector's file.
    assert (
        "6 sessions, 5 matched a golden case, 3 passed, 2 failed, 0 not evaluated, 1 unmatched; pass rate 60%" in text
    )


def test_a_session_judged_otherwise_than_expected_makes_the_exit_status_1(tmp_path):
    console = recording_console()
    wrong = Scenario(
        "tokyo",
        ("What's the weather in Tokyo?",),
        version="2.0.0",
        expect=PASS,
        expect_case="weather_tokyo",
        mark_end=True,
    )

    assert run_sidecar_demo(tmp_path / "sidecar.db", console, scenarios=[(GRPC, wrong)]) == 1

    text = console.export_text()
    assert re.search(
        r"unexpected: sidecar-grpc-tokyo-v2\.0\.0-\w+: expected pass \(weather_tokyo\), got fail "
        r"\(weather_tokyo, failing trajectory_match, response_match\)",
        text,
    )
    assert "0/1 sessions judged as expected" in text
    assert "collector exited with status 0" in text


def test_a_collector_that_cannot_start_is_reported_with_its_own_error(tmp_path):
    console = recording_console()
    missing = tmp_path / "nowhere.evalset.json"

    assert run_sidecar_demo(tmp_path / "sidecar.db", console, golden=[missing]) == 1

    text = console.export_text()
    assert "exited with status 2" in text
    assert f"golden set not found: {missing}" in text


def test_help_names_the_options_and_both_is_the_default(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for option in ("--db-dir", "--mode", "in-process", "sidecar", "both"):
        assert option in help_text
    assert build_parser().parse_args([]).mode == "both"


@pytest.mark.parametrize(
    ("scenario", "judged", "expected"),
    [
        (
            Scenario("t", ("q",), expect=FAIL, expect_case="c", expect_failing=("table_usage",)),
            Judgement(FAIL, "c", 0.75, ("table_usage", "response_match")),
            True,
        ),
        (
            Scenario("t", ("q",), expect=FAIL, expect_case="c", expect_failing=("table_usage",)),
            Judgement(FAIL, "c", 0.3, ("trajectory_match",)),
            False,
        ),  # failed, but not for the expected reason
        (Scenario("t", ("q",), expect=PASS, expect_case="c"), Judgement(PASS, "other", 1.0, ()), False),
        (Scenario("t", ("q",), expect=UNMATCHED), Judgement(UNMATCHED, None, 0.0, ()), True),
    ],
)
def test_a_session_is_as_expected_only_with_the_right_verdict_case_and_failing_criteria(scenario, judged, expected):
    assert as_expected(scenario, judged) is expected


def test_a_report_row_is_judged_like_the_live_result():
    row = stored_evaluation(
        case_id="top_users_by_revenue",
        passed=False,
        score=0.75,
        criteria=(
            stored_criterion("trajectory_match", True),
            stored_criterion("llm_judge", False, skipped=True),
            stored_criterion("table_usage", False),
            stored_criterion("health", False),
        ),
    )
    assert Judgement.of_row(row) == Judgement(FAIL, "top_users_by_revenue", 0.75, ("table_usage",))
    assert Judgement.of_row(stored_evaluation(case_id=None, passed=False, score=None)) == Judgement(
        UNMATCHED, None, 0.0, ()
    )
