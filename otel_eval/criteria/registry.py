"""Every criterion, one registration each (google-adk's ``metric_evaluator_registry.py`` is the
model): adding a criterion is one module and one line here.

A config names a criterion by its kind (``[criteria.trajectory_match]``), by an alias
(``response_match_score``), or under a name of its own with ``options.kind`` (so one config can
run, say, two response_match criteria with different methods). A criterion of an unknown name
that has rubrics is an ``llm_judge``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..models.evalset import CriterionConfig
from ..models.suggest import unknown_name
from .adk_efficiency import InferenceCallCount, InvocationDuration, TokenUsage, ToolCallCount
from .adk_not_run import (
    CustomMetric,
    MultiTurnTaskSuccess,
    MultiTurnToolUseQuality,
    MultiTurnTrajectoryQuality,
    PerTurnUserSimulatorQuality,
    ResponseEvaluationScore,
    Safety,
)
from .base import Criterion
from .final_response_match_v2 import FinalResponseMatchV2
from .hallucinations_v1 import Hallucinations
from .health import Health
from .layer1 import Layer1
from .llm_judge import LlmJudge
from .response_match import ResponseMatch
from .rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQuality
from .rubric_based_multi_turn_trajectory_quality_v1 import RubricBasedMultiTurnTrajectoryQuality
from .rubric_based_tool_use_quality_v1 import RubricBasedToolUseQuality
from .single_tool_use import SingleToolUse
from .sql_generation import SqlGeneration
from .table_usage import TableUsage
from .tool_selection import ToolSelection
from .tool_trajectory_avg_score import ToolTrajectoryAvgScore
from .trajectory_f1 import TrajectoryF1
from .trajectory_in_order_score import TrajectoryInOrderScore
from .trajectory_match import TrajectoryMatch
from .trajectory_precision import TrajectoryPrecision
from .trajectory_recall import TrajectoryRecall

ADK_FAMILIES = ("deterministic", "informational", "judge", "vertex", "user_simulator")
"""The ``Criterion.adk`` values of metrics google-adk itself registers (``custom`` is a
test_config.json's own)."""


class Registry:
    """Criterion kind → one criterion instance, and alias → kind."""

    def __init__(self) -> None:
        self._criteria: dict[str, Criterion] = {}
        self._aliases: dict[str, str] = {}
        self._adk_aliases: dict[str, str] = {}

    def register(
        self, criterion: type[Criterion], *, aliases: tuple[str, ...] = (), adk_aliases: dict[str, str] | None = None
    ) -> type[Criterion]:
        """Register ``criterion`` under its kind and ``aliases`` (other names for the same
        measure). ``adk_aliases``: aliases that are google-adk metric names, each with how it is
        run (a ``Criterion.adk`` value; the criterion tells them apart by name). A kind or alias
        registered again is replaced, as ADK's registry does."""
        kind = criterion.kind
        self._criteria[kind] = criterion()
        for alias in (*aliases, *(adk_aliases or {})):
            self._aliases[alias] = kind
        self._adk_aliases.update(adk_aliases or {})
        return criterion

    def unregister(self, kind: str) -> None:
        """Remove a kind and its aliases (tests registering a criterion of their own undo it so)."""
        self._criteria.pop(kind, None)
        for alias in [a for a, k in self._aliases.items() if k == kind]:
            del self._aliases[alias]
            self._adk_aliases.pop(alias, None)

    # --- lookups ---------------------------------------------------------------------------

    def __contains__(self, kind: object) -> bool:
        return kind in self._criteria

    def __iter__(self) -> Iterator[Criterion]:
        return iter(list(self._criteria.values()))

    def __getitem__(self, kind: str) -> Criterion:
        return self._criteria[kind]

    def kinds(self) -> list[str]:
        """Every kind, in registration order."""
        return list(self._criteria)

    @property
    def aliases(self) -> dict[str, str]:
        """Alias → kind."""
        return dict(self._aliases)

    def aliases_of(self, kind: str) -> list[str]:
        """The other names a config may use for ``kind`` (``otel-eval criteria`` lists them)."""
        return [a for a, k in self._aliases.items() if k == kind]

    def kind_of(self, name: str, cfg: CriterionConfig) -> str | None:
        """The kind of the criterion configured as ``name``: ``options.kind`` (a kind, not an
        alias), else the name or the kind it is an alias of; a criterion of another name with
        rubrics is an ``llm_judge``. None: no criterion of that name."""
        kind = cfg.options.get("kind") or self._aliases.get(name, name)
        if kind in self._criteria:
            return kind
        if cfg.rubrics:
            return LlmJudge.kind
        return None

    def criterion_for(self, name: str, cfg: CriterionConfig) -> Criterion | None:
        """The criterion that scores the one configured as ``name``; None when no kind matches."""
        kind = self.kind_of(name, cfg)
        return self._criteria[kind] if kind is not None else None

    def unknown_criterion(self, name: str, cfg: CriterionConfig) -> str:
        """Why ``name`` (or its ``options.kind``) names no criterion, with the closest known name."""
        if cfg.options.get("kind"):
            return unknown_name("criterion kind", str(cfg.options["kind"]), self._criteria, scope=name)
        return unknown_name("criterion", name, [*self._criteria, *self._aliases]) + " (or set options.kind)"

    # --- google-adk's metrics --------------------------------------------------------------

    def adk_metrics(self, *families: str) -> tuple[str, ...]:
        """The google-adk metric names (kinds and aliases) run here as ``families`` (``Criterion.adk``
        values), in registration order; with none, every metric name google-adk registers."""
        families = families or ADK_FAMILIES
        return (
            *(k for k, c in self._criteria.items() if c.adk in families),
            *(a for a, family in self._adk_aliases.items() if family in families),
        )


REGISTRY = Registry()
REGISTRY.register(TrajectoryMatch)
REGISTRY.register(ToolTrajectoryAvgScore)
REGISTRY.register(TrajectoryPrecision)
REGISTRY.register(TrajectoryRecall)
REGISTRY.register(TrajectoryF1)
REGISTRY.register(TrajectoryInOrderScore)
REGISTRY.register(SingleToolUse)
REGISTRY.register(ResponseMatch, adk_aliases={"response_match_score": "deterministic"})
REGISTRY.register(LlmJudge, aliases=("rubric_based", "final_response_judge"))
REGISTRY.register(ToolSelection)
REGISTRY.register(SqlGeneration)
REGISTRY.register(TableUsage)
REGISTRY.register(Layer1)
REGISTRY.register(Health)
REGISTRY.register(Safety)
REGISTRY.register(ResponseEvaluationScore)
REGISTRY.register(MultiTurnTaskSuccess)
REGISTRY.register(MultiTurnTrajectoryQuality)
REGISTRY.register(MultiTurnToolUseQuality)
REGISTRY.register(FinalResponseMatchV2)
REGISTRY.register(RubricBasedFinalResponseQuality)
REGISTRY.register(RubricBasedToolUseQuality)
REGISTRY.register(RubricBasedMultiTurnTrajectoryQuality)
REGISTRY.register(Hallucinations)
REGISTRY.register(PerTurnUserSimulatorQuality)
REGISTRY.register(ToolCallCount)
REGISTRY.register(InferenceCallCount)
REGISTRY.register(TokenUsage)
REGISTRY.register(InvocationDuration)
REGISTRY.register(CustomMetric)
