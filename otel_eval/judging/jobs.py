"""A judge job: one pending evaluation's judge criteria, as plain data (stored as JSON with the
pending evaluation, so a restart resumes it), and how answers become criterion results.

Job JSON::

    {"session_id": ..., "criteria": [{"criterion": "llm_judge", "threshold": 0.7,
      "rubrics": [{"name", "description", "scoring_guide", "weight"}], "options": {...no secrets},
      "turns": [{"turn": 0, "invocation": "inv-1", "messages": [...]}]}]}

A criterion with a ``protocol`` (a google-adk judge metric's name) is built, run and aggregated
by that protocol (:mod:`otel_eval.judging.adk.protocol`, whose docstring shows its request); one
without is otel-eval's own ``llm_judge`` (weighted 1-5 rubric scores, the mean over samples).
Both are stored the same way, so a resumed job runs as it would have.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..models.results import CriterionResult

PENDING, NOT_SAMPLED, FILTERED, UNAVAILABLE, BUDGET, QUEUE_FULL, ANSWERED, INVALID = (
    "pending",
    "not_sampled",
    "filtered",
    "unavailable",
    "budget",
    "queue_full",
    "answered",
    "invalid_answer",
)
"""``details['judge']`` of a judge criterion: what became of it."""

QUEUE_FULL_REASON = "judge queue full"
PENDING_REASON = "judge pending: the evaluation is completed when the judge answers"

SECRET_OPTIONS = ("api_key",)
CONNECTION_OPTIONS = ("base_url", "model", "api_key_env", "timeout", "max_retries", "backoff", "json_mode")
"""Options that say how to reach the judge: a resumed job takes them from the config of the run."""


def public_options(options: dict[str, Any]) -> dict[str, Any]:
    """A criterion's options without secrets: what a stored job may carry (the pool looks the key
    up again in its own config, or the environment)."""
    return {k: v for k, v in options.items() if k not in SECRET_OPTIONS}


def with_live_options(criteria: list[dict[str, Any]], live: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """A stored job's criteria with the endpoint settings of this run's config (``live(name)``:
    the criterion's options now): a job resumed after a restart is judged by the judge configured
    now; its messages and rubrics stay the ones stored."""
    out = []
    for criterion in criteria:
        now = live(criterion["criterion"])
        out.append(
            {
                **criterion,
                "options": {
                    **criterion.get("options", {}),
                    **{k: v for k, v in now.items() if k in CONNECTION_OPTIONS},
                },
            }
        )
    return out


@dataclass
class JudgeJob:
    """One pending evaluation's judge work. ``evaluation_id`` is the pending revision's id (the
    job's key in ``judge_jobs``)."""

    evaluation_id: int
    session_id: str
    criteria: list[dict[str, Any]]
    created: float = 0.0
    """When it was queued (``time.time()``); the deadline counts from here. Not stored: a job
    resumed after a restart counts from its resumption, since the time no process was running
    is not time the judge failed to answer in."""
    backfill: bool = False
    """A second try of a job whose judge was unavailable."""

    @property
    def calls_needed(self) -> int:
        """Judge calls the job makes at most: a protocol's request says (``calls``); otherwise one
        per turn and sample."""
        return sum(
            int(c.get("calls") or len(c["turns"]) * int(c.get("options", {}).get("num_samples", 1) or 1))
            for c in self.criteria
        )

    def to_json(self) -> dict[str, Any]:
        """The job as stored with its pending evaluation, so a restart resumes it."""
        return {"session_id": self.session_id, "criteria": self.criteria}


@dataclass
class Sample:
    """One judge answer for a turn: its weighted score and the per-rubric scores it gave."""

    score: float
    rubrics: dict[str, Any]


@dataclass
class TurnAnswer:
    """A turn's judge samples: averaged into the turn's score, shown per turn in the details."""

    turn: int
    invocation: str | None
    samples: list[Sample] = field(default_factory=list)


def aggregate(criterion: dict[str, Any], answers: list[TurnAnswer], model: str) -> CriterionResult:
    """The judged criterion: per turn the mean of its samples (the spread in the details), the
    criterion's score the mean over turns, passed against its threshold."""
    threshold = float(criterion["threshold"])
    per_turn = []
    for answer in answers:
        scores = [s.score for s in answer.samples]
        mean = sum(scores) / len(scores)
        entry: dict[str, Any] = {
            "turn": answer.turn,
            "invocation": answer.invocation,
            "score": round(mean, 6),
            "rubrics": answer.samples[0].rubrics,
        }
        if len(scores) > 1:
            entry["samples"] = {
                "scores": [round(s, 6) for s in scores],
                "min": round(min(scores), 6),
                "max": round(max(scores), 6),
                "stdev": round(statistics.pstdev(scores), 6),
                "passed": sum(1 for s in scores if s + 1e-9 >= threshold),
            }
        per_turn.append(entry)
    score = sum(e["score"] for e in per_turn) / len(per_turn)
    return CriterionResult(
        criterion=criterion["criterion"],
        score=round(score, 6),
        passed=score + 1e-9 >= threshold,
        threshold=threshold,
        details={
            "judge": ANSWERED,
            "model": model,
            "per_turn": per_turn,
            "num_samples": len(answers[0].samples) if answers else 0,
        },
    )


def not_evaluated(criterion: Mapping[str, Any], state: str, reason: str, error: bool = False) -> CriterionResult:
    """A judge criterion with no answer: *not evaluated* (skipped) with the reason, never a FAIL.
    ``error``: the judge was asked and failed (the reason is also the criterion's error text)."""
    return CriterionResult(
        criterion=criterion["criterion"],
        score=0.0,
        passed=False,
        threshold=float(criterion["threshold"]),
        skipped=True,
        error=reason if error else None,
        details={"judge": state, "reason": reason},
    )
