"""The judge never holds the line (issue 30): a real judge on 127.0.0.1 in every variant (slow,
refusing, 500, 429 with Retry-After, hanging, garbage), a real Engine and SQLite file."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from otel_eval import Engine, EngineSettings
from otel_eval.judging.breaker import CLOSED, HALF_OPEN, OPEN, Breaker
from otel_eval.judging.budget import Budget, Limits, exhausted
from otel_eval.judging.context import build_messages, cut
from otel_eval.judging.selection import filtered_out, sampled
from otel_eval.models import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent
from otel_eval.models.evalset import CriterionConfig, EvalConfig
from otel_eval.scoring import config_problems
from otel_eval.spans import SpanRecord
from otel_eval.trajectory import ActualToolCall
from tests.judge_server import JudgeServer, refusing_url
from tests.polling import wait_until

GOLDEN = EvalSet(
    eval_set_id="weather",
    eval_cases=[
        EvalCase(
            eval_id="tokyo",
            conversation=[
                Invocation(
                    invocation_id="t1",
                    user_content=MessageContent.user("What's the weather in Tokyo?"),
                    expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": "Tokyo"})],
                    expected_final_response=MessageContent.assistant("It is 22°C and sunny in Tokyo."),
                )
            ],
        )
    ],
)


def spans(n: int, answer: str = "It is 22°C and sunny in Tokyo.", tool_error: bool = False) -> list[SpanRecord]:
    """One ended session ``s<n>``: an agent root span and its get_weather tool call."""
    trace = f"{n + 1:032x}"
    common = {"session.id": f"s{n}"}
    root = SpanRecord(
        trace,
        f"{n + 1:016x}",
        None,
        "agent.invoke",
        1_000,
        9_000,
        attributes={
            **common,
            "openinference.span.kind": "AGENT",
            "input.value": "What's the weather in Tokyo?",
            "output.value": answer,
            "otel_eval.session.end": True,
        },
    )
    tool = SpanRecord(
        trace,
        f"{n + 1:08x}{0xABC:08x}",
        root.span_id,
        "get_weather",
        2_000,
        3_000,
        status="error" if tool_error else "unset",
        attributes={
            **common,
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": json.dumps({"city": "Tokyo"}),
            "input.mime_type": "application/json",
            "output.value": "22°C and sunny in Tokyo",
        },
    )
    return [root, tool]


def config(url: str, **options) -> EvalConfig:
    base = EvalConfig.default().criteria
    criteria = {name: cfg for name, cfg in base.items() if name in ("trajectory_match", "response_match")}
    criteria["llm_judge"] = CriterionConfig(
        threshold=0.7, options={"base_url": url, "max_retries": 1, "backoff": 0.05, "timeout": 2, **options}
    )
    return EvalConfig(criteria=criteria)


def engine(db, url, settings=None, **options) -> Engine:
    s = (settings or EngineSettings()).replace(config=config(url, **options), trace_quiet=0.05, session_idle=0.1)
    return Engine(db, golden=[GOLDEN], settings=s).start()


def latest(db, session_id="s0"):
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT * FROM evaluations WHERE session_id = ? AND superseded = 0", (session_id,)).fetchone()
    crit = (
        {
            r["criterion"]: dict(r)
            for r in conn.execute("SELECT * FROM criterion_results WHERE evaluation_id = ?", (row["id"],))
        }
        if row
        else {}
    )
    conn.close()
    return (dict(row) if row else None), crit


def revisions(db, session_id="s0"):
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT revision, verdict, judge_pending, superseded FROM evaluations WHERE session_id = ? ORDER BY revision",
        (session_id,),
    ).fetchall()
    conn.close()
    return rows


def judge_outcome(db, session_id="s0"):
    row, crit = latest(db, session_id)
    if row is None or row["judge_pending"]:
        return None
    return row, crit["llm_judge"]


# --- pure decisions ---------------------------------------------------------------------------


def test_breaker_opens_after_n_failures_and_probes_after_the_cooldown():
    b = Breaker(threshold=3, cooldown=10.0)
    for _ in range(2):
        b = b.failed(now=0.0)
    assert b.state == CLOSED and b.allows(0.0)[0]
    b = b.failed(now=1.0)
    assert b.state == OPEN and not b.allows(10.9)[0]
    allowed, b = b.allows(11.0)
    assert allowed and b.state == HALF_OPEN and not b.allows(11.0)[0]  # one probe at a time
    assert b.failed(12.0).state == OPEN and b.failed(12.0).until == 22.0
    assert b.succeeded().state == CLOSED and b.succeeded().failures == 0


def test_budget_windows_roll_over_and_count_calls_in_flight():
    limits = Limits(calls_per_hour=2, tokens_per_day=100)
    budget = Budget(limits)
    assert budget.try_reserve(0.0) is None and budget.try_reserve(1.0) is None
    assert budget.try_reserve(2.0).startswith("judge budget exhausted (2 of 2 calls per hour)")
    budget.settle(3.0, 40)
    budget.settle(3.0, 70)
    assert budget.try_reserve(4000.0) == "judge budget exhausted (110 of 100 tokens per day)"
    assert exhausted(limits, [(0.0, 1, 70)], now=86_400.0) is None  # a day later the window has rolled


def test_sampling_is_deterministic_by_session_id_and_near_the_rate():
    picked = [sampled(f"s{i}", 0.1) for i in range(5000)]
    assert picked == [sampled(f"s{i}", 0.1) for i in range(5000)]
    assert 400 < sum(picked) < 600
    assert sampled("x", 1.0) and not sampled("x", 0.0)


def test_when_filters():
    kw = dict(case_id="tokyo", agent_version="2.1", verdict="passed", tool_errors=0)
    assert filtered_out(None, **kw) is None
    assert filtered_out({"case_ids": ["tok*"], "agent_versions": ["2.*"], "verdict": "passed"}, **kw) is None
    assert (
        filtered_out({"verdict": "failed"}, **kw)
        == "not judged: the deterministic verdict is passed, when.verdict asks for failed"
    )
    assert "when.case_ids" in filtered_out({"case_ids": ["paris"]}, **kw)
    assert "tool errors" in filtered_out({"tool_errors": True}, **kw)


def test_judge_sees_the_tool_trajectory_and_cuts_with_a_marker():
    calls = [
        ActualToolCall(name="get_weather", args={"city": "Tokyo"}, result="22°C"),
        ActualToolCall(name="book", args={"x": 1}, error="timeout"),
    ]
    from otel_eval.metrics.judge import DEFAULT_RUBRICS

    text = build_messages(
        "q",
        "a" * 50_000,
        "ref",
        DEFAULT_RUBRICS,
        calls=calls,
        system="be nice",
        tools=[{"name": "get_weather", "description": "weather"}],
        max_chars=6000,
    )[1]["content"]
    assert '1. get_weather({"city": "Tokyo"}) -> 22°C' in text and "2. book" in text and "ERROR: timeout" in text
    assert "be nice" in text and "get_weather" in text and "[… truncated:" in text
    assert cut("abcdef", 3) == "abc\n[… truncated: 3 more characters not shown]"


def test_bad_judge_options_are_refused_with_the_closest_name():
    cfg = EvalConfig(
        criteria={
            "llm_judge": CriterionConfig(options={"sample_rat": 0.5, "sample_rate": 2, "when": {"verdic": "failed"}})
        }
    )
    problems = dict(config_problems(cfg))
    assert "did you mean 'sample_rate'" in problems["$.criteria.llm_judge.options.sample_rat"]
    reasons = [r for path, r in config_problems(cfg) if path == "$.criteria.llm_judge.options"]
    assert any("sample_rate must be a number from 0 to 1" in r for r in reasons)
    assert any("did you mean 'verdict'" in r for r in reasons)


# --- the engine with a real judge -----------------------------------------------------------------


def test_deterministic_verdict_first_then_the_judge_completes_it(tmp_path, capsys):
    db = tmp_path / "e.db"
    events, results = [], []
    with JudgeServer(delay=1.5) as judge:
        e = engine(db, judge.url)
        e.on_evaluation(events.append)
        e.add_listener(results.append)
        try:
            e.ingest(spans(0))
            row, crit = wait_until(lambda: latest(db)[0] and latest(db), timeout=10)
            # Stored before the judge answered: deterministic criteria decided, the judge pending.
            assert row["judge_pending"] == 1 and row["verdict"] == "passed"
            assert crit["llm_judge"]["skipped"] == 1 and json.loads(crit["llm_judge"]["details"])["judge"] == "pending"
            assert crit["trajectory_match"]["passed"] == 1
            # report says so, and which verdict it shows meanwhile.
            from otel_eval.cli import main as cli

            assert cli(["report", "--db", str(db)]) == 0
            shown = capsys.readouterr().out
            assert "PASS · judge pending" in shown and "1 session awaiting the judge" in shown
            row, judged = wait_until(lambda: judge_outcome(db), timeout=15)
            assert e.wait_idle(10)
        finally:
            e.close()
    assert judged["skipped"] == 0 and judged["score"] == 1.0 and judged["passed"] == 1
    assert revisions(db) == [(1, "passed", 1, 1), (2, "passed", 0, 0)]
    # Listeners hear both revisions; only one counts; on_result hears the session once.
    assert [(ev.revision, ev.judge_pending, ev.completes, ev.counted) for ev in events] == [
        (1, 1, None, False),
        (2, 0, 1, True),
    ]
    assert (
        events[1].trace_ids == events[0].trace_ids == (f"{1:032x}",)
        and events[1].evaluation_id > events[0].evaluation_id
    )
    assert events[1].result.criterion_results[-1].criterion == "health" and events[1].result.verdict == "passed"
    assert len(results) == 1 and results[0].criterion_results[-1].criterion in ("llm_judge", "health")
    stats = e.stats()
    assert stats["evaluations_total"] == 1 and stats["sessions_scored"] == 1
    # The judge saw the tool trajectory.
    assert 'get_weather({"city": "Tokyo"})' in judge.requests[0]["messages"][1]["content"]


@pytest.mark.parametrize("mode", ["refuse", "500", "garbage"])
def test_a_judge_fault_is_not_evaluated_with_the_reason_never_a_fail(tmp_path, mode):
    db = tmp_path / "e.db"
    with JudgeServer(mode=mode if mode != "refuse" else "ok") as judge:
        url = refusing_url() if mode == "refuse" else judge.url
        e = engine(db, url)
        try:
            for i in range(3):
                e.ingest(spans(i))
            outcomes = [wait_until(lambda i=i: judge_outcome(db, f"s{i}"), timeout=20) for i in range(3)]
        finally:
            e.close()
    for row, crit in outcomes:
        assert row["verdict"] == "passed"  # the agent did its job; our judge failing is no FAIL
        assert crit["skipped"] == 1 and crit["error"]
        assert json.loads(crit["details"])["judge"] == ("invalid_answer" if mode == "garbage" else "unavailable")
    error = outcomes[0][1]["error"]
    if mode == "refuse":
        assert "cannot reach 127.0.0.1" in error
    elif mode == "500":
        assert error.startswith("HTTP 500 from ") and "gave up after 2 attempt(s)" in error
    else:
        assert error.startswith("judge answer is not JSON: 'I think the answer is fine, really!")
        assert len(error) < 260  # the first 200 characters of the answer, no more


def test_429_retry_after_is_honoured(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer(mode="429", retry_after="1") as judge:
        e = engine(db, judge.url, max_retries=2)
        try:
            e.ingest(spans(0))
            wait_until(lambda: len(judge.times) >= 1)
            judge.mode = "ok"
            row, crit = wait_until(lambda: judge_outcome(db), timeout=15)
        finally:
            e.close()
    assert crit["skipped"] == 0 and crit["score"] == 1.0
    assert judge.times[1] - judge.times[0] >= 0.95  # waited the Retry-After, not the 0.05 s backoff


def test_a_hanging_judge_never_stalls_scoring_and_every_outcome_is_recorded_by_the_deadline(tmp_path):
    db = tmp_path / "e.db"
    settings = EngineSettings(
        judge_deadline=3.0, judge_concurrency=4, judge_breaker_failures=3, judge_breaker_cooldown=60
    )
    with JudgeServer(mode="hang") as judge:
        e = engine(db, judge.url, settings=settings, timeout=30, max_retries=0)
        try:
            started = time.monotonic()
            for i in range(20):
                e.ingest(spans(i))
            # Deterministic verdicts are all stored while every judge call hangs.
            wait_until(lambda: all(latest(db, f"s{i}")[0] for i in range(20)), timeout=10)
            assert time.monotonic() - started < 3.0
            outcomes = [wait_until(lambda i=i: judge_outcome(db, f"s{i}"), timeout=30) for i in range(20)]
            took = time.monotonic() - started
            stats = e.stats()["judge"]
            # At most 4 calls in flight: no more requests arrived before the first ones timed out.
            assert len([t for t in judge.times if t - judge.times[0] < 2.5]) <= 4
        finally:
            e.close()
    assert took < 3.0 + 5.0  # the deadline, plus scheduling slack: nothing waits for the judge
    reasons = {crit["error"] for _, crit in outcomes}
    assert all(row["verdict"] == "passed" for row, _ in outcomes)
    # The calls out time out just before the deadline (and open the breaker); the rest fail fast.
    timed_out = {r for r in reasons if r.startswith("timed out after 2.7")}
    assert timed_out and all(
        r.startswith(("judge circuit open after", "no free judge slot before the judge deadline"))
        for r in reasons - timed_out
    ), reasons
    assert stats["calls"]["circuit_opened"] == 1


def test_queue_full_is_recorded_and_counted(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer(delay=1.0) as judge:
        e = engine(db, judge.url, settings=EngineSettings(judge_queue=1))
        try:
            for i in range(4):
                e.ingest(spans(i))
            outcomes = [wait_until(lambda i=i: judge_outcome(db, f"s{i}"), timeout=20) for i in range(4)]
            stats = e.stats()["judge"]
        finally:
            e.close()
    full = [
        crit for _, crit in outcomes if crit["skipped"] and "judge queue full" in json.loads(crit["details"])["reason"]
    ]
    assert full and stats["calls"]["queue_full"] == len(full)
    assert any(crit["skipped"] == 0 for _, crit in outcomes)


def test_budget_caps_calls_per_hour_across_a_restart(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer() as judge:
        e = engine(db, judge.url, max_calls_per_hour=2)
        try:
            for i in range(3):
                e.ingest(spans(i))
                wait_until(lambda i=i: judge_outcome(db, f"s{i}"), timeout=15)
            assert e.stats()["judge"]["connections_opened"] == 1  # keep-alive: one connection for both calls
        finally:
            e.close()
        e = engine(db, judge.url, max_calls_per_hour=2)  # the spend is remembered
        try:
            e.ingest(spans(3))
            wait_until(lambda: judge_outcome(db, "s3"), timeout=15)
        finally:
            e.close()
    judged = [judge_outcome(db, f"s{i}")[1] for i in range(4)]
    assert [c["skipped"] for c in judged] == [0, 0, 1, 1]
    assert json.loads(judged[2]["details"])["reason"] == "judge budget exhausted (2 of 2 calls per hour)"
    assert len(judge.requests) == 2


def test_sampling_and_filters_skip_with_the_reason(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer() as judge:
        e = engine(db, judge.url, sample_rate=0.5, when={"verdict": "passed"})
        try:
            for i in range(10):
                e.ingest(spans(i, answer="no idea" if i == 0 else "It is 22°C and sunny in Tokyo."))
            wait_until(lambda: all(judge_outcome(db, f"s{i}") for i in range(10)), timeout=20)
        finally:
            e.close()
    for i in range(10):
        _, crit = latest(db, f"s{i}")
        reason = json.loads(crit["llm_judge"]["details"]).get("reason", "")
        if i == 0:
            assert reason.startswith("not judged: the deterministic verdict is failed")
        elif sampled(f"s{i}", 0.5):
            assert crit["llm_judge"]["skipped"] == 0
        else:
            assert reason == "not sampled (sample_rate 0.5)"


def test_num_samples_are_aggregated_with_their_spread(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer() as judge:
        e = engine(db, judge.url, num_samples=3)
        try:
            e.ingest(spans(0))
            _, crit = wait_until(lambda: judge_outcome(db), timeout=15)
            opened = e.stats()["judge"]["connections_opened"]
        finally:
            e.close()
    details = json.loads(crit["details"])
    assert len(judge.requests) == 3 and details["num_samples"] == 3
    assert opened <= 3  # the three samples go at once
    assert details["per_turn"][0]["samples"]["scores"] == [1.0, 1.0, 1.0]


def test_judge_work_pending_at_shutdown_resumes_after_a_restart_and_is_charged_once(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer(mode="hang") as judge:
        e = engine(db, judge.url, timeout=30)
        e.ingest(spans(0))
        wait_until(lambda: judge.requests)
        e.close()  # the judge never answered: the job stays queued
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status FROM judge_jobs").fetchall() == [("queued",)]
    conn.close()
    with JudgeServer() as judge:
        e = engine(db, judge.url)
        try:
            _, crit = wait_until(lambda: judge_outcome(db), timeout=15)
        finally:
            e.close()
        assert len(judge.requests) == 1
    assert crit["skipped"] == 0 and crit["score"] == 1.0
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status, request FROM judge_jobs").fetchall() == [("done", "{}")]  # messages dropped
    assert conn.execute("SELECT SUM(calls), SUM(tokens) FROM judge_usage").fetchone() == (1, 30)
    conn.close()


def test_after_an_outage_the_sessions_skipped_are_judged_once_when_it_is_back(tmp_path):
    db = tmp_path / "e.db"
    settings = EngineSettings(judge_breaker_failures=2, judge_breaker_cooldown=0.5)
    with JudgeServer(mode="500") as judge:
        e = engine(db, judge.url, settings=settings, max_retries=0)
        try:
            for i in range(3):
                e.ingest(spans(i))
            for i in range(3):
                wait_until(lambda i=i: judge_outcome(db, f"s{i}"), timeout=15)
            assert all(judge_outcome(db, f"s{i}")[1]["skipped"] for i in range(3))
            judge.mode = "ok"
            e.ingest(spans(3))  # the judge answers again: the outage's sessions are judged once
            wait_until(lambda: all(not judge_outcome(db, f"s{i}")[1]["skipped"] for i in range(4)), timeout=20)
        finally:
            e.close()
    assert [r[:3] for r in revisions(db, "s0")] == [(1, "passed", 1), (2, "passed", 0), (3, "passed", 0)]
    assert e.stats()["evaluations_total"] == 4  # backfills update the verdict, they are not counted again


# --- the collector, with a score worker process --------------------------------------------------


def test_collector_counts_each_session_once_and_exports_the_judge_pool(start_collector):
    from tests.test_metrics_prometheus import GOLDEN as EXAMPLE_GOLDEN
    from tests.test_metrics_prometheus import SESSIONS, scrape, send_sessions

    base = EvalConfig.default()
    with JudgeServer(delay=0.5) as judge:
        criteria = dict(base.criteria)
        criteria["llm_judge"] = CriterionConfig(threshold=0.7, options={"base_url": judge.url})
        collector = start_collector(
            golden=EXAMPLE_GOLDEN, eval_config=EvalConfig(criteria=criteria), score_workers=1, judge_concurrency=32
        )
        assert collector.engine.settings.judge_concurrency == 32
        send_sessions(collector, SESSIONS)  # returns once every deterministic verdict is stored
        wait_until(lambda: collector.engine.stats()["evaluations_judge_completed"] == 4, timeout=20)
        lines = scrape(collector)
    for expected in [
        "otel_eval_sessions_scored_total 5",
        "otel_eval_evaluations_total 4",
        "otel_eval_evaluations_judge_pending_total 4",
        "otel_eval_evaluations_judge_completed_total 4",
        'otel_eval_judge_calls_total{outcome="ok"} 4',
        "otel_eval_judge_tokens_total 120",
        "otel_eval_judge_call_duration_seconds_count 4",
        "otel_eval_judge_circuit_state 0",
        "otel_eval_judge_queue_capacity 10000",
        'otel_eval_case_evaluations_total{case="weather_tokyo"} 2',
    ]:
        assert expected in lines, expected
    assert any(line.startswith("otel_eval_judge_calls_in_flight ") for line in lines)


def test_collector_flags_for_the_judge_pool():
    from collector.config import load_config

    config = load_config(
        ["--judge-concurrency", "32", "--judge-queue", "100"], environ={"OTEL_EVAL_JUDGE_DEADLINE": "20"}
    )
    assert (config.judge_concurrency, config.judge_queue, config.judge_deadline) == (32, 100, 20.0)


# --- rescore --judge-only: a backfill of stored sessions ---------------------------------------------


def test_rescore_judge_only_backfills_within_the_budget_and_resumes(tmp_path, capsys, monkeypatch):
    from otel_eval.cli import main

    monkeypatch.delenv("OTEL_EVAL_JUDGE_BASE_URL", raising=False)
    db = tmp_path / "e.db"
    e = engine(db, "")  # no judge endpoint: the judge criterion is skipped when scored live
    try:
        for i in range(3):
            e.ingest(spans(i))
        wait_until(lambda: all(latest(db, f"s{i}")[0] for i in range(3)))
    finally:
        e.close()
    assert "no judge endpoint" in json.loads(latest(db)[1]["llm_judge"]["details"])["reason"]
    with JudgeServer() as judge:
        toml = tmp_path / "judge.toml"
        toml.write_text(
            f'[criteria.trajectory_match]\nthreshold = 0.8\n[criteria.llm_judge]\nthreshold = 0.7\n'
            f'[criteria.llm_judge.options]\nbase_url = "{judge.url}"\nmax_calls_per_hour = 2\n'
        )
        assert main(["rescore", "--db", str(db), "--config", str(toml), "--judge-only"]) == 0
        first = capsys.readouterr().out
        assert "judged 2 session(s); 0 skipped; 1 left for the next run" in first
        assert "judge budget exhausted (2 of 2 calls per hour)" in first
        assert main(["rescore", "--db", str(db), "--config", str(toml), "--judge-only"]) == 0
        again = capsys.readouterr().out  # the spend of the first run counts: still nothing left this hour
        assert "judged 0 session(s); 2 skipped; 1 left for the next run" in again
        toml.write_text(toml.read_text().replace("max_calls_per_hour = 2", "max_calls_per_hour = 10"))
        assert main(["rescore", "--db", str(db), "--config", str(toml), "--judge-only", "--case", "tok*"]) == 0
        second = capsys.readouterr().out
        assert "judged 1 session(s); 2 skipped; 0 left for the next run" in second
        assert len(judge.requests) == 3  # no session judged twice
    for i in range(3):
        row, crit = latest(db, f"s{i}")
        assert crit["llm_judge"]["skipped"] == 0 and crit["llm_judge"]["score"] == 1.0 and row["verdict"] == "passed"


def test_an_unknown_judge_option_exits_2_naming_the_closest(tmp_path, capsys):
    from otel_eval.cli import main

    toml = tmp_path / "c.toml"
    toml.write_text('[criteria.llm_judge.options]\nsample_rat = 0.1\n')
    db = tmp_path / "e.db"
    Engine(db, golden=[GOLDEN]).start().close()
    assert main(["rescore", "--db", str(db), "--config", str(toml), "--judge-only"]) == 2
    err = capsys.readouterr().err
    assert "sample_rat" in err and "did you mean 'sample_rate'" in err


def test_kill_9_loses_no_judge_work_and_charges_each_judgment_once(tmp_path):
    """A real collector process: sessions stored with their judge pending (the judge hangs), then
    SIGKILL; the restarted collector judges every one of them, once."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from examples.weather_agent import run_session
    from examples.weather_agent.agent import agent_resource
    from tests.test_collector_process import CollectorProcess
    from tests.test_metrics_prometheus import GOLDEN as EXAMPLE_GOLDEN

    db = tmp_path / "eval.db"
    with JudgeServer(mode="hang") as judge:
        toml = tmp_path / "c.toml"
        toml.write_text(
            f'[criteria.trajectory_match]\nthreshold = 0.8\n[criteria.llm_judge]\nthreshold = 0.7\n'
            f'[criteria.llm_judge.options]\nbase_url = "{judge.url}"\ntimeout = 60\n'
        )
        args = [
            "--db",
            str(db),
            "--config",
            str(toml),
            "--trace-quiet",
            "0.05",
            "--session-idle",
            "0.1",
            *[a for g in EXAMPLE_GOLDEN for a in ("--golden", g)],
        ]
        collector = CollectorProcess(*args)
        try:
            provider = TracerProvider(resource=agent_resource("1.0.0"))
            provider.add_span_processor(
                SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.traces_url, timeout=10))
            )
            for i in range(3):
                run_session(provider, f"k{i}", ["What's the weather in Tokyo?"], version="1.0.0", mark_end=True)
            provider.shutdown()

            def queued():
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                try:
                    return conn.execute("SELECT COUNT(*) FROM judge_jobs WHERE status = 'queued'").fetchone()[0] == 3
                except sqlite3.OperationalError:
                    return False
                finally:
                    conn.close()

            wait_until(queued, timeout=20)
            wait_until(lambda: len(judge.requests) == 3)
        finally:
            collector.proc.kill()  # SIGKILL while every judge call is out
            collector.proc.wait(10)
        assert all(latest(db, f"k{i}")[0]["judge_pending"] == 1 for i in range(3))
        judge.mode = "ok"
        restarted = CollectorProcess(*args)
        try:
            outcomes = [wait_until(lambda i=i: judge_outcome(db, f"k{i}"), timeout=30) for i in range(3)]
        finally:
            assert restarted.stop() == 0
    for row, crit in outcomes:
        assert crit["skipped"] == 0 and row["verdict"] == "passed" and row["revision"] == 2
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT SUM(calls) FROM judge_usage").fetchone()[0] == 3
    assert conn.execute("SELECT status, COUNT(*) FROM judge_jobs GROUP BY status").fetchall() == [("done", 3)]
    conn.close()


