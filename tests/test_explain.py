"""What a person reads: tables at 80 and 120 columns, every failure explained, what is still waiting.

One real database, written by a real ``EvalSpanProcessor`` from the example weather agent's spans:
passing and failing sessions (version 2.0.0 calls the forecast tool and answers with tomorrow's
weather), sessions with long ids that share a prefix, a two-turn conversation, and extra response
criteria (google-adk's ``response_match_score`` and a custom criterion of kind response_match).
Then ``report``, ``report --session``, ``watch --once``, ``compare`` and the dashboard's pages are
read as text, at the widths of a CI log (80) and a terminal (120).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console

from examples.weather_agent import run_session
from examples.weather_agent.agent import agent_resource
from otel_eval.criteria_file import load_eval_config
from otel_eval.processor import EvalSpanProcessor
from otel_eval.read import sessions, spans
from otel_eval.read.backlog import due_ns, read_backlog
from otel_eval.read.database import open_database
from otel_eval.read.evaluations import current_evaluations
from otel_eval.read.sessions import session_detail
from otel_eval.report import render_report, render_session
from otel_eval.sessions import KEYED_BY_ATTRIBUTE, KEYED_BY_TRACE, SessionTracker, Timing
from otel_eval.tablefit import end_ellipsis, list_text, middle_ellipsis
from otel_eval.ui.markup import SESSION_ID_CHARS, Links
from otel_eval.ui.session_page import session_page
from otel_eval.ui.sessions_page import sessions_page

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = [ROOT / "examples/golden/weather.evalset.json", ROOT / "examples/golden/weather.trajectory.json"]
LONG = "checkout-assistant-production-eu-west-1-conversation-2027-01-15-"
CONFIG = """
[criteria.response_match_score]
threshold = 0.9

