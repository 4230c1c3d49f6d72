"""A session's spans as a trajectory: turns, ordered tool calls, responses.

``build_trajectory`` is the only place that knows how readings of different span types combine
into what the agent *did*; the metrics only ever see :class:`Trajectory`. The package holds the
trajectory's types (:mod:`.model`), the turns built from traces (:mod:`.build`) and the pairing
of tool spans with the calls the model asked for (:mod:`.calls`).
"""

from __future__ import annotations

from .build import build_trajectory, looks_like_object_dump
from .calls import ANSWER_TOOLS
from .model import ActualToolCall, Trajectory, Turn

__all__ = ["ANSWER_TOOLS", "ActualToolCall", "Trajectory", "Turn", "build_trajectory", "looks_like_object_dump"]
