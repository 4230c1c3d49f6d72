"""otel-eval end to end: ``python -m examples.demo`` (what ``make demo`` runs).

Two ways in, one engine (DESIGN §1), each shown with the example weather agent:

1. **in-process** — an ``EvalSpanProcessor`` on the agent's own TracerProvider evaluates every
   session live as it ends;
2. **sidecar** — ``python -m collector`` runs as its own process, and the agent ships its spans
   with the standard OTLP exporters (once over gRPC, once over HTTP) through a
   ``BatchSpanProcessor``, as a production agent would (see :mod:`examples.sidecar_demo`).

Version 1.0.0 of the agent should pass its golden cases, the regressed 2.0.0 should fail them
for a visible reason (wrong tool, wrong table), small talk matches no case. Exit status 0 only
when every session was judged as the scenario expects, so the demo doubles as a smoke test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console

from examples.weather_agent import SessionResult, run_session

if TYPE_CHECKING:
    from otel_eval.read.evaluations import StoredEvaluation

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
GOLDEN_FILES = [GOLDEN_DIR / "weather.evalset.json", GOLDEN_DIR / "weather.trajectory.json"]

PASS, FAIL, UNMATCHED = "pass", "fail", "unmatched"
MODES = ("in-process", "sidecar", "both")
IN_PROCESS_DB = "in-process.db"
SIDECAR_DB = "sidecar.db"


@dataclass(frozen=True)
class Scenario:
    name: str
    turns: tuple[str, ...]
    version: str = "1.0.0"
    expect: str = PASS
    expect_case: str | None = None
    expect_failing: tuple[str, ...] = ()
    """Criteria that must be among the failed ones (for expect=FAIL)."""
    mark_end: bool = False
    user_id: str = "user-demo"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("tokyo", ("What's the weather in Tokyo?",), expect_case="weather_tokyo", mark_end=True),
    Scenario("compare", ("Compare the weather in Paris and London",), expect_case="compare_paris_london"),
    Scenario(
        "followup",
        ("What's the weather in Paris?", "What about tomorrow?"),
        expect_case="paris_followup",
        mark_end=True,
    ),
    Scenario("typo-retry", ("What's the weather in Berln?",), expect_case="berlin_typo_retry"),
    Scenario("refund", ("What is your refund policy?",), expect_case="refund_policy", user_id="user-carol"),
    Scenario(
        "top-users", ("Show me the top 10 users by revenue",), expect_case="top_users_by_revenue", user_id="user-bob"
    ),
    Scenario(
        "active-users",
        ("How many active users did we have last month?",),
        expect_case="active_users_last_month",
        user_id="user-bob",
    ),
    Scenario(
        "tokyo",
        ("What's the weather in Tokyo?",),
        version="2.0.0",
        expect=FAIL,
        expect_case="weather_tokyo",
        expect_failing=("trajectory_match",),
        mark_end=True,
    ),
    Scenario(
        "top-users",
        ("Show me the top 10 users by revenue",),
        version="2.0.0",
        expect=FAIL,
        expect_case="top_users_by_revenue",
        expect_failing=("table_usage",),
        user_id="user-bob",
    ),
    Scenario("small-talk", ("Tell me a joke",), expect=UNMATCHED),
)


@dataclass(frozen=True)
class Judgement:
    """What the evaluator decided about one session, whether it came from the live callback
    (an ``EvalCaseResult``) or from the database (an ``otel_eval.read.evaluations.current_evaluations`` row)."""

    verdict: str
    case_id: str | None
    score: float
    failing: tuple[str, ...]

    @classmethod
    def of_result(cls, result: Any) -> Judgement:
        return cls(verdict_of(result), result.eval_id or None, result.score, tuple(failed_criteria(result)))

    @classmethod
    def of_row(cls, row: StoredEvaluation) -> Judgement:
        from otel_eval.read.evaluations import failing_criteria

        if not row.case_id:
            verdict = UNMATCHED
        else:
            verdict = PASS if row.passed else FAIL
        return cls(verdict, row.case_id, row.score or 0.0, tuple(failing_criteria(row.criteria)))

    def describe(self) -> str:
        failing = f", failing {', '.join(self.failing)}" if self.failing else ""
        return f"{self.verdict} ({self.case_id or '-'}{failing})"


def failed_criteria(result: Any) -> list[str]:
    return [c.criterion for c in result.criterion_results if not c.skipped and not c.passed and c.criterion != "health"]


def verdict_of(result: Any) -> str:
    if not result.eval_id:
        return UNMATCHED
    return PASS if result.passed else FAIL


def as_expected(scenario: Scenario, judged: Any) -> bool:
    """``judged``: a :class:`Judgement` or an ``EvalCaseResult``."""
    if not isinstance(judged, Judgement):
        judged = Judgement.of_result(judged)
    if judged.verdict != scenario.expect:
        return False
    if scenario.expect_case and judged.case_id != scenario.expect_case:
        return False
    return set(scenario.expect_failing) <= set(judged.failing)


def expectation_text(scenario: Scenario) -> str:
    failing = f", failing {', '.join(scenario.expect_failing)}" if scenario.expect_failing else ""
    return f"{scenario.expect} ({scenario.expect_case or '-'}{failing})"


def print_verdict(console: Console, session_id: str, judged: Judgement) -> None:
    style = {PASS: "green", FAIL: "red", UNMATCHED: "yellow"}[judged.verdict]
    why = f"  failing: {', '.join(judged.failing)}" if judged.failing and judged.verdict == FAIL else ""
    console.print(
        f"  [{style}]● {judged.verdict.upper()}[/] {session_id} → {judged.case_id or 'no golden case'}"
        f" (score {judged.score:.2f}){why}"
    )


def print_session_run(console: Console, session_id: str, outcome: SessionResult) -> None:
    """One line per turn: who asked what, which tools the agent called (✗ = the tool failed)."""
    for turn in outcome.turns:
        calls = ", ".join(f"{c['name']}({_args(c['arguments'])}){' ✗' if 'error' in c else ''}" for c in turn.calls)
        console.print(f"  [dim]{session_id}[/] [cyan]{turn.user_input}[/] → {calls or 'no tools'}")


def check_expectations(
    console: Console, expected: Mapping[str, Scenario], judged: Mapping[str, Judgement], where: Path
) -> int:
    """Print every surprise and the tally; 0 when every session was judged as expected."""
    unexpected = [
        sid for sid, scenario in expected.items() if sid not in judged or not as_expected(scenario, judged[sid])
    ]
    for session_id in unexpected:
        got = judged.get(session_id)
        console.print(
            f"[red]unexpected:[/] {session_id}: expected {expectation_text(expected[session_id])}, got "
            + (got.describe() if got else "no result")
        )
    console.print(f"{len(expected) - len(unexpected)}/{len(expected)} sessions judged as expected. Database: {where}")
    return 1 if unexpected else 0


class LiveResults:
    """The processor's ``on_result`` callback: prints each verdict as it is scored."""

    def __init__(self, console: Console):
        self.console = console
        self.results: dict[str, Judgement] = {}
        self.lock = threading.Lock()

    def __call__(self, result: Any) -> None:
        judged = Judgement.of_result(result)
        with self.lock:
            self.results[result.session_id] = judged
        print_verdict(self.console, result.session_id, judged)

    def count(self) -> int:
        with self.lock:
            return len(self.results)


