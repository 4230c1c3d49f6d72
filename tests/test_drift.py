"""Trajectory drift (issue 33.4): a version that changes the path it takes through a case is
flagged by a chi-square test of homogeneity, decided across cases with Benjamini-Hochberg."""

from __future__ import annotations

import random

import pytest

from otel_eval.drift import benjamini_hochberg, chi_square_sf, compare_paths, drift


@pytest.mark.parametrize(
    "statistic, dof, p",
    [  # printed chi-square tables (upper tail)
        (3.841459, 1, 0.05),
        (6.634897, 1, 0.01),
        (5.991465, 2, 0.05),
        (9.210340, 2, 0.01),
        (11.070498, 5, 0.05),
        (18.307038, 10, 0.05),
        (0.454936, 1, 0.5),
        (0.0, 3, 1.0),
        (40.0, 1, 2.539e-10),
    ],
)
def test_the_chi_square_tail_matches_the_tables(statistic, dof, p):
    assert chi_square_sf(statistic, dof) == pytest.approx(p, rel=1e-3)


def test_a_version_that_changes_its_path_is_flagged_and_the_moved_paths_named():
    before = {"get_weather": 40, "get_forecast → get_weather": 10}
    after = {"get_weather": 12, "get_forecast → get_weather": 38}
    result = compare_paths("weather_tokyo", before, after)
    assert result.p_value < 1e-6 and result.dof == 1
    assert result.changed_paths[0]["path"] in before and abs(result.changed_paths[0]["change"]) == pytest.approx(0.56)
    same = compare_paths("weather_tokyo", before, {"get_weather": 39, "get_forecast → get_weather": 11})
    assert same.p_value > 0.5


def test_rare_paths_are_pooled_and_one_path_is_not_tested():
    result = compare_paths("c", {"a": 50, "b": 1, "c": 1}, {"a": 50, "d": 1})
    assert result.p_value is None and "one path" in result.reason
    few = compare_paths("c", {"a": 3}, {"b": 3})
    assert few.p_value is None and "fewer than 10 sessions" in few.reason


def test_benjamini_hochberg_steps_up():
    # Ranked p-values are held to q·rank/m: 0.04 at rank 4 meets 0.04, so all four smallest go...
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005, 0.5], 0.05) == [True, True, True, True, False]
    # ...0.045 does not, and the step-up stops at rank 3 (0.03 <= 0.03).
    assert benjamini_hochberg([0.01, 0.045, 0.03, 0.005, 0.5], 0.05) == [True, False, True, True, False]
    # Step-up: a p-value above its own line is rejected when a larger one meets its line.
    assert benjamini_hochberg([0.03, 0.04], 0.05) == [True, True]  # 0.03 > 0.025, but 0.04 <= 0.05


def test_across_many_unchanged_cases_few_are_flagged_by_chance():
    rng = random.Random(3)
    per_case = {}
    for n in range(200):

        def sample():
            counts: dict[str, int] = {}
            for _ in range(60):
                path = rng.choices(["a", "a → b", "c"], [0.6, 0.3, 0.1])[0]
                counts[path] = counts.get(path, 0) + 1
            return counts

        per_case[f"case-{n}"] = (sample(), sample())
    flagged = [r for r in drift(per_case) if r.significant]
    assert len(flagged) <= 2  # none changed: BH at 5% keeps false flags rare
    per_case["moved"] = ({"a": 50, "c": 10}, {"a": 10, "c": 50})
    results = drift(per_case)
    assert results[0].key == "moved" and results[0].significant


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from examples.weather_agent import run_session
    from otel_eval import EvalSpanProcessor

    from .test_compare import GOLDEN_FILES

    path = tmp_path_factory.mktemp("drift") / "live.db"
    for version in ("1.0.0", "2.0.0"):  # 2.0.0 asks for a forecast where the weather was asked for
        provider = TracerProvider(
            resource=Resource.create({"service.name": "weather-agent", "service.version": version})
        )
        provider.add_span_processor(EvalSpanProcessor(db=path, golden=GOLDEN_FILES, trace_quiet=60, session_idle=60))
        for i in range(12):
            run_session(provider, f"tokyo-{version}-{i}", ["What's the weather in Tokyo?"], version=version)
            run_session(provider, f"refund-{version}-{i}", ["What is your refund policy?"], version=version)
        provider.shutdown()
    return path


