"""Re-evaluate stored sessions after a golden set or the criteria changed.

The spans are in the database, so a session can be scored again without the agent: its spans
are read back, run through the same :mod:`otel_eval.pipeline` the live engine's workers use, and the outcome is stored as the session's NEXT revision. Earlier revisions stay, marked
superseded, so ``report`` shows the new verdicts and the history is still there.

Only sessions the engine has already scored are rescored. An open session is still receiving
spans and an ended one is waiting for the live scorer: scoring them here would race the engine's
once-per-revision guarantee. For the same reason the stored status flip is conditional on the
session still being ``scored`` (a late span that re-opens it meanwhile wins, and the engine
scores it again when it ends).

CLI: ``otel-eval rescore [--db D] [--since ISO] [--session ID]... [--golden G]... [--config TOML|JSON]``.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .embedding_options import add_embedding_arguments, embedding_backend
from .errors import InputError
from .golden import GoldenSets
from .golden.load import PathLike
from .judge_backfill import ProgressCallback
from .models.evalset import EvalConfig, EvalSet
from .models.results import FAILED, NOT_EVALUATED, PASSED
from .read.evaluations import LatestEvaluation, latest_evaluation
from .read.sessions import scored_sessions
from .read.times import SINCE_EXAMPLES, parse_since
from .store import SCORED, Store

if TYPE_CHECKING:
    from .criteria.base import JudgeClient
    from .engine.settings import EngineSettings

PASS, FAIL, NONE = "pass", "fail", "none"
#: Stored verdict → the word a change shows (not_evaluated: matched, but nothing was checked).
_WORDS = {PASSED: PASS, FAILED: FAIL, NOT_EVALUATED: NOT_EVALUATED}


@dataclass(frozen=True)
class RescoreChange:
    """One rescored session: its latest verdict before and the new one.

    ``verdict`` is ``pass`` / ``fail`` / ``not_evaluated`` for a session matched to a case, else how matching ended
    (``unmatched`` / ``ambiguous``); ``none`` when the session had no evaluation before."""

    session_id: str
    agent_version: str | None
    before_revision: int | None
    after_revision: int
    before_case: str | None
    after_case: str | None
    before_verdict: str
    after_verdict: str
    before_score: float | None
    after_score: float
    matched_by: str

    @property
    def verdict_changed(self) -> bool:
        """The verdict word differs (pass to fail, unmatched to pass, ...); a new case alone is :attr:`changed`."""
        return self.before_verdict != self.after_verdict

    @property
    def changed(self) -> bool:
        """A different verdict or a different golden case."""
        return self.verdict_changed or self.before_case != self.after_case

    def to_dict(self) -> dict[str, Any]:
        """The change as ``rescore --json`` lists it, with ``changed`` and ``verdict_changed`` spelled out."""
        return {**asdict(self), "changed": self.changed, "verdict_changed": self.verdict_changed}


def _outcome(case_id: str | None, stored: str, matched_by: str | None) -> str:
    """``stored``: the evaluation's verdict (passed, failed, not_evaluated)."""
    if not case_id:
        return matched_by or "unmatched"
    return _WORDS[stored]


def rescore(
    db: PathLike,
    golden: Iterable[PathLike | EvalSet] | None = None,
    config: EvalConfig | None = None,
    since: str | datetime | None = None,
    sessions: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    *,
    fuzzy_threshold: float | None = None,
    embedding_threshold: float | None = None,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
    judge: JudgeClient | None = None,
    max_value_chars: int | None = None,
    settings: EngineSettings | None = None,
) -> list[RescoreChange]:
    """Score the scored sessions of ``db`` again, each as a new revision; returns one
    :class:`RescoreChange` per session, in the order the sessions started.

    ``golden``: golden files or EvalSets (default: the sets stored in the database, with the
    criteria a Big Sky set declared). ``config``: criteria (default :meth:`EvalConfig.default`).
    ``since``: only sessions with spans received at or after this time. ``sessions``: only these
    (each must exist and be scored, else :class:`InputError`). ``settings``: the engine's
    settings (criteria, thresholds, truncation); the keyword arguments of the same names override
    them. Each session goes through the live engine's own path (:mod:`otel_eval.pipeline`): its
    AgentData rows are rewritten and an evaluation that raises is stored as an error.
    """
    from .engine import EngineSettings
    from .engine.settings import golden_index
    from .judge_backfill import run_jobs
    from .judging.jobs import JudgeJob
    from .pipeline import ScoringContext, commit_evaluation, score_stored_session

    if not Path(db).exists():
        raise InputError(str(db), "database file not found")
    since_ns = parse_since(since)
    given_sets = GoldenSets.load(golden) if golden is not None else None  # a bad golden file: refuse before any write
    overrides = {
        name: value
        for name, value in dict(
            config=config,
            fuzzy_threshold=fuzzy_threshold,
            embedding_threshold=embedding_threshold,
            embed=embed,
            judge=judge,
            max_value_chars=max_value_chars,
        ).items()
        if value is not None
    }
    settings = (settings or EngineSettings()).replace(**overrides)
    store = Store(db)
    try:
        if given_sets is None:
            sets = GoldenSets.stored(store)
        else:
            sets = given_sets
            sets.save(store)  # the sets a rescore used become the stored golden, as the engine's do
        index = golden_index(sets.sets, settings)
        # The judge criteria go through the judge pool, as the live engine's do: every session's
        # deterministic criteria first, then the judge's answers, many at once, each recorded as
        # the session's next revision (an injected ``judge`` object still judges in line).
        context = ScoringContext(
            index=index,
            config=settings.config,
            judge=settings.judge,
            max_value_chars=settings.max_value_chars,
            config_hash=settings.config_hash,
            defer_judge=settings.judge is None,
        )
        targets = scored_sessions(store.conn, store.path, since_ns, sessions)
        changes: list[RescoreChange] = []
        jobs: list[Any] = []
        for done, session_id in enumerate(targets, 1):
            before = latest_evaluation(store.conn, session_id)
            finished = score_stored_session(
                store,
                session_id,
                context,
                expected_status=SCORED,
                details={"rescored": {"previous_revision": before.revision if before else None}},
            )
            if finished is not None:
                evaluation_id, revision = commit_evaluation(store, finished)
                changes.append(_change(session_id, before, finished, revision))
                if finished.rows.judge_job is not None:
                    jobs.append(JudgeJob(evaluation_id, session_id, finished.rows.judge_job["criteria"]))
            if progress is not None:
                progress(done, len(targets))
        if jobs:
            run_jobs(store, jobs, settings, record_faults=True)
            changes = [_judged(store, c) for c in changes]
        return changes
    finally:
        store.close()


