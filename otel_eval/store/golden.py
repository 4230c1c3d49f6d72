"""Golden sets as this file keeps them (``golden_sets`` and ``golden_cases``): saved when an
engine starts, read back as EvalSets by ``rescore`` and the views."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError
from ..models.evalset import EvalCase, EvalSet
from .connection import StoreConnection


class GoldenRows(StoreConnection):
    """The part of a Store that keeps golden sets and cases."""

    def save_golden(self, sets: list[dict[str, Any]], cases: list[dict[str, Any]]) -> None:
        """Golden set rows (``golden_sets``) and case rows (``golden_cases``), in one transaction;
        :mod:`otel_eval.golden.sets` builds them. A row with the same key is replaced."""
        with self.transaction():
            if sets:
                self.db.table("golden_sets").upsert_all(sets, pk=("eval_set_id", "source"))
            if cases:
                self.db.table("golden_cases").upsert_all(cases, pk=("eval_set_id", "source", "eval_id"))

    def stored_eval_sets(self) -> list[EvalSet]:
        """The golden sets stored in this file (``golden_cases`` + ``golden_sets``) as EvalSets,
        one per (eval_set_id, source file), in that order; cases in the order they were stored.
        Sets stored before ``criteria`` had a column keep them in ``metadata`` (EvalSet reads both)."""
        sets: dict[tuple[str, str], dict[str, Any]] = {}
        for set_id, source, name, description, criteria, metadata in self.conn.execute(
            "SELECT eval_set_id, source, name, description, criteria, metadata FROM golden_sets"
        ):
            sets[(set_id, source or "")] = {
                "eval_set_id": set_id,
                "name": name or "",
                "description": description or "",
                **({"criteria": json.loads(criteria)} if criteria else {}),
                "metadata": json.loads(metadata) if metadata else {},
                "eval_cases": [],
            }
        for set_id, eval_id, case_json, source in self.conn.execute(
            "SELECT eval_set_id, eval_id, case_json, source FROM golden_cases ORDER BY rowid"
        ):
            entry = sets.setdefault(
                (set_id, source or ""), {"eval_set_id": set_id, "metadata": {"source": source or ""}, "eval_cases": []}
            )
            try:
                entry["eval_cases"].append(EvalCase.model_validate_json(case_json))
            except ValueError as exc:
                raise InputError(
                    self.path,
                    f"stored golden case is not a valid EvalCase: {exc}",
                    f"golden_cases[eval_set_id={set_id!r}, eval_id={eval_id!r}].case_json",
                ) from None
        return [EvalSet(**sets[k]) for k in sorted(sets) if sets[k]["eval_cases"]]
