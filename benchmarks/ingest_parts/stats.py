"""Pure statistics of the measurements."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0-100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def second_half_slope(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope (MiB/min) over the second half: growth that warm-up does not explain."""
    half = samples[len(samples) // 2 :]
    if len(half) < 3 or half[-1][0] <= half[0][0]:
        return None
    n = len(half)
    mt = sum(t for t, _ in half) / n
    mr = sum(r for _, r in half) / n
    var = sum((t - mt) ** 2 for t, _ in half)
    return sum((t - mt) * (r - mr) for t, r in half) / var * 60 if var else None
