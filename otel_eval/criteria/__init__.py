"""The criteria: one module a criterion, each a :class:`~.base.Criterion` class (its options,
default threshold, expectation, measure and ``score()``), and the :data:`~.registry.REGISTRY`
built from them. :mod:`otel_eval.scoring` runs them and decides the verdict.

To add a criterion: write a module with its class, add one ``REGISTRY.register(...)`` line to
:mod:`.registry`, and a section to docs/metrics.md (a test checks the three agree).
"""

from .base import Criterion, CriterionOptions, Expectation, JudgeFailed, Skip
from .registry import REGISTRY, Registry

__all__ = ["Criterion", "CriterionOptions", "Expectation", "JudgeFailed", "Skip", "REGISTRY", "Registry"]