def test_unmatched_sessions_are_judged_only_when_asked(tmp_path):
    db = tmp_path / "e.db"
    import dataclasses

    def other(n):
        return [
            dataclasses.replace(s, attributes={**s.attributes, "input.value": "Tell me a joke"})
            if s.parent_span_id is None
            else s
            for s in spans(n)
        ]

    with JudgeServer() as judge:
        e = engine(db, judge.url, when={"unmatched": "only"})
        try:
            e.ingest(spans(0))
            e.ingest(other(1))
            wait_until(lambda: judge_outcome(db, "s0") and judge_outcome(db, "s1"), timeout=15)
        finally:
            e.close()
    matched, unmatched = latest(db, "s0"), latest(db, "s1")
    assert (
        matched[0]["case_id"] == "tokyo"
        and "when.unmatched" in json.loads(matched[1]["llm_judge"]["details"])["reason"]
    )
    assert unmatched[0]["case_id"] is None and unmatched[1]["llm_judge"]["skipped"] == 0
    assert "Reference answer" not in judge.requests[0]["messages"][1]["content"]


def test_a_retry_after_past_the_deadline_gives_up_at_once_with_the_429(tmp_path):
    db = tmp_path / "e.db"
    with JudgeServer(mode="429", retry_after="30") as judge:
        e = engine(db, judge.url, settings=EngineSettings(judge_deadline=20.0), max_retries=3)
        try:
            started = time.monotonic()
            e.ingest(spans(0))
            _, crit = wait_until(lambda: judge_outcome(db), timeout=15)
            took = time.monotonic() - started
        finally:
            e.close()
    assert took < 10 and len(judge.requests) == 1  # no 30 s wait that the deadline would cut anyway
    assert crit["error"].startswith("HTTP 429 from ") and "past the judge deadline" in crit["error"]


