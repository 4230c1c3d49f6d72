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

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..drift import TEST as DRIFT_TEST
from ..drift import DriftResult, drift
from ..errors import InputError
from ..models.results import FAILED, NOT_EVALUATED, PASSED
from ..read.evaluations import StoredEvaluation, current_evaluations

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
        """Count one run: a not_evaluated session apart, any other in the pass rate and the mean score."""
        if verdict == NOT_EVALUATED:
            self.not_evaluated += 1
            return
        self.evaluated += 1
        self.passed += int(bool(passed))
        self.score_sum += score or 0.0

    @property
    def pass_rate(self) -> float | None:
        """Passed / evaluated, to four places; None when nothing was evaluated (no rate, not 0%)."""
        return round(self.passed / self.evaluated, 4) if self.evaluated else None

    @property
    def mean_score(self) -> float | None:
        """Mean score of the evaluated runs, to four places; None when nothing was evaluated."""
        return round(self.score_sum / self.evaluated, 4) if self.evaluated else None

    def to_dict(self) -> dict[str, Any]:
        """The group's counts, rate and mean as docs/compare.md's JSON gives them."""
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
        """The delta as docs/compare.md's JSON gives it: the set only when known, criteria only for a case."""
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
    """One version's aggregates: sessions, matched, pass rate and mean score, and the health
    means (latency, tokens, steps, tool errors) over all its sessions, matched or not."""

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
        """The summary as docs/compare.md's JSON gives it."""
        return asdict(self)


@dataclass
class Comparison:
    """Two versions compared: both summaries, the cases (regressions first) and criteria with their
    status, and the cases whose tool paths changed."""

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
        """How many cases (``of="cases"``) or criteria (any other value) have each status."""
        items = self.cases if of == "cases" else self.criteria
        return {status: sum(1 for d in items if d.status == status) for status in STATUSES}

    @property
    def regressed(self) -> list[Delta]:
        """The cases that got worse: what ``--fail-on-regression`` fails on."""
        return [d for d in self.cases if d.status == REGRESSED]

    def to_dict(self) -> dict[str, Any]:
        """``compare --json``'s document (docs/compare.md)."""
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


def version_of(row: StoredEvaluation) -> str:
    """The row's agent version, ``unknown`` when the session carried none (so it is still compared)."""
    return row.agent_version or UNKNOWN_VERSION


def verdict_of_row(row: StoredEvaluation) -> str:
    """The row's verdict; a row stored without one is passed or failed."""
    return row.verdict or (PASSED if row.passed else FAILED)


def versions(rows: Iterable[StoredEvaluation]) -> dict[str, int]:
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


def _summary(version: str, rows: list[StoredEvaluation]) -> VersionSummary:
    matched = [r for r in rows if r.case_id]
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
        out.mean_score = round(sum(r.score or 0.0 for r in evaluated) / len(evaluated), 4)
    sums: dict[str, list[float]] = {}
    for row in rows:  # health is measured for every session, matched or not
        for c in row.criteria:
            if c.criterion != HEALTH and c.details.get("kind") != HEALTH:
                continue
            for detail, name in HEALTH_MEANS.items():
                value = c.details.get(detail)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums.setdefault(name, []).append(float(value))
            break
    for name, values in sums.items():
        setattr(out, name, round(sum(values) / len(values), 3))
    return out


def compare_rows(rows: Sequence[StoredEvaluation], baseline: str, candidate: str, min_delta: float = 0.0) -> Comparison:
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
            if not row.case_id:
                continue
            key = (row.eval_set_id or "", row.case_id)
            cases.setdefault(key, {}).setdefault(role, Stat()).add(row.passed, row.score, verdict_of_row(row))
            for c in row.criteria:
                if not c.skipped:
                    case_criteria.setdefault(key, {}).setdefault(c.criterion, {}).setdefault(role, Stat()).add(
                        c.passed, c.score
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


def _path_counts(by_role: dict[str, list[StoredEvaluation]]) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Case → (baseline, candidate) tool-path counts of matched sessions with a stored path."""
    out: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for slot, role in enumerate(("baseline", "candidate")):
        for row in by_role[role]:
            if row.case_id and row.tool_path:
                counts = out.setdefault(row.case_id, ({}, {}))[slot]
                counts[row.tool_path] = counts.get(row.tool_path, 0) + 1
    return {case: pair for case, pair in out.items() if pair[0] and pair[1]}


def compare(db_paths: Sequence[str | Path], baseline: str, candidate: str, min_delta: float = 0.0) -> Comparison:
    """Compare two agent versions across one or more databases (latest revision of each session)."""
    return compare_rows(current_evaluations(db_paths), baseline, candidate, min_delta)
