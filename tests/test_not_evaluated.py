"""Nothing checked is not PASS: a session matched to a golden case whose every criterion skips gets
the verdict not_evaluated, counted apart everywhere a verdict is counted.

One real collector (OTLP/HTTP in, SQLite file, --ui, results forwarded to a second, real OTLP
gRPC receiver) scores the example weather agent against the example golden set plus a case that
expects nothing ("Tell me a joke": only the user's question). Then every reader is asked what a
person would see: the stored rows, ``report``, ``watch --once``, the dashboard, ``/metrics``,
``compare``, the exports and the forwarded ``gen_ai.evaluation.result`` records.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
from concurrent import futures
from pathlib import Path

import grpc
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console

from examples.weather_agent import agent_resource, run_session
from otel_eval.cli import main as cli_main
from otel_eval.compare import compare
from otel_eval.export import SessionSelection, export_sessions
from otel_eval.models.results import CriterionResult, verdict_of
from otel_eval.read.evaluations import current_evaluations
from otel_eval.read.sessions import SessionDetail
from otel_eval.report import render_report, render_session, summarize_sessions
from otel_eval.store import SCHEMA_VERSION
from otel_eval.watch import add_watch_arguments, watch_main
from tests.polling import wait_until
from tests.test_export_otel import LogSink, attrs

ROOT = Path(__file__).resolve().parent.parent
WEATHER = ROOT / "examples" / "golden" / "weather.evalset.json"
SMALL_TALK = {
    "eval_set_id": "small_talk",
    "eval_cases": [
        {
            "eval_id": "joke",
            "conversation": [
                {"invocation_id": "joke-1", "user_content": {"role": "user", "content": "Tell me a joke"}}
            ],
        }
    ],
}
#: (agent version, session id, question): a pass and a failure of the same case, the case that
#: checks nothing in both versions, and a session no case matches.
SESSIONS = [
    ("1.0.0", "tokyo-1", "What's the weather in Tokyo?"),
    ("2.0.0", "tokyo-2", "What's the weather in Tokyo?"),
    ("1.0.0", "joke-1", "Tell me a joke"),
    ("2.0.0", "joke-2", "Tell me a joke"),
    ("2.0.0", "revenue-2", "Show me the top 10 users by revenue"),
]
VERDICTS = {
    "tokyo-1": ("weather_tokyo", "passed"),
    "tokyo-2": ("weather_tokyo", "failed"),
    "joke-1": ("joke", "not_evaluated"),
    "joke-2": ("joke", "not_evaluated"),
    "revenue-2": (None, "not_evaluated"),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    """(collector, database path, forwarded-records sink) after every session was scored."""
    from collector.app import Collector
    from collector.config import CollectorConfig, Endpoint

    folder = tmp_path_factory.mktemp("not-evaluated")
    small_talk = folder / "small_talk.evalset.json"
    small_talk.write_text(json.dumps(SMALL_TALK))
    sink = LogSink()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(sink, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    db = folder / "eval.db"
    collector = Collector(
        CollectorConfig(
            db=str(db),
            golden=[str(WEATHER), str(small_talk)],
            grpc=None,
            http=Endpoint("127.0.0.1", 0),
            trace_quiet=0.2,
            session_idle=0.3,
            score_workers=0,
            ui=True,
            forward_results=f"grpc://127.0.0.1:{port}",
        )
    ).start()
    try:
        for version in ("1.0.0", "2.0.0"):
            provider = TracerProvider(resource=agent_resource(version))
            provider.add_span_processor(
                SimpleSpanProcessor(
                    OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10)
                )
            )
            for v, sid, question in SESSIONS:
                if v == version:
                    run_session(provider, sid, [question], version=version, mark_end=True)
            provider.shutdown()
        wait_until(
            lambda: collector.engine.stats()["sessions_scored"] >= len(SESSIONS),
            timeout=20,
            what="every session scored",
        )
        yield collector, db, sink
    finally:
        collector.stop(grace=1.0)
        server.stop(0)


def test_the_stored_verdict_of_a_case_that_checks_nothing_is_not_evaluated(world):
    _, db, _ = world
    conn = sqlite3.connect(db)
    rows = {
        sid: (case, verdict, passed, score)
        for sid, case, verdict, passed, score in conn.execute(
            "SELECT session_id, case_id, verdict, passed, score FROM evaluations WHERE superseded = 0"
        )
    }
    assert {sid: (case, verdict) for sid, (case, verdict, _, _) in rows.items()} == VERDICTS
    assert rows["tokyo-1"][2:] == (1, 1.0) and rows["tokyo-2"][2] == 0 and rows["tokyo-2"][3] > 0
    # Not evaluated: no pass, and no score (NULL, not a 0.0 that reads as a failure).
    assert [rows[s][2:] for s in ("joke-1", "joke-2", "revenue-2")] == [(0, None)] * 3
    criteria = conn.execute(
        "SELECT c.criterion, c.skipped, c.score FROM criterion_results c JOIN evaluations e ON e.id = c.evaluation_id"
        " WHERE e.session_id = 'joke-1' ORDER BY c.id"
    ).fetchall()
    skipped = [(name, score) for name, was_skipped, score in criteria if was_skipped]
    assert {name for name, _ in skipped} >= {"trajectory_match", "response_match", "tool_selection"}
    assert all(score is None for _, score in skipped)
    assert [name for name, was_skipped, _ in criteria if not was_skipped] == ["health"]  # measured, no limits
    # The SQL views agree: the per-day pass rate leaves not_evaluated sessions out of its denominator.
    daily = {
        (case, version): row
        for case, version, *row in conn.execute(
            "SELECT case_id, agent_version, evaluations, passed, failed, not_evaluated, pass_rate FROM daily_pass_rate"
        )
    }
    assert daily == {
        ("joke", "1.0.0"): [1, 0, 0, 1, None],
        ("joke", "2.0.0"): [1, 0, 0, 1, None],
        ("weather_tokyo", "1.0.0"): [1, 1, 0, 0, 1.0],
        ("weather_tokyo", "2.0.0"): [1, 0, 1, 0, 0.0],
    }
    assert dict(conn.execute("SELECT session_id, verdict FROM trajectory_evaluations")) == {
        sid: verdict for sid, (case, verdict) in VERDICTS.items() if case
    }
    conn.close()


def test_report_counts_not_evaluated_apart_and_shows_a_dash_for_skipped_criteria(world, capsys):
    _, db, _ = world
    rows = current_evaluations([db])
    summary = summarize_sessions(rows)
    assert {
        k: summary[k] for k in ("sessions", "matched", "passed", "failed", "not_evaluated", "unmatched", "pass_rate")
    } == {"sessions": 5, "matched": 4, "passed": 1, "failed": 1, "not_evaluated": 2, "unmatched": 1, "pass_rate": 0.5}
    joke = next(c for c in summary["cases"] if c["case_id"] == "joke")
    assert (joke["sessions"], joke["not_evaluated"], joke["pass_rate"], joke["avg_score"]) == (2, 2, None, None)
    assert summary["versions"]["1.0.0"]["pass_rate"] == 1.0  # joke-1 does not dilute it

    console = Console(record=True, width=200)
    render_report(rows, console)
    text = console.export_text()
    assert "4 matched a golden case, 1 passed, 1 failed, 2 not evaluated, 1 unmatched; pass rate 50%" in text
    joke_row = next(line for line in text.splitlines() if "│ joke-1 " in line)
    assert "NOT EVALUATED" in joke_row and "0.00" not in joke_row and "PASS" not in joke_row

    assert cli_main(["report", "--db", str(db), "--session", "joke-1"]) == 0
    detail = capsys.readouterr().out
    assert "NOT EVALUATED" in detail and "0.00" not in detail
    assert re.search(r"trajectory_match: skipped score=- ", detail)
    assert cli_main(["report", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["not_evaluated"] == 2
    assert {s["session_id"]: s["verdict"] for s in data["sessions"]} == {s: v for s, (_, v) in VERDICTS.items()}


def test_render_session_of_a_passing_session_keeps_its_pass(world):
    _, db, _ = world
    row = next(r for r in current_evaluations([db]) if r.session_id == "tokyo-1")
    console = Console(record=True, width=200)
    render_session(SessionDetail.of(row), console)
    assert "tokyo-1 (revision 1): PASS" in console.export_text()


def _watch_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_watch_arguments(parser)
    return parser.parse_args(list(argv))


def test_watch_once_shows_not_evaluated_sessions_apart(world):
    _, db, _ = world
    console = Console(record=True, width=200)
    assert watch_main(_watch_args("--db", str(db), "--once", "--json"), console=console) == 0
    snap = json.loads(console.export_text())
    assert {
        k: snap["totals"][k] for k in ("matched", "passed", "failed", "not_evaluated", "unmatched", "pass_rate")
    } == {"matched": 4, "passed": 1, "failed": 1, "not_evaluated": 2, "unmatched": 1, "pass_rate": 0.5}
    latest = {r["session_id"]: (r["verdict"], r["score"]) for r in snap["latest"]}
    assert latest["joke-1"] == ("not_evaluated", None) and latest["tokyo-1"] == ("pass", 1.0)
    assert latest["tokyo-2"][0] == "fail"
    joke = next(c for c in snap["cases"] if c["case_id"] == "joke")
    assert (joke["not_evaluated"], joke["pass_rate"], joke["avg_score"]) == (2, None, None)

    console = Console(record=True, width=200)
    assert watch_main(_watch_args("--db", str(db), "--once"), console=console) == 0
    text = console.export_text()
    assert "1 passed, 1 failed, 2 not evaluated, 1 unmatched" in text
    row = next(line for line in text.splitlines() if "│ joke-2 " in line)
    assert "NOT EVALUATED" in row and "0.00" not in row


def test_dashboard_has_a_not_evaluated_tab_and_dashes_for_skipped_criteria(world):
    collector, _, _ = world
    with httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=10) as client:
        api = client.get("/ui/api/sessions").json()
        assert api["counts"] == {"all": 5, "passed": 1, "failed": 1, "not_evaluated": 2, "unmatched": 1, "pending": 0}
        assert {s["session_id"]: s["verdict"] for s in api["sessions"]} == {
            "tokyo-1": "pass",
            "tokyo-2": "fail",
            "joke-1": "not_evaluated",
            "joke-2": "not_evaluated",
            "revenue-2": "unmatched",
        }
        only = client.get("/ui/api/sessions", params={"result": "not_evaluated"}).json()
        assert {s["session_id"] for s in only["sessions"]} == {"joke-1", "joke-2"}
        page = client.get("/ui/", params={"result": "not_evaluated"}).text
        assert re.search(r'data-result="not_evaluated"[^>]*>not evaluated <span class="count">2</span>', page)
        row = re.search(r'<tr class="row-not_evaluated" data-session="joke-1">.*?</tr>', page).group(0)
        assert "NOT EVALUATED" in row and "0.00" not in row
        session = client.get("/ui/sessions/joke-1").text
        assert "NOT EVALUATED" in session
        for criterion in ("trajectory_match", "response_match"):
            cells = re.search(rf'<tr class="crit-skipped" data-criterion="{criterion}">(.*?)</tr>', session).group(1)
            assert '<td class="num">–</td>' in cells and "0.00" not in cells


def test_metrics_have_not_evaluated_series_outside_the_pass_rate(world):
    collector, _, _ = world
    lines = httpx.get(f"http://127.0.0.1:{collector.http_port}/metrics", timeout=10).text.splitlines()
    for expected in [
        'otel_eval_case_not_evaluated_total{case="joke"} 2',
        'otel_eval_case_evaluations_total{case="joke"} 0',
        'otel_eval_case_evaluations_total{case="weather_tokyo"} 2',
        'otel_eval_case_not_evaluated_total{case="weather_tokyo"} 0',
        'otel_eval_case_pass_rate{case="weather_tokyo"} 0.5',
        'otel_eval_version_not_evaluated_total{version="1.0.0"} 1',
        'otel_eval_version_pass_rate{version="1.0.0"} 1',
        'otel_eval_version_unmatched_total{version="2.0.0"} 1',
        "otel_eval_evaluations_total 2",
        "otel_eval_evaluations_passed_total 1",
        "otel_eval_evaluations_not_evaluated_total 2",
        "otel_eval_pass_rate 0.5",
    ]:
        assert expected in lines, expected
    # A case where nothing was ever checked has no pass rate (not 0) and no mean score.
    assert not any(
        line.startswith(('otel_eval_case_pass_rate{case="joke"}', 'otel_eval_case_score_mean{case="joke"}'))
        for line in lines
    )


def test_compare_counts_not_evaluated_apart(world):
    _, db, _ = world
    comparison = compare([db], "1.0.0", "2.0.0").to_dict()
    baseline, candidate = comparison["summary"]["baseline"], comparison["summary"]["candidate"]
    assert (baseline["matched"], baseline["passed"], baseline["not_evaluated"], baseline["pass_rate"]) == (2, 1, 1, 1.0)
    assert (candidate["matched"], candidate["passed"], candidate["not_evaluated"], candidate["pass_rate"]) == (
        2,
        0,
        1,
        0.0,
    )
    cases = {c["key"]: c for c in comparison["cases"]}
    assert cases["weather_tokyo"]["status"] == "regressed"
    assert cases["joke"]["status"] == "unchanged"
    assert cases["joke"]["baseline"] == {
        "evaluated": 0,
        "passed": 0,
        "not_evaluated": 1,
        "pass_rate": None,
        "mean_score": None,
    }


def test_exports_select_and_carry_the_verdict(world, tmp_path):
    _, db, _ = world

    def vertex(selection: SessionSelection) -> dict[str, str]:
        out = tmp_path / "vertex.jsonl"
        with open(out, "w", encoding="utf-8") as fh:
            export_sessions("vertex", [db], selection, fh)
        return {r["session_id"]: r["metadata"]["verdict"] for r in map(json.loads, out.read_text().splitlines())}

    assert vertex(SessionSelection()) == {
        "tokyo-1": "passed",
        "tokyo-2": "failed",
        "joke-1": "not_evaluated",
        "joke-2": "not_evaluated",
        "revenue-2": "unmatched",
    }
    assert vertex(SessionSelection(results=["not_evaluated"])) == {"joke-1": "not_evaluated", "joke-2": "not_evaluated"}
    with open(tmp_path / "set.json", "w", encoding="utf-8") as fh:
        export_sessions("evalset", [db], SessionSelection(session_ids=["tokyo-1", "joke-1"]), fh)
    cases = json.loads((tmp_path / "set.json").read_text())["eval_cases"]
    assert {c["metadata"]["session_id"]: c["metadata"]["verdict"] for c in cases} == {
        "tokyo-1": "passed",
        "joke-1": "not_evaluated",
    }
    with open(tmp_path / "bigsky.json", "w", encoding="utf-8") as fh:
        assert export_sessions("bigsky", [db], SessionSelection(results=["passed"]), fh).sessions == ["tokyo-1"]


def test_forwarded_results_carry_the_verdict_and_no_score_when_nothing_was_checked(world):
    _, _, sink = world

    def forwarded() -> dict[str, list[dict]] | None:
        by_session: dict[str, list[dict]] = {}
        for _, _, record in list(sink.records):
            a = attrs(record)
            by_session.setdefault(a.get("session.id"), []).append(a)
        return by_session if {"joke-1", "tokyo-1", "tokyo-2"} <= set(by_session) else None

    by_session = wait_until(forwarded, what="forwarded results of joke-1, tokyo-1 and tokyo-2")
    joke = by_session["joke-1"]
    assert {a["otel_eval.case.verdict"] for a in joke} == {"not_evaluated"}
    assert not any("otel_eval.case.score" in a for a in joke)
    # Skipped criteria, where forwarded at all, carry no score value.
    skipped = [a for a in joke if a["gen_ai.evaluation.score.label"] == "skipped"]
    assert not any("gen_ai.evaluation.score.value" in a for a in skipped)
    assert {a["otel_eval.case.verdict"] for a in by_session["tokyo-1"]} == {"passed"}
    assert {a["otel_eval.case.verdict"] for a in by_session["tokyo-2"]} == {"failed"}


V1_DUMP = ROOT / "tests" / "data" / "schema-v1.sql"


def v1_database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(V1_DUMP.read_text())
    conn.close()
    return path


def test_a_v1_database_migrates_its_passed_nothing_checked_session_to_not_evaluated(tmp_path):
    db = v1_database(tmp_path / "old.db")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT passed FROM evaluations WHERE session_id = 'joke-1'").fetchone() == (1,)  # the old PASS
    conn.close()
    # A reader (report opens the file read-only) migrates it first; the stored criteria decide.
    rows = {r.session_id: r for r in current_evaluations([db])}
    assert {sid: (r.case_id, r.verdict, r.passed) for sid, r in rows.items()} == {
        "tokyo-1": ("weather_tokyo", "passed", True),
        "tokyo-2": ("weather_tokyo", "failed", False),
        "joke-1": ("joke", "not_evaluated", False),
        "revenue-2": (None, "not_evaluated", False),
    }
    assert rows["joke-1"].score is None and rows["tokyo-2"].score == 0.3125
    assert all(c.score is None for c in rows["joke-1"].criteria if c.skipped)
    assert summarize_sessions(rows.values())["pass_rate"] == 0.5
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute(
        "SELECT case_id, not_evaluated, pass_rate FROM daily_pass_rate WHERE case_id = 'joke'"
    ).fetchall() == [("joke", 1, None)]
    assert [r[1] for r in conn.execute("PRAGMA table_info(trajectory_evaluations)")][-1] == "verdict"
    conn.close()


# --- the rule, against google-adk's own ----------------------------------------------------------

#: How each kind of criterion result reads as an ADK metric status.
_KINDS = {
    "passed": ("PASSED", dict(passed=True)),
    "failed": ("FAILED", dict(passed=False)),
    "errored": ("FAILED", dict(passed=False, error="judge timed out")),
    "skipped": ("NOT_EVALUATED", dict(passed=False, skipped=True, details={"reason": "nothing expected"})),
    "health, no limits": ("INFORMATIONAL", dict(passed=True, details={"violations": [], "limits": {}})),
    "health within limits": ("PASSED", dict(passed=True, details={"violations": [], "limits": {"max_steps": 9}})),
    "health over a limit": (
        "FAILED",
        dict(passed=False, details={"violations": [{"limit": "max_steps"}], "limits": {"max_steps": 1}}),
    ),
}


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(_KINDS)), max_size=6))
def test_the_verdict_is_adks_final_eval_status(reference_oracle, kinds):
    criteria = [
        CriterionResult(criterion=f"c{i}", score=0.5, threshold=0.5, **_KINDS[k][1]) for i, k in enumerate(kinds)
    ]
    adk = reference_oracle.ask({"op": "adk_final_status", "statuses": [_KINDS[k][0] for k in kinds]})["status"]
    assert verdict_of(criteria) == adk.lower()


def test_score_session_gives_a_case_with_nothing_to_check_not_evaluated_and_a_health_limit_a_verdict():
    from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalConfig, Invocation, MessageContent
    from otel_eval.scoring import score_session
    from otel_eval.trajectory import Trajectory, Turn

    case = EvalCase(
        eval_id="joke", conversation=[Invocation(invocation_id="j", user_content=MessageContent.user("Tell me a joke"))]
    )
    session = Trajectory("s", [Turn(index=0, trace_id="t", user_input="Tell me a joke", final_response="Knock knock")])
    nothing = score_session(session, case, EvalConfig.default())
    assert (nothing.verdict, nothing.passed) == ("not_evaluated", False)
    assert all(c.skipped for c in nothing.criterion_results if c.criterion != "health")
    unmatched = score_session(session, None, EvalConfig.default())
    assert unmatched.verdict == "not_evaluated"
    # With a health limit something is checked: the limit decides, matched or not.
    limited = EvalConfig(
        criteria={**EvalConfig.default().criteria, "health": CriterionConfig(options={"require_final_answer": True})}
    )
    assert score_session(session, case, limited).verdict == "passed"
    assert score_session(session, None, limited).verdict == "passed"
    silent = Trajectory("s", [Turn(index=0, trace_id="t", user_input="Tell me a joke", final_response="")])
    assert score_session(silent, case, limited).verdict == "failed"
