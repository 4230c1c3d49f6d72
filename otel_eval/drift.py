"""Trajectory drift: did a new agent version change the path it takes through a golden case?

Per case, each version's sessions are counted by *tool path* (the sequence of tool calls, turn by
turn, as ``evaluations.tool_path`` stores it: :func:`otel_eval.metrics.alignment.tool_path`). Two versions' path distributions are compared with
**Pearson's chi-square test of homogeneity** on the 2 × K table of path counts. Paths expected
fewer than :data:`MIN_EXPECTED` times in either version are pooled into one "other" column first,
so the chi-square approximation holds (Cochran's rule); a table left with one column has no
drift to test. Across the cases of one comparison, a change is reported as **significant** by the
**Benjamini–Hochberg** procedure at false discovery rate ``q`` (default 0.05): of the cases
flagged, at most a share ``q`` is expected to be flagged by chance, however many cases there are.

A path change is not a failure (a new version may take a better path); it says "look here". Pure:
counts in, :class:`DriftResult` s out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

TEST = "Pearson's chi-square test of homogeneity (paths expected < 5 times pooled), Benjamini-Hochberg FDR"
MIN_EXPECTED = 5.0
DEFAULT_FDR = 0.05
DEFAULT_MIN_SESSIONS = 10
OTHER = "(other paths)"

PathCounts = Mapping[str, int]
"""tool path → sessions that took it."""


class ChangedPath(TypedDict):
    """A path whose share of sessions moved between versions, as the comparison shows it."""

    path: str
    baseline_share: float | None
    """Its share of the baseline's sessions; None when the baseline has none."""
    candidate_share: float | None
    change: float
    """Candidate share minus baseline share (a version without sessions counts as share 0)."""


def _upper_gamma_regularized(a: float, x: float) -> float:
    """Q(a, x) = Γ(a, x) / Γ(a): the chi-square survival function is Q(k/2, x/2). Series below
    a + 1, Lentz's continued fraction above (Numerical Recipes' gammq), to ~1e-12."""
    if x <= 0:
        return 1.0
    log_prefix = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(1000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_prefix) * h)


def chi_square_sf(statistic: float, dof: int) -> float:
    """P(X ≥ statistic) for X chi-square with ``dof`` degrees of freedom."""
    return _upper_gamma_regularized(dof / 2.0, statistic / 2.0)


@dataclass
class DriftResult:
    """One case's path distributions in two versions and whether they differ: the chi-square
    test's outcome, or why it was not run."""

    key: str
    baseline: dict[str, int]
    candidate: dict[str, int]
    statistic: float | None = None
    dof: int = 0
    p_value: float | None = None
    significant: bool = False
    reason: str = ""
    """Why it was not tested (too few sessions, one path), else empty."""
    changed_paths: list[ChangedPath] = field(default_factory=list)
    """Paths whose share moved most, largest change first: path, the two shares, the change."""

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON, as the comparison reports it; the statistic rounded to six places."""
        return {
            "key": self.key,
            "significant": self.significant,
            "p_value": self.p_value,
            "statistic": None if self.statistic is None else round(self.statistic, 6),
            "dof": self.dof,
            "reason": self.reason,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "changed_paths": self.changed_paths,
        }


def compare_paths(
    key: str, baseline: PathCounts, candidate: PathCounts, min_sessions: int = DEFAULT_MIN_SESSIONS
) -> DriftResult:
    """One case's chi-square test (``significant`` is decided across cases: :func:`drift`)."""
    result = DriftResult(key, dict(baseline), dict(candidate))
    n_b, n_c = sum(baseline.values()), sum(candidate.values())
    paths = sorted(set(baseline) | set(candidate), key=lambda p: (-(baseline.get(p, 0) + candidate.get(p, 0)), p))
    result.changed_paths = sorted(
        (
            ChangedPath(
                path=p,
                baseline_share=round(baseline.get(p, 0) / n_b, 4) if n_b else None,
                candidate_share=round(candidate.get(p, 0) / n_c, 4) if n_c else None,
                change=round((candidate.get(p, 0) / n_c if n_c else 0) - (baseline.get(p, 0) / n_b if n_b else 0), 4),
            )
            for p in paths
        ),
        key=lambda d: (-abs(d["change"]), d["path"]),
    )[:5]
    if n_b < min_sessions or n_c < min_sessions:
        result.reason = f"fewer than {min_sessions} sessions in a version"
        return result
    total = n_b + n_c
    kept: list[tuple[int, int]] = []
    other = [0, 0]
    for p in paths:
        b, c = baseline.get(p, 0), candidate.get(p, 0)
        column = b + c
        if min(n_b, n_c) * column / total < MIN_EXPECTED:
            other[0] += b
            other[1] += c
        else:
            kept.append((b, c))
    if sum(other):
        if min(n_b, n_c) * sum(other) / total < MIN_EXPECTED and kept:
            kept[-1] = (kept[-1][0] + other[0], kept[-1][1] + other[1])  # too rare even pooled: join the rarest
        else:
            kept.append((other[0], other[1]))
    if len(kept) < 2:
        result.reason = "one path (after pooling rare ones): nothing to compare"
        return result
    statistic = 0.0
    for b, c in kept:
        column = b + c
        for observed, row in ((b, n_b), (c, n_c)):
            expected = row * column / total
            statistic += (observed - expected) ** 2 / expected
    result.statistic = statistic
    result.dof = len(kept) - 1
    result.p_value = chi_square_sf(statistic, result.dof)
    return result


def benjamini_hochberg(p_values: Sequence[float], q: float) -> list[bool]:
    """Which hypotheses the Benjamini–Hochberg step-up procedure rejects at FDR ``q``."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    m = len(p_values)
    cutoff = -1
    for rank, i in enumerate(order, start=1):
        if p_values[i] <= q * rank / m:
            cutoff = rank
    rejected = [False] * m
    for rank, i in enumerate(order, start=1):
        rejected[i] = rank <= cutoff
    return rejected


def drift(
    per_case: Mapping[str, tuple[PathCounts, PathCounts]],
    q: float = DEFAULT_FDR,
    min_sessions: int = DEFAULT_MIN_SESSIONS,
) -> list[DriftResult]:
    """Every case's test, significant ones decided together (BH at ``q``); most significant first."""
    results = [compare_paths(key, b, c, min_sessions) for key, (b, c) in per_case.items()]
    tested = [r for r in results if r.p_value is not None]
    for r, flagged in zip(tested, benjamini_hochberg([r.p_value for r in tested], q)):  # type: ignore[misc]
        r.significant = flagged
    results.sort(key=lambda r: (not r.significant, r.p_value if r.p_value is not None else 2.0, r.key))
    return results
