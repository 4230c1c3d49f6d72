"""Expected vs actual tool calls: one alignment from which every trajectory measure derives, and
google-adk's own match rules for the ADK-named criterion.

Two matchings are computed once (``align``):

* **any-order**: a maximum-cardinality bipartite matching where an expected and an actual call
  are compatible when the names agree and, with ``check_args``, the arguments agree. Its size does
  not depend on the order either list is written in; duplicates count as often as they occur.
* **in-order**: the longest order-preserving matching (an LCS over calls). Calls issued in one
  model response (one ``group``) form one unordered block, so their span start order never matters.

**Retries.** A failed call is a *retry candidate* when a later call of the same tool comes from a
later model step (calls issued together are never retries of one another). Candidates take part
in matching like every other call, so a golden that lists the failed attempt pairs with it. Both
matchings prefer, among the largest ones, those that pair the most non-candidates; a candidate
left unpaired is then *neutral*: a retried attempt, neither expected nor extra.

**Partial credit** (precision, recall, F1, in-order F1) is a property of the alignment too; the
criteria (``otel_eval.criteria``, one module each) decide which number a config asked for, and name it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models.arguments import ArgumentPolicy
from ..models.evalset import ExpectedToolCall, MatchType
from ..trajectory import ActualToolCall

Pair = tuple[int, int]
"""(index into expected, index into actual)."""


# --- retries ------------------------------------------------------------------------------------


def _later_step(failed: ActualToolCall, later: ActualToolCall) -> bool:
    """Did ``later`` come from a later model step than ``failed``? With step numbers on both, they
    decide; without, one parallel group is one step and anything else counts as later."""
    if failed.step is not None and later.step is not None:
        return later.step > failed.step
    return failed.group is None or later.group != failed.group


def retried_by(calls: Sequence[ActualToolCall]) -> dict[int, int]:
    """Failed call index → index of the first later call of the same tool (same turn) issued by a
    later model step: the calls that may be set aside as retried attempts."""
    out: dict[int, int] = {}
    for i, call in enumerate(calls):
        if call.error is None:
            continue
        j = next(
            (
                j
                for j in range(i + 1, len(calls))
                if calls[j].name == call.name and calls[j].turn == call.turn and _later_step(call, calls[j])
            ),
            None,
        )
        if j is not None:
            out[i] = j
    return out


def expected_calls(turn: Any) -> list[ActualToolCall]:
    """The calls of a turn a golden trajectory lists, and its tool path: retried failures dropped,
    and only the top-level agent's calls when it made any (sub-agent calls are its implementation)."""
    effective, _ = split_retries(turn.calls)
    top = [c for c in effective if c.depth == 0]
    return top if top else effective


def tool_path(turns: Sequence[Any]) -> str:
    """A session's tool path as ``evaluations.tool_path`` stores it (what trajectory drift
    compares): each turn's :func:`expected_calls` joined by "→", turns by " | "; "(no tools)" for
    a turn without a call."""
    return " | ".join(" → ".join(c.name for c in expected_calls(t)) or "(no tools)" for t in turns) or "(no turns)"


def split_retries(calls: Sequence[ActualToolCall]) -> tuple[list[ActualToolCall], list[dict[str, Any]]]:
    """The calls without retried failed attempts, and those attempts (for exports that describe
    what the agent ended up doing; scoring pairs attempts first, see :func:`align`)."""
    retried = retried_by(calls)
    effective = [c for i, c in enumerate(calls) if i not in retried]
    return effective, [_retry_entry(calls, i, j) for i, j in retried.items()]


def _retry_entry(calls: Sequence[ActualToolCall], i: int, j: int) -> dict[str, Any]:
    return {
        "actual_index": i,
        "name": calls[i].name,
        "args": calls[i].args,
        "error": calls[i].error,
        "retried_by": j,
        "retry_succeeded": calls[j].error is None,
    }


# --- matchings ----------------------------------------------------------------------------------


def _matching(compatible: list[list[bool]], actual_order: Sequence[int], seed: Sequence[Pair] = ()) -> list[Pair]:
    """Maximum bipartite matching by augmenting paths from the actual side, in ``actual_order``.

    Augmenting never unmatches a matched call, so the matched actual calls are the greedy basis
    of the transversal matroid: a maximum matching that pairs the calls early in ``actual_order``
    whenever any maximum matching can. ``seed`` pairs are kept if still possible.
    """
    match_of_expected: dict[int, int] = {}
    match_of_actual: dict[int, int] = {}
    for e, a in seed:
        match_of_expected[e], match_of_actual[a] = a, e
    for a in actual_order:
        if a not in match_of_actual:
            _augment(compatible, a, set(), match_of_expected, match_of_actual)
    return sorted((e, a) for a, e in match_of_actual.items())


