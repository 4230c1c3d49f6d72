"""``otel-eval report``'s tables: the summary line, the latest sessions and the criteria, golden
coverage and judge calibration, each fitted to the terminal's width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..read.evaluations import StoredEvaluation, failing_criteria
from .summary import summarize_sessions
from .verdicts import shows_score, terminal_score, verdict_word

#: Session table columns, most important first: the verdict is never dropped or cut, then what
#: tells sessions apart and why one failed; the rest shows when the terminal has room.
_SESSION_COLUMNS = ("result", "session", "score", "failing criteria", "case", "version", "query", "matched by")


def sessions_table(rows: Sequence[StoredEvaluation], width: int, title: str | None = "Sessions") -> Any:
    """The sessions as a table no wider than ``width``: columns dropped (least useful first) or
    abbreviated (ids by their middle, lists by whole items) rather than cut mid-word."""
    from ..tablefit import Column, fit_table, middle_ellipsis

    columns = {
        "session": Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
        "query": Column("query", min_width=12, max_width=60),
        "case": Column("case", min_width=10, shorten=middle_ellipsis, max_width=24),
        "matched by": Column("matched by"),
        "version": Column("version", min_width=8, shorten=middle_ellipsis),
        "result": Column("result"),
        "score": Column("score", justify="right"),
        "failing criteria": Column("failing criteria", min_width=16, is_list=True, max_width=34),
    }
    layout = ("session", "query", "case", "matched by", "version", "result", "score", "failing criteria")
    cells = []
    for r in rows:
        word, style = verdict_word(r)
        cells.append(
            [
                r.session_id,
                r.query or "-",
                r.case_id or "-",
                r.matched_by or "-",
                r.agent_version or "-",
                (word, style),
                terminal_score(r.score if shows_score(r) else None),
                failing_criteria(r.criteria) or ["-"],
            ]
        )
    return fit_table(
        title, [columns[c] for c in layout], cells, width, priority=[layout.index(c) for c in _SESSION_COLUMNS]
    )


def render_report(rows: Sequence[StoredEvaluation], console: Any = None, limit: int = 50, pending: str = "") -> None:
    """Summary, the latest sessions and the criteria, for a terminal of any width (80 columns of
    a CI log included). ``pending`` says what is not scored yet (:func:`otel_eval.read.backlog.describe`)."""
    from rich.console import Console

    from ..tablefit import Column, fit_table, middle_ellipsis

    console = console or Console()
    summary = summarize_sessions(rows)
    rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.0%}"
    console.print(
        f"[bold]{summary['sessions']}[/] sessions, {summary['matched']} matched a golden case, "
        f"[green]{summary['passed']} passed[/], [red]{summary['failed']} failed[/], "
        f"[yellow]{summary['not_evaluated']} not evaluated[/], "
        f"{summary['unmatched']} unmatched; pass rate [bold]{rate}[/]"
    )
    if pending:
        console.print(pending, style="yellow", markup=False, highlight=False)
    if not rows:
        return
    console.print(sessions_table(rows[-limit:], console.width))
    if summary["criteria"]:
        columns = [
            Column("criterion", min_width=12, shorten=middle_ellipsis, max_width=32),
            Column("pass rate", justify="right"),
            Column("avg score", justify="right"),
            Column("evaluated", justify="right"),
            Column("passed", justify="right"),
            Column("skipped", justify="right"),
        ]
        cells = [
            [
                name,
                "-" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}",
                "-" if s["avg_score"] is None else f"{s['avg_score']:.2f}",
                str(s["evaluated"]),
                str(s["passed"]),
                str(s["skipped"]),
            ]
            for name, s in summary["criteria"].items()
        ]
        console.print(fit_table("Criteria", columns, cells, console.width, priority=[0, 1, 2, 3, 4, 5]))


def coverage_line(cov: Any) -> str:
    """One line: how much of the golden set live traffic exercises, and how much traffic no case
    describes (:class:`otel_eval.read.coverage.Coverage`)."""
    golden = [c for c in cov.cases if c.in_golden_set]
    exercised = sum(1 for c in golden if c.sessions)
    share = "-" if cov.unmatched_share is None else f"{cov.unmatched_share:.0%}"
    window = f" since {cov.since}" if cov.since else ""
    return (
        f"golden coverage{window}: {exercised} of {len(golden)} cases exercised, {len(golden) - exercised} never; "
        f"unmatched {share} ({cov.unmatched} of {cov.sessions} sessions)"
    )


def render_coverage(cov: Any, console: Any, limit: int = 30) -> None:
    """The coverage line, then the cases: sessions, per agent version, days seen, last seen;
    cases never exercised are listed last, so the set's blind spots are in view."""
    from ..tablefit import Column, fit_table, middle_ellipsis

    console.print(coverage_line(cov), markup=False, highlight=False)
    if not cov.cases:
        return
    shown = cov.exercised[:limit] + cov.never_exercised[:limit]
    columns = [
        Column("case", min_width=12, shorten=middle_ellipsis, max_width=30),
        Column("sessions", justify="right"),
        Column("by version", min_width=12, is_list=True),
        Column("days", justify="right"),
        Column("last seen"),
        Column("eval set", min_width=8, shorten=middle_ellipsis, max_width=24),
    ]
    cells = [
        [
            c.eval_id,
            str(c.sessions) if c.sessions else ("never", "yellow"),
            [f"{v} {n}" for v, n in sorted(c.by_version.items())] or ["-"],
            str(len(c.by_day)),
            (c.last_seen or "-")[:16].replace("T", " "),
            c.eval_set_id or "-",
        ]
        for c in shown
    ]
    hidden = len(cov.cases) - len(shown)
    title = "Golden coverage" + (f" ({hidden} more in --json)" if hidden > 0 else "")
    console.print(fit_table(title, columns, cells, console.width, priority=[0, 1, 2, 4, 3, 5]))


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / whole:.0%})" if whole else "-"


