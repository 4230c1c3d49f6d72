"""What a criterion is: one class a criterion, carrying everything the scorer, the config checks,
the docs and ``otel-eval criteria`` need to know of it (google-adk's ``Evaluator`` and its
``MetricInfo`` are the model).

A criterion class declares

* ``kind``: the name a config uses for it (``[criteria.trajectory_match]``, or ``options.kind``);
* ``description``: one line, shown by ``otel-eval criteria`` and kept in step with
  docs/metrics.md by a test;
* ``Options``: its options as a pydantic model. The option *names* are checked here: an unknown
  one is an error naming the closest known one (``args_mod`` must not silently compare arguments
  exactly). Their values are checked by the criterion itself, with messages that say what to
  write instead;
* ``default_threshold``: the threshold ``EvalConfig.default()`` gives it (a test holds the two
  equal), else ``CriterionConfig``'s own 0.8;
* ``expectation``: what it needs from a golden invocation to check it; a case none of whose
  invocations has it skips the criterion, when the criterion can tell that before running;
* ``judge`` (an LLM judge answers it), ``informational`` (reported, never passes or fails, left
  out of the case's score: ADK's INFORMATIONAL), ``reference_free`` (runs on every session,
  matched or not, and is no part of the case's score: ``health``), ``adk`` (how google-adk's
  metric of that name is run here);
* ``score(trajectory, case, cfg, *, judge, name) -> (score, details)``, raising :class:`Skip`
  when it does not apply;
* a judge criterion the judge pool answers (off the score workers) also defines
  ``judge_request``, which builds the pool's request.

The registry (:mod:`.registry`) holds one instance a kind; :mod:`otel_eval.scoring` runs them and
decides the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..models.evalset import CriterionConfig, EvalCase, Invocation, Rubric
from ..models.results import CriterionResult
from ..models.suggest import unknown_name
from ..trajectory import ActualToolCall, Trajectory

EPSILON = 1e-9
"""Scores like 0.7 computed as 0.69999999 still meet a 0.7 threshold."""

DEFAULT_THRESHOLD = CriterionConfig.model_fields["threshold"].default
"""A criterion's threshold when neither the config nor ``EvalConfig.default()`` sets one."""


class JudgeClient(Protocol):
    """An LLM judge the criteria call in line (:class:`otel_eval.metrics.judge.Judge` is one): the
    ADK judge metrics send it chat messages, ``llm_judge`` asks it to grade one answer. A judge may
    also have ``configured`` (False: no endpoint, the criterion is skipped) and ``model``."""

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion's text; raises ``JudgeError`` when the endpoint fails."""
        ...

    def evaluate(
        self,
        question: str,
        response: str | None,
        reference: str | None = None,
        rubrics: Sequence[Rubric] = (),
        threshold: float = 0.7,
        criterion: str = "llm_judge",
        calls: Sequence[ActualToolCall] = (),
    ) -> CriterionResult:
        """One answer graded against the rubrics; failures come back as an error result."""
        ...


JudgeContext = Mapping[str | tuple[str, str], Any]
"""What a judge may see of a session, built only when a judge criterion asks: per trace id, the
(system instructions, tool definitions) its spans recorded; at ``(CONTEXT_KEY, trace id)``, the
trace as google-adk's judge metrics read it (:func:`otel_eval.judging.adk.trace_view.trace_view`)."""


class Skip(Exception):
    """The criterion does not apply to this session; the message is the reason. It is reported
    skipped and never fails the case."""


class JudgeFailed(Exception):
    """The LLM judge (our dependency, not the agent) failed: the criterion is not evaluated, with
    the reason as its error, never a FAIL."""

    def __init__(self, reason: str, details: dict[str, Any]) -> None:
        super().__init__(reason)
        self.details = details


class Expectation(NamedTuple):
    """What a criterion needs of a golden invocation to check it."""

    field: str
    """The invocation's field, as docs and ``otel-eval criteria`` name it."""
    applies: Callable[[Invocation], bool]
    nothing_expected: str
    """The skip reason when no invocation of the case has it."""


class CriterionOptions(BaseModel):
    """Options every criterion takes. Subclasses add theirs: a field a name it reads."""

    model_config = ConfigDict(extra="forbid")

    kind: str | None = Field(None, description="the criterion kind, when the criterion's name is another")


