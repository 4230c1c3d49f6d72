"""Alert rules: validation, windowed values, fire-once/resolve, webhooks to a real local HTTP server,
the database-polling monitor and the collector wiring."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from collector.app import Collector
from collector.config import CollectorConfig, Endpoint, load_config
from examples.weather_agent import run_session
from examples.weather_agent.agent import agent_resource
from otel_eval.alerts import (
    FIRING,
    RESOLVED,
    AlertEvaluator,
    AlertMonitor,
    AlertRule,
    Notifier,
    load_rules,
    row_from_result,
    rule_values,
)
from otel_eval.errors import InputError
from otel_eval.read.feed import EvaluationRow
from otel_eval.read.times import iso_utc
from tests.polling import wait_until
from tests.test_watch import ROOT, record_sessions

T0 = 1_800_000_000.0
GOLDEN = str(ROOT / "examples/golden/weather.evalset.json")


# --- a real webhook receiver -------------------------------------------------------------------


class Webhook:
    """ThreadingHTTPServer on a free loopback port that records every POST body.

    ``statuses`` are answered in order (the last one repeats); ``hold`` makes handlers wait for it."""

    def __init__(self, statuses: tuple[int, ...] = (200,), delay: float = 0.0):
        self.statuses = list(statuses)
        self.delay = delay
        self.bodies: list[dict[str, Any]] = []
        self.hold: threading.Event | None = None
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with hook.lock:
                    hook.bodies.append({"body": body, "content_type": self.headers["Content-Type"]})
                    status = hook.statuses.pop(0) if len(hook.statuses) > 1 else hook.statuses[0]
                if hook.hold is not None:
                    hook.hold.wait(5)
                if hook.delay:
                    time.sleep(hook.delay)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        wait_until(lambda: len(self.bodies) >= count, timeout=timeout, what=f"{count} webhook call(s)")
        with self.lock:
            return [b["body"] for b in self.bodies]

    def close(self) -> None:
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Any]:
    made: list[Webhook] = []

    def make(*statuses: int, delay: float = 0.0) -> Webhook:
        hook = Webhook(statuses or (200,), delay)
        made.append(hook)
        return hook

    yield make
    for hook in made:
        hook.close()


def row(
    session: str,
    case: str | None,
    passed: bool,
    at: float,
    version: str = "1.0.0",
    tool_calls: int = 1,
    tool_errors: int = 0,
    steps: int = 3,
    revision: int = 1,
) -> EvaluationRow:
    return EvaluationRow(
        id=hash((session, revision)) & 0xFFFF,
        db="db",
        session_id=session,
        revision=revision,
        case_id=case,
        agent_version=version,
        passed=passed,
        score=1.0 if passed else 0.0,
        created_at=iso_utc(at),
        health={"tool_calls": tool_calls, "tool_errors": tool_errors, "steps": steps},
    )


# --- rules ---------------------------------------------------------------------------------------


def test_rule_defaults_and_name():
    rule = AlertRule.from_dict({"metric": "pass_rate", "case": "weather_tokyo", "below": 0.8})
    assert rule == AlertRule(
        name="pass_rate case=weather_tokyo",
        metric="pass_rate",
        threshold=0.8,
        comparison="below",
        case="weather_tokyo",
        window_s=900.0,
        min_sessions=5,
    )
    named = AlertRule.from_dict(
        {
            "name": "loops",
            "metric": "repeated_calls",
            "above": 2,
            "window_minutes": 5,
            "min_sessions": 1,
            "webhook": "https://hooks.example.com/x",
        }
    )
    assert (named.name, named.threshold, named.window_s, named.min_sessions) == ("loops", 2.0, 300.0, 1)


@pytest.mark.parametrize(
    "table, location, reason",
    [
        ({"metric": "pass_rate", "below": 0.8, "treshold": 1}, "$.alerts[0].treshold", "unknown alert key 'treshold'"),
        ({"below": 0.8}, "$.alerts[0].metric", "missing required key 'metric'"),
        ({"metric": "pass_rat", "below": 0.8}, "$.alerts[0].metric", "unknown metric 'pass_rat'"),
        ({"metric": "pass_rate", "below": 0.8, "above": 0.1}, "$.alerts[0]", "give exactly one of 'below' or 'above'"),
        ({"metric": "pass_rate", "above": 0.8}, "$.alerts[0].above", "a pass_rate rule fires when the rate drops"),
        ({"metric": "tool_error_rate", "below": 0.1}, "$.alerts[0].below", "a tool_error_rate rule fires when"),
        ({"metric": "pass_rate", "below": 80}, "$.alerts[0].below", "must be between 0 and 1, got 80"),
        ({"metric": "steps", "above": "ten"}, "$.alerts[0].above", "expected a number, got 'ten'"),
        (
            {"metric": "pass_rate", "below": 0.8, "min_sessions": 0},
            "$.alerts[0].min_sessions",
            "expected a whole number of at least 1, got 0",
        ),
        (
            {"metric": "pass_rate", "below": 0.8, "window_minutes": 0},
            "$.alerts[0].window_minutes",
            "must be greater than 0",
        ),
        (
            {"metric": "pass_rate", "below": 0.8, "webhook": "hooks.example.com"},
            "$.alerts[0].webhook",
            "expected an http:// or https:// URL",
        ),
        (
            {"metric": "unmatched_share", "above": 0.3, "case": "x"},
            "$.alerts[0].case",
            "an unmatched session has no case",
        ),
    ],
)
def test_bad_rules_name_the_file_key_and_reason(table, location, reason):
    with pytest.raises(InputError) as err:
        load_rules([table], "collector.toml")
    assert err.value.source == "collector.toml"
    assert err.value.location == location
    assert err.value.reason.startswith(reason), err.value.reason


def test_duplicate_rule_names_are_refused():
    with pytest.raises(InputError) as err:
        load_rules(
            [{"name": "a", "metric": "steps", "above": 9}, {"name": "a", "metric": "steps", "above": 3}], "c.toml"
        )
    assert (err.value.location, err.value.reason) == (
        "$.alerts[1].name",
        "alert name 'a' is already used by $.alerts[0]",
    )


def test_toml_alerts_reach_the_rules_with_file_and_path(tmp_path: Path):
    config_file = tmp_path / "collector.toml"
    config_file.write_text(
        '[[alerts]]\nmetric = "pass_rate"\nversion = "*"\nbelow = 0.9\n\n'
        '[[alerts]]\nmetric = "unmatched_share"\nabove = 1.5\n'
    )
    config = load_config(["--config", str(config_file)], environ={})
    with pytest.raises(InputError) as err:
        Collector(config, engine=object())
    assert (err.value.source, err.value.location) == (str(config_file), "$.alerts[1].above")
    assert err.value.reason == "must be between 0 and 1, got 1.5"


# --- values --------------------------------------------------------------------------------------


def test_rule_values_per_scope_window_and_min_sessions():
    rows = [
        row("a", "tokyo", False, T0 - 10, "2.0.0"),
        row("b", "tokyo", False, T0 - 20, "2.0.0"),
        row("c", "tokyo", True, T0 - 30, "1.0.0"),
        row("d", "paris", True, T0 - 40, "1.0.0"),
        row("e", None, False, T0 - 50, "1.0.0"),
        row("old", "tokyo", True, T0 - 1000, "1.0.0"),  # outside a 10 minute window
    ]
    rule = AlertRule.from_dict(
        {"metric": "pass_rate", "case": "tokyo", "below": 0.8, "window_minutes": 10, "min_sessions": 3}
    )
    assert rule_values(rule, rows, T0) == {(("case", "tokyo"),): (1 / 3, 3)}
    each = AlertRule.from_dict({"metric": "pass_rate", "version": "*", "below": 0.8, "min_sessions": 2})
    assert rule_values(each, rows, T0) == {(("version", "2.0.0"),): (0.0, 2), (("version", "1.0.0"),): (1.0, 2)}
    needs_more = AlertRule.from_dict({"metric": "pass_rate", "case": "paris", "below": 0.8, "min_sessions": 2})
    assert rule_values(needs_more, rows, T0) == {}
    unmatched = AlertRule.from_dict(
        {"metric": "unmatched_share", "above": 0.1, "window_minutes": 10, "min_sessions": 1}
    )
    assert rule_values(unmatched, rows, T0) == {(): (0.2, 5)}


def test_tool_error_rate_is_errors_over_calls_and_other_health_metrics_are_means():
    rows = [
        row("a", "t", True, T0, tool_calls=4, tool_errors=3, steps=10),
        row("b", "t", True, T0, tool_calls=0, tool_errors=0, steps=1),
        row("c", None, False, T0, tool_calls=4, tool_errors=0, steps=4),
    ]
    errors = AlertRule.from_dict({"metric": "tool_error_rate", "above": 0.2, "min_sessions": 1})
    assert rule_values(errors, rows, T0) == {(): (0.375, 3)}
    steps = AlertRule.from_dict({"metric": "steps", "above": 4, "min_sessions": 1})
    assert rule_values(steps, rows, T0) == {(): (5.0, 3)}


# --- fire once, resolve once -----------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.events: list = []

    def notify(self, event) -> None:
        self.events.append(event)


def test_fires_once_until_resolved_and_keeps_state_without_enough_data():
    rule = AlertRule.from_dict(
        {"name": "tokyo", "metric": "pass_rate", "case": "tokyo", "below": 0.5, "window_minutes": 10, "min_sessions": 2}
    )
    notes = Recorder()
    evaluator = AlertEvaluator([rule], notes)
    evaluator.observe_many([row("a", "tokyo", False, T0 - 5), row("b", "tokyo", False, T0 - 4)])
    fired = evaluator.evaluate(T0)
    assert [(e.status, e.scope, e.value, e.sessions) for e in fired] == [(FIRING, {"case": "tokyo"}, 0.0, 2)]
    assert fired[0].message == (
        "alert 'tokyo' firing: pass_rate of case tokyo is 0, below 0.5 over the last 10 min (2 sessions)"
    )
    evaluator.observe(row("c", "tokyo", False, T0 - 3))
    assert evaluator.evaluate(T0) == []  # still failing: no second notification
    # The window slides past every session: no data is not a recovery.
    assert evaluator.evaluate(T0 + 3600) == []
    assert [e.rule.name for e in evaluator.firing] == ["tokyo"]
    evaluator.observe_many([row(s, "tokyo", True, T0 + 3600 - i) for i, s in enumerate("defg")])
    resolved = evaluator.evaluate(T0 + 3600)
    assert [(e.status, e.value, e.sessions) for e in resolved] == [(RESOLVED, 1.0, 4)]
    assert evaluator.evaluate(T0 + 3600) == []
    assert [e.status for e in notes.events] == [FIRING, RESOLVED]


def test_a_rescored_session_replaces_its_earlier_revision():
    rule = AlertRule.from_dict({"metric": "pass_rate", "below": 0.5, "min_sessions": 1})
    evaluator = AlertEvaluator([rule])
    evaluator.observe(row("a", "tokyo", False, T0 - 5, revision=1))
    evaluator.observe(row("a", "tokyo", True, T0 - 1, revision=2))
    evaluator.observe(row("a", "tokyo", False, T0 - 5, revision=1))  # a stale copy arriving late
    assert evaluator.evaluate(T0) == []
    assert rule_values(rule, [row("a", "tokyo", True, T0 - 1)], T0) == {(): (1.0, 1)}


def test_row_from_an_engine_result_carries_case_health_and_failures(tmp_path: Path):
    results: list = []
    from otel_eval.processor import EvalSpanProcessor

    processor = EvalSpanProcessor(
        db=tmp_path / "r.db", golden=[GOLDEN], on_result=results.append, trace_quiet=600, session_idle=600
    )
    provider = TracerProvider(resource=agent_resource("2.0.0"))
    provider.add_span_processor(processor)
    run_session(provider, "r1", ["What's the weather in Tokyo?"], version="2.0.0")
    provider.shutdown()
    converted = row_from_result(results[0], agent_version="2.0.0", now=T0)
    assert (converted.session_id, converted.case_id, converted.passed, converted.agent_version) == (
        "r1",
        "weather_tokyo",
        False,
        "2.0.0",
    )
    assert converted.failing == ("trajectory_match", "response_match")
    assert (converted.health["tool_calls"], converted.health["tool_errors"]) == (1, 0)
    assert converted.created_at == "2027-01-15T08:00:00.000Z"


# --- delivery to a real HTTP server ------------------------------------------------------------------


def _event(webhook_url: str, status: str = FIRING):
    rule = AlertRule.from_dict(
        {
            "name": "tokyo",
            "metric": "pass_rate",
            "case": "tokyo",
            "below": 0.8,
            "min_sessions": 2,
            "webhook": webhook_url,
        }
    )
    from otel_eval.alerts import AlertEvent

    return AlertEvent(rule, status, {"case": "tokyo"}, 0.25, 4, T0)


def test_webhook_gets_the_json_payload_and_a_warning_is_logged(webhook, caplog):
    hook = webhook(200)
    notifier = Notifier(timeout=2.0)
    with caplog.at_level(logging.WARNING, logger="otel_eval.alerts"):
        notifier.notify(_event(hook.url))
    notifier.close()
    assert hook.bodies[0]["content_type"] == "application/json"
    assert hook.bodies[0]["body"] == {
        "status": "firing",
        "alert": "tokyo",
        "metric": "pass_rate",
        "scope": {"case": "tokyo"},
        "value": 0.25,
        "comparison": "below",
        "threshold": 0.8,
        "window_s": 900.0,
        "sessions": 4,
        "at": "2027-01-15T08:00:00.000Z",
        "message": "alert 'tokyo' firing: pass_rate of case tokyo is 0.25, below 0.8 over the last 15 min (4 sessions)",
    }
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert caplog.records[0].getMessage().startswith("alert 'tokyo' firing: pass_rate of case tokyo is 0.25")
    assert (notifier.sent, notifier.failed) == (1, 0)


def test_notify_returns_before_the_webhook_answers(webhook):
    hook = webhook(200)
    hook.hold = threading.Event()
    notifier = Notifier(timeout=5.0)
    notifier.notify(_event(hook.url))
    notifier.notify(_event(hook.url, RESOLVED))
    # Both calls returned while the server still holds the first request.
    assert len(hook.wait_for(1)) == 1
    assert notifier.sent == 0
    hook.hold.set()
    notifier.close()
    assert [b["status"] for b in hook.wait_for(2)] == ["firing", "resolved"]
    assert notifier.sent == 2


def test_server_errors_are_retried_a_bounded_number_of_times(webhook):
    flaky = webhook(503, 200)
    notifier = Notifier(timeout=2.0, retries=2, backoff_s=0.01)
    notifier.notify(_event(flaky.url))
    notifier.close()
    assert len(flaky.bodies) == 2
    assert (notifier.sent, notifier.failed) == (1, 0)

    down = webhook(500)
    notifier = Notifier(timeout=2.0, retries=2, backoff_s=0.01)
    notifier.notify(_event(down.url))
    notifier.close()
    assert len(down.bodies) == 3
    assert (notifier.sent, notifier.failed) == (0, 1)


def test_client_errors_are_not_retried_and_timeouts_count_as_failures(webhook, caplog):
    wrong = webhook(404)
    notifier = Notifier(timeout=2.0, retries=3, backoff_s=0.01)
    notifier.notify(_event(wrong.url))
    notifier.close()
    assert len(wrong.bodies) == 1
    assert notifier.failed == 1

    slow = webhook(200, delay=1.0)
    notifier = Notifier(timeout=0.2, retries=1, backoff_s=0.01)
    with caplog.at_level(logging.ERROR, logger="otel_eval.alerts"):
        notifier.notify(_event(slow.url))
        notifier.close()
    assert len(slow.wait_for(2)) == 2
    assert (notifier.sent, notifier.failed) == (0, 1)
    assert any("failed for 'tokyo' (firing)" in r.getMessage() for r in caplog.records)


def test_a_full_queue_drops_instead_of_growing(webhook):
    hook = webhook(200)
    hook.hold = threading.Event()
    notifier = Notifier(timeout=5.0, max_pending=1)
    notifier.notify(_event(hook.url))
    hook.wait_for(1)  # in flight, held by the server
    for _ in range(3):
        notifier.notify(_event(hook.url))
    # One in flight, one queued, the other two dropped.
    assert notifier.dropped == 2
    hook.hold.set()
    notifier.close()
    assert notifier.sent == 2


# --- the monitor over a real database, and the collector ---------------------------------------------


def test_monitor_fires_on_a_regression_and_resolves_when_the_fix_lands(tmp_path: Path, webhook):
    hook = webhook(200)
    db = tmp_path / "otel-eval.db"
    monitor = AlertMonitor.from_config(
        [
            {
                "name": "tokyo",
                "metric": "pass_rate",
                "case": "weather_tokyo",
                "below": 0.8,
                "min_sessions": 2,
                "webhook": hook.url,
            }
        ],
        [str(db)],
        source="collector.toml",
        notifier=Notifier(timeout=2.0),
    )
    assert monitor.check() == []  # no database yet
    record_sessions(db, [("2.0.0", f"bad-{i}", ["What's the weather in Tokyo?"]) for i in range(2)])
    fired = monitor.check()
    assert [(e.status, e.value, e.sessions) for e in fired] == [(FIRING, 0.0, 2)]
    assert monitor.check() == []
    record_sessions(db, [("1.0.0", f"good-{i}", ["What's the weather in Tokyo?"]) for i in range(8)])
    resolved = monitor.check()
    assert [(e.status, e.value, e.sessions) for e in resolved] == [(RESOLVED, 0.8, 10)]
    monitor.stop()
    assert [(b["status"], b["alert"], b["scope"]) for b in hook.wait_for(2)] == [
        ("firing", "tokyo", {"case": "weather_tokyo"}),
        ("resolved", "tokyo", {"case": "weather_tokyo"}),
    ]


def test_collector_alerts_when_a_session_it_receives_fails(tmp_path: Path, webhook):
    hook = webhook(200)
    config = CollectorConfig(
        db=str(tmp_path / "eval.db"),
        golden=[GOLDEN],
        grpc=None,
        http=Endpoint("127.0.0.1", 0),
        trace_quiet=0.2,
        session_idle=0.2,
        alerts=[
            {
                "name": "regression",
                "metric": "pass_rate",
                "version": "*",
                "below": 0.9,
                "min_sessions": 1,
                "webhook": hook.url,
            }
        ],
    )
    collector = Collector(config).start()
    try:
        assert any(line.startswith("alerts: 1 rule(s) (regression); 1 with a webhook") for line in collector.banner())
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10)
        provider = TracerProvider(resource=agent_resource("2.0.0"))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        run_session(provider, "live-1", ["What's the weather in Tokyo?"], version="2.0.0", mark_end=True)
        provider.shutdown()
        bodies = hook.wait_for(1, timeout=15)
        assert [(b["status"], b["scope"], b["value"], b["sessions"]) for b in bodies] == [
            ("firing", {"version": "2.0.0"}, 0.0, 1)
        ]
    finally:
        collector.stop(grace=1.0)
