"""What the engine tells its listeners once an evaluation is committed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..models.results import EvalCaseResult


@dataclass(frozen=True)
class EvaluationStored:
    """One committed evaluation, with what listeners (result forwarder, alerts, /metrics) would
    otherwise read back from SQLite."""

    result: EvalCaseResult
    revision: int
    evaluation_id: int
    session_id: str
    trace_ids: tuple[str, ...]
    root_span_ids: tuple[str, ...]
    agent_version: Optional[str]
    matched: bool
    """A golden case was found, so ``result.passed`` is a verdict."""
    matched_by: str
    """How the golden case was found (exact, fuzzy, embedding, hint) or why not (unmatched, ambiguous, error)."""
    score_seconds: float
    """CPU-side time the worker spent loading and scoring the session."""


ResultCallback = Callable[[EvalCaseResult], Any]
EventListener = Callable[[EvaluationStored], Any]