[criteria.answer_exact]
threshold = 1.0
options = {kind = "response_match", method = "exact"}
"""
#: (version, session id, user turns)
SESSIONS = [
    ("1.0.0", "tokyo-ok", ["What's the weather in Tokyo?"]),
    ("2.0.0", "tokyo-bad", ["What's the weather in Tokyo?"]),
    ("2.0.0", "revenue-bad", ["Show me the top 10 users by revenue"]),
    ("1.0.0", "joke", ["Tell me a joke"]),
    ("1.0.0", LONG + "0001", ["What's the weather in Tokyo?"]),
    ("2.0.0", LONG + "0002", ["What's the weather in Tokyo?"]),
]
VERDICT_WORDS = {"passed": "PASS", "failed": "FAIL", "not_evaluated": "NOT EVALUATED"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("explain")
    config_file = folder / "criteria.toml"
    config_file.write_text(CONFIG)
    path = folder / "otel-eval.db"
    for version in ("1.0.0", "2.0.0"):
        processor = EvalSpanProcessor(
            db=path, golden=GOLDEN, config=load_eval_config(config_file), trace_quiet=600, session_idle=600
        )
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(processor)
        for v, sid, turns in SESSIONS:
            if v == version:
                run_session(provider, sid, turns, version=version)
        provider.shutdown()  # ends and scores every session
    return path


def rendered(width: int, draw) -> str:
    console = Console(record=True, width=width, color_system=None)
    draw(console)
    return console.export_text()


def assert_fits(text: str, width: int) -> None:
    longest = max(text.splitlines(), key=len)
    assert len(longest) <= width, longest


def table_rows(text: str) -> list[list[str]]:
    """The body rows of rich tables: cells between │ separators, stripped."""
    return [
        [c.strip() for c in line.strip().strip("│").split("│")] for line in text.splitlines() if line.startswith("│")
    ]


def row_of(text: str, session_cell: str) -> list[str]:
    return next(r for r in table_rows(text) if session_cell in r)


# --- the shorteners --------------------------------------------------------------------------------


def test_shorteners_keep_what_tells_values_apart():
    a, b = middle_ellipsis(LONG + "0001", 24), middle_ellipsis(LONG + "0002", 24)
    assert len(a) == 24 and a != b and a.startswith("checkout-ass") and a.endswith("-0001")
    assert middle_ellipsis("short", 24) == "short"
    assert end_ellipsis("the weather in Tokyo tomorrow", 16) == "the weather in…"
    assert list_text(["trajectory_match", "response_match", "table_usage"], 24) == "trajectory_match, +2"
    assert list_text(["trajectory_match", "response_match"], 40) == "trajectory_match, response_match"
    assert list_text(["tool_trajectory_avg_score", "x"], 12) == "tool_tr…, +1"


# --- report and watch at 80 and 120 columns --------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120])
def test_report_fits_the_width_and_keeps_every_verdict_and_score_whole(db: Path, width: int):
    rows = current_evaluations([db])
    text = rendered(width, lambda c: render_report(rows, c))
    assert_fits(text, width)
    cells = table_rows(text)
    for r in rows:
        shown = r.session_id if len(r.session_id) <= 12 else None
        line = next(
            c
            for c in cells
            if (
                shown in c
                if shown
                else any(x.startswith(r.session_id[:4]) and x.endswith(r.session_id[-4:]) and "…" in x for x in c)
            )
        )
        word = VERDICT_WORDS[r.verdict] if r.case_id else "unmatched"
        assert word in line, (r.session_id, line)
        if r.case_id:
            assert f"{r.score:.2f}" in line
    # The long ids share 62 characters: elided in the middle, each still tells itself apart.
    long_cells = [c for row in cells for c in row if c.startswith("checkout") and "…" in c]
    assert {c[-4:] for c in long_cells} == {"0001", "0002"}
    # Failing criteria: whole names, and how many more when they do not all fit.
    bad = row_of(text, "tokyo-bad")
    failing = bad[-1]
    assert failing.split(", ")[0] == "trajectory_match"
    assert all(re.fullmatch(r"[a-z_]+|\+\d+", item) for item in failing.split(", ")), failing


def test_report_at_120_columns_shows_more_than_at_80(db: Path):
    rows = current_evaluations([db])
    narrow, wide = (rendered(w, lambda c: render_report(rows, c)) for w in (80, 120))
    header = [line for line in wide.splitlines() if line.startswith("┃") and "session" in line][0]
    assert "case" in header and "version" in header
    narrow_header = [line for line in narrow.splitlines() if line.startswith("┃") and "session" in line][0]
    assert "version" not in narrow_header and "result" in narrow_header and "failing criteria" in narrow_header


@pytest.mark.parametrize("width", [80, 120])
def test_report_cli_in_a_pipe_uses_columns(db: Path, width: int):
    """``otel-eval report | cat`` in a CI log: rich takes the width from COLUMNS."""
    env = {**os.environ, "COLUMNS": str(width), "TERM": "dumb"}
    run = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert_fits(run.stdout, width)
    assert "FAIL" in row_of(run.stdout, "tokyo-bad") and "PASS" in row_of(run.stdout, "tokyo-ok")


@pytest.mark.parametrize("width", [80, 120])
def test_watch_once_fits_the_width(db: Path, width: int):
    from otel_eval.watch import render, snapshot

    snap = snapshot([db], window_s=3600)
    text = rendered(width, lambda c: c.print(render(snap)))
    assert_fits(text, width)
    by_session = {r["session_id"]: r for r in snap["latest"]}
    bad = row_of(text, "tokyo-bad")
    assert "FAIL" in bad and f"{by_session['tokyo-bad']['score']:.2f}" in bad
    assert "PASS" in row_of(text, "tokyo-ok") and "unmatched" in row_of(text, "joke")


@pytest.mark.parametrize("width", [80, 120])
def test_compare_fits_the_width(db: Path, width: int):
    from otel_eval.compare import compare, render_comparison

    text = rendered(width, lambda c: render_comparison(compare([db], "1.0.0", "2.0.0"), c))
    assert_fits(text, width)
    tokyo = row_of(text, "weather_tokyo")
    assert "regressed" in tokyo and "-100%" in tokyo


# --- explaining failures ---------------------------------------------------------------------------


def test_report_session_shows_expected_and_actual_of_each_failed_response_criterion(db: Path):
    row = session_detail([db], "tokyo-bad")
    text = rendered(100, lambda c: render_session(row, c))
    for name in ("response_match", "response_match_score", "answer_exact"):
        line = next(x for x in text.splitlines() if x.startswith(f"  {name}: fail"))
        block = text[text.index(line) :].splitlines()[1:4]
        assert block[0].strip().startswith("turn 1: score="), block
        assert block[1].strip() == "expected: \"It's currently 22°C and sunny in Tokyo.\"", block
        assert block[2].strip() == "actual:   'Tomorrow in Tokyo: 24°C and sunny.'", block
    assert "precision 0.71 recall 0.56" in text  # what rouge1's 0.62 is made of
    assert "turn 1 · user: \"What's the weather in Tokyo?\"" in text


def test_report_session_json_carries_each_turns_user_message(db: Path):
    run = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db), "--session", "tokyo-ok", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    turns = json.loads(run.stdout)["turns"]
    assert [(t["turn"], t["user_input"]) for t in turns] == [(0, "What's the weather in Tokyo?")]


def test_report_session_unknown_exits_2_and_lists_recent_sessions(db: Path):
    run = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db), "--session", "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 2
    line = run.stderr.strip()
    assert line.count("\n") == 0 and "no session 'nope'" in line and str(db) in line
    recent = line.split("recent sessions: ")[1].split(", ")
    conn = sqlite3.connect(db)
    try:  # the engine scores a provider's sessions in no set order: the database says which came last
        newest = [r[0] for r in conn.execute("SELECT session_id FROM evaluations ORDER BY id DESC LIMIT 5")]
    finally:
        conn.close()
    assert recent == newest


def test_dashboard_explains_response_criteria_with_user_messages(db: Path):
    conn = open_database(db)
    try:
        overview = sessions.session_overview(conn, "tokyo-bad")
        page = session_page(
            Links("/ui"), overview, spans.session_traces(conn, "tokyo-bad"), spans.session_agent_data(conn, "tokyo-bad")
        )
    finally:
        conn.close()
    for name in ("response_match", "response_match_score", "answer_exact"):
        why = re.search(rf'data-criterion="{name}"><td>{name}</td>.*?</tr>', page).group(0)
        assert "turn 1: " in why and "score 0." in why and "expected vs actual below" in why, why
        table = re.search(rf'<table class="responses" data-criterion="{name}">.*?</table>', page).group(0)
        assert "It&#x27;s currently 22°C and sunny in Tokyo." in table
        assert "Tomorrow in Tokyo: 24°C and sunny." in table
        assert '<td class="user">What&#x27;s the weather in Tokyo?</td>' in table
    assert "rouge1 precision 0.71 recall 0.56" in page
    trajectory = page[page.index('<section class="trajectory">') :]
    said = '<p class="user-msg" data-turn="0">turn 1 · user: <q>What&#x27;s the weather in Tokyo?</q></p>'
    assert trajectory.index(said) < trajectory.index('<table class="traj" data-turn="0"')  # just above it


def test_dashboard_session_list_has_a_time_column_and_ellipsized_ids(db: Path):
    conn = open_database(db)
    try:
        f = sessions.SessionFilter()
        rows, total = sessions.list_sessions(conn, f)
        page = sessions_page(
            Links("/ui"), f, rows, total, sessions.result_counts(conn, f), sessions.filter_options(conn), {}
        )
        last = dict(conn.execute("SELECT session_id, last_received_ns FROM sessions"))
    finally:
        conn.close()
    assert "<th title=\"last span received, UTC\">last activity</th>" in page
    for sid, received_ns in last.items():
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(received_ns // 1_000_000_000))
        row = re.search(rf'<tr class="row-\w+" data-session="{re.escape(sid)}">(.*?)</tr>', page).group(1)
        assert f'<td class="when"><time datetime="{stamp.replace(" ", "T")}Z">{stamp}</time></td>' in row
        link = re.search(r'<td class="sid"><a href="([^"]*)" title="([^"]*)">([^<]*)</a>', row)
        assert link.group(2) == sid and link.group(1).endswith(sid)
        shown = link.group(3)
        assert (
            shown == sid
            if len(sid) <= SESSION_ID_CHARS
            else (len(shown) == SESSION_ID_CHARS and "…" in shown and shown.endswith(sid[-6:]))
        )


# --- sessions not scored yet -----------------------------------------------------------------------


def test_due_time_agrees_with_the_engines_session_tracker():
    """The read side's rule is the engine's: not due a nanosecond before, due at it."""
    timing = Timing(trace_quiet=5.0, session_idle=60.0)
    cases = [
        (KEYED_BY_ATTRIBUTE, False, [(True, 1_000), (True, 7_000_000_000)]),  # idle
        (KEYED_BY_ATTRIBUTE, True, [(True, 1_000), (True, 7_000_000_000)]),  # asked to end
        (KEYED_BY_TRACE, False, [(True, 2_000_000_000)]),  # its trace completed
        (KEYED_BY_ATTRIBUTE, True, [(False, 3_000_000_000)]),  # root never came: idle
    ]
    for keyed_by, end, traces in cases:
        tracker = SessionTracker(timing)
        for n, (root, at) in enumerate(traces):
            tracker.observe("s", keyed_by, f"t{n}", root, at, end)
        last = max(at for _, at in traces)
        due = due_ns(keyed_by, end, last, traces, timing)
        assert tracker.due(due - 1) == [], (keyed_by, end, traces)
        assert [sid for sid, _ in tracker.due(due)] == ["s"], (keyed_by, end, traces)


def test_report_and_watch_say_what_is_open_and_when_the_next_is_due(tmp_path: Path):
    """A session still open in a database the engine is writing: report says so (and not just
    "0 sessions"), with when it ends by the writer's session_idle."""
    db = tmp_path / "open.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=0.5, session_idle=30)
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(processor)
    try:
        run_session(provider, "waiting", ["What's the weather in Tokyo?"])
        processor.force_flush()
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        backlog = read_backlog(conn, Timing(0.5, 30))
        last_ns = conn.execute("SELECT last_received_ns FROM sessions WHERE session_id = 'waiting'").fetchone()[0]
        conn.close()
        assert (backlog.open, backlog.awaiting_scoring, backlog.next_session) == (1, 0, "waiting")
        assert backlog.next_due_ns == last_ns + 30 * 10**9
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "otel_eval.cli",
                "report",
                "--db",
                str(db),
                "--session-idle",
                "30",
                "--trace-quiet",
                "0.5",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert run.returncode == 0, run.stderr
        assert "0 sessions, 0 matched" in run.stdout
        due = re.search(
            r"1 session open; the next ends in about (\d+) s \(a session ends 30 s after its last "
            r"span, 0.5 s when it ends explicitly\)",
            run.stdout,
        )
        assert due and 0 <= int(due.group(1)) <= 30, run.stdout
        data = json.loads(
            subprocess.run(
                [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db), "--json"],
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout
        )
        assert data["pending"]["open"] == 1 and data["pending"]["next_session"] == "waiting"
        assert data["pending"]["next_due_in_s"] <= 60  # the default session_idle
        missing = subprocess.run(
            [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db), "--session", "waiting"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert missing.returncode == 2
        assert "session 'waiting' has no evaluation yet: it is still open" in missing.stderr

        from otel_eval.watch import render, snapshot

        snap = snapshot([db], window_s=3600)
        assert snap["sessions"]["open"] == 1 and snap["sessions"]["next_session"] == "waiting"
        text = rendered(80, lambda c: c.print(render(snap)))
        assert "1 session open; the next ends in about" in " ".join(text.split())
    finally:
        provider.shutdown()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert read_backlog(conn, Timing()).open == 0  # shutdown scored it
    conn.close()


def test_an_overdue_session_says_nothing_is_ending_sessions(tmp_path: Path):
    """Open sessions in a database nobody is writing any more (the collector was killed)."""
    db = tmp_path / "stale.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=600, session_idle=600)
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(processor)
    run_session(provider, "left-open", ["What's the weather in Tokyo?"])
    processor.force_flush()
    conn = sqlite3.connect(db)
    with conn:  # as if its last span had arrived an hour ago
        conn.execute("UPDATE sessions SET last_received_ns = last_received_ns - 3600 * 1000000000")
        conn.execute("UPDATE traces SET last_received_ns = last_received_ns - 3600 * 1000000000")
    conn.close()
    run = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    provider.shutdown()
    assert "1 session open; the next was due 59 min ago: nothing is ending sessions" in run.stdout
