"""The release gate (``otel-eval compare --gate``): promote, roll back or wait, valid when asked again
and again as traffic arrives."""

from __future__ import annotations

import argparse
import json
import random

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from examples.weather_agent import run_session
from otel_eval import EvalSpanProcessor
from otel_eval.compare import add_compare_arguments, compare_main
from otel_eval.gate import NOT_ENOUGH_EVIDENCE, PROMOTE, ROLL_BACK, confidence_sequence, gate
from otel_eval.read.verdicts import VerdictCounts

from .test_compare import GOLDEN_FILES


class _Rows(VerdictCounts):
    """Verdict counts written as a sum: ``_rows("1.0", "c", 9, 1) + _rows("2.0", "c", 8, 2)``."""

    def __add__(self, other: VerdictCounts) -> _Rows:
        out = _Rows()
        for counts in (self, other):
            for version, cases in counts.decided.items():
                for case, (passed, decided) in cases.items():
                    out.add(version, case, "passed", passed)
                    out.add(version, case, "failed", decided - passed)
        return out


def _rows(version: str, case: str, passed: int, failed: int, not_evaluated: int = 0) -> _Rows:
    rows = _Rows()
    for verdict, n in (("passed", passed), ("failed", failed), ("not_evaluated", not_evaluated)):
        rows.add(version, ("s", case), verdict, n)
    return rows


