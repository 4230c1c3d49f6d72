"""otel-eval end to end, in one process: ``python -m examples.demo`` (what ``make demo`` runs).

The example weather agent runs a handful of conversations (version 1.0.0, which should pass,
and the regressed 2.0.0, which should fail), an ``EvalSpanProcessor`` on the same
TracerProvider evaluates each session live against both golden files as it ends, and the
report is printed from the SQLite file at the end. Exit status 0 when every session was judged
as the scenario expects, 1 otherwise, so the demo doubles as a smoke test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console
from rich.table import Table

from examples.weather_agent import run_session

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
GOLDEN_FILES = [GOLDEN_DIR / "weather.evalset.json", GOLDEN_DIR / "weather.trajectory.json"]

PASS, FAIL, UNMATCHED = "pass", "fail", "unmatched"


@dataclass(frozen=True)
class Scenario:
    name: str
    turns: tuple[str, ...]
    version: str = "1.0.0"
    expect: str = PASS
    expect_case: Optional[str] = None
    expect_failing: tuple[str, ...] = ()
    """Criteria that must be among the failed ones (for expect=FAIL)."""
    mark_end: bool = False
    user_id: str = "user-demo"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("tokyo", ("What's the weather in Tokyo?",), expect_case="weather_tokyo", mark_end=True),
    Scenario("compare", ("Compare the weather in Paris and London",), expect_case="compare_paris_london"),
    Scenario("followup", ("What's the weather in Paris?", "What about tomorrow?"), expect_case="paris_followup",
             mark_end=True),
    Scenario("typo-retry", ("What's the weather in Berln?",), expect_case="berlin_typo_retry"),
    Scenario("refund", ("What is your refund policy?",), expect_case="refund_policy", user_id="user-carol"),
    Scenario("top-users", ("Show me the top 10 users by revenue",), expect_case="top_users_by_revenue",
             user_id="user-bob"),
    Scenario("active-users", ("How many active users did we have last month?",),
             expect_case="active_users_last_month", user_id="user-bob"),
    Scenario("tokyo", ("What's the weather in Tokyo?",), version="2.0.0", expect=FAIL,
             expect_case="weather_tokyo", expect_failing=("trajectory_match",), mark_end=True),
    Scenario("top-users", ("Show me the top 10 users by revenue",), version="2.0.0", expect=FAIL,
             expect_case="top_users_by_revenue", expect_failing=("table_usage",), user_id="user-bob"),
    Scenario("small-talk", ("Tell me a joke",), expect=UNMATCHED),
)


def failed_criteria(result: Any) -> list[str]:
    return [c.criterion for c in result.criterion_results if not c.skipped and not c.passed and c.criterion != "health"]


def verdict_of(result: Any) -> str:
    if not result.eval_id:
        return UNMATCHED
    return PASS if result.passed else FAIL


def as_expected(scenario: Scenario, result: Any) -> bool:
    verdict = verdict_of(result)
    if verdict != scenario.expect:
        return False
    if scenario.expect_case and result.eval_id != scenario.expect_case:
        return False
    return set(scenario.expect_failing) <= set(failed_criteria(result))


class LiveResults:
    """The processor's ``on_result`` callback: prints each verdict as it is scored."""

    def __init__(self, console: Console, scenarios: dict[str, Scenario]):
        self.console = console
        self.scenarios = scenarios
        self.results: dict[str, Any] = {}
        self.lock = threading.Lock()

    def __call__(self, result: Any) -> None:
        with self.lock:
            self.results[result.session_id] = result
        verdict = verdict_of(result)
        style = {PASS: "green", FAIL: "red", UNMATCHED: "yellow"}[verdict]
        failing = failed_criteria(result)
        why = f"  failing: {', '.join(failing)}" if failing and verdict == FAIL else ""
        self.console.print(
            f"  [{style}]● {verdict.upper()}[/] {result.session_id} → {result.eval_id or 'no golden case'}"
            f" (score {result.score:.2f}){why}"
        )

    def count(self) -> int:
        with self.lock:
            return len(self.results)


