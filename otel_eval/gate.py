"""Release gate: promote, roll back, or wait for evidence, from two agent versions' live verdicts.

The question a rollout asks is "is the candidate worse than the baseline by more than the margin?",
and it asks it again every minute as traffic arrives. A fixed-sample test (a t-test, a Wilson
interval) asked that often will sooner or later say "worse" (or "fine") by chance alone. So every
interval here is a **confidence sequence**: it holds at every number of sessions at once, so the
gate may be asked as often as one likes, and stopping at the first decisive answer is valid.

Method (named in ``--json`` as :data:`METHOD`): for each version's pass rate, the **beta-binomial
mixture confidence sequence** (Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon 2021, §3.3) with a
uniform Beta(1, 1) mixing distribution: the set of pass rates μ at which the mixture martingale

    M_n(μ) = B(1 + passes, 1 + failures) / (μ^passes · (1 − μ)^failures)

is below 1/α. By Ville's inequality the true rate leaves that set, at any n, with probability at
most α. Unlike a sub-Gaussian bound it is tight near 0 % and 100 %, where agent pass rates live.
The difference candidate − baseline lies in [L_c − U_b, U_c − L_b] when both sequences hold; each
is run at α/2 (union bound), and α itself is split evenly (Bonferroni) over the overall test and
every case examined on its own, so all decisions together hold at the stated confidence.

Decision, for ``margin`` m:

* **roll back** (exit 1): overall, or on a case with enough sessions, the whole interval lies
  below −m: the candidate is worse by more than the margin, at the confidence;
* **promote** (exit 0): overall, and on every case with enough sessions, the interval lies above
  −m: the candidate is not worse by more than the margin, at the confidence;
* otherwise **not enough evidence yet** (exit 3), as is a version with no evaluated session.

Only cases both versions ran are compared (a change in traffic is not a change in quality), and
only sessions with a verdict (passed or failed; not_evaluated is neither). A case has "enough
sessions" when each version has at least ``min_sessions`` of it; smaller cases still count overall.
Pure: counts in (:func:`otel_eval.read.verdicts.verdict_counts`), a :class:`GateResult` out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .read.verdicts import VerdictCounts

METHOD = "beta-binomial mixture confidence sequence (Robbins 1970; Howard et al. 2021), uniform Beta(1,1)"
PROMOTE, ROLL_BACK, NOT_ENOUGH_EVIDENCE = "promote", "roll_back", "not_enough_evidence"
EXIT_CODES = {PROMOTE: 0, ROLL_BACK: 1, NOT_ENOUGH_EVIDENCE: 3}
GAUGE_VALUES = {ROLL_BACK: -1, NOT_ENOUGH_EVIDENCE: 0, PROMOTE: 1}
"""The Prometheus gauge's value per decision: Argo Rollouts / Flagger compare against a number."""
DEFAULT_MARGIN = 0.10
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MIN_SESSIONS = 30
_BISECTIONS = 60  # 2^-60 of the unit interval: far below any rate a person reads


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _log_martingale(mu: float, passes: int, failures: int, log_mixture: float) -> float:
    """log M_n(μ); +inf where μ is impossible (0 with a pass, 1 with a failure)."""
    if (mu <= 0.0 and passes) or (mu >= 1.0 and failures):
        return math.inf
    likelihood = (passes * math.log(mu) if passes else 0.0) + (failures * math.log1p(-mu) if failures else 0.0)
    return log_mixture - likelihood


def confidence_sequence(passes: int, total: int, alpha: float) -> tuple[float, float]:
    """The pass rates not ruled out after ``passes`` of ``total`` sessions, valid at every ``total``
    at once with probability ≥ 1 − ``alpha``. No session: the whole unit interval."""
    if total <= 0:
        return 0.0, 1.0
    failures = total - passes
    log_mixture = _log_beta(1 + passes, 1 + failures)
    threshold = math.log(1.0 / alpha)
    centre = passes / total  # where log M is smallest (it is convex in μ); inside the set
    inside = lambda mu: _log_martingale(mu, passes, failures, log_mixture) < threshold  # noqa: E731

    def edge(outer: float) -> float:
        if inside(outer):
            return outer
        lo, hi = centre, outer  # lo inside, hi outside
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if inside(mid) else (lo, mid)
        return lo

    return edge(0.0), edge(1.0)


