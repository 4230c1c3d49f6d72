"""Compare two agent versions: which golden cases and criteria got better or worse.

Like Big Sky's comparative evaluators, but over live results: the current evaluation of every
session is grouped by agent version (``evaluations.agent_version``, from ``service.version`` or
``gen_ai.agent.version``), and each golden case and each criterion is compared between the
baseline and the candidate version:

* **improved / regressed** — the pass rate moved; at an equal pass rate, the mean score moved
  by more than ``min_delta``;
* **unchanged** — neither moved;
* **only_baseline / only_candidate** — one version has no evaluated session of that case (none,
  or only not_evaluated ones).

A session whose verdict is not_evaluated (every criterion skipped) is counted apart, in
``not_evaluated``: it is neither a pass nor a failure, so it is in no pass rate or mean score.

Criteria overall are compared over the cases both versions ran, so a change in traffic (a case
only the candidate saw) is not mistaken for a criterion getting worse.

Plus per-version aggregates: sessions, matched, pass rate, mean score, and the mean latency,
tokens and steps from the health criterion's details. Pure over the rows of
:func:`otel_eval.read.evaluations.current_evaluations`; the JSON shape is in docs/compare.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .drift import TEST as DRIFT_TEST
from .drift import DriftResult, drift
from .errors import InputError
from .gate import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGIN,
    DEFAULT_MIN_SESSIONS,
    EXIT_CODES,
    NOT_ENOUGH_EVIDENCE,
    PROMOTE,
    ROLL_BACK,
    GateResult,
    gate,
)
from .models.results import FAILED, NOT_EVALUATED, PASSED
from .read.evaluations import current_evaluations
from .read.verdicts import verdict_counts

IMPROVED, REGRESSED, UNCHANGED = "improved", "regressed", "unchanged"
ONLY_BASELINE, ONLY_CANDIDATE = "only_baseline", "only_candidate"
STATUSES = (REGRESSED, IMPROVED, UNCHANGED, ONLY_BASELINE, ONLY_CANDIDATE)
UNKNOWN_VERSION = "unknown"
HEALTH = "health"
#: Health details averaged per version: detail key → summary key.
HEALTH_MEANS = {
    "session_latency_ms": "mean_latency_ms",
    "total_tokens": "mean_total_tokens",
    "steps": "mean_steps",
    "tool_errors": "mean_tool_errors",
}
_EPSILON = 1e-9


@dataclass
class Stat:
    """Pass rate and mean score of one group of evaluations (a case's sessions, a criterion's runs)."""

    evaluated: int = 0
    passed: int = 0
    score_sum: float = field(default=0.0, repr=False)
    not_evaluated: int = 0
    """Sessions where nothing was checked: counted, but in neither the pass rate nor the mean."""

    def add(self, passed: bool, score: float | None, verdict: str | None = None) -> None:
        if verdict == NOT_EVALUATED:
            self.not_evaluated += 1
            return
        self.evaluated += 1
        self.passed += int(bool(passed))
        self.score_sum += score or 0.0

    @property
    def pass_rate(self) -> float | None:
        return round(self.passed / self.evaluated, 4) if self.evaluated else None

    @property
    def mean_score(self) -> float | None:
        return round(self.score_sum / self.evaluated, 4) if self.evaluated else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "evaluated": self.evaluated,
            "passed": self.passed,
            "not_evaluated": self.not_evaluated,
            "pass_rate": self.pass_rate,
            "mean_score": self.mean_score,
        }


@dataclass
class Delta:
    """One case, one criterion, or one criterion within a case, in both versions."""

    key: str
    baseline: Stat | None
    candidate: Stat | None
    status: str
    pass_rate_delta: float | None
    score_delta: float | None
    eval_set_id: str | None = None
    criteria: list[Delta] = field(default_factory=list)
    """For a case: its criteria compared (skipped runs left out)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key}
        if self.eval_set_id is not None:
            out["eval_set_id"] = self.eval_set_id
        out.update(
            status=self.status,
            pass_rate_delta=self.pass_rate_delta,
            score_delta=self.score_delta,
            baseline=self.baseline.to_dict() if self.baseline else None,
            candidate=self.candidate.to_dict() if self.candidate else None,
        )
        if self.criteria:
            out["criteria"] = [c.to_dict() for c in self.criteria]
        return out