def _judged(store: Store, change: RescoreChange) -> RescoreChange:
    """The change as it stands after the judge: its session's latest revision (the judge's
    outcome, when one was recorded)."""
    from dataclasses import replace

    latest = latest_evaluation(store.conn, change.session_id)
    if latest is None or latest.revision == change.after_revision:
        return change
    return replace(
        change,
        after_revision=latest.revision,
        after_case=latest.case_id,
        after_verdict=_outcome(latest.case_id, latest.verdict, latest.matched_by),
        after_score=latest.score if latest.score is not None else 0.0,
    )


def _change(session_id: str, before: LatestEvaluation | None, finished: Any, revision: int) -> RescoreChange:
    result = finished.result
    return RescoreChange(
        session_id=session_id,
        agent_version=finished.agent_version,
        before_revision=before.revision if before else None,
        after_revision=revision,
        before_case=before.case_id if before else None,
        after_case=result.eval_id or None,
        before_verdict=_outcome(before.case_id, before.verdict, before.matched_by) if before else NONE,
        after_verdict=_outcome(result.eval_id, result.verdict, finished.matched_by),
        before_score=before.score if before else None,
        after_score=result.score,
        matched_by=finished.matched_by,
    )


def summarize_changes(changes: Sequence[RescoreChange]) -> dict[str, Any]:
    """Counts for the before/after summary: how many verdicts moved, and which way."""
    moved: dict[str, int] = {}
    for c in changes:
        if c.verdict_changed:
            key = f"{c.before_verdict} -> {c.after_verdict}"
            moved[key] = moved.get(key, 0) + 1
    return {
        "rescored": len(changes),
        "changed": sum(1 for c in changes if c.changed),
        "verdict_changed": sum(1 for c in changes if c.verdict_changed),
        "transitions": dict(sorted(moved.items())),
        "before": _tally(c.before_verdict for c in changes),
        "after": _tally(c.after_verdict for c in changes),
    }