@dataclass
class Test:
    """One comparison of pass rates: overall, or one case's."""

    key: str
    baseline_passed: int
    baseline_total: int
    candidate_passed: int
    candidate_total: int
    alpha: float
    """The error rate this test runs at (its share of 1 − confidence)."""
    interval: tuple[float, float] = (-1.0, 1.0)
    """Candidate − baseline pass rate: every value not ruled out."""
    decision: str = NOT_ENOUGH_EVIDENCE
    examined: bool = True
    """False for a case with fewer than ``min_sessions`` in a version: reported, not decided on."""

    @property
    def difference(self) -> float | None:
        """Candidate minus baseline pass rate as observed; None until both versions have a verdict."""
        if not (self.baseline_total and self.candidate_total):
            return None
        return self.candidate_passed / self.candidate_total - self.baseline_passed / self.baseline_total

    def to_dict(self) -> dict[str, Any]:
        """The test as ``compare --gate --json`` gives it: counts, rates, the difference and its interval."""

        def rate(passed: int, total: int) -> float | None:
            return round(passed / total, 6) if total else None

        diff = self.difference
        return {
            "key": self.key,
            "examined": self.examined,
            "decision": self.decision if self.examined else None,
            "baseline": {
                "passed": self.baseline_passed,
                "sessions": self.baseline_total,
                "pass_rate": rate(self.baseline_passed, self.baseline_total),
            },
            "candidate": {
                "passed": self.candidate_passed,
                "sessions": self.candidate_total,
                "pass_rate": rate(self.candidate_passed, self.candidate_total),
            },
            "difference": None if diff is None else round(diff, 6),
            "interval": [round(self.interval[0], 6), round(self.interval[1], 6)],
            "alpha": round(self.alpha, 9),
        }


@dataclass
class GateResult:
    """The gate's answer: promote, roll back or not enough evidence yet, why, the settings it
    was asked with, and the tests (overall and per case) that decided it."""

    baseline: str
    candidate: str
    decision: str
    reason: str
    margin: float
    confidence: float
    min_sessions: int
    overall: Test | None
    cases: list[Test] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The decision as the exit code CI reads: 0 promote, 1 roll back, 3 wait."""
        return EXIT_CODES[self.decision]

    def to_dict(self) -> dict[str, Any]:
        """``compare --gate --json``'s document (docs/compare.md#release-gate)."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "decision": self.decision,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "method": METHOD,
            "margin": self.margin,
            "confidence": self.confidence,
            "min_sessions": self.min_sessions,
            "overall": self.overall.to_dict() if self.overall else None,
            "cases": [c.to_dict() for c in self.cases],
        }


def _decide(test: Test, margin: float) -> Test:
    half = test.alpha / 2  # each version's sequence; both hold with probability ≥ 1 − alpha
    b_low, b_high = confidence_sequence(test.baseline_passed, test.baseline_total, half)
    c_low, c_high = confidence_sequence(test.candidate_passed, test.candidate_total, half)
    test.interval = (c_low - b_high, c_high - b_low)
    if not (test.baseline_total and test.candidate_total):
        test.decision = NOT_ENOUGH_EVIDENCE
    elif test.interval[1] < -margin:
        test.decision = ROLL_BACK
    elif test.interval[0] > -margin:
        test.decision = PROMOTE
    else:
        test.decision = NOT_ENOUGH_EVIDENCE
    return test


def gate(
    counts: VerdictCounts,
    baseline: str,
    candidate: str,
    *,
    margin: float = DEFAULT_MARGIN,
    confidence: float = DEFAULT_CONFIDENCE,
    min_sessions: int = DEFAULT_MIN_SESSIONS,
) -> GateResult:
    """The gate's decision from verdict counts (:func:`otel_eval.read.verdicts.verdict_counts`)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), not {confidence}")
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be at least 0 and below 1, not {margin}")
    base, cand = counts.decided.get(baseline, {}), counts.decided.get(candidate, {})
    shared = sorted(set(base) & set(cand))
    examined = [k for k in shared if base[k][1] >= min_sessions and cand[k][1] >= min_sessions]
    alpha = (1.0 - confidence) / (1 + len(examined))

    def test(key: str, keys: list[tuple[str, str]], looked_at: bool = True) -> Test:
        t = Test(
            key=key,
            baseline_passed=sum(base[k][0] for k in keys),
            baseline_total=sum(base[k][1] for k in keys),
            candidate_passed=sum(cand[k][0] for k in keys),
            candidate_total=sum(cand[k][1] for k in keys),
            alpha=alpha,
            examined=looked_at,
        )
        return _decide(t, margin)

    result = GateResult(
        baseline=baseline,
        candidate=candidate,
        decision=NOT_ENOUGH_EVIDENCE,
        reason="",
        margin=margin,
        confidence=confidence,
        min_sessions=min_sessions,
        overall=None,
    )
    if not shared:
        missing = [v for v, seen in ((baseline, base), (candidate, cand)) if not seen]
        result.reason = (
            f"no evaluated session of {' or '.join(missing)} on a golden case"
            if missing
            else "the two versions have no golden case in common yet"
        )
        return result
    result.overall = test("overall", shared)
    result.cases = [test(case, [(set_id, case)], (set_id, case) in examined) for set_id, case in shared]
    decided = [t for t in [result.overall, *result.cases] if t.examined]
    worse = [t.key for t in decided if t.decision == ROLL_BACK]
    if worse:
        result.decision = ROLL_BACK
        result.reason = f"worse by more than {margin:.0%} at {confidence:.0%} confidence: {', '.join(worse)}"
    elif all(t.decision == PROMOTE for t in decided):
        result.decision = PROMOTE
        result.reason = (
            f"not worse by more than {margin:.0%} at {confidence:.0%} confidence overall and on "
            f"{len(decided) - 1} case(s) with at least {min_sessions} sessions per version"
        )
    else:
        undecided = [t.key for t in decided if t.decision != PROMOTE]
        result.reason = f"not enough evidence yet: {', '.join(undecided)}"
    return result
