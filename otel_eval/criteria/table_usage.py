"""``table_usage``: did the agent's SQL use the tables the case expects?"""

from __future__ import annotations

from typing import Any

from ..metrics.sql import sql_and_tables, table_matches
from ..models.evalset import CriterionConfig, Invocation
from ..trajectory import Turn
from ._invocations import PerInvocationCriterion
from .base import Expectation


class TableUsage(PerInvocationCriterion):
    """The share of the expected tables the turn's SQL reads: a query on the wrong table can run fine
    and still answer wrongly."""

    kind = "table_usage"
    description = "expected tables found in the turn's SQL / expected tables"
    default_threshold = 1.0
    expectation = Expectation("expected_tables", lambda inv: bool(inv.expected_tables), "the case expects no tables")

    def score_turn(self, inv: Invocation, turn: Turn, cfg: CriterionConfig) -> tuple[float, dict[str, Any]]:
        statements, tables = sql_and_tables(turn.sql_values())
        found = [e for e in inv.expected_tables if any(table_matches(e, t) for t in tables)]
        missing = [e for e in inv.expected_tables if e not in found]
        return len(found) / len(inv.expected_tables), {
            "expected_tables": inv.expected_tables,
            "actual_tables": tables,
            "found": found,
            "missing": missing,
            "sql": statements,
        }