def _tally(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


# --- CLI ---------------------------------------------------------------------------------------


def add_rescore_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``rescore`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument("--db", default="otel-eval.db", help="database to rescore (default otel-eval.db)")
    parser.add_argument(
        "--since",
        metavar="ISO-TIME",
        help="only sessions with spans received at or after this time "
        f"(UTC unless it says otherwise; {SINCE_EXAMPLES})",
    )
    parser.add_argument("--session", action="append", default=[], metavar="ID", help="only this session; repeatable")
    parser.add_argument(
        "--golden",
        action="append",
        default=[],
        metavar="PATH",
        help="golden set to match against instead of the one stored in --db; repeatable",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="evaluation criteria: a TOML file ([criteria.NAME] tables) or google-adk's "
        "test_config.json; without it, a test_config.json beside a --golden .evalset.json / "
        ".test.json is used, as adk eval does (see docs/adk.md)",
    )
    parser.add_argument(
        "--fuzzy-threshold",
        type=float,
        default=90.0,
        metavar="N",
        help="fuzzy query match threshold, 0-100 (default 90)",
    )
    add_embedding_arguments(parser)
    parser.add_argument(
        "--judge-only",
        action="store_true",
        help="only run the LLM judge criteria of the config on stored sessions that have no judge "
        "answer yet (a backfill), through the judge pool and within its budget; the answers "
        "complete each session's current evaluation as its next revision. Resumable: an "
        "interrupted run, an outage or an exhausted budget leave the rest for the next run",
    )
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="ID",
        help="with --judge-only: only sessions matched to this golden case (a pattern such as "
        "'weather-*' works too); repeatable",
    )
    parser.add_argument(
        "--judge-concurrency",
        type=int,
        default=16,
        metavar="N",
        help="with --judge-only: judge calls in flight at most (default 16)",
    )
    parser.add_argument("--json", action="store_true", help="print the before/after summary as JSON")


def rescore_main(args: argparse.Namespace, console: Any = None) -> int:
    """Run ``otel-eval rescore`` from parsed arguments; returns the exit code (0)."""
    from .adk_config.resolve import config_for_command

    golden = list(getattr(args, "golden", None) or []) or None
    # TOML or google-adk's test_config.json; with neither, a test_config.json beside a --golden eval set
    config = config_for_command(getattr(args, "config", None), golden or ())
    if getattr(args, "judge_only", False):
        return _judge_only_main(args, config, console)
    run = functools.partial(
        rescore,
        args.db,
        golden=golden,
        config=config,
        since=getattr(args, "since", None),
        sessions=list(getattr(args, "session", None) or []) or None,
        fuzzy_threshold=getattr(args, "fuzzy_threshold", 90.0),
        embedding_threshold=getattr(args, "embedding_threshold", None),
        embed=embedding_backend(args),
    )
    if getattr(args, "json", False):
        changes = run()
        print(
            json.dumps(
                {"db": str(args.db), "summary": summarize_changes(changes), "sessions": [c.to_dict() for c in changes]},
                indent=2,
                default=str,
            )
        )
        return 0
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = console or Console()
    err = Console(stderr=True)
    with Progress(
        TextColumn("rescoring sessions"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("sessions", total=None)
        changes = run(progress=lambda done, total: bar.update(task, completed=done, total=total))
    render_changes(changes, console)
    return 0


def _judge_only_main(args: argparse.Namespace, config: EvalConfig | None, console: Any) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .engine.settings import EngineSettings
    from .judge_backfill import judge_stored

    settings = EngineSettings(judge_concurrency=max(1, int(getattr(args, "judge_concurrency", 16) or 16)))
    run = functools.partial(
        judge_stored,
        args.db,
        config=config,
        since=getattr(args, "since", None),
        sessions=list(getattr(args, "session", None) or []) or None,
        cases=list(getattr(args, "case", None) or []),
        settings=settings,
    )
    if getattr(args, "json", False):
        outcome = run()
        print(json.dumps({"db": str(args.db), **outcome.to_dict()}, indent=2))
        return 0
    console = console or Console()
    err = Console(stderr=True)
    with Progress(
        TextColumn("judging sessions"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("sessions", total=None)
        outcome = run(progress=lambda done, total: bar.update(task, completed=done, total=total))
    console.print(
        f"judged {len(outcome.judged)} session(s); {len(outcome.skipped)} skipped; "
        f"{len(outcome.left)} left for the next run",
        markup=False,
        highlight=False,
    )
    for reason in sorted(set(outcome.left.values())):
        count = sum(1 for r in outcome.left.values() if r == reason)
        console.print(f"  left: {count} ({reason})", markup=False, highlight=False)
    return 0


def render_changes(changes: Sequence[RescoreChange], console: Any) -> None:
    """The before/after summary: totals, then every session whose verdict or case changed."""
    from .tablefit import Column, fit_table, middle_ellipsis

    summary = summarize_changes(changes)
    console.print(
        f"rescored [bold]{summary['rescored']}[/] session(s); "
        f"[bold]{summary['verdict_changed']}[/] changed verdict, "
        f"{summary['changed'] - summary['verdict_changed']} changed only their matched case"
    )
    for transition, count in summary["transitions"].items():
        console.print(f"  {transition}: {count}")
    changed = [c for c in changes if c.changed]
    if not changed:
        return
    # Session ids and case names share long prefixes: both ends kept. At 80 columns the session,
    # the verdicts and the score come first; the cases and the version join as room allows.
    columns = [
        Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
        Column("version", min_width=8, shorten=middle_ellipsis, max_width=16),
        Column("case before", min_width=10, shorten=middle_ellipsis, max_width=20),
        Column("case after", min_width=10, shorten=middle_ellipsis, max_width=20),
        Column("before"),
        Column("after"),
        Column("score"),
    ]
    cells = []
    for c in changed:
        before_score = "-" if c.before_score is None else f"{c.before_score:.2f}"
        cells.append(
            [
                c.session_id,
                c.agent_version or "-",
                c.before_case or "-",
                c.after_case or "-",
                _styled(c.before_verdict),
                _styled(c.after_verdict),
                f"{before_score} → {c.after_score:.2f}",
            ]
        )
    console.print(fit_table("Changed sessions", columns, cells, console.width, priority=[0, 5, 4, 6, 3, 2, 1]))


def _styled(v: str) -> tuple[str, str]:
    return {PASS: ("PASS", "green"), FAIL: ("FAIL", "red")}.get(v, (v, "yellow"))
