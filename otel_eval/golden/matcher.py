"""Which golden case a session is: its first user message (or an explicit case id) → EvalCase.

Strategies, first hit wins (DESIGN §6):

1. **case id** — ``case_hint`` (``otel_eval.case_id`` attribute or baggage) names ``eval_id`` or
   ``eval_set_id/eval_id``. A hint that names an eval set instead narrows steps 2–3 to that set;
   an eval_id used by several sets narrows them to those cases.
2. **exact** — equal after :func:`normalize_query`.
3. **fuzzy** — rapidfuzz ``fuzz.ratio`` (Indel similarity of the whole normalised strings)
   ≥ ``fuzzy_threshold``, AND every word has a counterpart on the other side (the *word guard*):
   identical, or for words of 4+ letters without digits, ``fuzz.ratio`` ≥ 80 (typos, plurals,
   colour/color). One substituted, added or dropped word — "weather in Paris" vs "weather in
   London", "top 10" vs "top 5", an added "please" — rejects the candidate whatever its ratio:
   in a long query one word moves the ratio by only a few points, but it is what the query asks.
4. **embedding** (off unless ``embedding_threshold`` is set) — cosine similarity of the query's
   embedding to each case query's, ×100, ≥ ``embedding_threshold``. The built-in embedding is an
   offline TF-IDF over words and character n-grams (:mod:`.embedding`); ``embed`` plugs in a real
   model (``OpenAIEmbeddings`` for an OpenAI-compatible server; when it fails the step is skipped
   and ``evidence["embedding"]["error"]`` says why). This is the step for paraphrases ("List the top 10 users ranked by revenue" for "Show
   me the top 10 users by revenue"), so there is no word guard; instead two rules keep it from
   overruling what the earlier steps saw: a case the fuzzy word guard rejected is not a candidate
   (it was near-identical but for a word that matters), and the numbers of query and case must
   be the same ("top 5" is not "top 10"; embeddings are notoriously blind to numbers).
5. otherwise **unmatched**.

Two cases whose normalised queries are equal, or whose fuzzy scores are within
``ambiguity_margin`` of the best, give **ambiguous**: no case is chosen and the candidates are in
the evidence; the same margin applies to embedding scores. Ambiguous and unmatched are states,
not errors.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..models.evalset import EvalCase, EvalSet
from .embedding import EmbeddingError, EmbeddingScorer, numbers_in
from .fuzzy_search import QueryTable
from .text import differing_words, fuzzy_word, normalize_query, query_words

#: How many candidates the evidence lists.
EVIDENCE_CANDIDATES = 5


@dataclass(frozen=True)
class Match:
    """The outcome of matching one session; ``case`` is None unless method is case_id/exact/fuzzy."""

    case: EvalCase | None
    eval_set_id: str | None
    method: str
    """"case_id" | "exact" | "fuzzy" | "embedding" | "ambiguous" | "unmatched"."""
    score: float
    """0–100: 100 for case_id and exact; the fuzzy ratio; 100 × the embedding cosine; for
    ambiguous/unmatched the best seen."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """JSON-ready: the query, its normalised form, the hint, the best candidates with scores, and
    candidates the word guard rejected with the words that differ."""

    @property
    def eval_id(self) -> str | None:
        """The matched case's id, or None when no case matched (``case`` is None)."""
        return self.case.eval_id if self.case is not None else None


#: A golden case as the index knows it: its position in the index's columns.
CaseNo = int


#: Parsed cases an index keeps (the most recently matched are the likeliest to match again).
PARSED_CASES = 512
#: Case numbers asked for once that an index remembers, to keep a case the second time it is asked for.
SEEN_CASES = 4 * PARSED_CASES


