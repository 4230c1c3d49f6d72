"""One alignment of expected and actual tool calls, from which every trajectory metric derives.

Two matchings are computed once:

* **any-order**: a maximum-cardinality bipartite matching (augmenting paths) where an expected and
  an actual call are compatible when the names agree and, with ``check_args``, the arguments agree.
  Its size does not depend on the order either list is written in, and duplicates count as often
  as they occur (each call is matched at most once).
* **in-order**: the longest order-preserving matching (an LCS over calls). Calls that share a
  ``group`` (parallel tool calls from one LLM response) form one unordered block, so their
  relative span start order never matters.

Failed calls that the agent retried (an ``error`` followed later in the turn by a call of the same
tool) are set aside as retries before matching: the retry stands for the attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ..models.evalset import MatchType, ToolCall
from ..trajectory import ActualCall
from .arguments import ArgumentPolicy

Pair = tuple[int, int]
"""(index into expected, index into effective actual)."""


def split_retries(calls: Sequence[ActualCall]) -> tuple[list[ActualCall], list[dict[str, Any]]]:
    """Effective calls and the failed attempts that a later call of the same tool (same turn) retried."""
    effective: list[ActualCall] = []
    retries: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        if call.error is not None:
            retry_at = next(
                (j for j in range(i + 1, len(calls)) if calls[j].name == call.name and calls[j].turn == call.turn),
                None,
            )
            if retry_at is not None:
                retries.append({
                    "index": i, "name": call.name, "args": call.args, "error": call.error,
                    "retried_by": retry_at, "retry_succeeded": calls[retry_at].error is None,
                })
                continue
        effective.append(call)
    return effective, retries


def _max_matching(compatible: list[list[bool]], n_actual: int, seed: Sequence[Pair] = ()) -> list[Pair]:
    """Maximum-cardinality bipartite matching by augmenting paths (Kuhn), grown from ``seed``.

    Starting from a seed matching keeps its pairs where possible (augmenting never unmatches a
    vertex), so the any-order pairs stay close to the in-order ones in the per-call diff.
    """
    match_of_actual: list[Optional[int]] = [None] * n_actual
    match_of_expected: list[Optional[int]] = [None] * len(compatible)
    for e, a in seed:
        match_of_actual[a] = e
        match_of_expected[e] = a

    def augment(e: int, seen: list[bool]) -> bool:
        for a in range(n_actual):
            if compatible[e][a] and not seen[a]:
                seen[a] = True
                if match_of_actual[a] is None or augment(match_of_actual[a], seen):
                    match_of_actual[a] = e
                    match_of_expected[e] = a
                    return True
        return False

    for e in range(len(compatible)):
        if match_of_expected[e] is None:
            augment(e, [False] * n_actual)
    return sorted((e, a) for a, e in enumerate(match_of_actual) if e is not None)


def _blocks(calls: Sequence[ActualCall]) -> list[list[int]]:
    """Actual call indices in blocks: a parallel group is one block placed at its first member."""
    blocks: list[list[int]] = []
    where: dict[str, int] = {}
    for i, call in enumerate(calls):
        if call.group is not None:
            key = f"{call.turn}:{call.group}"
            if key in where:
                blocks[where[key]].append(i)
                continue
            where[key] = len(blocks)
        blocks.append([i])
    return blocks


def _ordered_matching(compatible: list[list[bool]], blocks: list[list[int]]) -> list[Pair]:
    """Longest order-preserving matching where each block is matched as an unordered set.

    dp[i][j] = most expected calls among the first i matched into the first j blocks, keeping
    order between blocks. A block takes a contiguous run of expected calls (some may stay
    unmatched), matched inside the block by maximum matching. Sizes are small, so the cubic DP is fine.
    """
    n, m = len(compatible), len(blocks)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    choice: dict[tuple[int, int], tuple[int, list[Pair]]] = {}
    for j in range(1, m + 1):
        block = blocks[j - 1]
        for i in range(0, n + 1):
            best, pick = dp[i][j - 1], None
            for k in range(i - 1, -1, -1):  # expected k..i-1 go to block j-1
                sub = [[compatible[e][a] for a in block] for e in range(k, i)]
                local = _max_matching(sub, len(block))
                value = dp[k][j - 1] + len(local)
                if local and value > best:
                    best, pick = value, (k, [(k + e, block[a]) for e, a in local])
                if len(block) == 1 and local:
                    break  # a single call block takes at most one; the latest k is as good as any
            dp[i][j] = best
            if pick is not None:
                choice[(i, j)] = pick
    pairs: list[Pair] = []
    i, j = n, m
    while i > 0 and j > 0:
        if (i, j) in choice and dp[i][j] != dp[i][j - 1]:
            k, local = choice[(i, j)]
            pairs.extend(local)
            i, j = k, j - 1
        elif dp[i][j] == dp[i][j - 1]:
            j -= 1
        else:  # pragma: no cover - dp[i][j] is either inherited or chosen
            i -= 1
    return sorted(pairs)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 1.0


@dataclass
class Alignment:
    """Expected vs actual tool calls, aligned once. Every metric is a property of this object."""

    expected: list[ToolCall]
    actual: list[ActualCall]
    """The effective actual calls (retried failures removed; first call only when asked)."""
    pairs: list[Pair]
    """Maximum any-order matching."""
    ordered_pairs: list[Pair]
    """Longest order-preserving matching (parallel groups unordered)."""
    retries: list[dict[str, Any]] = field(default_factory=list)
    check_args: bool = True
    policy: ArgumentPolicy = field(default_factory=ArgumentPolicy)

    # --- counts -----------------------------------------------------------------------
    @property
    def matched(self) -> int:
        return len(self.pairs)

    @property
    def matched_in_order(self) -> int:
        return len(self.ordered_pairs)

    # --- the seed's modes ---------------------------------------------------------------
    @property
    def any_order_match(self) -> bool:
        """Every expected call is present (each actual call used once); extras allowed."""
        return self.matched == len(self.expected)

    @property
    def in_order_match(self) -> bool:
        """Every expected call is present in the expected order; extras allowed in between."""
        return self.matched_in_order == len(self.expected)

    @property
    def exact_match(self) -> bool:
        """The same calls, same count, same order (a parallel group's order is free)."""
        return self.in_order_match and len(self.actual) == len(self.expected)

    def satisfies(self, match_type: MatchType | str) -> bool:
        match_type = MatchType(match_type)
        if match_type is MatchType.EXACT:
            return self.exact_match
        if match_type is MatchType.IN_ORDER:
            return self.in_order_match
        return self.any_order_match

    # --- set relations ----------------------------------------------------------------------
    @property
    def superset(self) -> bool:
        """The actual calls contain every expected call (same as any_order_match)."""
        return self.any_order_match

    @property
    def subset(self) -> bool:
        """Every actual call was expected (no extra calls); some expected ones may be missing."""
        return self.matched == len(self.actual)

    # --- graded -------------------------------------------------------------------------------
    @property
    def precision(self) -> float:
        """matched / actual calls; 1.0 when the agent made no call."""
        return _ratio(self.matched, len(self.actual))

    @property
    def recall(self) -> float:
        """matched / expected calls; 1.0 when no call was expected."""
        return _ratio(self.matched, len(self.expected))

    @property
    def f1(self) -> float:
        return _f1(self.precision, self.recall)

    @property
    def in_order_precision(self) -> float:
        return _ratio(self.matched_in_order, len(self.actual))

    @property
    def in_order_recall(self) -> float:
        return _ratio(self.matched_in_order, len(self.expected))

    @property
    def in_order_f1(self) -> float:
        return _f1(self.in_order_precision, self.in_order_recall)

    def graded_score(self, match_type: MatchType | str) -> float:
        """1.0 when the mode is satisfied, else partial credit: EXACT → in-order F1 (order, missing
        and extra calls all cost), IN_ORDER → in-order recall, ANY_ORDER → recall."""
        match_type = MatchType(match_type)
        if self.satisfies(match_type):
            return 1.0
        if match_type is MatchType.EXACT:
            return self.in_order_f1
        if match_type is MatchType.IN_ORDER:
            return self.in_order_recall
        return self.recall

    def single_tool_use(self, tool_name: str) -> bool:
        """Was this tool called at all (any arguments, any position)?"""
        return any(call.name == tool_name for call in self.actual)

    # --- per-call diff --------------------------------------------------------------------------
    def diff(self) -> dict[str, Any]:
        """What matched, what is missing or extra, what came out of order, which arguments differ."""
        ordered = set(self.ordered_pairs)
        matched = [
            {"expected_index": e, "actual_index": a, "name": self.expected[e].name, "in_order": (e, a) in ordered}
            for e, a in self.pairs
        ]
        out_of_order = [m for m in matched if not m["in_order"]]
        if len(self.ordered_pairs) < len(self.pairs) and not out_of_order:
            # A different maximum matching could have kept order; report the shortfall anyway.
            out_of_order = [{"note": f"{len(self.pairs) - len(self.ordered_pairs)} call(s) not in expected order"}]
        used_e = {e for e, _ in self.pairs}
        used_a = {a for _, a in self.pairs}
        missing_e = [e for e in range(len(self.expected)) if e not in used_e]
        extra_a = [a for a in range(len(self.actual)) if a not in used_a]
        # Unmatched calls of the same tool name: explain them as argument differences.
        by_name = [[self.expected[e].name == self.actual[a].name for a in extra_a] for e in missing_e]
        near = _max_matching(by_name, len(extra_a))
        argument_mismatches = [
            {
                "name": self.expected[missing_e[i]].name,
                "expected_index": missing_e[i],
                "actual_index": extra_a[j],
                "arguments": self.policy.diff(self.expected[missing_e[i]].name,
                                              self.expected[missing_e[i]].args, self.actual[extra_a[j]].args),
            }
            for i, j in near
        ]
        return {
            "matched": matched,
            "missing": [{"expected_index": e, "name": self.expected[e].name, "args": self.expected[e].args}
                        for e in missing_e],
            "extra": [{"actual_index": a, "name": self.actual[a].name, "args": self.actual[a].args}
                      for a in extra_a],
            "out_of_order": out_of_order,
            "argument_mismatches": argument_mismatches,
            "retries": self.retries,
        }

    def summary(self) -> dict[str, Any]:
        """Numbers and lists for a CriterionResult's details (JSON-serialisable)."""
        return {
            "expected": [c.name for c in self.expected],
            "actual": [c.name for c in self.actual],
            "expected_calls": [{"name": c.name, "args": c.args} for c in self.expected],
            "actual_calls": [{"name": c.name, "args": c.args, "error": c.error} for c in self.actual],
            "matched": self.matched,
            "matched_in_order": self.matched_in_order,
            "exact": self.exact_match,
            "in_order": self.in_order_match,
            "any_order": self.any_order_match,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "check_args": self.check_args,
            **self.diff(),
        }


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def align(
    expected: Sequence[ToolCall],
    actual: Sequence[ActualCall],
    check_args: bool = True,
    arg_options: Optional[dict[str, Any] | ArgumentPolicy] = None,
    collapse_retries: bool = True,
    first_call_only: bool = False,
) -> Alignment:
    """Align expected and actual calls once. ``arg_options``: criterion options or an ArgumentPolicy
    (argument modes, keys, comparators; see :class:`ArgumentPolicy`). ``first_call_only`` keeps
    only the first expected and the first effective actual call (Big Sky's ``matchToolCall``
    compares ``tool_calls[0]`` of each)."""
    policy = arg_options if isinstance(arg_options, ArgumentPolicy) else ArgumentPolicy.from_options(arg_options)
    expected = list(expected)
    if collapse_retries:
        effective, retries = split_retries(actual)
    else:
        effective, retries = list(actual), []
    if first_call_only:
        expected, effective = expected[:1], effective[:1]
    compatible = [
        [e.name == a.name and (not check_args or e.check_args is False or policy.equal(e.name, e.args, a.args))
         for a in effective]
        for e in expected
    ]
    ordered = _ordered_matching(compatible, _blocks(effective))
    pairs = _max_matching(compatible, len(effective), seed=ordered)
    return Alignment(expected, effective, pairs, ordered, retries, check_args, policy)