def run_demo(db: Path, console: Console, scenarios: Sequence[Scenario] = SCENARIOS, wait_live: float = 3.0) -> int:
    """The in-process path: ``EvalSpanProcessor`` on the agent's TracerProvider, results in ``db``."""
    from otel_eval import EvalSpanProcessor

    run_id = uuid.uuid4().hex[:6]
    by_session = {f"demo-{s.name}-v{s.version}-{run_id}": s for s in scenarios}
    live = LiveResults(console)
    # No service.version on the resource: one provider hosts both agent versions, and each span
    # says which one made it (gen_ai.agent.version).
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    processor = EvalSpanProcessor(db=db, golden=GOLDEN_FILES, trace_quiet=0.5, session_idle=1.0, on_result=live)
    provider.add_span_processor(processor)

    console.print(f"[bold]agent sessions[/] (v1.0.0 should pass, v2.0.0 should fail); database: {db}")
    for session_id, scenario in by_session.items():
        outcome = run_session(
            provider,
            session_id,
            list(scenario.turns),
            version=scenario.version,
            user_id=scenario.user_id,
            mark_end=scenario.mark_end,
        )
        print_session_run(console, session_id, outcome)

    console.print("[bold]live results[/] (sessions end explicitly or after 1 s idle)")
    deadline = time.monotonic() + wait_live
    while live.count() < len(by_session) and time.monotonic() < deadline:
        time.sleep(0.1)
    provider.shutdown()  # scores whatever is still open

    print_report(db, console, session_ids=by_session)
    return check_expectations(console, by_session, live.results, db)


