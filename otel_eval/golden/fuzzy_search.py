"""Fuzzy search over golden queries: the queries whose rapidfuzz ``fuzz.ratio`` with a session's
query reaches a cutoff, and the nearest few, with exactly the results and the order that
``process.extract`` over the whole list gives, without scoring every golden query.

Two bounds, both provable for any text, decide which golden queries are scored at all. For a
session query a of length m and a golden query b of length n, ``fuzz.ratio`` is
100·(1 − d/(m + n)), d their Indel distance (insertions and deletions) = m + n − 2·LCS(a, b), so
the ratio reaches the cutoff c only if d ≤ (1 − c/100)·(m + n).

1. **Length.** d ≥ |m − n|, so a query shorter than m·c/(200 − c) or longer than m·(200 − c)/c
   cannot reach c (for c = 90 and a 60-character query: outside 49–73 characters). The queries are
   sorted by length once; a search looks only at the slice of lengths that can reach c.
2. **Characters.** A common subsequence holds no more copies of a character than either string,
   so LCS ≤ m − lack, where lack = Σ over characters x of max(0, a_x − b_x), the copies of the
   session query's characters that b does not have. Hence d ≥ 2·lack + n − m, and b can reach c
   only if lack ≤ ((1 − c/100)·(m + n) + m − n)/2. Counting some characters together (rare ones
   share a counter, see :class:`_LackCounts`) or ignoring copies beyond the first few only makes
   lack smaller, so the bound still holds.

The lack of every golden query is counted at once, bit-parallel: the queries are bits of Python
ints (one bit per query, in length order), and for each character x and k ≥ 1 the index keeps the
set of queries with fewer than k copies of x. A search adds, for each of its m characters, that
set into a counter kept as bit planes; a query whose counter passes its length's allowance is
flagged, and only the rest are scored by rapidfuzz. On the benchmark's golden set (10,000
queries, cutoff 90) ~70 of the ~4,800 queries in the length slice are left to score; the
counting costs ~40-70 µs a search, what rapidfuzz takes for ~500 queries, so a slice smaller
than that is scored without it.

Sessions ask the same off-golden questions again and again ("what can you do?"), so the last
results are remembered (bounded, per process): a repeated query is not searched again.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, count
from operator import add
from typing import Any

from rapidfuzz import fuzz, process

#: (choice, score, position in the original list), as ``process.extract`` returns them.
Hit = tuple[str, float, int]

#: Cutoffs tried, highest first, before the nearest queries are searched among all of them.
NEAREST_CUTOFFS = (85.0, 70.0, 50.0)
#: Searches remembered per table (a search's answer is a few tuples).
REMEMBERED = 4096
#: Float slack on the bounds: a query at the edge is scored, never skipped.
_SLACK = 1e-6
#: Length slices of fewer queries than this are scored without the character bound: counting
#: costs ~40 µs a search whatever the slice, rapidfuzz ~0.1 µs a query (measured on the
#: benchmark's queries: even at ~500).
_BOUND_FROM = 512
#: Characters with a counter of their own: the ones most golden queries hold. The others share
#: :data:`_SHARED_COUNTERS` counters (by code point), so a golden set in a script with thousands of
#: characters keeps a bounded index.
_OWN_COUNTERS = 64
_SHARED_COUNTERS = 32
#: Copies of a character counted (each copy is one set of queries in the index); ignoring the
#: copies beyond only makes the lack smaller.
_COPIES_COUNTED = 16
#: ``format(bits, "b")`` digits as bytes ``itertools.compress`` reads as false / true.
_DIGIT_FLAGS = bytes.maketrans(b"01", b"\x00\x01")

#: What a character is counted as: itself, or the number of the counter it shares.
_Counted = str | int


class QueryTable:
    """Distinct normalised golden queries, sorted by length for searches by ``fuzz.ratio``."""

    def __init__(self, queries: Sequence[str], remember: int = REMEMBERED):
        """``remember``: how many searches to keep the answer of (0: none)."""
        # Tuples of strings and numbers, which the cyclic GC stops tracking: a table lives as
        # long as its engine, and lists would add their every item to each full GC pass.
        self.queries = tuple(queries)
        self.remember = remember
        order = tuple(sorted(range(len(self.queries)), key=lambda i: len(self.queries[i])))
        self._position = order
        self._by_length = tuple(self.queries[i] for i in order)
        self._lengths = tuple(len(q) for q in self._by_length)
        #: Where each run of equal lengths starts in ``_by_length`` (and the end, last).
        self._run_starts = (
            *(i for i in range(len(order)) if i == 0 or self._lengths[i] != self._lengths[i - 1]),
            len(order),
        )
        # A table that small never uses the character bound: no index for it.
        self._lack = _LackCounts(self._by_length) if len(order) >= _BOUND_FROM else None
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

    def nearest(self, query: str, limit: int, found: Sequence[Hit] = ()) -> tuple[Hit, ...]:
        """The ``limit`` queries with the highest ratio, best first: what
        ``process.extract(query, queries, scorer=fuzz.ratio, limit=limit)`` gives. ``found``: what
        ``above(query, c)`` gave for some cutoff c; when it holds ``limit`` hits, the nearest are
        its first ones (see ``_nearest``) and nothing is searched."""
        if len(found) >= limit:
            return tuple(found[:limit])
        return self._remember(("nearest", query, float(limit)), lambda: self._nearest(query, limit))

    def _above(self, query: str, cutoff: float) -> tuple[Hit, ...]:
        lo, hi = self._window(len(query), cutoff)
        if lo >= hi:
            return ()
        at = self._may_reach(query, cutoff, lo, hi)
        by_length = self._by_length
        hits = process.extract(query, [by_length[i] for i in at], scorer=fuzz.ratio, score_cutoff=cutoff, limit=None)
        found = [(choice, score, self._position[at[i]]) for choice, score, i in hits]
        found.sort(key=lambda hit: (-hit[1], hit[2]))
        return tuple(found)

    def _may_reach(self, query: str, cutoff: float, lo: int, hi: int) -> list[int]:
        """The positions in ``_by_length[lo:hi]`` that the character bound (module docstring) does
        not rule out, in order."""
        if self._lack is None or hi - lo < _BOUND_FROM:
            return list(range(lo, hi))
        allowed = self._allowances(len(query), cutoff, lo, hi)
        if min(lack for _, _, lack in allowed) >= len(query):  # nobody lacks more than everything
            return list(range(lo, hi))
        return _set_bits(self._lack.within(query, allowed), lo, hi)

    def _allowances(self, m: int, cutoff: float, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """(start, end, most lack) for consecutive ranges of ``_by_length[lo:hi]``: how many of an
        m-character query's characters the queries there may lack and still reach ``cutoff``. The
        allowance depends on the length only, so each range is lengths that share one."""
        steps: list[tuple[int, int, int]] = []
        run = bisect_left(self._run_starts, lo)
        while self._run_starts[run] < hi:
            start, end = self._run_starts[run], self._run_starts[run + 1]
            lack = _allowed_lack(m, self._lengths[start], cutoff)
            if steps and steps[-1][2] == lack:
                start = steps.pop()[0]
            steps.append((start, end, lack))
            run += 1
        return steps

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


def _allowed_lack(m: int, n: int, cutoff: float) -> int:
    """How many of an m-character query's characters a golden query of length n may lack and
    still reach ``cutoff``: the largest lack with 2·lack + n − m ≤ (1 − cutoff/100)·(m + n)
    (module docstring), rounded up by the slack so that a query at the edge is scored."""
    most_distance = (1.0 - cutoff / 100.0) * (m + n)
    return math.floor((most_distance + m - n) / 2.0 + _SLACK)


class _LackCounts:
    """For golden queries as bits of an int (bit i: the i-th query given), how many copies of a
    session query's characters each one lacks, counted for all of them at once.

    The index: for each character x (or shared counter, see :data:`_OWN_COUNTERS`) and each
    k = 1, 2, ..., the set of queries holding fewer than k copies. A session query with a_x copies
    of x adds the sets for k = 1..a_x: a query with b_x copies is in max(0, a_x − b_x) of them, its
    lack of x."""

    def __init__(self, queries: Sequence[str]):
        everyone = (1 << len(queries)) - 1
        holders = Counter(x for query in queries for x in set(query))
        own = {x for x, _ in holders.most_common(_OWN_COUNTERS)}
        # a rare character → the counter it shares (typed as _Counted: the keys of the counts it feeds)
        self._shared: dict[_Counted, int] = {x: ord(x) % _SHARED_COUNTERS for x in holders if x not in own}
        having: dict[_Counted, list[list[int]]] = {}  # x → [the queries with at least k copies]
        for i, query in enumerate(queries):
            for counted, copies in self._counts(query).items():
                by_copies = having.setdefault(counted, [])
                for k in range(min(copies, _COPIES_COUNTED)):
                    if k == len(by_copies):
                        by_copies.append([])
                    by_copies[k].append(i)
        #: x → [the queries with fewer than k copies, for k = 1, 2, ...]; past the end of the
        #: list (or for an x not here) every query has fewer.
        self._fewer = {
            counted: [everyone ^ _bits(at_least, len(queries)) for at_least in by_copies]
            for counted, by_copies in having.items()
        }

    def _counts(self, query: str) -> Counter[_Counted]:
        """Copies per counter: a character shares its counter with others when it is rare in the
        golden queries; a character no golden query holds counts as itself (everyone lacks it)."""
        copies: Counter[_Counted] = Counter(query)
        if not self._shared:
            return copies
        counted: Counter[_Counted] = Counter()
        for x, n in copies.items():
            counted[self._shared.get(x, x)] += n
        return counted

    def _lacked(self, query: str) -> tuple[list[int], int]:
        """The sets of queries that lack each copy counted of ``query``'s characters, and how many
        copies every query lacks (kept out of the sets: they lower every allowance alike)."""
        sets: list[int] = []
        by_everyone = 0
        for counted, n in self._counts(query).items():
            n = min(n, _COPIES_COUNTED)
            fewer = self._fewer.get(counted, [])[:n]
            sets += fewer
            by_everyone += n - len(fewer)
        return sets, by_everyone

    def within(self, query: str, allowed: Sequence[tuple[int, int, int]]) -> int:
        """The queries whose lack of ``query``'s characters is at most their allowance:
        ``allowed`` gives (start, end, most lack) for consecutive bit ranges; bits outside them
        are not set.

        The lack of every query is added up in a bit-sliced counter: plane j holds bit j of every
        query's count. Each query's counter starts at top − allowance, top = 2^planes − 1, so it
        carries out of the top plane exactly when its lack exceeds its allowance."""
        sets, by_everyone = self._lacked(query)
        allowed = [(start, end, lack - by_everyone) for start, end, lack in allowed]
        most = max(lack for _, _, lack in allowed)
        if most < 0:
            return 0
        planes = [0] * max(1, most.bit_length())
        top = (1 << len(planes)) - 1
        over = 0  # queries whose counter carried out of the top plane
        for start, end, lack in allowed:
            run = _bit_range(start, end)
            if lack < 0:
                over |= run
                continue
            for j in range(len(planes)):
                if (top - lack) >> j & 1:
                    planes[j] |= run
        for carry in sets:
            for j, plane in enumerate(planes):
                planes[j] = plane ^ carry
                carry &= plane
                if not carry:
                    break
            else:
                over |= carry
        return _bit_range(allowed[0][0], allowed[-1][1]) & ~over


def _bit_range(start: int, end: int) -> int:
    """An int with bits ``start`` to ``end`` − 1 set."""
    return ((1 << end) - 1) ^ ((1 << start) - 1)


def _set_bits(bits: int, lo: int, hi: int) -> list[int]:
    """The positions of the bits set in ``bits``, all in ``[lo, hi)``, in order. Few bits are
    usually set: the digits between ones give their positions without a step per zero; many
    bits set go through ``compress``, one step per position in the range."""
    digits = format(bits >> lo, "b")[::-1]  # digit i: bit lo + i
    if 8 * bits.bit_count() < hi - lo:
        zeros_before = digits.split("1")[:-1]  # runs of zeros, each followed by a one
        return list(map(add, accumulate(map(len, zeros_before)), count(lo)))
    return list(compress(range(lo, hi), digits.encode("ascii").translate(_DIGIT_FLAGS)))


def _bits(positions: Iterable[int], size: int) -> int:
    """An int with the bits at ``positions`` set (of ``size`` bits)."""
    digits = bytearray(b"0" * size)
    for i in positions:
        digits[size - 1 - i] = 0x31  # "1": the last digit is bit 0
    return int(digits, 2) if size else 0
