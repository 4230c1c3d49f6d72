"""``sql_generation``: did the agent write SQL exactly when the case expects it to?"""

from __future__ import annotations

from typing import Any

from ..metrics.sql import sql_and_tables
from ..models.evalset import CriterionConfig, Invocation
from ..trajectory import Turn
from ._invocations import PerInvocationCriterion
from .base import Expectation


class SqlGeneration(PerInvocationCriterion):
    """Whether a turn produced SQL exactly when the golden case expects it (the seed's
    ``sql_generated``): catches an agent that answers from memory instead of querying."""

    kind = "sql_generation"
    description = "1 when (SQL found in the turn's calls, results or answer) == expected_sql, else 0"
    default_threshold = 1.0
    expectation = Expectation(
        "expected_sql", lambda inv: inv.expected_sql is not None, "the case does not say whether SQL is expected"
    )

    def score_turn(self, inv: Invocation, turn: Turn, cfg: CriterionConfig) -> tuple[float, dict[str, Any]]:
        statements, tables = sql_and_tables(turn.sql_values())
        generated = bool(statements)
        return float(generated == inv.expected_sql), {
            "expected_sql": inv.expected_sql,
            "sql_generated": generated,
            "sql": statements,
            "tables": tables,
        }
