"""What the engine tells its listeners once an evaluation is committed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..models.results import NOT_EVALUATED, PASSED, EvalCaseResult


@dataclass(frozen=True)
class EvaluationStored:
    """One committed evaluation, with what listeners (result forwarder, alerts, /metrics) would
    otherwise read back from SQLite. The verdict, case and score are plain fields; the full
    :attr:`result` is built on first access (from a score worker it arrives as JSON text). It is
    kept only while some listener may read it (``Engine.add_listener``, or ``on_evaluation``
    without ``with_result=False``); else reading it raises ``LookupError``."""

    revision: int
    evaluation_id: int
    session_id: str
    trace_ids: tuple[str, ...]
    root_span_ids: tuple[str, ...]
    agent_version: str | None
    matched: bool
    """A golden case was found, so ``result.passed`` is a verdict."""
    matched_by: str
    """How the golden case was found (exact, fuzzy, embedding, hint) or why not (unmatched, ambiguous, error)."""
    score_seconds: float
    """CPU-side time the worker spent loading and scoring the session."""
    verdict: str
    """passed, failed or not_evaluated."""
    case_id: str | None
    """The golden case's eval_id; None when no case matched."""
    score: float
    """Mean score of the criteria that ran (0.0, meaningless, when not evaluated)."""
    load_result: Callable[[], EvalCaseResult] = field(repr=False, compare=False)
    judge_pending: int = 0
    """Judge criteria this revision waits for: its verdict is computed from what is checked so
    far, and a later revision (``completes``) records the judge's outcome."""
    completes: int | None = None
    """This revision records the judge's outcome for revision ``completes`` of the same session: a
    completion, not a new scoring."""
    backfill: bool = False
    """A completion judged again after the judge was unavailable (the session was counted already)."""

    @property
    def final(self) -> bool:
        """No judge answer is awaited: the verdict is the session's."""
        return not self.judge_pending

    @property
    def counted(self) -> bool:
        """Whether this event is the one that counts the session (once per scoring): the final
        revision of a scoring, not a pending one nor a backfill. Counters (/metrics, the engine's
        stats, the activity log) and ``on_result`` go by it, so no session is counted twice."""
        return self.final and not self.backfill

    @property
    def result(self) -> EvalCaseResult:
        """The full result; parsed from its stored JSON on first use (a listener registered ``with_result=False`` never
        reads it)."""
        return self.load_result()

    @property
    def passed(self) -> bool:
        """Whether the verdict is passed."""
        return self.verdict == PASSED

    @property
    def evaluated(self) -> bool:
        """Whether anything was checked (the verdict is not not_evaluated): only such sessions count in a pass rate."""
        return self.verdict != NOT_EVALUATED


ResultCallback = Callable[[EvalCaseResult], object]
EventListener = Callable[[EvaluationStored], object]