def test_the_interval_is_the_beta_binomial_mixture_set():
    # All n sessions passed: M_n(μ) = 1 / ((n + 1) μ^n) < 1/α exactly when μ > (α / (n + 1))^(1/n).
    for n, alpha in ((10, 0.05), (100, 0.0125), (1000, 0.001)):
        low, high = confidence_sequence(n, n, alpha)
        assert high == 1.0
        assert low == pytest.approx((alpha / (n + 1)) ** (1 / n), abs=1e-9)
    # Symmetric in passes and failures, and narrowing as sessions accumulate.
    low, high = confidence_sequence(30, 100, 0.05)
    low2, high2 = confidence_sequence(70, 100, 0.05)
    assert (low, high) == pytest.approx((1 - high2, 1 - low2))
    assert confidence_sequence(0, 0, 0.05) == (0.0, 1.0)
    widths = [h - lo for lo, h in (confidence_sequence(n // 2, n, 0.05) for n in (10, 100, 1000))]
    assert widths == sorted(widths, reverse=True)


def test_asking_after_every_batch_rolls_back_an_equal_candidate_no_more_often_than_the_confidence_allows():
    # Both versions pass 80% of the time. A fixed-sample interval asked 30 times per rollout would
    # roll back by chance far more often than 5%; a confidence sequence must not.
    rng = random.Random(7)
    rollouts, wrongly_rolled_back = 200, 0
    for _ in range(rollouts):
        rows = _Rows()
        for _look in range(30):
            for version in ("a", "b"):
                ok = sum(rng.random() < 0.8 for _ in range(10))
                rows += _rows(version, "c", ok, 10 - ok)
            if gate(rows, "a", "b", margin=0.0, confidence=0.95).decision == ROLL_BACK:
                wrongly_rolled_back += 1
                break
    assert wrongly_rolled_back / rollouts <= 0.05


def test_a_clearly_worse_candidate_is_rolled_back_and_an_equal_one_promoted_once_there_is_evidence():
    worse = _rows("1.0", "c", 95, 5) + _rows("2.0", "c", 50, 50)
    result = gate(worse, "1.0", "2.0")
    assert (result.decision, result.exit_code) == (ROLL_BACK, 1)
    assert result.overall.interval[1] < -0.10
    equal = _rows("1.0", "c", 300, 0) + _rows("2.0", "c", 300, 0)
    assert gate(equal, "1.0", "2.0").decision == PROMOTE
    few = _rows("1.0", "c", 5, 0) + _rows("2.0", "c", 5, 0)
    result = gate(few, "1.0", "2.0")
    assert (result.decision, result.exit_code) == (NOT_ENOUGH_EVIDENCE, 3)
    assert "overall" in result.reason


def test_one_worse_case_rolls_back_even_when_the_overall_rate_looks_fine():
    rows = (
        _rows("1.0", "big", 2000, 0)
        + _rows("2.0", "big", 2000, 0)
        + _rows("1.0", "refund", 100, 0)
        + _rows("2.0", "refund", 30, 70)
    )
    result = gate(rows, "1.0", "2.0")
    assert result.decision == ROLL_BACK
    assert result.reason.endswith("refund")
    assert result.overall.decision == PROMOTE  # 2,030 of 2,100 against 2,100: within the margin


def test_only_shared_cases_and_decided_sessions_count():
    rows = (
        _rows("1.0", "c", 200, 0) + _rows("2.0", "c", 200, 0, not_evaluated=50) + _rows("2.0", "new", 0, 100)
    )  # a case the baseline never saw: traffic, not quality
    result = gate(rows, "1.0", "2.0")
    assert result.decision == PROMOTE
    assert [c.key for c in result.cases] == ["c"]
    assert result.overall.candidate_total == 200
    # A small case is reported but decided on only overall.
    rows += _rows("1.0", "rare", 3, 0) + _rows("2.0", "rare", 2, 1)
    result = gate(rows, "1.0", "2.0", min_sessions=30)
    rare = next(c for c in result.cases if c.key == "rare")
    assert not rare.examined and result.decision == PROMOTE


def test_no_shared_case_is_not_enough_evidence_and_says_why():
    assert "no evaluated session of 2.0" in gate(_rows("1.0", "c", 10, 0), "1.0", "2.0").reason
    result = gate(_rows("1.0", "a", 10, 0) + _rows("2.0", "b", 10, 0), "1.0", "2.0")
    assert result.decision == NOT_ENOUGH_EVIDENCE and "no golden case in common" in result.reason


def _args(argv):
    parser = argparse.ArgumentParser()
    add_compare_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("gate") / "live.db"
    for version, sessions in (("1.0.0", 40), ("2.0.0", 40)):
        provider = TracerProvider(
            resource=Resource.create({"service.name": "weather-agent", "service.version": version})
        )
        processor = EvalSpanProcessor(db=path, golden=GOLDEN_FILES, trace_quiet=60, session_idle=60)
        provider.add_span_processor(processor)
        for i in range(sessions):
            run_session(provider, f"refund-{version}-{i}", ["What is your refund policy?"], version=version)
        provider.shutdown()
    return path


def test_cli_gate_on_a_live_database(db, capsys):
    base = ["--baseline", "1.0.0", "--candidate", "2.0.0", "--db", str(db), "--gate"]
    # 40 passing sessions per version: not yet enough to rule out a 10% drop at 95%.
    assert compare_main(_args(base + ["--json"])) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["decision"] == "not_enough_evidence" and data["method"].startswith("beta-binomial mixture")
    assert data["overall"]["baseline"] == {"passed": 40, "sessions": 40, "pass_rate": 1.0}
    low, high = data["overall"]["interval"]
    assert -0.2 < low < -0.1 and high > 0
    # A wider margin is decided already.
    assert compare_main(_args(base + ["--margin", "0.3"])) == 0
    assert "promote" in capsys.readouterr().out


def test_cli_gate_with_an_unknown_version_waits_and_names_the_versions_known(db, capsys):
    argv = ["--baseline", "1.0.0", "--candidate", "3.0.0", "--db", str(db), "--gate"]
    assert compare_main(_args(argv)) == 3
    err = capsys.readouterr().err
    assert "no evaluations of agent version '3.0.0'" in err
    assert "versions known: 1.0.0 (40 sessions), 2.0.0 (40 sessions)" in err


def test_collector_serves_the_gate_as_json_and_as_a_gauge_per_candidate(start_collector):
    import httpx
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from examples.weather_agent import agent_resource

    from .polling import wait_until

    collector = start_collector(golden=[str(p) for p in GOLDEN_FILES], gate_baseline="1.0.0", auth_token="t", grpc=None)
    base = f"http://127.0.0.1:{collector.http_port}"
    auth = {"Authorization": "Bearer t"}
    for version in ("1.0.0", "2.0.0"):  # 2.0.0 gets Tokyo wrong (examples/weather_agent/policy.py)
        exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=auth, timeout=10)
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        for i in range(12):
            run_session(
                provider, f"tokyo-{version}-{i}", ["What's the weather in Tokyo?"], version=version, mark_end=True
            )
        provider.shutdown()

    def decision_line():
        text = httpx.get(f"{base}/metrics", headers=auth).text
        line = 'otel_eval_gate_decision{baseline="1.0.0",candidate="2.0.0"} -1'
        return line in text.splitlines() and text

    text = wait_until(decision_line, timeout=30)
    assert "# TYPE otel_eval_gate_decision gauge" in text
    upper = next(line for line in text.splitlines() if line.startswith("otel_eval_gate_difference_upper{"))
    assert float(upper.rsplit(" ", 1)[1]) < -0.1
    answer = httpx.get(f"{base}/gate", params={"candidate": "2.0.0"}, headers=auth)
    assert answer.status_code == 200
    body = answer.json()
    assert (body["decision"], body["exit_code"], body["baseline"]) == ("roll_back", 1, "1.0.0")
    assert body["overall"]["candidate"] == {"passed": 0, "sessions": 12, "pass_rate": 0.0}
    assert body["versions_known"] == {"1.0.0": 12, "2.0.0": 12}
    assert httpx.get(f"{base}/gate", params={"candidate": "2.0.0"}).status_code == 401
    bad = httpx.get(f"{base}/gate", params={"candidate": "2.0.0", "margn": "0.2"}, headers=auth)
    assert bad.status_code == 400 and "unknown parameter 'margn'" in bad.json()["error"]
    same = httpx.get(f"{base}/gate", params={"candidate": "1.0.0", "min_sessions": "5"}, headers=auth).json()
    assert same["decision"] == "not_enough_evidence"  # 12 sessions each cannot rule out a 10% drop


def test_the_rollout_examples_ask_for_what_the_collector_serves():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "examples" / "rollouts"
    argo = (folder / "analysis-template.yaml").read_text()
    flagger = (folder / "flagger-metric-template.yaml").read_text()
    for text in (argo, flagger):
        assert "otel_eval_gate_decision{baseline=" in text
    assert f'result == "{PROMOTE}"' in argo and f'result == "{ROLL_BACK}"' in argo and "/gate?baseline=" in argo
