"""``trajectory_recall``: the share of the expected calls the agent made."""

from __future__ import annotations

from ._trajectory import TrajectoryCriterion


class TrajectoryRecall(TrajectoryCriterion):
    """The share of the expected calls the turn made: low when the agent skips a tool it needs."""

    kind = "trajectory_recall"
    description = "matched calls / expected calls, per turn, averaged (partial credit)"
    measure = "recall"