def _augment(
    compatible: list[list[bool]],
    a: int,
    seen: set[int],
    match_of_expected: dict[int, int],
    match_of_actual: dict[int, int],
) -> bool:
    """Pair actual call ``a`` along an augmenting path, if there is one. (A module function, not
    a closure: a recursive closure holds itself through its cell, a cycle left for the garbage
    collector on every call.)"""
    for e in range(len(compatible)):
        if compatible[e][a] and e not in seen:
            seen.add(e)
            if e not in match_of_expected or _augment(
                compatible, match_of_expected[e], seen, match_of_expected, match_of_actual
            ):
                match_of_expected[e], match_of_actual[a] = a, e
                return True
    return False


def _preferred(
    compatible: list[list[bool]], actual: Sequence[int], candidates: set[int], seed: Sequence[Pair] = ()
) -> list[Pair]:
    """A maximum matching over the ``actual`` indices pairing as few retry candidates as possible
    (equivalently as many other calls); ``seed`` pairs kept when that costs nothing."""
    order = [a for a in actual if a not in candidates] + [a for a in actual if a in candidates]
    best = _matching(compatible, order)
    if seed:
        seeded = _matching(compatible, order, seed)
        if _value(seeded, candidates) == _value(best, candidates):
            return seeded
    return best


def _value(pairs: Sequence[Pair], candidates: set[int]) -> tuple[int, int]:
    """(pairs, pairs of non-candidates): larger is better, compared in that order."""
    return len(pairs), sum(1 for _, a in pairs if a not in candidates)


def _blocks(calls: Sequence[ActualToolCall]) -> list[list[int]]:
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


def _ordered_matching(compatible: list[list[bool]], blocks: list[list[int]], candidates: set[int]) -> list[Pair]:
    """Longest order-preserving matching where each block is matched as an unordered set; among
    the longest, the one pairing the most non-candidates.

    dp[i][j] = best (pairs, non-candidate pairs) for the first i expected calls in the first j
    blocks, keeping order between blocks. A block takes a contiguous run of expected calls (some
    may stay unmatched), matched inside the block as in :func:`_preferred`. Sizes are small, so
    the cubic DP is fine.
    """
    n, m = len(compatible), len(blocks)
    dp = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    choice: dict[tuple[int, int], tuple[int, list[Pair]]] = {}
    for j in range(1, m + 1):
        block = blocks[j - 1]
        for i in range(0, n + 1):
            best, pick = dp[i][j - 1], None
            for k in range(i - 1, -1, -1):  # expected k..i-1 go to block j-1
                local = _preferred(compatible[k:i], block, candidates)
                gain = _value(local, candidates)
                value = (dp[k][j - 1][0] + gain[0], dp[k][j - 1][1] + gain[1])
                if local and value > best:
                    best, pick = value, (k, [(k + e, a) for e, a in local])
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
        else:
            j -= 1
    return sorted(pairs)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 1.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


# --- the alignment --------------------------------------------------------------------------------


