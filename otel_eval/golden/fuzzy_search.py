"""Fuzzy search over golden queries: the queries whose rapidfuzz ``fuzz.ratio`` with a session's
query reaches a cutoff, and the nearest few, with exactly the results and the order that
``process.extract`` over the whole list gives, without scoring every golden query.

Why it can skip queries: the ratio of strings of lengths m and n is 100·(1 − d/(m + n)), d their
Indel distance, and d ≥ |m − n|. So a query shorter than m·c/(200 − c) or longer than
m·(200 − c)/c cannot reach the cutoff c (for c = 90 and a 60-character query: outside 49–73
characters). The queries are sorted by length once, when the index is built; a search scores
only the slice whose lengths can reach the cutoff, and puts the hits back in ``process.extract``'s
order: score descending, then position in the original list.

Inside that slice most queries are still far off, and scoring each costs ~100 ns. So the slice is
first scored on *sketches*: the queries with spaces and the vowels a, e, i, o, u deleted. Deleting
the same characters from two strings never increases their Indel distance (the common subsequence
loses only the deleted characters, which both lengths lose too), so a query whose sketch is more
than d_max = (1 − c/100)·(m + n) from the session query's sketch cannot reach the cutoff, and is
not scored in full. Sketches are ~35% shorter (shorter strings are scored faster) and keep ~4% of
the slice for the full score on the benchmark's golden set.

Sessions ask the same off-golden questions again and again ("what can you do?"), so the last
results are remembered (bounded, per process): a repeated query is not searched again.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from typing import Any, Sequence

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel

#: (choice, score, position in the original list), as ``process.extract`` returns them.
Hit = tuple[str, float, int]

#: Cutoffs tried, highest first, before the nearest queries are searched among all of them.
NEAREST_CUTOFFS = (85.0, 70.0, 50.0)
#: Searches remembered per table (a search's answer is a few tuples).
REMEMBERED = 4096
#: Float slack on the length bounds: a length at the edge is scored, never skipped.
_SLACK = 1e-6
#: What a sketch leaves out (see the module's docstring): frequent characters, so sketches are short.
_SKETCH = str.maketrans("", "", " aeiou")


class QueryTable:
    """Distinct normalised golden queries, sorted by length for searches by ``fuzz.ratio``."""

    def __init__(self, queries: Sequence[str], remember: int = REMEMBERED):
        """``remember``: how many searches to keep the answer of (0: none)."""
        self.queries = list(queries)
        self.remember = remember
        order = sorted(range(len(self.queries)), key=lambda i: len(self.queries[i]))
        self._position = order
        self._by_length = [self.queries[i] for i in order]
        self._lengths = [len(q) for q in self._by_length]
        self._sketches = [q.translate(_SKETCH) for q in self._by_length]
        self._remembered: OrderedDict[tuple[str, str, float], tuple[Hit, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.queries)

    def __getstate__(self) -> dict[str, Any]:
        # Sent to score worker processes: without the lock, and each process remembers its own.
        state = dict(self.__dict__)
        del state["_lock"], state["_remembered"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._remembered = OrderedDict()
        self._lock = threading.Lock()

    def above(self, query: str, cutoff: float) -> tuple[Hit, ...]:
        """Every query with ``fuzz.ratio(query, q) >= cutoff``, best first: what
        ``process.extract(query, queries, scorer=fuzz.ratio, score_cutoff=cutoff, limit=None)`` gives."""
        return self._remember(("above", query, cutoff), lambda: self._above(query, cutoff))

    def nearest(self, query: str, limit: int) -> tuple[Hit, ...]:
        """The ``limit`` queries with the highest ratio, best first: what
        ``process.extract(query, queries, scorer=fuzz.ratio, limit=limit)`` gives."""
        return self._remember(("nearest", query, float(limit)), lambda: self._nearest(query, limit))

    def _above(self, query: str, cutoff: float) -> tuple[Hit, ...]:
        lo, hi = self._window(len(query), cutoff)
        if lo >= hi:
            return ()
        at = range(lo, hi)
        if cutoff > 0.0:
            # The sketch filter (module docstring): d_max for the longest query in the slice bounds
            # every query's, and a distance is an integer.
            most = int((1.0 - cutoff / 100.0) * (len(query) + self._lengths[hi - 1]) + _SLACK)
            near = process.extract(query.translate(_SKETCH), self._sketches[lo:hi], scorer=Indel.distance,
                                   score_cutoff=most, limit=None)
            at = [lo + i for _, _, i in near]
        by_length = self._by_length
        hits = process.extract(query, [by_length[i] for i in at], scorer=fuzz.ratio, score_cutoff=cutoff, limit=None)
        found = [(choice, score, self._position[at[i]]) for choice, score, i in hits]
        found.sort(key=lambda hit: (-hit[1], hit[2]))
        return tuple(found)

    def _nearest(self, query: str, limit: int) -> tuple[Hit, ...]:
        # When `limit` queries reach c, they are the nearest: every query not found scores below
        # c, so below each of them (a tie would have been found, and is ordered by position).
        for cutoff in NEAREST_CUTOFFS:
            hits = self._above(query, cutoff)
            if len(hits) >= limit:
                return hits[:limit]
        return tuple(process.extract(query, self.queries, scorer=fuzz.ratio, limit=limit))

    def _window(self, length: int, cutoff: float) -> tuple[int, int]:
        """The slice of ``_by_length`` whose lengths can reach ``cutoff`` against ``length``."""
        if 1.0 - cutoff / 100.0 >= 1.0:  # rapidfuzz compares as a distance: a cutoff this small is 0
            return 0, len(self._lengths)
        shortest = length * cutoff / (200.0 - cutoff)
        longest = length * (200.0 - cutoff) / cutoff
        return bisect_left(self._lengths, shortest - _SLACK), bisect_right(self._lengths, longest + _SLACK)

    def _remember(self, key: tuple[str, str, float], search: Any) -> tuple[Hit, ...]:
        with self._lock:
            found = self._remembered.get(key)
            if found is not None:
                self._remembered.move_to_end(key)
                return found
        found = search()
        if self.remember > 0:
            with self._lock:
                self._remembered[key] = found
                if len(self._remembered) > self.remember:
                    self._remembered.popitem(last=False)
        return found
