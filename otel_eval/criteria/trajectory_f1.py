"""``trajectory_f1``: the harmonic mean of trajectory precision and recall."""

from __future__ import annotations

from ._trajectory import TrajectoryCriterion


class TrajectoryF1(TrajectoryCriterion):
    """Partial credit for a turn's calls: the harmonic mean of precision and recall, when a missing call
    and an extra one should both cost."""

    kind = "trajectory_f1"
    description = "F1 of trajectory precision and recall, per turn, averaged (partial credit)"
    measure = "f1"