def print_report(
    db: Path, console: Console, session_ids: Iterable[str] | None = None, details_for: Iterable[str] = ()
) -> list[StoredEvaluation]:
    """The project's report from the database, limited to ``session_ids`` (a reused database
    keeps earlier runs), with the criterion-by-criterion detail of the sessions in ``details_for``."""
    from otel_eval import report
    from otel_eval.read.evaluations import current_evaluations
    from otel_eval.read.sessions import SessionDetail

    rows = current_evaluations([db])
    if session_ids is not None:
        wanted = set(session_ids)
        rows = [row for row in rows if row.session_id in wanted]
    report.render_report(rows, console=console)
    detailed = set(details_for)
    for row in rows:
        if row.session_id in detailed:
            report.render_session(SessionDetail.of(row), console=console)
    return rows


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in arguments.items())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.demo",
        description="Run the example weather agent and evaluate its sessions live against the golden files in "
        "examples/golden: in-process (EvalSpanProcessor), through the sidecar collector "
        "(python -m collector, fed by the standard OTLP gRPC and HTTP exporters), or both. "
        "Exits 0 only when every session was judged as expected.",
    )
    parser.add_argument(
        "--db-dir",
        type=Path,
        metavar="DIR",
        help=f"Directory for the SQLite files ({IN_PROCESS_DB}, {SIDECAR_DB}); created if missing. "
        "Reusing one keeps earlier runs in the files; the report shows this run only. "
        "Default: a new temporary directory.",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="both",
        help="in-process: EvalSpanProcessor on the agent's TracerProvider; sidecar: the collector as "
        "a separate process on free loopback ports; both (default): one after the other.",
    )
    return parser


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = console or Console()
    db_dir: Path = args.db_dir or Path(tempfile.mkdtemp(prefix="otel-eval-demo-"))
    db_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    statuses: dict[str, tuple[int, Path]] = {}
    if args.mode in ("in-process", "both"):
        console.rule("[bold]1. in-process: EvalSpanProcessor on the agent's TracerProvider")
        db = db_dir / IN_PROCESS_DB
        statuses["in-process"] = (run_demo(db, console), db)
    if args.mode in ("sidecar", "both"):
        from examples.sidecar_demo import run_sidecar_demo

        console.rule("[bold]2. sidecar: python -m collector, fed by the OTLP gRPC and HTTP exporters")
        db = db_dir / SIDECAR_DB
        statuses["sidecar"] = (run_sidecar_demo(db, console), db)

    console.rule("[bold]summary")
    for part, (status, db) in statuses.items():
        outcome = "[green]all sessions judged as expected[/]" if status == 0 else "[red]unexpected results[/]"
        console.print(f"  {part}: {outcome}; database: {db}")
    dbs = " ".join(f"--db {db}" for _, db in statuses.values())
    console.print(
        f"  finished in {time.monotonic() - started:.1f} s. Look again with `otel-eval report {dbs}` "
        "(add --session ID for one session), or open the files in sqlite3 or Datasette."
    )
    return 1 if any(status for status, _ in statuses.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
