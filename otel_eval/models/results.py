"""Evaluation results, as in the evalset seed's result models."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from pydantic import BaseModel, Field


class CriterionResult(BaseModel):
    criterion: str
    score: float
    passed: bool
    threshold: float
    details: dict[str, Any] = Field(default_factory=dict)
    skipped: bool = False
    """The criterion did not apply or could not run; ``details['reason']`` says why. Never fails a case."""
    error: Optional[str] = None
    """The criterion tried to run and failed (an LLM judge timeout, say): the case fails, with this reason."""


class EvalCaseResult(BaseModel):
    eval_id: str
    name: Optional[str] = None
    passed: bool
    criterion_results: list[CriterionResult] = Field(default_factory=list)
    error: Optional[str] = None
    duration_seconds: float = 0.0
    session_id: Optional[str] = None
    score: float = 0.0
    """Mean score of the criteria that ran (skipped ones excluded)."""


class CriterionStats(BaseModel):
    evaluated: int = 0
    passed: int = 0
    skipped: int = 0
    pass_rate: float = 0.0
    avg_score: float = 0.0


class EvalSummary(BaseModel):
    total_cases: int
    passed_cases: int
    failed_cases: int
    pass_rate: float
    avg_score: float
    criterion_stats: dict[str, CriterionStats] = Field(default_factory=dict)


class EvalReport(BaseModel):
    report_id: str
    eval_set_id: str
    eval_set_name: Optional[str] = None
    results: list[EvalCaseResult] = Field(default_factory=list)
    summary: EvalSummary
    config_used: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    duration_seconds: float = 0.0