def test_dashboard_marks_judge_pending_and_not_sampled_sessions(start_collector):
    import httpx

    from tests.test_metrics_prometheus import GOLDEN as EXAMPLE_GOLDEN
    from tests.test_metrics_prometheus import send_sessions

    with JudgeServer(delay=2.0) as judge:
        criteria = dict(EvalConfig.default().criteria)
        criteria["llm_judge"] = CriterionConfig(threshold=0.7, options={"base_url": judge.url})
        criteria["second_opinion"] = CriterionConfig(
            threshold=0.7, options={"kind": "llm_judge", "base_url": judge.url, "sample_rate": 0}
        )
        collector = start_collector(golden=EXAMPLE_GOLDEN, eval_config=EvalConfig(criteria=criteria), ui=True)
        send_sessions(collector, [("1.0.0", "d1", "What's the weather in Tokyo?")])
        with httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=10) as client:
            pending = client.get("/ui/").text
            wait_until(lambda: collector.engine.stats()["evaluations_judge_completed"] == 1, timeout=20)
            done = client.get("/ui/").text
            session = client.get("/ui/sessions/d1").text
    assert 'class="badge j-pending">judge pending' in pending
    assert "j-pending" not in done and 'class="badge j-not-sampled">not sampled' in done
    assert "not sampled (sample_rate 0)" in session


