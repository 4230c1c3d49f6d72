"""Per-case and per-version results on /metrics (scraped from a real collector), the label cap,
and the Grafana dashboard's PromQL against the metric names the collector really exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from collector.prometheus import CollectorCounters, EvaluationCounters
from examples.weather_agent import run_session
from examples.weather_agent.agent import agent_resource
from tests.polling import wait_until

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = [str(ROOT / "examples/golden/weather.evalset.json"), str(ROOT / "examples/golden/weather.trajectory.json")]
DASHBOARD = ROOT / "examples/grafana/otel-eval-dashboard.json"


def send_sessions(collector, sessions) -> None:
    """Run the example agent with an OTLP/HTTP exporter into the collector, each session marked ended,
    and wait until the engine has scored them all."""
    before = collector.engine.stats()["sessions_scored"]
    by_version: dict[str, list] = {}
    for version, sid, text in sessions:
        by_version.setdefault(version, []).append((sid, text))
    for version, runs in by_version.items():
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10)
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        for sid, text in runs:
            run_session(provider, sid, [text], version=version, mark_end=True)
        provider.shutdown()
    wait_until(
        lambda: collector.engine.stats()["sessions_scored"] >= before + len(sessions),
        timeout=15,
        what=f"{len(sessions)} more sessions scored",
    )


def scrape(collector) -> list[str]:
    response = httpx.get(f"http://127.0.0.1:{collector.http_port}/metrics", timeout=10)
    assert response.status_code == 200
    return response.text.splitlines()


SESSIONS = [
    ("1.0.0", "p1", "What's the weather in Tokyo?"),
    ("1.0.0", "p2", "Show me the top 10 users by revenue"),
    ("1.0.0", "p3", "Tell me a joke"),
    ("2.0.0", "p4", "What's the weather in Tokyo?"),
    ("2.0.0", "p5", "Show me the top 10 users by revenue"),
]


def test_scrape_shows_results_per_case_and_version(start_collector):
    collector = start_collector(golden=GOLDEN)
    send_sessions(collector, SESSIONS)
    lines = scrape(collector)
    for expected in [
        'otel_eval_case_evaluations_total{case="top_users_by_revenue"} 2',
        'otel_eval_case_evaluations_total{case="weather_tokyo"} 2',
        'otel_eval_case_passed_total{case="weather_tokyo"} 1',
        'otel_eval_case_pass_rate{case="weather_tokyo"} 0.5',
        'otel_eval_case_score_mean{case="weather_tokyo"} 0.65625',
        'otel_eval_case_score_mean{case="top_users_by_revenue"} 0.875',
        'otel_eval_version_evaluations_total{version="1.0.0"} 2',
        'otel_eval_version_passed_total{version="1.0.0"} 2',
        'otel_eval_version_pass_rate{version="1.0.0"} 1',
        'otel_eval_version_pass_rate{version="2.0.0"} 0',
        'otel_eval_version_score_mean{version="2.0.0"} 0.53125',
        'otel_eval_version_unmatched_total{version="1.0.0"} 1',
        'otel_eval_score_bucket{version="2.0.0",le="0.3"} 0',
        'otel_eval_score_bucket{version="2.0.0",le="0.4"} 1',
        'otel_eval_score_bucket{version="2.0.0",le="0.8"} 2',
        'otel_eval_score_bucket{version="2.0.0",le="+Inf"} 2',
        'otel_eval_score_count{version="1.0.0"} 2',
        'otel_eval_score_sum{version="2.0.0"} 1.0625',
        'otel_eval_label_values_capped_total{label="case"} 0',
        # The collector's own metrics are still there.
        "otel_eval_sessions_scored_total 5",
        "otel_eval_evaluations_total 4",
        "otel_eval_pass_rate 0.5",
        "otel_eval_spans_rejected_total 0",
    ]:
        assert expected in lines, expected
    assert any(line.startswith("otel_eval_sessions_scored_idle_total ") for line in lines)
    assert not any(line.startswith("otel_eval_version_unmatched_total{version=\"2.0.0\"}") for line in lines)
    # A second scrape reads nothing new and shows the same numbers.
    assert [l for l in scrape(collector) if l.startswith("otel_eval_case_")] == [
        l for l in lines if l.startswith("otel_eval_case_")
    ]


def test_counters_start_with_the_collector_not_with_the_database(start_collector, tmp_path):
    first = start_collector(golden=GOLDEN, db=str(tmp_path / "shared.db"))
    send_sessions(first, SESSIONS[:1])
    first.stop(grace=1.0)
    second = start_collector(golden=GOLDEN, db=str(tmp_path / "shared.db"))
    assert not any(line.startswith("otel_eval_case_evaluations_total{") for line in scrape(second))
    send_sessions(second, [("2.0.0", "later", "What's the weather in Tokyo?")])
    assert 'otel_eval_case_evaluations_total{case="weather_tokyo"} 1' in scrape(second)


def test_label_values_are_capped_and_the_rest_aggregated_as_other():
    metrics = EvaluationCounters(max_label_values=2)
    metrics.observe("a", "1.0", True, 1.0)
    metrics.observe("b", "2.0", False, 0.5)
    metrics.observe("c", "3.0", False, 0.0)
    metrics.observe("d", "3.0", True, 1.0)
    metrics.observe("a", "1.0", True, 1.0)
    lines = metrics.render_lines()
    assert 'otel_eval_case_evaluations_total{case="a"} 2' in lines
    assert 'otel_eval_case_evaluations_total{case="other"} 2' in lines
    assert 'otel_eval_case_pass_rate{case="other"} 0.5' in lines
    assert 'otel_eval_version_evaluations_total{version="other"} 2' in lines
    assert 'otel_eval_label_values_capped_total{label="case"} 2' in lines
    assert 'otel_eval_label_values_capped_total{label="version"} 2' in lines
    cases = {
        m.group(1) for m in (re.match(r'otel_eval_case_evaluations_total\{case="([^"]*)"\}', l) for l in lines) if m
    }
    assert cases == {"a", "b", "other"}


def test_label_values_are_escaped():
    metrics = EvaluationCounters()
    metrics.observe('say "hi"\\\n', None, True, 1.0)
    lines = metrics.render_lines()
    assert 'otel_eval_case_passed_total{case="say \\"hi\\"\\\\\\n"} 1' in lines
    assert 'otel_eval_version_passed_total{version="unknown"} 1' in lines


def test_every_family_is_declared_before_its_samples():
    metrics = CollectorCounters()
    metrics.evaluations.observe("a", "1", True, 0.9)
    lines = metrics.render({}).splitlines()
    declared: set[str] = set()
    for line in lines:
        if line.startswith("# TYPE"):
            declared.add(line.split()[2])
        elif not line.startswith("#"):
            name = line.split("{")[0].split(" ")[0]
            assert name in declared or re.sub(r"_(bucket|sum|count)$", "", name) in declared, name


# --- the Grafana dashboard ---------------------------------------------------------------------------


def exported_names(lines: list[str]) -> set[str]:
    """Every series name a scrape offers: sample names, histogram parts included."""
    names = set()
    for line in lines:
        if line and not line.startswith("#"):
            names.add(line.split("{")[0].split(" ")[0])
    return names


def test_dashboard_queries_only_use_exported_metrics(start_collector):
    dashboard = json.loads(DASHBOARD.read_text())
    collector = start_collector(golden=GOLDEN)
    send_sessions(collector, SESSIONS)
    collector.metrics.rejected(0)  # every counter family has a sample after traffic
    names = exported_names(scrape(collector))

    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len(panels) >= 10
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    used: set[str] = set()
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            metrics = set(re.findall(r"\botel_eval_[a-z0-9_]+", target["expr"]))
            assert metrics, (panel["title"], target["expr"])
            assert metrics <= names, (panel["title"], metrics - names)
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]
            used |= metrics
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert "otel_eval_spans_received_total" in variables["instance"]["definition"]
    # The panels the dashboard promises: pass rate per case and version, spans, queue, sessions, p99 latency.
    for name in (
        "otel_eval_case_passed_total",
        "otel_eval_version_passed_total",
        "otel_eval_spans_received_total",
        "otel_eval_spans_rejected_total",
        "otel_eval_queue_depth",
        "otel_eval_sessions_open",
        "otel_eval_ingest_duration_seconds_bucket",
    ):
        assert name in used, name
    titles = [p["title"] for p in panels]
    assert "Pass rate per golden case" in titles and "Ingest latency" in titles