def run_demo(db: Path, console: Console, scenarios: Sequence[Scenario] = SCENARIOS, wait_live: float = 3.0) -> int:
    from otel_eval import EvalSpanProcessor

    run_id = uuid.uuid4().hex[:6]
    by_session = {f"demo-{s.name}-v{s.version}-{run_id}": s for s in scenarios}
    live = LiveResults(console, by_session)
    # No service.version on the resource: one provider hosts both agent versions, and each span
    # says which one made it (gen_ai.agent.version).
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    processor = EvalSpanProcessor(
        db=db, golden=GOLDEN_FILES, trace_quiet=0.5, session_idle=1.0, on_result=live
    )
    provider.add_span_processor(processor)

    console.rule("[bold]weather agent: running sessions")
    for session_id, scenario in by_session.items():
        outcome = run_session(
            provider, session_id, list(scenario.turns), version=scenario.version,
            user_id=scenario.user_id, mark_end=scenario.mark_end,
        )
        for turn in outcome.turns:
            calls = ", ".join(f"{c['name']}({_args(c['arguments'])}){' ✗' if 'error' in c else ''}" for c in turn.calls)
            console.print(f"[dim]{session_id}[/] v{scenario.version} [cyan]{turn.user_input}[/]")
            console.print(f"    tools: {calls or '-'}")
            console.print(f"    answer: {turn.answer}")

    console.rule("[bold]live results (sessions end explicitly or after 1 s idle)")
    deadline = time.monotonic() + wait_live
    while live.count() < len(by_session) and time.monotonic() < deadline:
        time.sleep(0.1)
    provider.shutdown()  # scores whatever is still open

    console.rule("[bold]report")
    print_report(db, console, live)
    unexpected = [
        session_id for session_id, scenario in by_session.items()
        if session_id not in live.results or not as_expected(scenario, live.results[session_id])
    ]
    for session_id in unexpected:
        got = live.results.get(session_id)
        scenario = by_session[session_id]
        console.print(
            f"[red]unexpected:[/] {session_id}: expected {scenario.expect} ({scenario.expect_case or '-'}"
            f"{', failing ' + ', '.join(scenario.expect_failing) if scenario.expect_failing else ''}), got "
            + (f"{verdict_of(got)} ({got.eval_id or '-'}, failing {failed_criteria(got) or '-'})" if got else "no result")
        )
    console.print(
        f"{len(by_session) - len(unexpected)}/{len(by_session)} sessions judged as expected. Database: {db}"
    )
    return 1 if unexpected else 0


def print_report(db: Path, console: Console, live: LiveResults) -> None:
    """The project's report from the database when available; else a table of the live results."""
    try:
        from otel_eval import report
    except ImportError:
        report = None
    if report is not None and hasattr(report, "print_report"):
        report.print_report(db)
        return
    if report is not None and hasattr(report, "render_report"):
        rows = report.current_evaluations([db])
        report.render_report(rows, console=console)
        for row in rows:
            if row["case_id"] and not row["passed"] and hasattr(report, "render_session"):
                report.render_session(row, console=console)
        return
    table = Table(title="Evaluations")
    for column in ("session", "case", "result", "score", "failing criteria"):
        table.add_column(column)
    for session_id, result in sorted(live.results.items()):
        table.add_row(session_id, result.eval_id or "-", verdict_of(result), f"{result.score:.2f}",
                      ", ".join(failed_criteria(result)) or "-")
    console.print(table)


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in arguments.items())


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="SQLite file to write (default: a new temporary file)")
    args = parser.parse_args(argv)
    db = args.db or Path(tempfile.mkdtemp(prefix="otel-eval-demo-")) / "demo.db"
    return run_demo(db, Console())


if __name__ == "__main__":
    sys.exit(main())
