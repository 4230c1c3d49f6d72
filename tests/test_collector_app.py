"""Wiring: startup banner with golden sets, and startup failures reported plainly."""

from __future__ import annotations

import json
import logging
import socket

import pytest

from collector.app import main
from collector.config import Endpoint

EVALSET = {
    "eval_set_id": "weather",
    "eval_cases": [
        {
            "eval_id": f"case-{i}",
            "conversation": [
                {
                    "invocation_id": "turn-1",
                    "user_content": {"role": "user", "content": f"What is the weather in city {i}?"},
                    "expected_tool_trajectory": [{"name": "get_weather", "args": {"city": f"city {i}"}}],
                }
            ],
        }
        for i in range(3)
    ],
}


def test_banner_lists_endpoints_database_golden_sets_with_case_counts_and_timing(start_collector, tmp_path):
    golden = tmp_path / "weather.evalset.json"
    golden.write_text(json.dumps(EVALSET))
    collector = start_collector(golden=[str(golden)], auth_token="t", trace_quiet=0.5, session_idle=2)
    lines = collector.banner()
    assert lines[0] == f"OTLP/gRPC listening on 127.0.0.1:{collector.grpc_port} (plaintext, bearer token required)"
    base = f"http://127.0.0.1:{collector.http_port}"
    assert lines[1] == (
        f"OTLP/HTTP listening on {base}/v1/traces and {base}/v1/logs (plaintext, bearer token "
        f"required); metrics at {base}/metrics, health at {base}/healthz"
    )
    assert f"database: {collector.config.db}" in lines
    assert f"golden set: {golden} (weather, 3 cases)" in lines
    assert (
        "sessions: a trace is complete 0.5 s after its root span ends with no new spans; a session ends 2 s "
        "after its last trace completes"
    ) in lines


def test_non_loopback_without_token_is_warned_about(start_collector):
    collector = start_collector(grpc=Endpoint("0.0.0.0", 0), http=None)
    assert any(
        line.startswith("WARNING: 0.0.0.0 is not a loopback address and no --auth-token is set")
        for line in collector.banner()
    )


def test_bad_golden_file_exits_2_naming_the_file(tmp_path, caplog):
    golden = tmp_path / "broken.evalset.json"
    golden.write_text('{"eval_set_id": "x", "eval_cases": [{"conversation": []}]}')
    with caplog.at_level(logging.ERROR, logger="otel_eval.collector"):
        status = main(
            [
                "--db",
                str(tmp_path / "eval.db"),
                "--golden",
                str(golden),
                "--grpc",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
            ]
        )
    assert status == 2
    assert str(golden) in caplog.text


def test_address_in_use_exits_2_naming_the_address(tmp_path, caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR, logger="otel_eval.collector"):
            status = main(["--db", str(tmp_path / "eval.db"), "--grpc", "off", "--http", f"127.0.0.1:{port}"])
    assert status == 2
    assert f"cannot listen for HTTP on 127.0.0.1:{port}" in caplog.text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the killed writer
def test_a_collector_whose_writer_died_says_so_and_exits_1(tmp_path, caplog):
    """Nothing can be stored once the writer thread is gone: /healthz says so, and the process
    exits non-zero so a supervisor restarts it (the writer itself never dies of a SQLite error;
    this stands in for a bug that would kill it)."""
    import threading

    from collector.app import serve
    from collector.config import CollectorConfig

    class WriterKilled(BaseException):
        pass

    started = threading.Event()
    collectors = []

    def ready(collector):
        collectors.append(collector)
        started.set()

    config = CollectorConfig(
        db=str(tmp_path / "eval.db"), grpc=Endpoint("127.0.0.1", 0), http=Endpoint("127.0.0.1", 0), score_workers=0
    )
    outcome = []
    runner = threading.Thread(target=lambda: outcome.append(serve(config, ready=ready, stop_event=threading.Event())))
    caplog.set_level(logging.ERROR, logger="otel_eval.collector")
    runner.start()
    assert started.wait(30)
    collector = collectors[0]
    writer = collector.engine._writer

    def die(_items):
        raise WriterKilled()

    writer._round = die  # the next round (at most one tick away) raises and ends the thread
    runner.join(30)
    assert not runner.is_alive() and outcome == [1]
    assert any("cannot go on: the writer thread stopped" in r.getMessage() for r in caplog.records)
