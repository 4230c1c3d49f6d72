"""``otel-eval compare`` in a terminal: the versions side by side, the cases (regressions first)
and criteria, the tool paths that changed, and the release gate's decision, fitted to the width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..drift import DriftResult
from ..gate import NOT_ENOUGH_EVIDENCE, PROMOTE, ROLL_BACK, GateResult
from .comparison import IMPROVED, ONLY_BASELINE, ONLY_CANDIDATE, REGRESSED, UNCHANGED, Comparison, Stat

_STATUS_WORDS = {
    IMPROVED: ("improved", "green"),
    REGRESSED: ("regressed", "red"),
    UNCHANGED: ("unchanged", ""),
    ONLY_BASELINE: ("only baseline", "yellow"),
    ONLY_CANDIDATE: ("only candidate", "yellow"),
}

_GATE_WORDS = {
    PROMOTE: ("promote", "green"),
    ROLL_BACK: ("roll back", "red"),
    NOT_ENOUGH_EVIDENCE: ("not enough evidence yet", "yellow"),
}


def _rate(stat: Stat | None) -> str:
    if not stat or not stat.evaluated:
        return "-"
    return f"{stat.pass_rate:.0%} ({stat.passed}/{stat.evaluated})"


def _score(stat: Stat | None) -> str:
    return "-" if not stat or stat.mean_score is None else f"{stat.mean_score:.2f}"


def _signed(value: float | None, percent: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.0%}" if percent else f"{value:+.2f}"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def render_comparison(comparison: Comparison, console: Any = None) -> None:
    """Per-version summary, then cases (regressions first) and criteria, for a terminal."""
    from rich.console import Console

    from ..tablefit import Column, boxed_frame, fit_table, middle_ellipsis

    console = console or Console()
    b, c = comparison.summary["baseline"], comparison.summary["candidate"]
    counts = comparison.counts()
    console.print(
        f"[bold]{comparison.baseline}[/] (baseline) → [bold]{comparison.candidate}[/] (candidate): "
        f"[red]{counts[REGRESSED]} regressed[/], [green]{counts[IMPROVED]} improved[/], "
        f"{counts[UNCHANGED]} unchanged, {counts[ONLY_BASELINE] + counts[ONLY_CANDIDATE]} in one version only"
    )
    rows = [
        ("sessions", str(b.sessions), str(c.sessions)),
        ("matched a case", str(b.matched), str(c.matched)),
        ("not evaluated", str(b.not_evaluated), str(c.not_evaluated)),
        ("pass rate", _num(b.pass_rate, "{:.0%}"), _num(c.pass_rate, "{:.0%}")),
        ("mean score", _num(b.mean_score), _num(c.mean_score)),
        ("mean latency (ms)", _num(b.mean_latency_ms, "{:.1f}"), _num(c.mean_latency_ms, "{:.1f}")),
        ("mean tokens", _num(b.mean_total_tokens, "{:.1f}"), _num(c.mean_total_tokens, "{:.1f}")),
        ("mean steps", _num(b.mean_steps, "{:.1f}"), _num(c.mean_steps, "{:.1f}")),
    ]
    # The headers are the versions (whole in the line above): long ones keep both ends, so that
    # 1.4.2-build-0815 and 1.4.3-build-0815 stay apart, in half the room the row names leave.
    room = max(12, (console.width - max(len(r[0]) for r in rows) - boxed_frame(3)) // 2)
    columns = [
        Column(""),
        Column(middle_ellipsis(comparison.baseline, room)),
        Column(middle_ellipsis(comparison.candidate, room)),
    ]
    console.print(fit_table("Versions", columns, rows, console.width))
    for title, deltas, show_set in (("Cases", comparison.cases, True), ("Criteria", comparison.criteria, False)):
        if not deltas:
            continue
        # Narrow terminals keep the key, the status and the deltas; whole rates and scores come
        # with the room for them (never a status or a number cut in half).
        columns = [
            Column("case" if show_set else "criterion", min_width=12, shorten=middle_ellipsis, max_width=30),
            Column("baseline pass", justify="right"),
            Column("candidate pass", justify="right"),
            Column("Δ pass", justify="right"),
            Column("baseline score", justify="right"),
            Column("candidate score", justify="right"),
            Column("Δ score", justify="right"),
            Column("status"),
            Column("worse criteria", min_width=16, is_list=True),
        ]
        cells = []
        for d in deltas:
            word, style = _STATUS_WORDS[d.status]
            cells.append(
                [
                    d.key,
                    _rate(d.baseline),
                    _rate(d.candidate),
                    _signed(d.pass_rate_delta, True),
                    _score(d.baseline),
                    _score(d.candidate),
                    _signed(d.score_delta),
                    (word, style),
                    [x.key for x in d.criteria if x.status == REGRESSED] or ["-"],
                ]
            )
        priority = [0, 7, 3, 6, 8, 2, 5, 1, 4] if show_set else [0, 7, 3, 6, 2, 5, 1, 4]
        console.print(fit_table(title, columns, cells, console.width, priority=priority))
    render_drift(comparison.drift, console)


def render_drift(results: Sequence[DriftResult], console: Any) -> None:
    """The cases whose tool paths changed significantly, with the path that moved most."""
    from ..tablefit import Column, fit_table, middle_ellipsis

    changed = [r for r in results if r.significant]
    tested = sum(1 for r in results if r.p_value is not None)
    if not results:
        return
    console.print(
        f"Tool paths: {len(changed)} of {tested} case(s) tested changed significantly "
        "(chi-square, Benjamini-Hochberg 5% FDR)",
        markup=False,
        highlight=False,
    )
    if not changed:
        return
    columns = [
        Column("case", min_width=12, shorten=middle_ellipsis, max_width=30),
        Column("p", justify="right"),
        Column("path that moved most", min_width=16),
        Column("share", justify="right"),
    ]
    cells = []
    for r in changed:
        top = r.changed_paths[0]
        share = f"{top['baseline_share'] or 0:.0%} → {top['candidate_share'] or 0:.0%}"
        cells.append([r.key, f"{r.p_value:.1e}", top["path"], share])
    console.print(fit_table("Path changes", columns, cells, console.width, priority=[0, 3, 2, 1]))


def render_gate(result: GateResult, console: Any = None) -> None:
    """``compare --gate`` in a terminal: the decision and why, then each case's pass rates and the
    interval of their difference that decided it."""
    from rich.console import Console

    from ..tablefit import Column, fit_table, middle_ellipsis

    console = console or Console()
    word, style = _GATE_WORDS[result.decision]
    console.print(f"[bold {style}]{word}[/]: {result.candidate} against {result.baseline}. {result.reason}")
    tests = [t for t in [result.overall, *result.cases] if t is not None]
    if not tests:
        return
    columns = [
        Column("case", min_width=12, shorten=middle_ellipsis, max_width=30),
        Column("baseline pass", justify="right"),
        Column("candidate pass", justify="right"),
        Column("Δ pass", justify="right"),
        Column("Δ interval", justify="right"),
        Column("decision"),
    ]
    cells = []
    for t in tests:
        rate = lambda p, n: f"{p / n:.0%} ({p}/{n})" if n else "-"  # noqa: E731
        diff = t.difference
        decision = _GATE_WORDS[t.decision] if t.examined else (f"fewer than {result.min_sessions} sessions", "")
        cells.append(
            [
                t.key,
                rate(t.baseline_passed, t.baseline_total),
                rate(t.candidate_passed, t.candidate_total),
                "-" if diff is None else f"{diff:+.0%}",
                f"[{t.interval[0]:+.2f}, {t.interval[1]:+.2f}]",
                decision,
            ]
        )
    console.print(
        fit_table(
            f"Release gate ({result.confidence:.0%} confidence, margin {result.margin:.0%})",
            columns,
            cells,
            console.width,
            priority=[0, 5, 3, 4, 1, 2],
        )
    )