def test_late_spans_while_the_judge_is_pending_leave_the_old_job_stale_and_count_once(tmp_path):
    import dataclasses

    db = tmp_path / "e.db"
    with JudgeServer(delay=1.5) as judge:
        e = engine(db, judge.url)
        try:
            e.ingest(spans(0))
            wait_until(lambda: latest(db)[0] and latest(db)[0]["judge_pending"])
            late = dataclasses.replace(spans(0)[1], span_id="00000000000000ff", name="get_weather_again")
            e.ingest([late])  # re-opens the session: scored again as revision 2, its own judge job
            wait_until(lambda: judge_outcome(db) and judge_outcome(db)[0]["revision"] == 3, timeout=20)
            assert e.wait_idle(10)
            stats = e.stats()
        finally:
            e.close()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status FROM judge_jobs ORDER BY evaluation_id").fetchall() == [("stale",), ("done",)]
    conn.close()
    # The late call makes the trajectory fail its EXACT match: revision 2 is that scoring, pending.
    assert [r[:3] for r in revisions(db)] == [(1, "passed", 1), (2, "failed", 1), (3, "failed", 0)]
    assert stats["evaluations_total"] == 1  # the first scoring never completed: the session counts once


def test_a_version_5_database_opens_its_evaluations_complete_and_gets_judged_from_now_on(tmp_path):
    from tests.old_schema import database_at_version

    db = database_at_version(tmp_path / "v5.db", 5)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO sessions (session_id, status, revision) VALUES ('old', 'scored', 1)")
    conn.execute(
        "INSERT INTO evaluations (session_id, revision, case_id, passed, verdict, score, superseded)"
        " VALUES ('old', 1, 'tokyo', 1, 'passed', 1.0, 0)"
    )
    conn.commit()
    conn.close()
    with JudgeServer() as judge:
        e = engine(db, judge.url)
        try:
            e.ingest(spans(0))
            _, crit = wait_until(lambda: judge_outcome(db), timeout=15)
        finally:
            e.close()
    assert latest(db, "old")[0]["judge_pending"] == 0 and latest(db, "old")[0]["verdict"] == "passed"
    assert crit["skipped"] == 0