def calibration_line(cal: Any) -> str:
    """One line: how many sessions people labelled, and how often the verdict agrees with them
    (:class:`otel_eval.read.labels.Calibration`)."""
    if not cal.labelled_sessions:
        return "human labels: none yet (otel-eval label SESSION agree|disagree, or the dashboard's session page)"
    apart = f", {cal.without_verdict} without a pass/fail verdict" if cal.without_verdict else ""
    agreeing = _share(cal.verdict.agree, cal.verdict.sessions)
    return (
        f"human labels: {cal.labelled_sessions} session(s) labelled ({cal.agree} agree, {cal.disagree} disagree"
        f"{apart}); the current verdict agrees with the labels in {agreeing}"
    )


def render_calibration(cal: Any, console: Any) -> None:
    """The labels line, then per criterion how often its pass/fail agrees with the human-corrected
    verdict (judge calibration), then the user feedback per verdict."""
    from ..tablefit import Column, fit_table, middle_ellipsis

    console.print(calibration_line(cal), markup=False, highlight=False)
    if cal.criteria:
        columns = [
            Column("criterion", min_width=12, shorten=middle_ellipsis, max_width=32),
            Column("labelled", justify="right"),
            Column("agree", justify="right"),
            Column("agreement", justify="right"),
            Column("passed, should fail", justify="right"),
            Column("failed, should pass", justify="right"),
        ]
        cells = [
            [
                c.criterion,
                str(c.sessions),
                str(c.agree),
                "-" if c.rate is None else f"{c.rate:.0%}",
                str(c.false_pass),
                str(c.false_fail),
            ]
            for c in cal.criteria
        ]
        console.print(
            fit_table(
                "Judge calibration (each criterion against the human labels)",
                columns,
                cells,
                console.width,
                priority=[0, 3, 1, 2, 4, 5],
            )
        )
    if cal.feedback:
        columns = [
            Column("verdict"),
            Column("feedback", min_width=10, max_width=30),
            Column("value", min_width=6, max_width=30),
            Column("count", justify="right"),
        ]
        cells = [[f.outcome, f.name, f.value, str(f.count)] for f in cal.feedback]
        console.print(
            fit_table(
                f"User feedback by verdict ({cal.feedback_total} records)",
                columns,
                cells,
                console.width,
                priority=[0, 2, 3, 1],
            )
        )