def test_compare_shows_the_case_whose_path_changed(db, capsys):
    import argparse
    import json

    from rich.console import Console

    from otel_eval.compare import add_compare_arguments, compare, compare_main, render_comparison

    parser = argparse.ArgumentParser()
    add_compare_arguments(parser)
    assert (
        compare_main(parser.parse_args(["--baseline", "1.0.0", "--candidate", "2.0.0", "--db", str(db), "--json"])) == 0
    )
    data = json.loads(capsys.readouterr().out)["drift"]
    assert data["test"].startswith("Pearson's chi-square")
    by_case = {d["key"]: d for d in data["cases"]}
    tokyo, refund = by_case["weather_tokyo"], by_case["refund_policy"]
    assert tokyo["significant"] and tokyo["p_value"] < 1e-4
    assert tokyo["baseline"] == {"get_weather": 12} and tokyo["candidate"] == {"get_forecast": 12}
    assert not refund["significant"] and "one path" in refund["reason"]
    console = Console(record=True, width=80)
    render_comparison(compare([db], "1.0.0", "2.0.0"), console)
    text = console.export_text()
    assert "Tool paths: 1 of 1 case(s) tested changed significantly" in text
    line = next(line for line in text.splitlines() if "weather_tokyo" in line and "→" in line)
    assert "100% → 0%" in line or "0% → 100%" in line


def _row(n: int, version: str, case: str, path: str, at: float):
    from otel_eval.read.feed import EvaluationRow
    from otel_eval.read.times import iso_utc

    return EvaluationRow(
        id=n,
        db="d",
        session_id=f"s{n}",
        revision=1,
        case_id=case,
        agent_version=version,
        passed=True,
        score=1.0,
        created_at=iso_utc(at),
        tool_path=path,
    )


def test_a_drift_alert_fires_for_the_changed_case_and_resolves_when_it_leaves_the_window():
    from otel_eval.alerts import AlertEvaluator, load_rules

    [rule] = load_rules([{"kind": "drift", "baseline": "1.0", "window_minutes": 10, "min_sessions": 10}])
    evaluator = AlertEvaluator([rule])
    now = 1_800_000_000.0
    rows, n = [], 0
    for version, paths in (("1.0", ["get_weather"] * 20), ("2.0", ["get_forecast"] * 15 + ["get_weather"] * 5)):
        for path in paths:
            n += 1
            rows.append(_row(n, version, "weather_tokyo", path, now - 60))
    for version in ("1.0", "2.0"):  # an unchanged case
        for path in ["refund_lookup"] * 12:
            n += 1
            rows.append(_row(n, version, "refund_policy", path, now - 60))
    evaluator.observe_many(rows)
    [event] = evaluator.evaluate(now)
    assert (event.status, event.scope) == ("firing", {"case": "weather_tokyo", "version": "2.0"})
    assert "tool paths of case weather_tokyo, version 2.0 differ from version 1.0's" in event.message
    assert event.payload()["baseline"] == "1.0" and event.sessions == 40
    assert evaluator.evaluate(now + 1) == []  # fires once
    # Ten minutes on, none of those sessions is in the window: too few to decide, so no change...
    assert evaluator.evaluate(now + 600) == []
    # ...until the candidate's paths are back to the baseline's.
    for version in ("1.0", "2.0"):
        for path in ["get_weather"] * 12:
            n += 1
            evaluator.observe(_row(n, version, "weather_tokyo", path, now + 600))
    [event] = evaluator.evaluate(now + 601)
    assert event.status == "resolved"


def test_a_drift_rule_names_its_mistakes():
    from otel_eval.alerts import load_rules
    from otel_eval.errors import InputError

    with pytest.raises(InputError, match="missing required key 'baseline'"):
        load_rules([{"kind": "drift"}])
    with pytest.raises(InputError, match="unknown drift alert key 'below'"):
        load_rules([{"kind": "drift", "baseline": "1.0", "below": 0.5}])
    with pytest.raises(InputError, match="unknown alert kind 'drfit'"):
        load_rules([{"kind": "drfit", "baseline": "1.0"}])


def test_the_dashboard_release_page_shows_the_gate_and_the_changed_path(db, start_collector):
    import re

    import httpx

    collector = start_collector(db=str(db), ui=True, grpc=None)
    base = f"http://127.0.0.1:{collector.http_port}"
    page = httpx.get(f"{base}/ui/release", params={"baseline": "1.0.0", "candidate": "2.0.0"}).text
    # 2.0.0 fails Tokyo 12 times out of 12, passes the refund case as 1.0.0 does: 12 of 24 against 24 of 24
    # cannot yet rule out either answer at 95% over a confidence sequence.
    assert 'data-decision="not_enough_evidence"' in page
    gate_row = re.search(r'<tr data-case="weather_tokyo">(.*?)</tr>', page).group(1)
    assert "100% (12/12)" in gate_row and "0% (0/12)" in gate_row and "fewer than 30 sessions" in gate_row
    tokyo = re.search(r'<tr data-drift="weather_tokyo">(.*?)</tr>', page).group(1)
    assert "get_forecast" in tokyo or "get_weather" in tokyo
    assert "100% → 0%" in tokyo or "0% → 100%" in tokyo
    assert 'data-drift="refund_policy"' not in page
    # Without parameters: the two versions with most sessions.
    default = httpx.get(f"{base}/ui/release").text
    assert re.search(r'<option value="1.0.0" selected>', default) and 'data-decision=' in default
