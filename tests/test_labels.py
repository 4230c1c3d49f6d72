"""Human labels and user feedback (issue 33.5): the schema migration from version 6, ``otel-eval
label`` on a real database (beside a running collector too), judge calibration on a small known
set, and user feedback an app sends as OTLP ``gen_ai.evaluation.result`` log records to a real
collector, told apart from otel-eval's own forwarded results."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from rich.console import Console

from examples.weather_agent import agent_resource, run_session
from otel_eval import EvalSpanProcessor
from otel_eval.cli import main
from otel_eval.read.labels import calibration, corrected_verdict, session_feedback, session_labels
from otel_eval.report import render_calibration
from otel_eval.store import SCHEMA_VERSION
from tests.old_schema import database_at_version
from tests.polling import wait_until

from .test_compare import GOLDEN_FILES

ROOT = Path(__file__).resolve().parent.parent
TOKYO = "What's the weather in Tokyo?"
#: The example agent's 1.0.0 passes weather_tokyo, its 2.0.0 fails it (wrong tool, wrong answer);
#: a joke matches no golden case.
SESSIONS = [
    ("1.0.0", "p1", TOKYO),
    ("1.0.0", "p2", TOKYO),
    ("2.0.0", "f1", TOKYO),
    ("2.0.0", "f2", TOKYO),
    ("1.0.0", "u1", "Tell me a joke"),
]


@pytest.fixture(scope="module")
def scored_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("labels") / "scored.db"
    for version in ("1.0.0", "2.0.0"):
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(EvalSpanProcessor(db=path, golden=GOLDEN_FILES, trace_quiet=600, session_idle=600))
        for v, sid, query in SESSIONS:
            if v == version:
                run_session(provider, sid, [query], version=version)
        provider.shutdown()  # ends and scores every session
    return path


@pytest.fixture
def db(scored_db: Path, tmp_path: Path) -> Path:
    """A copy of the scored database of its own for each test (labels are written to it)."""
    path = tmp_path / "labels.db"
    with sqlite3.connect(scored_db) as source, sqlite3.connect(path) as copy:
        source.backup(copy)
    return path


def verdicts(db: Path) -> dict[str, tuple]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT session_id, case_id, verdict FROM evaluations WHERE superseded = 0").fetchall()
    conn.close()
    return {sid: (case, verdict) for sid, case, verdict in rows}


def label(db: Path, *args: str) -> int:
    return main(["label", *args, "--db", str(db)])


def test_the_known_set_is_scored_as_the_calibration_tests_assume(db):
    assert verdicts(db) == {
        "p1": ("weather_tokyo", "passed"),
        "p2": ("weather_tokyo", "passed"),
        "f1": ("weather_tokyo", "failed"),
        "f2": ("weather_tokyo", "failed"),
        "u1": (None, "not_evaluated"),
    }
    conn = sqlite3.connect(db)
    ran = conn.execute(
        "SELECT e.session_id, c.criterion, c.passed FROM criterion_results c JOIN evaluations e ON e.id = c.evaluation_id"
        " WHERE c.skipped = 0 AND e.case_id IS NOT NULL ORDER BY e.session_id, c.criterion"
    ).fetchall()
    conn.close()
    by_session: dict[str, dict[str, int]] = {}
    for sid, criterion, passed in ran:
        by_session.setdefault(sid, {})[criterion] = passed
    assert by_session == {
        sid: {"health": 1, "response_match": int(sid[0] == "p"), "trajectory_match": int(sid[0] == "p")}
        for sid in ("p1", "p2", "f1", "f2")
    }


def test_corrected_verdict_is_the_labelled_one_or_its_opposite():
    assert corrected_verdict("passed", "agree") == "passed"
    assert corrected_verdict("passed", "disagree") == "failed"
    assert corrected_verdict("failed", "disagree") == "passed"
    assert corrected_verdict("not_evaluated", "disagree") is None
    assert corrected_verdict("unmatched", "agree") is None


def test_calibration_counts_each_criterion_against_the_corrected_verdicts(db, capsys, monkeypatch):
    monkeypatch.setenv("USER", "carol")
    assert label(db, "p1", "agree") == 0  # passed, and rightly: corrected = passed
    assert label(db, "p2", "disagree", "--note", "the forecast is for Kyoto") == 0  # corrected = failed
    assert label(db, "f1", "disagree", "--by", "dave") == 0  # failed, wrongly: corrected = passed
    assert label(db, "f2", "agree") == 0  # corrected = failed
    assert label(db, "u1", "disagree", "--note", "should be a case") == 0  # unmatched: nothing to correct
    out = capsys.readouterr().out
    assert (
        "labelled session p2 (revision 1, passed, case weather_tokyo): disagree, it should be failed; by carol" in out
    )
    assert "labelled session u1 (revision 1, unmatched): disagree, no pass/fail verdict to correct" in out

    cal = calibration([db])
    assert (cal.labels, cal.labelled_sessions, cal.agree, cal.disagree, cal.without_verdict) == (5, 5, 2, 3, 1)
    # trajectory_match and response_match pass p1, p2 and fail f1, f2; against passed, failed,
    # passed, failed: right on p1 and f2, a pass that should fail (p2), a fail that should pass (f1).
    # health passes all four: right on p1 and f1, wrong on p2 and f2.
    table = {c.criterion: (c.sessions, c.agree, c.false_pass, c.false_fail) for c in cal.criteria}
    assert table == {"trajectory_match": (4, 2, 1, 1), "response_match": (4, 2, 1, 1), "health": (4, 2, 2, 0)}
    assert (cal.verdict.sessions, cal.verdict.agree, cal.verdict.false_pass, cal.verdict.false_fail) == (4, 2, 1, 1)

    # Every label is kept; the latest of a session counts: p2 relabelled "agree" (it passed, rightly).
    assert label(db, "p2", "agree", "--by", "erin") == 0
    cal = calibration([db])
    assert (cal.labels, cal.labelled_sessions, cal.agree, cal.disagree) == (6, 5, 3, 2)
    table = {c.criterion: (c.sessions, c.agree, c.false_pass, c.false_fail) for c in cal.criteria}
    assert table == {"trajectory_match": (4, 3, 0, 1), "response_match": (4, 3, 0, 1), "health": (4, 3, 1, 0)}
    conn = sqlite3.connect(db)
    history = session_labels(conn, "p2")
    assert [(h.label, h.who, h.note, h.source) for h in history] == [
        ("agree", "erin", None, "cli"),
        ("disagree", "carol", "the forecast is for Kyoto", "cli"),
    ]
    assert session_labels(conn, "f1")[0].who == "dave"
    conn.close()

    # report: the same numbers in --json, and a table at 80 columns.
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["calibration"]
    assert data["verdict"] == {
        "criterion": "verdict",
        "sessions": 4,
        "agree": 3,
        "agreement": 0.75,
        "false_pass": 0,
        "false_fail": 1,
    }
    assert {c["criterion"]: c["agreement"] for c in data["criteria"]} == {
        "trajectory_match": 0.75,
        "response_match": 0.75,
        "health": 0.75,
    }
    console = Console(record=True, width=80)
    render_calibration(calibration([db]), console)
    text = console.export_text()
    assert "human labels: 5 session(s) labelled (3 agree, 2 disagree, 1 without a pass/fail verdict)" in " ".join(
        text.split()
    )
    assert "Judge calibration" in text and "trajectory_match" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_rescored_session_is_measured_on_its_current_evaluation(db, capsys):
    assert label(db, "f1", "disagree") == 0
    assert main(["rescore", "--db", str(db), "--session", "f1"]) == 0
    cal = calibration([db])
    assert cal.rescored_since == 1
    assert {c.criterion: c.false_fail for c in cal.criteria}["trajectory_match"] == 1


def test_a_label_for_an_unknown_session_names_recent_ones(db, capsys):
    assert label(db, "no-such-session", "agree") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"otel-eval: error: {db}: at SESSION: no session 'no-such-session'; recent sessions: ")
    assert set(err.split("recent sessions: ")[1].strip().split(", ")) == {"p1", "p2", "f1", "f2", "u1"}
    with pytest.raises(SystemExit) as exit_:
        label(db, "p1", "maybe")
    assert exit_.value.code == 2
    assert "invalid choice: 'maybe'" in capsys.readouterr().err
    assert label(db, "p1", "agree", "--note", "x" * 5000) == 2
    assert "the note has 5000 characters; at most 4000" in capsys.readouterr().err
    assert main(["label", "p1", "agree", "--db", str(db.parent / "missing.db")]) == 2
    assert "database file not found" in capsys.readouterr().err
    assert calibration([db]).labels == 0  # nothing was stored by the refused labels


def test_an_open_session_cannot_be_labelled_yet(tmp_path, capsys):
    db = tmp_path / "open.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN_FILES, trace_quiet=600, session_idle=600)
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(processor)
    try:
        run_session(provider, "still-talking", [TOKYO])
        processor.force_flush()
        assert label(db, "still-talking", "agree") == 2
        assert (
            "session 'still-talking' has no verdict to label yet: it is still open; label it once it is scored"
            in capsys.readouterr().err
        )
    finally:
        provider.shutdown()
    assert label(db, "still-talking", "agree") == 0  # scored at shutdown: now it can be


def test_a_version_6_database_is_migrated_by_the_label_command_and_keeps_its_rows(tmp_path, capsys):
    db = database_at_version(tmp_path / "v6.db", 6)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO sessions (session_id, status, revision) VALUES ('old', 'scored', 1)")
    conn.execute(
        "INSERT INTO evaluations (session_id, revision, case_id, passed, verdict, score, superseded, created_at)"
        " VALUES ('old', 1, 'weather_tokyo', 0, 'failed', 0.2, 0, '2026-01-01T00:00:00.000Z')"
    )
    conn.execute(
        "INSERT INTO log_events (trace_id, span_id, time_ns, event_name) VALUES ('t', 's', 1, 'gen_ai.choice')"
    )
    conn.commit()
    conn.close()

    assert label(db, "old", "disagree", "--by", "frank") == 0
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    assert conn.execute("SELECT session_id, verdict, tool_path FROM evaluations").fetchall() == [
        ("old", "failed", None)
    ]
    assert conn.execute("SELECT COUNT(*) FROM log_events").fetchone() == (1,)
    assert conn.execute("SELECT session_id, revision, verdict, case_id, label, who FROM labels").fetchall() == [
        ("old", 1, "failed", "weather_tokyo", "disagree", "frank")
    ]
    assert conn.execute("SELECT COUNT(*) FROM feedback").fetchone() == (0,)
    with pytest.raises(sqlite3.IntegrityError):  # a label is agree or disagree, nothing else
        conn.execute(
            "INSERT INTO labels (session_id, verdict, label, who, source, created_at)"
            " VALUES ('old', 'failed', 'maybe', 'x', 'sql', 'now')"
        )
    conn.close()
    assert calibration([db]).verdict.false_fail == 1


def test_a_label_is_written_while_the_collector_writes_the_same_file(db, start_collector):
    collector = start_collector(
        db=str(db), golden=[str(p) for p in GOLDEN_FILES], grpc=None, trace_quiet=0.1, session_idle=0.2
    )
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces"), schedule_delay_millis=50
        )
    )
    for i in range(3):  # the collector's writer commits while the label command writes
        run_session(provider, f"live-{i}", [TOKYO], mark_end=True)
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "otel_eval.cli",
                "label",
                "f1" if i % 2 else "p1",
                "agree",
                "--db",
                str(db),
                "--by",
                f"reviewer-{i}",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
    provider.shutdown()
    wait_until(
        lambda: {"live-0", "live-1", "live-2"} <= set(verdicts(db)),
        timeout=20,
        what="the collector to score the sessions sent while labels were written",
    )
    assert calibration([db]).labels == 3


# --- user feedback, over OTLP, to a real collector ---------------------------------------------------


def feedback_logger(port: int, headers: dict[str, str] | None = None):
    """An app's OpenTelemetry logger exporting over OTLP/HTTP to the collector on ``port``."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    provider = LoggerProvider(resource=Resource.create({"service.name": "weather-app"}))
    provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"http://127.0.0.1:{port}/v1/logs", headers=headers))
    )
    return provider, provider.get_logger("weather-app.feedback")


