"""``otel-eval compare``: two agent versions of the example agent, evaluated live by the real
EvalSpanProcessor into two SQLite files (one per version, as two collectors would write them)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console

from examples.weather_agent import run_session
from otel_eval import EvalSpanProcessor
from otel_eval.compare import (
    IMPROVED,
    ONLY_BASELINE,
    ONLY_CANDIDATE,
    REGRESSED,
    UNCHANGED,
    add_compare_arguments,
    compare,
    compare_main,
    compare_rows,
    render_comparison,
)
from otel_eval.errors import InputError
from tests.stored_rows import stored_criterion, stored_evaluation

GOLDEN = Path(__file__).resolve().parents[1] / "examples" / "golden"
GOLDEN_FILES = [GOLDEN / "weather.evalset.json", GOLDEN / "weather.trajectory.json"]

# Both versions run the same three cases; each also runs one case the other did not.
COMMON = {
    "tokyo": "What's the weather in Tokyo?",
    "sql": "Show me the top 10 users by revenue",
    "refund": "What is your refund policy?",
}
ONLY = {
    "1.0.0": {"berlin": "What's the weather in Berln?", "joke": "Tell me a joke"},
    "2.0.0": {"compare": "Compare the weather in Paris and London"},
}


def run_version(db: Path, version: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent", "service.version": version}))
    processor = EvalSpanProcessor(db=db, golden=GOLDEN_FILES, trace_quiet=60, session_idle=60)
    provider.add_span_processor(processor)
    for name, query in {**COMMON, **ONLY[version]}.items():
        run_session(provider, f"{name}-{version}", [query], version=version)
    provider.shutdown()  # ends and scores every session


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("compare")
    paths = [folder / "v1.db", folder / "v2.db"]
    run_version(paths[0], "1.0.0")
    run_version(paths[1], "2.0.0")
    return paths


def test_cases_are_regressed_improved_unchanged_or_in_one_version_only(dbs):
    comparison = compare(dbs, "1.0.0", "2.0.0")
    assert [(d.key, d.eval_set_id, d.status) for d in comparison.cases] == [
        ("top_users_by_revenue", "weather", REGRESSED),  # regressions first
        ("weather_tokyo", "weather_agent", REGRESSED),
        ("refund_policy", "weather_agent", UNCHANGED),
        ("berlin_typo_retry", "weather_agent", ONLY_BASELINE),
        ("compare_paris_london", "weather_agent", ONLY_CANDIDATE),
    ]
    tokyo = next(d for d in comparison.cases if d.key == "weather_tokyo")
    assert (tokyo.pass_rate_delta, tokyo.score_delta) == (-1.0, -0.6875)
    assert (tokyo.baseline.pass_rate, tokyo.candidate.pass_rate) == (1.0, 0.0)
    # Which criteria made each case worse: 2.0.0 asks for a forecast instead of the weather,
    # and reads an outdated table.
    assert [c.key for c in tokyo.criteria if c.status == REGRESSED] == ["response_match", "trajectory_match"]
    sql = comparison.cases[0]
    assert [c.key for c in sql.criteria if c.status == REGRESSED] == ["table_usage"]
    assert (sql.pass_rate_delta, sql.score_delta) == (-1.0, -0.25)
    assert comparison.counts() == {REGRESSED: 2, IMPROVED: 0, UNCHANGED: 1, ONLY_BASELINE: 1, ONLY_CANDIDATE: 1}


def test_criteria_are_compared_on_the_cases_both_versions_ran(dbs):
    comparison = compare(dbs, "1.0.0", "2.0.0")
    by_name = {d.key: d for d in comparison.criteria}
    # trajectory_match on tokyo, sql, refund: 3/3 → 2/3 (berlin and compare are left out).
    traj = by_name["trajectory_match"]
    assert (traj.baseline.passed, traj.baseline.evaluated, traj.candidate.passed, traj.candidate.evaluated) == (
        3,
        3,
        2,
        3,
    )
    assert (traj.status, traj.pass_rate_delta) == (REGRESSED, -0.3333)
    assert (by_name["response_match"].baseline.evaluated, by_name["response_match"].pass_rate_delta) == (2, -0.5)
    assert (by_name["table_usage"].status, by_name["table_usage"].score_delta) == (REGRESSED, -1.0)
    assert by_name["sql_generation"].status == UNCHANGED and by_name["tool_selection"].status == UNCHANGED
    assert by_name["health"].status == UNCHANGED


def test_version_summaries_count_sessions_and_average_health(dbs):
    comparison = compare(dbs, "1.0.0", "2.0.0")
    base, cand = comparison.summary["baseline"], comparison.summary["candidate"]
    assert (base.version, base.sessions, base.matched, base.passed, base.pass_rate, base.mean_score) == (
        "1.0.0",
        5,
        4,
        4,
        1.0,
        1.0,
    )
    assert (cand.version, cand.sessions, cand.matched, cand.passed, cand.pass_rate, cand.mean_score) == (
        "2.0.0",
        4,
        4,
        1,
        0.25,
        0.5501,
    )
    # Health details of every session, matched or not: 15 steps over 5 sessions; the Berlin typo
    # is the one failed tool call of 1.0.0.
    assert (base.mean_steps, base.mean_tool_errors, cand.mean_steps, cand.mean_tool_errors) == (3.0, 0.2, 3.25, 0.0)
    assert base.mean_total_tokens == 420.2 and cand.mean_total_tokens == 430.5
    assert base.mean_latency_ms is not None and base.mean_latency_ms >= 0


def test_swapping_the_versions_turns_regressions_into_improvements(dbs):
    comparison = compare(dbs, "2.0.0", "1.0.0")
    assert {d.key: d.status for d in comparison.cases} == {
        "top_users_by_revenue": IMPROVED,
        "weather_tokyo": IMPROVED,
        "refund_policy": UNCHANGED,
        "berlin_typo_retry": ONLY_CANDIDATE,
        "compare_paris_london": ONLY_BASELINE,
    }


def test_an_unknown_version_names_the_versions_present(dbs):
    with pytest.raises(InputError) as err:
        compare(dbs, "1.0.0", "3.0.0")
    assert err.value.location == "--candidate"
    assert "no evaluations of agent version '3.0.0'; versions present: 1.0.0 (5 sessions), 2.0.0 (4 sessions)" in str(
        err.value
    )


def _row(version, case, passed, score, criteria=()):
    return stored_evaluation(
        agent_version=version,
        case_id=case,
        eval_set_id="s",
        passed=passed,
        score=score,
        criteria=tuple(stored_criterion(n, p, s) for n, p, s in criteria),
    )


def test_an_equal_pass_rate_compares_mean_scores_above_min_delta():
    rows = [
        _row("a", "c1", True, 0.80, [("response_match", True, 0.80)]),
        _row("b", "c1", True, 0.85, [("response_match", True, 0.85)]),
        _row("a", "c2", False, 0.50),
        _row("b", "c2", False, 0.50),
    ]
    assert [(d.key, d.status, d.score_delta) for d in compare_rows(rows, "a", "b").cases] == [
        ("c1", IMPROVED, 0.05),
        ("c2", UNCHANGED, 0.0),
    ]
    assert [d.status for d in compare_rows(rows, "a", "b", min_delta=0.1).cases] == [UNCHANGED, UNCHANGED]
    # Sessions with no agent version group under "unknown".
    rows.append(_row(None, "c1", False, 0.0))
    assert compare_rows(rows, "a", "unknown").cases[0].status == REGRESSED


def _args(argv):
    parser = argparse.ArgumentParser()
    add_compare_arguments(parser)
    return parser.parse_args(argv)


def test_cli_json_shape_and_exit_code_on_regression(dbs, capsys):
    argv = ["--baseline", "1.0.0", "--candidate", "2.0.0", "--db", str(dbs[0]), "--db", str(dbs[1]), "--json"]
    assert compare_main(_args(argv)) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(data) == ["baseline", "candidate", "cases", "counts", "criteria", "drift", "min_delta", "summary"]
    assert data["counts"]["cases"] == {
        "regressed": 2,
        "improved": 0,
        "unchanged": 1,
        "only_baseline": 1,
        "only_candidate": 1,
    }
    tokyo = next(c for c in data["cases"] if c["key"] == "weather_tokyo")
    assert {k: tokyo[k] for k in ("eval_set_id", "status", "pass_rate_delta", "score_delta")} == {
        "eval_set_id": "weather_agent",
        "status": "regressed",
        "pass_rate_delta": -1.0,
        "score_delta": -0.6875,
    }
    assert tokyo["baseline"] == {"evaluated": 1, "passed": 1, "not_evaluated": 0, "pass_rate": 1.0, "mean_score": 1.0}
    assert data["summary"]["candidate"]["pass_rate"] == 0.25
    assert compare_main(_args(argv + ["--fail-on-regression"])) == 1
    capsys.readouterr()
    same = ["--baseline", "1.0.0", "--candidate", "1.0.0", "--db", str(dbs[0]), "--fail-on-regression", "--json"]
    assert compare_main(_args(same)) == 0


def test_terminal_rendering_lists_the_regressed_case_with_its_criteria(dbs):
    console = Console(record=True, width=200)
    render_comparison(compare(dbs, "1.0.0", "2.0.0"), console)
    text = console.export_text()
    assert "1.0.0 (baseline) → 2.0.0 (candidate): 2 regressed, 0 improved, 1 unchanged, 2 in one version only" in text
    tokyo_line = next(line for line in text.splitlines() if "weather_tokyo" in line)
    assert "100% (1/1)" in tokyo_line and "0% (0/1)" in tokyo_line and "regressed" in tokyo_line
    assert "response_match, trajectory_match" in tokyo_line
