"""``trajectory_match``: does each turn's tool use satisfy the match type (EXACT, IN_ORDER, ANY_ORDER)?"""

from __future__ import annotations

from ._trajectory import TrajectoryCriterion


class TrajectoryMatch(TrajectoryCriterion):
    """Pass or fail per turn on the expected calls under ``match_type`` (EXACT, IN_ORDER, ANY_ORDER),
    with arguments compared by meaning."""

    kind = "trajectory_match"
    description = "per turn 1 when the calls satisfy match_type (EXACT, IN_ORDER, ANY_ORDER), else 0; averaged"
    measure = "adk_match_avg"
    default_threshold = 0.8
    decides_as_adk = True  # ADK's match-type verdict averaged