class _RecentCases:
    """Parsed cases asked for at least twice lately, :data:`PARSED_CASES` at most, the least
    recently used evicted one at a time.

    A parsed case is some fifty objects the garbage collector tracks, and a case kept in the
    cache lives long enough to reach the collector's oldest generation: every case kept adds to
    the count that starts a full collection, which walks every object in the process (in-process,
    the agent's). Against a large golden set most sessions ask for a case no recent session asked
    for, so keeping each one parsed (parsing it costs a few µs) made the cache churn: in
    ``benchmarks.inprocess`` a full pass of ~40 ms in the scorer thread every ~1,000 sessions.
    So a case is kept only when it is asked for a second time while its number is remembered
    (a dict of ints, which the collector does not track): a fleet's few frequent cases stay
    parsed, the long tail is parsed each time and never kept. Evicting one case per new one
    (rather than emptying the cache when full) keeps the number of live objects flat.
    Thread-safe: score worker threads share an index."""

    def __init__(self) -> None:
        self._cases: OrderedDict[CaseNo, EvalCase] = OrderedDict()
        self._seen: dict[CaseNo, None] = {}
        self._lock = threading.Lock()

    def get(self, key: CaseNo) -> EvalCase | None:
        with self._lock:
            case = self._cases.get(key)
            if case is not None:
                self._cases.move_to_end(key)
            return case

    def add(self, key: CaseNo, case: EvalCase) -> None:
        """Offer a case just parsed: kept if it was offered before, else only remembered."""
        with self._lock:
            if key not in self._seen:
                if len(self._seen) >= SEEN_CASES:
                    self._seen.clear()  # a window, not a history: ints only, nothing for the collector
                self._seen[key] = None
                return
            del self._seen[key]
            self._cases[key] = case
            if len(self._cases) > PARSED_CASES:
                self._cases.popitem(last=False)

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a copy (sent to another process) starts empty, with its own lock

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]