def in_span(trace_id: str, span_id: str):
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    return set_span_in_context(
        NonRecordingSpan(
            SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        )
    )


def test_user_feedback_sent_as_log_records_is_stored_beside_its_session(start_collector):
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from otel_eval.export.otel import forward_results

    collector = start_collector(golden=[str(p) for p in GOLDEN_FILES], trace_quiet=0.1, session_idle=0.2)
    port = collector.http_port
    # otel-eval's own results, forwarded to the same collector: gen_ai.evaluation.result records too,
    # which must not count as what users said.
    forwarder = forward_results(collector.engine, f"http://127.0.0.1:{port}", schedule_delay_millis=50)
    spans = TracerProvider(resource=agent_resource("1.0.0"))
    spans.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"), schedule_delay_millis=50)
    )
    run_session(spans, "fb-pass", [TOKYO], version="1.0.0", mark_end=True)
    failing = run_session(spans, "fb-fail", [TOKYO], version="2.0.0", mark_end=True)
    spans.shutdown()
    db = collector.config.db
    conn = sqlite3.connect(db)
    wait_until(lambda: len(verdicts(Path(db))) == 2, timeout=20, what="both sessions scored")
    trace_id = failing.turns[0].trace_id
    root = conn.execute("SELECT root_span_id FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()[0]

    provider, logger = feedback_logger(port)
    # A thumbs up that names its conversation and no span (sent after the answer was shown) ...
    logger.emit(
        event_name="gen_ai.evaluation.result",
        attributes={
            "gen_ai.evaluation.name": "user_rating",
            "gen_ai.evaluation.score.label": "thumbs_up",
            "gen_ai.evaluation.score.value": 1.0,
            "gen_ai.conversation.id": "fb-pass",
            "gen_ai.evaluation.explanation": "exactly what I needed",
        },
    )
    # ... and a thumbs down parented to the turn it judges, naming no session: found through its trace.
    logger.emit(
        event_name="gen_ai.evaluation.result",
        context=in_span(trace_id, root),
        attributes={
            "gen_ai.evaluation.name": "user_rating",
            "gen_ai.evaluation.score.label": "thumbs_down",
            "gen_ai.evaluation.score.value": 0,
            "app.screen": "chat",
        },
    )
    # Other log records of the app without a span are still ignored.
    logger.emit(event_name="app.clicked", attributes={"gen_ai.conversation.id": "fb-pass"})
    provider.shutdown()
    wait_until(
        lambda: (
            conn.execute("SELECT COUNT(*) FROM log_events WHERE event_name = 'gen_ai.evaluation.result'").fetchone()[0]
            >= 2
        ),
        timeout=20,
        what="otel-eval's forwarded results stored",
    )
    forwarder.shutdown()

    rows = conn.execute("SELECT session_id, trace_id, span_id, name, score, label FROM feedback ORDER BY id").fetchall()
    assert rows == [
        ("fb-pass", "", "", "user_rating", 1.0, "thumbs_up"),
        (None, trace_id, root, "user_rating", 0.0, "thumbs_down"),
    ]
    # The forwarded results stayed log records (they carry otel_eval.* attributes).
    own = [
        json.loads(a)
        for (a,) in conn.execute("SELECT attributes FROM log_events WHERE event_name = 'gen_ai.evaluation.result'")
    ]
    assert own and all("otel_eval.case.verdict" in a for a in own)
    assert conn.execute("SELECT COUNT(*) FROM log_events WHERE event_name = 'app.clicked'").fetchone() == (0,)

    reader = sqlite3.connect(db)
    reader.row_factory = sqlite3.Row
    [up] = session_feedback(reader, "fb-pass")
    assert (up.value, up.explanation, up.attributes["gen_ai.conversation.id"]) == (
        "thumbs_up",
        "exactly what I needed",
        "fb-pass",
    )
    [down] = session_feedback(reader, "fb-fail")
    assert (down.value, down.attributes["app.screen"]) == ("thumbs_down", "chat")
    reader.close()

    # A retried export is stored once.
    request = ExportLogsServiceRequest()
    record = (
        request.resource_logs.add()
        .scope_logs.add()
        .log_records.add(time_unix_nano=1_800_000_000_000_000_000, event_name="gen_ai.evaluation.result")
    )
    for key, value in (
        ("gen_ai.evaluation.name", "user_rating"),
        ("gen_ai.evaluation.score.label", "thumbs_up"),
        ("session.id", "fb-fail"),
    ):
        record.attributes.add(key=key).value.string_value = value
    for _ in range(2):
        answer = httpx.post(
            f"http://127.0.0.1:{port}/v1/logs",
            content=request.SerializeToString(),
            headers={"Content-Type": "application/x-protobuf"},
            timeout=10,
        )
        assert answer.status_code == 200
    assert conn.execute("SELECT COUNT(*) FROM feedback WHERE session_id = 'fb-fail'").fetchone() == (1,)

    counts = {(f.outcome, f.value): f.count for f in calibration([db]).feedback}
    assert counts == {("passed", "thumbs_up"): 1, ("failed", "thumbs_down"): 1, ("failed", "thumbs_up"): 1}
    conn.close()
