"""``trajectory_in_order_score``: the graded in-order score (in-order F1 over the longest
order-preserving matching)."""

from __future__ import annotations

from ._trajectory import TrajectoryCriterion


class TrajectoryInOrderScore(TrajectoryCriterion):
    """Partial credit for calls made in the expected order: an out-of-order call counts as unmatched."""

    kind = "trajectory_in_order_score"
    description = "in-order F1 (calls matched in the expected order), per turn, averaged (partial credit)"
    measure = "in_order_f1"