@dataclass
class Alignment:
    """Expected vs actual tool calls, aligned once. Every measure is a property of this object."""

    expected: list[ExpectedToolCall]
    actual: list[ActualToolCall]
    """Every actual call compared, failed attempts included."""
    pairs: list[Pair]
    """Maximum any-order matching (pairing as few retry candidates as possible)."""
    ordered_pairs: list[Pair]
    """Longest order-preserving matching (parallel groups unordered)."""
    retried: dict[int, int] = field(default_factory=dict)
    """Retry candidates: failed call index → the later-step call of the same tool."""
    check_args: bool = True
    policy: ArgumentPolicy = field(default_factory=ArgumentPolicy)
    passed_over: ActualToolCall | None = None
    """First-call-only with no call expected: the agent's first call, when it does not count
    (it has no arguments, or arguments are not checked), as Big Sky's evaluators decide."""

    # --- counts -----------------------------------------------------------------------
    @property
    def matched(self) -> int:
        """Expected calls the agent made, in any order (the any-order matching's size)."""
        return len(self.pairs)

    @property
    def matched_in_order(self) -> int:
        """Expected calls the agent made in the expected order (the order-preserving matching's size)."""
        return len(self.ordered_pairs)

    def _neutral(self, pairs: Sequence[Pair]) -> tuple[int, ...]:
        if not self.retried:
            return ()
        used = {a for _, a in pairs}
        return tuple(sorted(a for a in self.retried if a not in used))

    # Plain properties, not cached ones: without retries (nearly always) the answer is an empty
    # tuple at once, cheaper than functools.cached_property's lookup.
    @property
    def _neutral_any_order(self) -> tuple[int, ...]:
        return self._neutral(self.pairs)

    @property
    def _neutral_in_order(self) -> tuple[int, ...]:
        return self._neutral(self.ordered_pairs)

    @property
    def neutral(self) -> list[int]:
        """Retried failed attempts that pair with no expected call: neither expected nor extra."""
        return list(self._neutral_any_order)

    @property
    def counted(self) -> int:
        """Actual calls that count (every call but the neutral retried attempts)."""
        return len(self.actual) - len(self._neutral_any_order)

    @property
    def counted_in_order(self) -> int:
        """Actual calls that count for the in-order measures (the neutral retried attempts of the
        order-preserving matching left out)."""
        return len(self.actual) - len(self._neutral_in_order)

    # --- match types ----------------------------------------------------------------------
    @property
    def any_order_match(self) -> bool:
        """Every expected call is present (each actual call used once); extras allowed.
        An explicit empty expectation means "no tool": any counted call fails it."""
        if not self.expected:
            return self.counted == 0
        return self.matched == len(self.expected)

    @property
    def in_order_match(self) -> bool:
        """Every expected call is present in the expected order; extras allowed in between."""
        if not self.expected:
            return self.counted == 0
        return self.matched_in_order == len(self.expected)

    @property
    def exact_match(self) -> bool:
        """The expected calls in order, nothing missing, nothing extra (a parallel group's order
        is free; neutral retried attempts are not extra)."""
        return self.matched_in_order == len(self.expected) and self.counted_in_order == len(self.expected)

    def satisfies(self, match_type: MatchType | str) -> bool:
        """Whether the calls meet ``match_type``'s rule (exact, in order, any order): one question for
        the criteria whichever rule they are configured with."""
        if not isinstance(match_type, MatchType):
            match_type = MatchType(match_type)
        if match_type is MatchType.EXACT:
            return self.exact_match
        if match_type is MatchType.IN_ORDER:
            return self.in_order_match
        return self.any_order_match

    # --- set relations ----------------------------------------------------------------------
    @property
    def superset(self) -> bool:
        """The actual calls contain every expected call."""
        return self.matched == len(self.expected)

    @property
    def subset(self) -> bool:
        """Every counted actual call was expected (no extra calls); some expected may be missing."""
        return self.matched == self.counted

    # --- partial credit ---------------------------------------------------------------------------
    @property
    def precision(self) -> float:
        """matched / counted actual calls; 1.0 when the agent made no call."""
        return _ratio(self.matched, self.counted)

    @property
    def recall(self) -> float:
        """matched / expected calls; 1.0 when no call was expected."""
        return _ratio(self.matched, len(self.expected))

    @property
    def f1(self) -> float:
        """Harmonic mean of :attr:`precision` and :attr:`recall`: one number that drops with extra and
        with missing calls alike."""
        return _f1(self.precision, self.recall)

    @property
    def in_order_precision(self) -> float:
        """Of the counted calls, the share that matched an expected call in the expected order."""
        return _ratio(self.matched_in_order, self.counted_in_order)

    @property
    def in_order_recall(self) -> float:
        """Of the expected calls, the share made in the expected order."""
        return _ratio(self.matched_in_order, len(self.expected))

    @property
    def in_order_f1(self) -> float:
        """The graded in-order score: order, missing and extra calls all lower it."""
        return _f1(self.in_order_precision, self.in_order_recall)

    def single_tool_use(self, tool_name: str) -> bool:
        """Was this tool called at all (any arguments, any position, failed or not)?"""
        return any(call.name == tool_name for call in self.actual)

    # --- per-call diff --------------------------------------------------------------------------
    def diff(self) -> dict[str, Any]:
        """What matched, what is missing or extra, what came out of order, which arguments differ,
        which failed attempts were retried. Each actual call is in exactly one of matched, extra,
        retries (an unmatched call of a known tool also appears in argument_mismatches)."""
        expected, actual, pairs = self.expected, self.actual, self.pairs
        ordered = set(self.ordered_pairs)
        matched = [
            {"expected_index": e, "actual_index": a, "name": expected[e].name, "in_order": (e, a) in ordered}
            for e, a in pairs
        ]
        out_of_order = [m for m in matched if not m["in_order"]]
        if len(self.ordered_pairs) < len(pairs) and not out_of_order:
            # A different maximum matching could have kept order; report the shortfall anyway.
            out_of_order = [{"note": f"{len(pairs) - len(self.ordered_pairs)} call(s) not in expected order"}]
        neutral = self._neutral_any_order
        if len(pairs) == len(expected) == len(actual):
            # Everything paired (the usual case): nothing missing, extra or set aside as a retry.
            missing_e: list[int] = []
            extra_a: list[int] = []
        else:
            used_e = {e for e, _ in pairs}
            used_a = {a for _, a in pairs}
            missing_e = [e for e in range(len(expected)) if e not in used_e]
            extra_a = [a for a in range(len(actual)) if a not in used_a and a not in neutral]
        argument_mismatches = []
        if missing_e and extra_a:
            # Unmatched calls of the same tool name: explain them as argument differences.
            by_name = [[expected[e].name == actual[a].name for a in extra_a] for e in missing_e]
            argument_mismatches = [
                {
                    "name": expected[missing_e[i]].name,
                    "expected_index": missing_e[i],
                    "actual_index": extra_a[j],
                    "arguments": self.policy.diff(
                        expected[missing_e[i]].name, expected[missing_e[i]].args, actual[extra_a[j]].args
                    ),
                }
                for i, j in _matching(by_name, range(len(extra_a)))
            ]
        return {
            "matched": matched,
            "missing": [{"expected_index": e, "name": expected[e].name, "args": expected[e].args} for e in missing_e],
            "extra": [{"actual_index": a, "name": actual[a].name, "args": actual[a].args} for a in extra_a],
            "out_of_order": out_of_order,
            "argument_mismatches": argument_mismatches,
            "retries": [_retry_entry(actual, a, self.retried[a]) for a in neutral],
        }

    def summary(self) -> dict[str, Any]:
        """Numbers and lists for a CriterionResult's details (JSON-serialisable)."""
        # Stored for every trajectory criterion of every session: the measures are computed here
        # once, from the counts, rather than through the properties that recompute each other.
        n_expected = len(self.expected)
        matched, matched_in_order = len(self.pairs), len(self.ordered_pairs)
        counted, counted_in_order = self.counted, self.counted_in_order
        precision, recall = _ratio(matched, counted), _ratio(matched, n_expected)
        in_order_f1 = _f1(_ratio(matched_in_order, counted_in_order), _ratio(matched_in_order, n_expected))
        actual_names, actual_calls = [], []
        for c in self.actual:
            actual_names.append(c.name)
            call: dict[str, Any] = {"name": c.name, "args": c.args, "error": c.error}
            if c.step is not None:
                call["step"] = c.step
            if c.group is not None:
                call["group"] = c.group
            actual_calls.append(call)
        return {
            "expected": [c.name for c in self.expected],
            "actual": actual_names,
            "expected_calls": [{"name": c.name, "args": c.args} for c in self.expected],
            "actual_calls": actual_calls,
            "matched_count": matched,
            "matched_in_order": matched_in_order,
            "exact": matched_in_order == n_expected and counted_in_order == n_expected,
            "in_order": counted == 0 if not self.expected else matched_in_order == n_expected,
            "any_order": counted == 0 if not self.expected else matched == n_expected,
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(_f1(precision, recall), 4),
            "in_order_f1": round(in_order_f1, 4),
            "check_args": self.check_args,
            **self.diff(),
            **(
                {"passed_over": {"name": self.passed_over.name, "args": self.passed_over.args}}
                if self.passed_over is not None
                else {}
            ),
        }