class GoldenIndex:
    """All loaded golden cases, indexed for matching: dicts for exact and case-id lookups, the
    distinct normalised queries in a :class:`QueryTable` for the fuzzy step. A case is known by
    (eval_set_id, eval_id), not by object identity: sets may share an id but not a case of it,
    and a score worker process that builds its index from the same sets knows every case by the
    same key.

    Inside, a case is a number (:data:`CaseNo`): its position in tuples of strings, one tuple a
    field, and the lookups map to numbers or tuples of numbers. Tuples and dicts holding only
    strings and numbers are what the cyclic GC stops tracking, so a 10,000-case index costs its
    full passes almost nothing; as objects (a record a case, a list a lookup) it was ~30,000 more
    objects for every full pass to walk, on whichever thread allocates: in-process, the agent's."""

    def __init__(
        self,
        eval_sets: Iterable[EvalSet],
        fuzzy_threshold: float = 90.0,
        ambiguity_margin: float = 2.0,
        embedding_threshold: float | None = None,
        embed: Callable[[list[str]], list[list[float]]] | None = None,
    ):
        """``embedding_threshold`` (0–100, like ``fuzzy_threshold``) turns the embedding step on;
        ``embed`` replaces the built-in offline embedding with a model of your own."""
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.ambiguity_margin = float(ambiguity_margin)
        if embed is not None and embedding_threshold is None:
            raise ValueError(
                "embed is given but embedding_threshold is not: set the similarity (0-100) "
                "at which the embedding step accepts a case"
            )
        if embedding_threshold is not None and not 0.0 <= float(embedding_threshold) <= 100.0:
            raise ValueError(f"embedding_threshold must be between 0 and 100, got {embedding_threshold!r}")
        self.embedding_threshold = None if embedding_threshold is None else float(embedding_threshold)
        self.embed = embed
        self._embedding: Any = None
        self._parsed = _RecentCases()
        # Each set as scoring needs it (its criteria, metadata), without its cases.
        self._headers: list[EvalSet] = []
        set_ids: list[str] = []
        eval_ids: list[str] = []
        queries: list[str] = []
        normalized: list[str] = []
        case_json: list[str] = []
        header_of: list[int] = []
        by_key: dict[tuple[str, str], CaseNo] = {}
        by_query: dict[str, list[CaseNo]] = {}
        by_id: dict[str, list[CaseNo]] = {}
        by_set: dict[str, list[CaseNo]] = {}
        for eval_set in eval_sets:
            by_set.setdefault(eval_set.eval_set_id, [])
            self._headers.append(eval_set.model_copy(update={"eval_cases": []}))
            for case in eval_set.eval_cases:
                key = (eval_set.eval_set_id, case.eval_id)
                if key in by_key:
                    raise ValueError(
                        f"two cases are known as {'/'.join(key)!r}: a case is known by "
                        "(eval_set_id, eval_id), so sets that share an id must not share an "
                        "eval_id (otel_eval.golden.GoldenSets makes such ids distinct)"
                    )
                number = by_key[key] = len(set_ids)
                set_ids.append(eval_set.eval_set_id)
                eval_ids.append(case.eval_id)
                queries.append(case.query)
                normalized.append(normalize_query(case.query))
                case_json.append(case.model_dump_json())
                header_of.append(len(self._headers) - 1)
                by_id.setdefault(case.eval_id, []).append(number)
                by_set[eval_set.eval_set_id].append(number)
                if normalized[-1]:
                    by_query.setdefault(normalized[-1], []).append(number)
        self._set_id, self._eval_id, self._query = tuple(set_ids), tuple(eval_ids), tuple(queries)
        self._normalized, self._case_json, self._header_of = tuple(normalized), tuple(case_json), tuple(header_of)
        self._by_key = by_key
        self._by_query = {query: tuple(numbers) for query, numbers in by_query.items()}
        self._by_id = {eval_id: tuple(numbers) for eval_id, numbers in by_id.items()}
        self._by_set = {set_id: tuple(numbers) for set_id, numbers in by_set.items()}
        self._queries = tuple(self._by_query)
        # Built once here, not per session: the distinct queries sorted for length-bounded search.
        self._table = QueryTable(self._queries)
        self._set_tables: dict[str, tuple[QueryTable, dict[str, tuple[CaseNo, ...]]]] = {}

    # --- lookups ------------------------------------------------------------------------------

    def set_of(self, eval_set_id: str | None, eval_id: str | None) -> EvalSet | None:
        """The loaded eval set that case ``eval_id`` of ``eval_set_id`` came from (a match's
        ``eval_set_id`` and ``eval_id``), without its cases; None when there is no such case. Its ``criteria``, when
        it declares any, score the case. Two files may give their sets one id, so this is by
        case: their eval_ids tell them apart."""
        if eval_set_id is None or eval_id is None:
            return None
        number = self._by_key.get((eval_set_id, eval_id))
        return None if number is None else self._headers[self._header_of[number]]

    def case(self, eval_set_id: str, eval_id: str) -> EvalCase | None:
        """The case ``eval_id`` of eval set ``eval_set_id``: how a case is known across processes."""
        number = self._by_key.get((eval_set_id, eval_id))
        return self.case_of(number) if number is not None else None

    def case_of(self, number: CaseNo) -> EvalCase:
        """The parsed case (shared: callers must not change it)."""
        parsed = self._parsed.get(number)
        if parsed is None:
            parsed = EvalCase.model_validate_json(self._case_json[number])
            self._parsed.add(number, parsed)
        return parsed

    def _describe(self, number: CaseNo, score: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "eval_set_id": self._set_id[number],
            "eval_id": self._eval_id[number],
            "query": self._query[number],
        }
        if score is not None:
            out["score"] = round(score, 2)
        return out

    @property
    def cases(self) -> list[EvalCase]:
        """Every case a session can match, the loaded sets in order and each set's cases in order."""
        return [self.case_of(number) for number in range(len(self._set_id))]

    def __len__(self) -> int:
        return len(self._set_id)

    def get(self, eval_id: str) -> EvalCase | None:
        """The case with ``eval_id`` (or ``eval_set_id/eval_id``); None when there is none.

        Raises LookupError when a bare eval_id is used by several eval sets.
        """
        numbers = self._resolve_id(eval_id)
        if len(numbers) > 1:
            sets = ", ".join(self._set_id[n] for n in numbers)
            raise LookupError(f"eval_id {eval_id!r} is in several eval sets ({sets}); use 'eval_set_id/eval_id'")
        return self.case_of(numbers[0]) if numbers else None

    def _resolve_id(self, hint: str) -> tuple[CaseNo, ...]:
        # Whole hint as an eval_id first: ADK eval ids are often file paths with slashes.
        if hint in self._by_id:
            return self._by_id[hint]
        set_id, sep, eval_id = hint.partition("/")
        while sep:
            found = tuple(n for n in self._by_id.get(eval_id, ()) if self._set_id[n] == set_id)
            if found:
                return found
            more, sep, eval_id = eval_id.partition("/")
            set_id = f"{set_id}/{more}"
        return ()

    # --- matching -----------------------------------------------------------------------------

    def match(self, query: str | None, case_hint: str | None = None) -> Match:
        """The golden case a session's first query asks for: by explicit case hint, then exact, fuzzy and
        embedding match, each step's evidence kept; ambiguous or unmatched when no case stands out."""
        normalized = normalize_query(query)
        evidence: dict[str, Any] = {"query": query, "normalized": normalized, "case_hint": case_hint}
        scope: tuple[CaseNo, ...] | None = None
        scope_set: str | None = None

        if case_hint:
            by_id = self._resolve_id(case_hint)
            if len(by_id) == 1:
                number = by_id[0]
                evidence["reason"] = f"case hint {case_hint!r} names this case"
                return Match(self.case_of(number), self._set_id[number], "case_id", 100.0, evidence)
            if by_id:
                scope = by_id
                evidence["hint_scope"] = (
                    f"eval_id {case_hint!r} is in {len(by_id)} eval sets; matching the query among them"
                )
            elif case_hint in self._by_set:
                scope, scope_set = self._by_set[case_hint], case_hint
                evidence["hint_scope"] = f"eval set {case_hint!r}"
            else:
                evidence["hint_scope"] = f"case hint {case_hint!r} names no loaded case or eval set; ignored"

        if not normalized:
            if scope is not None and len(scope) > 1:
                evidence["candidates"] = [self._describe(n) for n in scope[:EVIDENCE_CANDIDATES]]
                evidence["reason"] = "no user input, and the case hint fits several cases"
                return Match(None, None, "ambiguous", 0.0, evidence)
            evidence["reason"] = "no user input to match on"
            return Match(None, None, "unmatched", 0.0, evidence)

        exact = groups_of(self._by_query, normalized, scope)
        if len(exact) == 1:
            evidence["reason"] = "same query after normalisation"
            return Match(self.case_of(exact[0]), self._set_id[exact[0]], "exact", 100.0, evidence)
        if exact:
            evidence["candidates"] = [self._describe(n, 100.0) for n in exact[:EVIDENCE_CANDIDATES]]
            evidence["reason"] = f"{len(exact)} cases have this query; give a case id to choose"
            return Match(None, None, "ambiguous", 100.0, evidence)
        guarded: set[str] = set()
        fuzzy = self._fuzzy(normalized, scope, evidence, guarded, scope_set)
        if fuzzy.method != "unmatched" or self.embedding_threshold is None:
            return fuzzy
        return self._by_embedding(normalized, scope, evidence, guarded) or fuzzy

    def _table_for(
        self, scope: tuple[CaseNo, ...] | None, scope_set: str | None
    ) -> tuple[QueryTable, dict[str, tuple[CaseNo, ...]]]:
        """The query table to search and its cases by normalised query: all cases, or a scope."""
        if scope is None:
            return self._table, self._by_query
        if scope_set is not None and scope_set in self._set_tables:
            return self._set_tables[scope_set]
        grouped: dict[str, list[CaseNo]] = {}
        for number in scope:
            if self._normalized[number]:
                grouped.setdefault(self._normalized[number], []).append(number)
        groups = {query: tuple(numbers) for query, numbers in grouped.items()}
        found = QueryTable(tuple(groups)), groups
        if scope_set is not None:
            self._set_tables[scope_set] = found
        return found

    def _fuzzy(
        self,
        normalized: str,
        scope: tuple[CaseNo, ...] | None,
        evidence: dict[str, Any],
        guarded: set[str] | None = None,
        scope_set: str | None = None,
    ) -> Match:
        """``guarded`` receives the normalised queries the word guard rejected; ``scope_set``
        names the eval set ``scope`` is, when it is one (its query table is kept)."""
        table, groups = self._table_for(scope, scope_set)
        hits = table.above(normalized, self.fuzzy_threshold)
        accepted: list[tuple[CaseNo, float]] = []
        rejected: list[dict[str, Any]] = []
        for choice, score, _ in hits:  # best first
            if accepted and score < accepted[0][1] - self.ambiguity_margin:
                break  # nothing further down can be the match or make it ambiguous
            extra_query, extra_case = differing_words(normalized, choice)
            if (extra_query or extra_case) and guarded is not None:
                guarded.add(choice)
            for number in groups[choice]:
                if extra_query or extra_case:
                    if len(rejected) < EVIDENCE_CANDIDATES:
                        rejected.append(
                            {
                                **self._describe(number, score),
                                "differing_words": {"query": extra_query, "case": extra_case},
                            }
                        )
                else:
                    accepted.append((number, score))
        if rejected:
            evidence["rejected"] = rejected
        if accepted:
            return self._pick(
                accepted,
                evidence,
                "fuzzy",
                "fuzzy score",
                lambda best: f"fuzzy ratio {best:.2f} >= {self.fuzzy_threshold:g} and every word has a counterpart",
            )
        # Nothing qualified: show the nearest queries so a near miss can be diagnosed.
        nearest = table.nearest(normalized, EVIDENCE_CANDIDATES, found=hits)
        evidence.setdefault(
            "candidates",
            [self._describe(number, score) for choice, score, _ in nearest for number in groups[choice]][
                :EVIDENCE_CANDIDATES
            ],
        )
        best = max((s for _, s, _ in nearest), default=0.0)
        evidence["reason"] = (
            f"no case with fuzzy ratio >= {self.fuzzy_threshold:g} whose words all match"
            if rejected
            else f"no case with fuzzy ratio >= {self.fuzzy_threshold:g}"
        )
        return Match(None, None, "unmatched", round(best, 2), evidence)

    def _foreign_words(self, normalized: str, choice: str) -> list[str]:
        """The substitution guard: words on one side without a counterpart on the other that
        OTHER golden queries use. "Forecast for Paris" scores high against "forecast for London"
        — everything but the city is shared — yet "paris" is a word the golden set uses to tell
        cases apart; likewise "What's the weather?" must not pick "weather in Paris" because
        "paris" is the least rare city. Only words of 4+ letters without digits count (numbers
        have their own rule), and not words half the golden queries use ("what's"): phrasing."""
        if not hasattr(self, "_word_df"):
            self._word_df = _word_frequency(self._queries)
        extra_query, extra_case = differing_words(normalized, choice)
        common = max(2, len(self._queries) // 2)
        own = set(query_words(choice))
        foreign = [w for w in extra_query if fuzzy_word(w) and w not in own and 0 < self._word_df.get(w, 0) < common]
        # A case word counts when another golden query has it too (its own query makes df >= 1).
        foreign += [w for w in extra_case if fuzzy_word(w) and 1 < self._word_df.get(w, 0) < common]
        return foreign

    def _by_embedding(
        self, normalized: str, scope: tuple[CaseNo, ...] | None, evidence: dict[str, Any], guarded: set[str]
    ) -> Match | None:
        """The embedding step: a Match when a case qualifies or several tie, else None (the fuzzy
        step's unmatched stands, with this step's evidence added)."""
        assert self.embedding_threshold is not None
        if self._embedding is None:
            self._embedding = EmbeddingScorer(self._queries, self.embed)
        scorer: EmbeddingScorer = self._embedding
        try:
            similarities = scorer.similarities(normalized)
        except EmbeddingError as exc:  # the backend is down: the fuzzy result stands, and says why
            logging.getLogger("otel_eval.golden").warning("embedding match skipped: %s", exc)
            evidence["embedding"] = {"model": scorer.model, "threshold": self.embedding_threshold, "error": str(exc)}
            evidence["reason"] += f"; the embedding step failed ({exc})"
            return None
        allowed = None if scope is None else {self._normalized[n] for n in scope}
        query_numbers = numbers_in(normalized)
        scored: list[tuple[float, str]] = []
        for choice, cosine in zip(self._queries, similarities):
            if allowed is None or choice in allowed:
                scored.append((100.0 * cosine, choice))
        scored.sort(key=lambda pair: -pair[0])
        accepted: list[tuple[CaseNo, float]] = []
        rejected: list[dict[str, Any]] = []
        for score, choice in scored:
            if score < self.embedding_threshold or (accepted and score < accepted[0][1] - self.ambiguity_margin):
                break
            why = None
            if choice in guarded:
                why = "rejected by the fuzzy word guard"
            elif numbers_in(choice) != query_numbers:
                why = f"numbers differ: query {query_numbers}, case {numbers_in(choice)}"
            else:
                foreign = self._foreign_words(normalized, choice)
                if foreign:
                    why = (
                        f"word(s) {', '.join(repr(w) for w in foreign)} differ between query and case and "
                        f"tell other golden cases apart"
                    )
            for number in groups_of(self._by_query, choice, scope):
                if why:
                    if len(rejected) < EVIDENCE_CANDIDATES:
                        rejected.append({**self._describe(number, score), "reason": why})
                else:
                    accepted.append((number, score))
        found: dict[str, Any] = {
            "model": scorer.model,
            "threshold": self.embedding_threshold,
            "nearest": [
                self._describe(number, score)
                for score, choice in scored[:EVIDENCE_CANDIDATES]
                for number in groups_of(self._by_query, choice, scope)
            ][:EVIDENCE_CANDIDATES],
        }
        if rejected:
            found["rejected"] = rejected
        evidence["embedding"] = found
        if not accepted:
            evidence["reason"] += f"; no case with embedding similarity >= {self.embedding_threshold:g}" + (
                " that passes the word and number checks" if rejected else ""
            )
            return None
        return self._pick(
            accepted,
            evidence,
            "embedding",
            "embedding similarity",
            lambda best: f"embedding similarity {best:.2f} >= {self.embedding_threshold:g} ({scorer.model})",
        )

    def _pick(
        self, accepted: list, evidence: dict[str, Any], method: str, measure: str, winner_reason: Callable[[float], str]
    ) -> Match:
        """The best accepted candidate, or "ambiguous" when another is within the margin: the same
        rule for every similarity strategy."""
        accepted = sorted(accepted, key=lambda pair: -pair[1])
        best_number, best = accepted[0]
        close = [(n, s) for n, s in accepted if s >= best - self.ambiguity_margin]
        evidence["candidates"] = [self._describe(n, s) for n, s in accepted[:EVIDENCE_CANDIDATES]]
        if len(close) > 1:
            evidence["reason"] = f"{len(close)} cases within {self.ambiguity_margin:g} of the best {measure} {best:.2f}"
            return Match(None, None, "ambiguous", round(best, 2), evidence)
        evidence["reason"] = winner_reason(best)
        return Match(self.case_of(best_number), self._set_id[best_number], method, round(best, 2), evidence)


def _word_frequency(queries: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for query in queries:
        for word in set(query_words(query)):
            counts[word] = counts.get(word, 0) + 1
    return counts


def groups_of(
    by_query: dict[str, tuple[CaseNo, ...]], choice: str, scope: tuple[CaseNo, ...] | None
) -> tuple[CaseNo, ...]:
    """The cases with normalised query ``choice``, within the hint's scope if there is one."""
    numbers = by_query.get(choice, ())
    if scope is None:
        return numbers
    return tuple(n for n in numbers if n in scope)