@dataclass
class VersionSummary:
    version: str
    sessions: int = 0
    matched: int = 0
    passed: int = 0
    not_evaluated: int = 0
    pass_rate: float | None = None
    mean_score: float | None = None
    mean_latency_ms: float | None = None
    mean_total_tokens: float | None = None
    mean_steps: float | None = None
    mean_tool_errors: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    baseline: str
    candidate: str
    summary: dict[str, VersionSummary]
    """Keyed "baseline" and "candidate"."""
    cases: list[Delta]
    criteria: list[Delta]
    min_delta: float = 0.0
    drift: list[DriftResult] = field(default_factory=list)
    """Per case both versions ran: did the candidate change its tool paths? (:mod:`otel_eval.drift`)"""

    def counts(self, of: str = "cases") -> dict[str, int]:
        items = self.cases if of == "cases" else self.criteria
        return {status: sum(1 for d in items if d.status == status) for status in STATUSES}

    @property
    def regressed(self) -> list[Delta]:
        return [d for d in self.cases if d.status == REGRESSED]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "min_delta": self.min_delta,
            "summary": {k: v.to_dict() for k, v in self.summary.items()},
            "counts": {"cases": self.counts("cases"), "criteria": self.counts("criteria")},
            "cases": [d.to_dict() for d in self.cases],
            "criteria": [d.to_dict() for d in self.criteria],
            "drift": {"test": DRIFT_TEST, "cases": [d.to_dict() for d in self.drift]},
        }


def version_of(row: dict[str, Any]) -> str:
    return row.get("agent_version") or UNKNOWN_VERSION


def verdict_of_row(row: dict[str, Any]) -> str:
    """The row's verdict; rows built without one (older callers) are passed or failed."""
    return row.get("verdict") or (PASSED if row["passed"] else FAILED)