Compare = Callable[[ExpectedToolCall, ActualToolCall], bool]


def align(
    expected: Sequence[ExpectedToolCall],
    actual: Sequence[ActualToolCall],
    check_args: bool = True,
    arg_options: dict[str, Any] | ArgumentPolicy | None = None,
    collapse_retries: bool = True,
    first_call_only: bool = False,
    parallel_groups: bool = True,
    compare: Compare | None = None,
) -> Alignment:
    """Align expected and actual calls once.

    ``arg_options``: criterion options or an ArgumentPolicy (see :class:`ArgumentPolicy`).
    ``collapse_retries``: an unpaired retried failed attempt is neutral (not an extra call).
    ``first_call_only``: compare only the first expected call with the agent's first call, retried
    failures skipped (Big Sky's ``matchToolCall``). ``parallel_groups``: a model response's calls are one unordered block.
    ``compare``: argument equality replacing the policy's (the ADK criterion uses Python ``==``).
    """
    policy = arg_options if isinstance(arg_options, ArgumentPolicy) else ArgumentPolicy.from_options(arg_options)
    expected = list(expected)
    actual = list(actual)
    retried = retried_by(actual) if collapse_retries or first_call_only else {}
    passed_over = None
    if first_call_only:  # Big Sky's matchToolCall compares tool_calls[0] of each side
        expected = expected[:1]
        actual = [c for i, c in enumerate(actual) if i not in retried][:1]
        retried = {}
        if not expected and actual and (not check_args or not actual[0].args):
            # With no call expected, Big Sky's matchToolCall compares the first call's arguments
            # with {} (and matchMessageOrToolCall nothing at all): that call is not an extra one.
            passed_over, actual = actual[0], []
    if not collapse_retries:
        retried = {}

    def same_args(e: ExpectedToolCall, a: ActualToolCall) -> bool:
        if not check_args or e.check_args is False:
            return True
        return compare(e, a) if compare is not None else policy.equal(e.name, e.args, a.args)

    candidates = set(retried)
    blocks = _blocks(actual) if parallel_groups else [[i] for i in range(len(actual))]
    if (
        len(expected) == len(actual)
        and not candidates
        and len(blocks) == len(actual)
        and all(e.name == a.name and same_args(e, a) for e, a in zip(expected, actual))
    ):
        # Every call where the golden puts it (the usual case): an order-preserving matching as
        # large as both lists is the identity, and it is what the DP and the seeded maximum
        # matching below would return. Only the diagonal needs comparing (argument comparison
        # is the costly part of aligning).
        return Alignment(
            expected,
            actual,
            [(i, i) for i in range(len(expected))],
            [(i, i) for i in range(len(expected))],
            retried,
            check_args,
            policy,
            passed_over,
        )
    compatible = [[e.name == a.name and same_args(e, a) for a in actual] for e in expected]
    ordered = _ordered_matching(compatible, blocks, candidates)
    pairs = _preferred(compatible, range(len(actual)), candidates, seed=ordered)
    return Alignment(expected, actual, pairs, ordered, retried, check_args, policy, passed_over)