class Criterion:
    """One criterion. Subclasses set the class attributes and define :meth:`score`."""

    kind: ClassVar[str]
    description: ClassVar[str]
    Options: ClassVar[type[CriterionOptions]] = CriterionOptions
    default_threshold: ClassVar[float] = DEFAULT_THRESHOLD
    expectation: ClassVar[Expectation | None] = None
    judge: ClassVar[bool] = False
    informational: ClassVar[bool] = False
    reference_free: ClassVar[bool] = False
    decides_as_adk: ClassVar[bool] = False
    """Its number is google-adk's: stored unrounded and PASS exactly when ``score >= threshold``,
    as ADK decides: no tolerance, which an average of 0/1 verdicts does not need and ADK does not give."""
    adk: ClassVar[str | None] = None
    """google-adk's metric of this name, run here as: ``deterministic`` (ADK's number, computed),
    ``informational``, ``judge``, ``vertex``, ``user_simulator``, ``custom``; None: otel-eval's own."""

    # --- options ---------------------------------------------------------------------------

    refused: ClassVar[frozenset[str]] = frozenset()
    """Options it knows only to refuse, with an explanation of what to use instead (``graded``)."""

    @classmethod
    def option_names(cls) -> frozenset[str]:
        """The options it takes (``kind`` included)."""
        return frozenset(cls.Options.model_fields) - cls.refused

    def unknown_options(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """(option, reason) for each option this criterion does not read."""
        known = self.Options.model_fields
        return [(str(k), unknown_name("option", str(k), known, scope=self.kind)) for k in options if k not in known]

    def option_value_problems(self, options: dict[str, Any]) -> list[str]:
        """Option values that cannot work, known before any session is scored (a config with them
        is refused at start). Most criteria check their values while scoring, as errors."""
        return []

    def check_options(self, cfg: CriterionConfig) -> None:
        """Raise ValueError for an unknown option name, else for a value :meth:`option_value_problems` refuses."""
        if not cfg.options:
            return
        unknown = self.unknown_options(cfg.options)
        if unknown:
            raise ValueError("; ".join(f"options.{key}: {reason}" for key, reason in unknown))
        problems = self.option_value_problems(cfg.options)
        if problems:
            raise ValueError("; ".join(problems))

    # --- running ---------------------------------------------------------------------------

    def known_skip(self, case: EvalCase, cfg: CriterionConfig, judge: JudgeClient | None) -> str | None:
        """Why the criterion would skip, when that is known without running it: no invocation of
        the case states its expectation (most cases state one or two kinds). Asked first, it
        spares calling the criterion and raising and catching its :class:`Skip` every session;
        :meth:`score` still checks for itself."""
        if self.expectation is None:
            return None
        return None if any(map(self.expectation.applies, case.conversation)) else self.expectation.nothing_expected

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        """(score 0–1, details) of the session against the case; :class:`Skip` when it does not apply,
        ValueError for a bad option."""
        raise NotImplementedError

    def result(self, name: str, cfg: CriterionConfig, score: float, details: dict[str, Any]) -> CriterionResult:
        """The result of a score: passed when it reaches the threshold. A criterion configured under
        another name records its kind in the details."""
        if self.kind != name:
            details = {"kind": self.kind, **details}
        return self.decide(name, cfg, float(score), details)

    def decide(self, name: str, cfg: CriterionConfig, score: float, details: dict[str, Any]) -> CriterionResult:
        """Passed when the score reaches the threshold (within :data:`EPSILON`, unless
        :meth:`decides_exactly`)."""
        if self.decides_exactly(name):
            return CriterionResult(
                criterion=name, score=score, passed=score >= cfg.threshold, threshold=cfg.threshold, details=details
            )
        # Decided on the unrounded score: the six-place rounding is for display only, so 0.6666666
        # never meets a threshold of 0.666667.
        return CriterionResult(
            criterion=name,
            score=round(score, 6),
            passed=score + EPSILON >= cfg.threshold,
            threshold=cfg.threshold,
            details=details,
        )

    def decides_exactly(self, name: str) -> bool:
        """Whether the criterion configured as ``name`` computes google-adk's number (see :attr:`decides_as_adk`)."""
        return self.decides_as_adk

    # --- the judge pool ----------------------------------------------------------------------

    def judge_request(
        self,
        name: str,
        cfg: CriterionConfig,
        trajectory: Trajectory,
        case: EvalCase | None,
        context: Callable[[], JudgeContext] | None,
    ) -> dict[str, Any]:
        """The request the judge pool answers for this criterion (plain data: it is stored with the
        pending evaluation). ``case`` None: a session no golden case matched, judged without a
        reference. ``context()`` returns what the judge may see (:data:`JudgeContext`). Raise :class:`Skip` when there is nothing to judge. Only criteria that
        define it are left to the pool; the others run in line."""
        raise NotImplementedError

    @property
    def pool_judged(self) -> bool:
        """Whether the judge pool answers this criterion (it defines :meth:`judge_request`)."""
        return type(self).judge_request is not Criterion.judge_request

    def judges_unmatched(self, cfg: CriterionConfig) -> bool:
        """Whether the judge pool is asked to judge a session no golden case matched."""
        return False

    def __repr__(self) -> str:
        return f"<criterion {self.kind}>"
