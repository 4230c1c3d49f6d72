"""The golden sets of a run, as one service: loaded from files (or given as EvalSets), given
distinct ids, stored in the database, read back from it, and indexed for matching.

The engine (and so ``evaluate()``, the in-process processor and the collector, which run one)
and ``rescore`` all go through :class:`GoldenSets`, so a set is identified, stored and matched
the same way everywhere.

**Distinct ids.** A case is known by (eval_set_id, eval_id): in the index, in the database and
across score worker processes. A set's id is what its file says, or the file name's stem
(:func:`~otel_eval.golden.common.eval_set_id_from_source`). Sets of one run may share an id as
long as they share no eval_id (their cases are then one set to a case hint, as before). When
they do share one — two ``cases.json`` in different folders, both with a case ``case-1`` —
each of them gets the shortest run of its parent folders that tells them apart in front:
``a/cases`` and ``b/cases`` (a case hint then says ``a/cases/case-1``). Sets that no folder tells
apart (the same file twice, EvalSets built in code) are numbered instead: ``cases``,
``cases#2``. The database keys golden rows by source file too, so sets of different runs never
overwrite each other's rows.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path, PurePath
from typing import Any, NamedTuple, Protocol

from ..models.evalset import EvalSet
from .load import load_golden_files
from .matcher import GoldenIndex


class GoldenStore(Protocol):
    """What a database must offer to hold golden sets (``otel_eval.store.Store`` does; the golden
    layer sits below the store and names only this)."""

    def stored_eval_sets(self) -> list[EvalSet]:
        """The golden sets saved in the database: what :meth:`GoldenSets.from_store` matches against."""

    def save_golden(self, sets: list[dict[str, Any]], cases: list[dict[str, Any]]) -> Any:
        """Saves the sets' and cases' rows, so later runs and the dashboard see the same golden data."""


GoldenSource = str | Path | EvalSet


class SetSummary(NamedTuple):
    """One loaded golden set as the commands report it."""

    source: str
    """The file it was loaded from (its id for a set given as an object)."""
    eval_set_id: str
    cases: int


class GoldenSets:
    """The sets a run matches sessions against, their ids made distinct (see the module doc)."""

    def __init__(self, sets: Iterable[EvalSet] = ()):
        self.sets: list[EvalSet] = distinct_ids(list(sets))

    @classmethod
    def load(cls, sources: Iterable[GoldenSource]) -> GoldenSets:
        """Files loaded in any golden format (their path kept as ``metadata["source"]``), EvalSets
        taken as given. A problem in any file raises one
        :class:`~otel_eval.models.problems.GoldenFileError` listing the problems of all of them."""
        sources = list(sources)
        loaded = iter(load_golden_files([s for s in sources if not isinstance(s, EvalSet)]))
        sets: list[EvalSet] = []
        for source in sources:
            if isinstance(source, EvalSet):
                sets.append(source)
            else:
                eval_set = next(loaded)
                eval_set.metadata.setdefault("source", str(source))
                sets.append(eval_set)
        return cls(sets)

    @classmethod
    def stored(cls, store: GoldenStore) -> GoldenSets:
        """Every set stored in the database (by this run or earlier ones), criteria included."""
        return cls(store.stored_eval_sets())

    def save(self, store: GoldenStore) -> None:
        """Store the sets (``golden_sets``) and their cases (``golden_cases``), so reports can show
        a case and ``rescore`` can rebuild the sets exactly as they were loaded."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        set_rows, case_rows = [], []
        for eval_set in self.sets:
            source = str(eval_set.metadata.get("source", ""))
            digest = hashlib.sha256(eval_set.model_dump_json().encode()).hexdigest()[:16]
            set_rows.append(
                {
                    "eval_set_id": eval_set.eval_set_id,
                    "source": source,
                    "name": eval_set.name,
                    "description": eval_set.description,
                    "criteria": json.dumps({n: c.model_dump(mode="json") for n, c in eval_set.criteria.items()}),
                    "metadata": json.dumps(eval_set.metadata, ensure_ascii=False, default=str),
                    "saved_at": stamp,
                }
            )
            case_rows += [
                {
                    "eval_set_id": eval_set.eval_set_id,
                    "source": source,
                    "eval_id": case.eval_id,
                    "name": case.name,
                    "query": case.query,
                    "file_hash": digest,
                    "case_json": case.model_dump_json(),
                    "loaded_at": stamp,
                }
                for case in eval_set.eval_cases
            ]
        store.save_golden(set_rows, case_rows)

    def index(
        self,
        fuzzy_threshold: float = 90.0,
        ambiguity_margin: float = 2.0,
        embedding_threshold: float | None = None,
        embed: Callable[[list[str]], list[list[float]]] | None = None,
    ) -> GoldenIndex:
        """The index that matches sessions to these sets' cases."""
        return GoldenIndex(
            self.sets,
            fuzzy_threshold=fuzzy_threshold,
            ambiguity_margin=ambiguity_margin,
            embedding_threshold=embedding_threshold,
            embed=embed,
        )

    def summary(self) -> list[SetSummary]:
        """One row per loaded set (source, id, number of cases): what the engine reports it loaded."""
        return [
            SetSummary(str(s.metadata.get("source", s.eval_set_id)), s.eval_set_id, len(s.eval_cases))
            for s in self.sets
        ]

    def without_cases(self) -> GoldenSets:
        """The same sets (ids, criteria, metadata) with their cases left out."""
        out = GoldenSets()
        out.sets = [s.model_copy(update={"eval_cases": []}) for s in self.sets]
        return out

    def __iter__(self) -> Iterator[EvalSet]:
        return iter(self.sets)

    def __len__(self) -> int:
        return len(self.sets)


def distinct_ids(sets: Sequence[EvalSet]) -> list[EvalSet]:
    """``sets`` with every (eval_set_id, eval_id) distinct (rule: module doc). A renamed set is a
    copy; the others are returned as they are."""
    out = list(sets)
    members: dict[str, list[int]] = {}
    for n, eval_set in enumerate(out):
        members.setdefault(eval_set.eval_set_id, []).append(n)
    taken = set(members)
    for set_id, group in members.items():
        if not _share_a_case([out[n] for n in group]):
            continue
        folders = _telling_folders([str(out[n].metadata.get("source", "")) for n in group])
        for rank, n in enumerate(group):
            if folders is not None:
                new_id = f"{folders[rank]}/{set_id}"
            elif rank == 0:
                continue
            else:
                new_id = f"{set_id}#{rank + 1}"
            while new_id in taken:  # a set already has the qualified id: number it on
                new_id += "#2"
            taken.add(new_id)
            out[n] = out[n].model_copy(update={"eval_set_id": new_id})
    return out


def _share_a_case(sets: list[EvalSet]) -> bool:
    """Do two of these sets (which share an id) have a case with the same eval_id?"""
    seen: set[str] = set()
    for eval_set in sets:
        ids = {case.eval_id for case in eval_set.eval_cases}
        if ids & seen:
            return True
        seen |= ids
    return False


def _telling_folders(sources: list[str]) -> list[str] | None:
    """The shortest trailing run of parent folders that differs between every source, or None
    when none does (a source without a folder, or the same file twice)."""
    parents = [PurePath(source).parent.parts if source and not source.startswith("<") else () for source in sources]
    if any(not parts for parts in parents):
        return None
    for depth in range(1, max(len(parts) for parts in parents) + 1):
        tails = ["/".join(parts[-depth:]) for parts in parents]
        if len(set(tails)) == len(tails):
            return tails
    return None