def test_forwarding_sends_deterministic_criteria_first_and_the_judge_once(start_collector):
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc

    from tests.test_export_otel import LogSink, attrs
    from tests.test_metrics_prometheus import GOLDEN as EXAMPLE_GOLDEN
    from tests.test_metrics_prometheus import send_sessions

    sink = LogSink()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(sink, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with JudgeServer(delay=2.0) as judge:
            criteria = {n: c for n, c in EvalConfig.default().criteria.items() if n != "llm_judge"}
            criteria["llm_judge"] = CriterionConfig(threshold=0.7, options={"base_url": judge.url})
            collector = start_collector(
                golden=EXAMPLE_GOLDEN,
                eval_config=EvalConfig(criteria=criteria),
                forward_results=f"grpc://127.0.0.1:{port}",
            )
            send_sessions(collector, [("1.0.0", "f1", "What's the weather in Tokyo?")])
            early = [attrs(r[2]) for r in sink.wait_for(2)]
            assert judge.requests and not any(a["gen_ai.evaluation.name"] == "llm_judge" for a in early)
            wait_until(
                lambda: any(attrs(r[2])["gen_ai.evaluation.name"] == "llm_judge" for r in sink.records), timeout=20
            )
            collector.forwarding.results.force_flush()
        names = [attrs(r[2])["gen_ai.evaluation.name"] for r in sink.records]
    finally:
        server.stop(0)
    assert names.count("llm_judge") == 1 and names.count("trajectory_match") == 1 and len(names) == len(set(names))


@pytest.mark.parametrize("mode", ["ok", "refuse"])
def test_rescore_judges_through_the_pool_and_records_a_fault_as_not_evaluated(tmp_path, monkeypatch, mode):
    from otel_eval.rescore import rescore

    monkeypatch.delenv("OTEL_EVAL_JUDGE_BASE_URL", raising=False)
    db = tmp_path / "e.db"
    e = engine(db, "")
    try:
        for i in range(3):
            e.ingest(spans(i))
        wait_until(lambda: all(latest(db, f"s{i}")[0] for i in range(3)))
    finally:
        e.close()
    with JudgeServer(delay=0.5) as judge:
        url = judge.url if mode == "ok" else refusing_url()
        started = time.monotonic()
        changes = rescore(db, config=config(url, max_retries=0))
        took = time.monotonic() - started
    assert took < 10 and [c.after_revision for c in changes] == [3, 3, 3]  # rescored (2), then judged (3)
    for i in range(3):
        row, crit = latest(db, f"s{i}")
        assert row["verdict"] == "passed" and row["judge_pending"] == 0
        assert crit["llm_judge"]["skipped"] == (0 if mode == "ok" else 1)
    if mode == "ok":
        assert max(judge.max_in_flight, 1) >= 2  # judged at once, not one after another
