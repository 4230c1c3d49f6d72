"""``trajectory_precision``: the share of the agent's calls that were expected."""

from __future__ import annotations

from ._trajectory import TrajectoryCriterion


class TrajectoryPrecision(TrajectoryCriterion):
    """The share of a turn's calls that were expected: low when the agent calls tools it need not."""

    kind = "trajectory_precision"
    description = "matched calls / actual calls, per turn, averaged (partial credit)"
    measure = "precision"
