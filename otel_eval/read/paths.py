"""Tool-path counts per golden case and agent version: what trajectory drift compares.

One aggregate query per database over the current evaluations (``superseded = 0``) that store a
path (``evaluations.tool_path``, written by the scorer since schema 7)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing

from ..drift import PathCounts
from .database import DbPath, open_database


def path_counts(db_paths: Sequence[DbPath], baseline: str, candidate: str) -> dict[str, tuple[PathCounts, PathCounts]]:
    """Case id → (baseline's, candidate's) sessions per tool path, for the cases both versions ran."""
    out: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for path in db_paths:
        with closing(open_database(path)) as conn:
            for version, case_id, tool_path, n in conn.execute(
                "SELECT COALESCE(agent_version, 'unknown'), case_id, tool_path, count(*) FROM evaluations"
                " WHERE superseded = 0 AND case_id IS NOT NULL AND tool_path IS NOT NULL"
                " AND COALESCE(agent_version, 'unknown') IN (?, ?)"
                " GROUP BY COALESCE(agent_version, 'unknown'), case_id, tool_path",
                (baseline, candidate),
            ):
                for slot, wanted in enumerate((baseline, candidate)):
                    if version == wanted:
                        counts = out.setdefault(case_id, ({}, {}))[slot]
                        counts[tool_path] = counts.get(tool_path, 0) + n
    return {case: pair for case, pair in out.items() if pair[0] and pair[1]}