def versions(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Agent versions present, with their session counts."""
    out: dict[str, int] = {}
    for row in rows:
        out[version_of(row)] = out.get(version_of(row), 0) + 1
    return dict(sorted(out.items()))


def status_of(
    baseline: Stat | None, candidate: Stat | None, min_delta: float = 0.0
) -> tuple[str, float | None, float | None]:
    """(status, pass-rate delta, mean-score delta) of candidate against baseline."""
    if not baseline or not baseline.evaluated:
        return (ONLY_CANDIDATE if candidate and candidate.evaluated else UNCHANGED), None, None
    if not candidate or not candidate.evaluated:
        return ONLY_BASELINE, None, None
    rate = round(candidate.passed / candidate.evaluated - baseline.passed / baseline.evaluated, 4)
    score = round(candidate.score_sum / candidate.evaluated - baseline.score_sum / baseline.evaluated, 4)
    if abs(rate) > _EPSILON:
        return (IMPROVED if rate > 0 else REGRESSED), rate, score
    if abs(score) > min_delta + _EPSILON:
        return (IMPROVED if score > 0 else REGRESSED), rate, score
    return UNCHANGED, rate, score


def _delta(key: str, pair: dict[str, Stat], min_delta: float, **extra: Any) -> Delta:
    b, c = pair.get("baseline"), pair.get("candidate")
    status, rate, score = status_of(b, c, min_delta)
    return Delta(key=key, baseline=b, candidate=c, status=status, pass_rate_delta=rate, score_delta=score, **extra)


def _summary(version: str, rows: list[dict[str, Any]]) -> VersionSummary:
    matched = [r for r in rows if r.get("case_id")]
    evaluated = [r for r in matched if verdict_of_row(r) != NOT_EVALUATED]
    passed = sum(1 for r in evaluated if verdict_of_row(r) == PASSED)
    out = VersionSummary(
        version=version,
        sessions=len(rows),
        matched=len(matched),
        passed=passed,
        not_evaluated=len(matched) - len(evaluated),
    )
    if evaluated:
        out.pass_rate = round(passed / len(evaluated), 4)
        out.mean_score = round(sum(r["score"] or 0.0 for r in evaluated) / len(evaluated), 4)
    sums: dict[str, list[float]] = {}
    for row in rows:  # health is measured for every session, matched or not
        for c in row.get("criteria", []):
            if c["criterion"] != HEALTH and (c.get("details") or {}).get("kind") != HEALTH:
                continue
            for detail, name in HEALTH_MEANS.items():
                value = (c.get("details") or {}).get(detail)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums.setdefault(name, []).append(float(value))
            break
    for name, values in sums.items():
        setattr(out, name, round(sum(values) / len(values), 3))
    return out


def compare_rows(rows: Sequence[dict[str, Any]], baseline: str, candidate: str, min_delta: float = 0.0) -> Comparison:
    """The comparison of two versions over current-evaluation rows (pure)."""
    present = versions(rows)
    for role, version in (("baseline", baseline), ("candidate", candidate)):
        if version not in present:
            known = ", ".join(f"{v} ({n} sessions)" for v, n in present.items()) or "none"
            raise InputError(
                f"--{role}", f"no evaluations of agent version {version!r}; versions present: {known}", f"--{role}"
            )
    by_role = {
        "baseline": [r for r in rows if version_of(r) == baseline],
        "candidate": [r for r in rows if version_of(r) == candidate],
    }
    cases: dict[tuple[str, str], dict[str, Stat]] = {}
    case_criteria: dict[tuple[str, str], dict[str, dict[str, Stat]]] = {}
    criteria: dict[str, dict[str, Stat]] = {}
    for role, members in by_role.items():
        for row in members:
            if not row.get("case_id"):
                continue
            key = (row.get("eval_set_id") or "", row["case_id"])
            cases.setdefault(key, {}).setdefault(role, Stat()).add(row["passed"], row["score"], verdict_of_row(row))
            for c in row.get("criteria", []):
                if not c.get("skipped"):
                    case_criteria.setdefault(key, {}).setdefault(c["criterion"], {}).setdefault(role, Stat()).add(
                        c["passed"], c["score"]
                    )
    # Criteria overall are compared on the cases BOTH versions ran: a case only one version saw
    # would otherwise read as a criterion getting better or worse when only the traffic changed.
    for key, per_criterion in case_criteria.items():
        if len(cases[key]) < 2:
            continue
        for name, pair in per_criterion.items():
            for role, stat in pair.items():
                total = criteria.setdefault(name, {}).setdefault(role, Stat())
                total.evaluated += stat.evaluated
                total.passed += stat.passed
                total.score_sum += stat.score_sum
    case_deltas = [
        _delta(
            case_id,
            pair,
            min_delta,
            eval_set_id=set_id or None,
            criteria=[
                _delta(name, per, min_delta) for name, per in sorted(case_criteria.get((set_id, case_id), {}).items())
            ],
        )
        for (set_id, case_id), pair in cases.items()
    ]
    order = {s: i for i, s in enumerate(STATUSES)}  # regressions first: what to look at
    case_deltas.sort(key=lambda d: (order[d.status], d.key, d.eval_set_id or ""))
    criterion_deltas = [_delta(name, pair, min_delta) for name, pair in sorted(criteria.items())]
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        min_delta=min_delta,
        summary={role: _summary(v, by_role[role]) for role, v in (("baseline", baseline), ("candidate", candidate))},
        cases=case_deltas,
        criteria=criterion_deltas,
        drift=drift(_path_counts(by_role)),
    )


def _path_counts(by_role: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Case → (baseline, candidate) tool-path counts of matched sessions with a stored path."""
    out: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for slot, role in enumerate(("baseline", "candidate")):
        for row in by_role[role]:
            if row.get("case_id") and row.get("tool_path"):
                counts = out.setdefault(row["case_id"], ({}, {}))[slot]
                counts[row["tool_path"]] = counts.get(row["tool_path"], 0) + 1
    return {case: pair for case, pair in out.items() if pair[0] and pair[1]}


def compare(db_paths: Sequence[str | Path], baseline: str, candidate: str, min_delta: float = 0.0) -> Comparison:
    """Compare two agent versions across one or more databases (latest revision of each session)."""
    return compare_rows(current_evaluations(db_paths), baseline, candidate, min_delta)


# --- rendering ---------------------------------------------------------------------------------

_STYLE = {
    IMPROVED: "[green]improved[/]",
    REGRESSED: "[red]regressed[/]",
    UNCHANGED: "unchanged",
    ONLY_BASELINE: "[yellow]only baseline[/]",
    ONLY_CANDIDATE: "[yellow]only candidate[/]",
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

    from .tablefit import Column, boxed_frame, fit_table, middle_ellipsis

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
    from .tablefit import Column, fit_table, middle_ellipsis

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


_STATUS_WORDS = {
    IMPROVED: ("improved", "green"),
    REGRESSED: ("regressed", "red"),
    UNCHANGED: ("unchanged", ""),
    ONLY_BASELINE: ("only baseline", "yellow"),
    ONLY_CANDIDATE: ("only candidate", "yellow"),
}


# --- CLI ---------------------------------------------------------------------------------------


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``compare`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument("--baseline", required=True, metavar="VERSION", help="agent version to compare against")
    parser.add_argument("--candidate", required=True, metavar="VERSION", help="agent version being judged")
    parser.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="PATH",
        help="database file; repeat to combine several collectors (default otel-eval.db)",
    )
    parser.add_argument(
        "--min-delta",
        type=float,
        default=0.0,
        metavar="X",
        help="mean-score change (at an equal pass rate) below which a case is unchanged (default 0)",
    )
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit with status 1 when any case regressed (for CI)"
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON (docs/compare.md)")
    gate = parser.add_argument_group(
        "release gate",
        "--gate decides a rollout from the two versions' verdicts on the same golden cases, with "
        "confidence sequences valid however often it is asked (docs/compare.md#release-gate). Exit 0 promote, "
        "1 roll back, 3 not enough evidence yet.",
    )
    gate.add_argument(
        "--gate", action="store_true", help="decide promote / roll back / wait instead of listing changes"
    )
    gate.add_argument(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        metavar="X",
        help=f"largest pass-rate drop still acceptable (default {DEFAULT_MARGIN})",
    )
    gate.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        metavar="C",
        help=f"confidence of every decision together (default {DEFAULT_CONFIDENCE})",
    )
    gate.add_argument(
        "--min-sessions",
        type=int,
        default=DEFAULT_MIN_SESSIONS,
        metavar="N",
        help="sessions per version a case needs to be judged on its own; smaller cases count "
        f"overall only (default {DEFAULT_MIN_SESSIONS})",
    )


def gate_main(args: argparse.Namespace, console: Any = None) -> int:
    """``compare --gate``: the gate's decision as its exit code (0 promote, 1 roll back, 3 wait)."""
    if not 0.0 < args.confidence < 1.0 or not 0.0 <= args.margin < 1.0 or args.min_sessions < 1:
        raise InputError(
            "--gate",
            "--confidence must be in (0, 1), --margin in [0, 1) and --min-sessions ≥ 1; got "
            f"{args.confidence}, {args.margin}, {args.min_sessions}",
            "options",
        )
    counts = verdict_counts(args.db or ["otel-eval.db"])
    unknown = [v for v in (args.baseline, args.candidate) if v not in counts.sessions]
    if unknown:  # for a gate, a version not seen yet is "wait", not a usage error
        known = ", ".join(f"{v} ({n} sessions)" for v, n in counts.sessions.items()) or "none"
        print(
            f"otel-eval: not enough evidence yet: no evaluations of agent version {' or '.join(map(repr, unknown))}; "
            f"versions known: {known}",
            file=sys.stderr,
        )
        return EXIT_CODES[NOT_ENOUGH_EVIDENCE]
    result = gate(
        counts,
        args.baseline,
        args.candidate,
        margin=args.margin,
        confidence=args.confidence,
        min_sessions=args.min_sessions,
    )
    if getattr(args, "json", False):
        print(json.dumps(result.to_dict(), indent=2))
    else:
        render_gate(result, console)
    return result.exit_code


def render_gate(result: GateResult, console: Any = None) -> None:
    from rich.console import Console

    from .tablefit import Column, fit_table, middle_ellipsis

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


_GATE_WORDS = {
    PROMOTE: ("promote", "green"),
    ROLL_BACK: ("roll back", "red"),
    NOT_ENOUGH_EVIDENCE: ("not enough evidence yet", "yellow"),
}


def compare_main(args: argparse.Namespace, console: Any = None) -> int:
    """Run ``otel-eval compare``; exit code 1 with --fail-on-regression and a regressed case, else 0.
    With ``--gate``, the gate's exit code (:func:`gate_main`)."""
    if getattr(args, "gate", False):
        return gate_main(args, console)
    comparison = compare(args.db or ["otel-eval.db"], args.baseline, args.candidate, getattr(args, "min_delta", 0.0))
    if getattr(args, "json", False):
        print(json.dumps(comparison.to_dict(), indent=2, default=str))
    else:
        render_comparison(comparison, console)
    return 1 if getattr(args, "fail_on_regression", False) and comparison.regressed else 0
