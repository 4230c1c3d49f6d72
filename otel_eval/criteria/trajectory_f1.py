"""``trajectory_f1``: the harmonic mean of trajectory precision and recall."""

from __future__ import annotations

from ._trajectory import TrajectoryCriterion


class TrajectoryF1(TrajectoryCriterion):
    kind = "trajectory_f1"
    description = "F1 of trajectory precision and recall, per turn, averaged (partial credit)"
    measure = "f1"
