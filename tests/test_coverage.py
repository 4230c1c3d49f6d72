"""Golden coverage (issue 33.1): which golden cases live traffic exercises, by day and agent
version, which it never does, and the share of traffic no case describes."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console

from examples.weather_agent import run_session
from otel_eval import EvalSpanProcessor
from otel_eval.cli import main
from otel_eval.read.coverage import coverage
from otel_eval.report import render_coverage

from .test_compare import GOLDEN_FILES

TRAFFIC = {  # version → queries (a session each)
    "1.0.0": ["What's the weather in Tokyo?"] * 3 + ["What is your refund policy?", "Tell me a joke"],
    "2.0.0": ["What's the weather in Tokyo?", "Sing me a song", "Write a haiku about rain"],
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("coverage") / "live.db"
    for version, queries in TRAFFIC.items():
        provider = TracerProvider(
            resource=Resource.create({"service.name": "weather-agent", "service.version": version})
        )
        provider.add_span_processor(EvalSpanProcessor(db=path, golden=GOLDEN_FILES, trace_quiet=60, session_idle=60))
        for i, query in enumerate(queries):
            run_session(provider, f"{version}-{i}", [query], version=version)
        provider.shutdown()
    return path


def test_cases_are_counted_by_version_and_day_and_the_unexercised_ones_named(db):
    cov = coverage([db])
    assert (cov.sessions, cov.unmatched) == (8, 3)
    assert cov.unmatched_share == pytest.approx(3 / 8)
    tokyo = next(c for c in cov.cases if c.eval_id == "weather_tokyo")
    assert tokyo.sessions == 4 and tokyo.by_version == {"1.0.0": 3, "2.0.0": 1}
    assert sum(tokyo.by_day.values()) == 4 and tokyo.last_seen
    assert cov.cases[0] is tokyo  # most exercised first
    never = {c.eval_id for c in cov.never_exercised}
    assert "refund_policy" not in never and "weather_tokyo" not in never
    assert {"compare_paris_london", "paris_followup", "berlin_typo_retry", "top_users_by_revenue"} <= never


def test_report_shows_coverage_in_json_and_at_80_columns(db, capsys):
    assert main(["report", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["coverage"]
    assert (data["sessions"], data["unmatched"], data["unmatched_share"]) == (8, 3, 0.375)
    assert data["exercised"] == 2 and data["golden_cases"] == data["exercised"] + len(data["never_exercised"])
    console = Console(record=True, width=80)
    render_coverage(coverage([db]), console)
    text = console.export_text()
    words = " ".join(text.split())  # the line wraps at 80 columns, between words
    assert f"golden coverage: 2 of {data['golden_cases']} cases exercised" in words
    assert "unmatched 38% (3 of 8 sessions)" in words
    assert all(len(line) <= 80 for line in text.splitlines())
    berlin = next(line for line in text.splitlines() if "berlin_typo_retry" in line)
    assert "never" in berlin


def test_a_window_counts_only_later_sessions_and_a_bad_time_is_one_clear_error(db, capsys):
    assert main(["report", "--db", str(db), "--json", "--since", "2099-01-01"]) == 0
    data = json.loads(capsys.readouterr().out)["coverage"]
    assert (data["sessions"], data["exercised"], data["since"]) == (0, 0, "2099-01-01T00:00:00.000Z")
    assert main(["report", "--db", str(db), "--since", "yesterday"]) == 2
    assert "--since" in capsys.readouterr().err


def test_collector_metrics_count_cases_exercised_and_the_unmatched_share(start_collector):
    import httpx
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from examples.weather_agent import agent_resource

    from .polling import wait_until

    collector = start_collector(golden=[str(p) for p in GOLDEN_FILES], grpc=None)
    base = f"http://127.0.0.1:{collector.http_port}"
    provider = TracerProvider(resource=agent_resource("1.0.0"))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=10)))
    for i, query in enumerate(["What's the weather in Tokyo?", "What's the weather in Tokyo?", "Tell me a joke"]):
        run_session(provider, f"live-{i}", [query], mark_end=True)
    provider.shutdown()

    def scraped():
        lines = httpx.get(f"{base}/metrics").text.splitlines()
        return "otel_eval_unmatched_share 0.333333" in lines and lines

    lines = wait_until(scraped, timeout=30)
    golden = sum(1 for _ in coverage_cases())
    assert f"otel_eval_golden_cases {golden}" in lines
    assert "otel_eval_golden_cases_exercised 1" in lines


def coverage_cases():
    from otel_eval.golden import load_golden_files

    for eval_set in load_golden_files([str(p) for p in GOLDEN_FILES]):
        yield from eval_set.eval_cases
