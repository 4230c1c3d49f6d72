"""Golden matcher benchmark: the fuzzy step over a 10,000-case golden set, new search against the
old full scan, in the same run. Run by hand, not in CI::

    .venv/bin/python -m benchmarks.matcher                  # 2,000 sessions, 10,000 cases
    .venv/bin/python -m benchmarks.matcher --sessions 4000 --golden-cases 20000

The golden set and the sessions' first queries come from the ingest benchmark's generator (same
seed: verbatim queries, typos, questions the set does not have). Only the queries that miss the
exact index are timed, since only they reach the fuzzy step. Four ways, each in CPU seconds of
this one thread:

``old``        rapidfuzz ``process.extract`` over every golden query (what the matcher did first).
``sketch``     the previous pass: the length slice, then every query in it scored on its sketch
               (spaces and vowels deleted) before the full ratio; remembering nothing.
``new``        :class:`otel_eval.golden.fuzzy_search.QueryTable` (the length slice, then the
               character-count bound over all queries at once), remembering nothing (each search
               is a new one: what a query never seen before costs).
``new+memory`` the same, remembering searches (the matcher's default: repeated questions are free).

Every way must give the same match and evidence for every query; the run stops if not.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel

from . import ingest as load
from .ingest_parts.sessions import variant_turns


class FullScan:
    """The search before the change: rapidfuzz over every query, for each call."""

    def __init__(self, queries: list[str]):
        self.queries = queries

    def above(self, query: str, cutoff: float) -> Any:
        return process.extract(query, self.queries, scorer=fuzz.ratio, score_cutoff=cutoff, limit=None)

    def nearest(self, query: str, limit: int, found: Any = ()) -> Any:
        return process.extract(query, self.queries, scorer=fuzz.ratio, limit=limit)


def _sketch_table(queries: list[str]) -> Any:
    """The fuzzy search of the previous pass (``QueryTable`` with the sketch filter), for timing."""
    from otel_eval.golden.fuzzy_search import _SLACK, QueryTable

    sketch = str.maketrans("", "", " aeiou")

    class SketchTable(QueryTable):
        def __init__(self, queries: list[str]):
            super().__init__(queries, remember=0)
            self._sketches = [q.translate(sketch) for q in self._by_length]

        def _above(self, query: str, cutoff: float) -> Any:
            lo, hi = self._window(len(query), cutoff)
            if lo >= hi:
                return ()
            at: Any = range(lo, hi)
            if cutoff > 0.0:
                most = int((1.0 - cutoff / 100.0) * (len(query) + self._lengths[hi - 1]) + _SLACK)
                near = process.extract(
                    query.translate(sketch), self._sketches[lo:hi], scorer=Indel.distance, score_cutoff=most, limit=None
                )
                at = [lo + i for _, _, i in near]
            hits = process.extract(
                query, [self._by_length[i] for i in at], scorer=fuzz.ratio, score_cutoff=cutoff, limit=None
            )
            found = [(choice, score, self._position[at[i]]) for choice, score, i in hits]
            found.sort(key=lambda hit: (-hit[1], hit[2]))
            return tuple(found)

        def nearest(self, query: str, limit: int, found: Any = ()) -> Any:
            return self._nearest(query, limit)  # as it was: the matcher's hits not reused

    return SketchTable(queries)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from otel_eval.golden import GoldenIndex
    from otel_eval.golden.fuzzy_search import QueryTable
    from otel_eval.models.evalset import EvalSet

    cases = load.make_golden_cases(args.golden_cases, args.seed)
    eval_set = EvalSet.model_validate(load.golden_evalset(cases))
    rng = random.Random(args.seed + 2)
    queries = [variant_turns(rng, rng.choice(cases))[1][0].query for _ in range(args.sessions)]
    index = GoldenIndex([eval_set])
    misses = [q for q in queries if index.match(q).method not in ("exact", "case_id")]
    tables = {
        "old": FullScan(list(index._queries)),
        "sketch": _sketch_table(list(index._queries)),
        "new": QueryTable(index._queries, remember=0),
        "new+memory": QueryTable(index._queries),
    }
    seconds: dict[str, float] = {}
    answers: dict[str, list] = {}
    for name, table in tables.items():
        index._table = table
        started = time.process_time()
        found = [index.match(q) for q in misses]
        seconds[name] = time.process_time() - started
        answers[name] = [(m.method, m.eval_id, m.score, m.evidence) for m in found]
    for name in tables:
        if answers[name] != answers["old"]:
            sys.exit(f"{name} does not match the old search's answers")
    methods: dict[str, int] = {}
    for method, *_ in answers["old"]:
        methods[method] = methods.get(method, 0) + 1
    return {
        "sessions": len(queries),
        "misses": len(misses),
        "distinct_misses": len(set(misses)),
        "methods": methods,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--golden-cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    result = run(parser.parse_args(argv))
    misses = result["misses"]
    print(
        f"{result['sessions']} sessions, {misses} miss the exact index ({result['distinct_misses']} distinct): "
        + ", ".join(f"{k} {v}" for k, v in sorted(result["methods"].items()))
    )
    old = result["seconds"]["old"]
    print(f"{'way':<12} {'CPU s':>8} {'ms/miss':>9} {'x old':>7}")
    for name, secs in result["seconds"].items():
        print(f"{name:<12} {secs:>8.3f} {secs / max(misses, 1) * 1000:>9.3f} {old / secs if secs else 0:>7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