# --- google-adk's TrajectoryEvaluator ------------------------------------------------------------


def adk_match(
    expected: Sequence[ExpectedToolCall],
    actual: Sequence[ActualToolCall],
    match_type: MatchType | str,
    ignore_args: bool = False,
) -> bool:
    """google-adk's ``TrajectoryEvaluator`` rule for one invocation, transcribed: names equal and
    arguments equal by Python ``==`` (unless ``ignore_args``, or the golden call names the tool
    only); every call counts, failed ones too, in the order recorded.

    EXACT: same length, pairwise equal. IN_ORDER: the expected calls are a subsequence (an empty
    expectation is always met). ANY_ORDER: each expected call takes the first unused equal call
    (an empty expectation is always met).
    """

    def equal(a: ActualToolCall, e: ExpectedToolCall) -> bool:
        return a.name == e.name and (ignore_args or e.check_args is False or a.args == e.args)

    match_type = MatchType(match_type)
    if match_type is MatchType.EXACT:
        return len(actual) == len(expected) and all(equal(a, e) for a, e in zip(actual, expected))
    if not expected:
        return True
    if match_type is MatchType.IN_ORDER:
        it = iter(expected)
        current = next(it)
        for a in actual:
            if equal(a, current):
                following = next(it, None)
                if following is None:
                    return True
                current = following
        return False
    unused = list(actual)
    for e in expected:
        hit = next((i for i, a in enumerate(unused) if equal(a, e)), None)
        if hit is None:
            return False
        unused.pop(hit)
    return True
