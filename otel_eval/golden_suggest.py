"""``otel-eval golden suggest``: draft golden cases for the live traffic no case describes.

Unmatched sessions (current evaluation without a case) are grouped by their query
(:mod:`otel_eval.golden.clusters`), and every group of at least ``min_sessions`` sessions becomes
one draft case in an ADK-format EvalSet that google-adk loads:

* the query: the cluster's most representative one (its medoid);
* the tool trajectory: the most common sequence of tool calls among its sessions (first turn),
  with every argument whose value differs between those sessions written as ``"IGNORE"`` (the
  value otel-eval matches to anything), so the case still passes on the sessions it came from;
* the answer: the final response of a session that took the most common path;
* the case's ``metadata``: the cluster's size, its phrasings and example session ids.

A cluster is proposed only for the sessions the golden matcher itself would match to its draft
query, checked with a real :class:`GoldenIndex` over all the drafts (and the same matching options
``rescore`` takes): rescoring with the draft added matches the clustered sessions by construction.
Sessions the matcher would not place (a paraphrase the fuzzy step does not reach) are clustered
again among themselves, for up to :data:`ROUNDS` rounds.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .export import load_sessions
from .export.adk_eval_set import adk_eval_set
from .export.evalset import session_case
from .golden.clusters import DEFAULT_SIMILARITY, Embed, cluster_queries
from .golden.matcher import GoldenIndex
from .golden.text import normalize_query
from .metrics.alignment import expected_calls
from .models.arguments import IGNORE
from .models.evalset import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent
from .read.database import DbPath
from .read.evaluations import current_evaluations
from .read.times import iso_utc, parse_since
from .trajectory import Trajectory

ROUNDS = 4
EXAMPLES = 10
"""Example session ids kept in a case's metadata."""
PHRASINGS = 5
MAX_LOADED = 200
"""Sessions of a cluster whose trajectories are read to find its common path (the earliest)."""
SOURCE = "otel-eval golden suggest"


@dataclass(frozen=True)
class UnmatchedSession:
    """One unmatched session a draft was built from: its database, id, query and when it was scored."""

    db: str
    session_id: str
    query: str
    created_at: str


@dataclass
class Suggestion:
    """One draft golden case: the cluster's query and sessions, its phrasings with their counts, the
    case built from the common tool path, and how many of the sessions took that path."""

    eval_id: str
    query: str
    sessions: list[UnmatchedSession]
    phrasings: list[tuple[str, int]]
    case: EvalCase | None = None
    path_share: float = 0.0
    """Of the sessions read, the share that took the draft's tool path."""
    unpinned: list[str] = field(default_factory=list)
    """``tool[i].arg`` of the arguments written as IGNORE."""


def unmatched_sessions(db_paths: Sequence[DbPath], since: str | None = None) -> list[UnmatchedSession]:
    """Sessions whose current evaluation matched no case, with a query, oldest first."""
    out = []
    for row in current_evaluations(db_paths):
        if row.case_id or not row.query or not row.query.strip():
            continue
        if since and (row.created_at or "") < since:
            continue
        out.append(UnmatchedSession(row.db, row.session_id, row.query, row.created_at or ""))
    return out


def cluster_sessions(
    sessions: Sequence[UnmatchedSession],
    min_sessions: int,
    *,
    similarity: float = DEFAULT_SIMILARITY,
    embed: Embed | None = None,
    fuzzy_threshold: float = 90.0,
    embedding_threshold: float | None = None,
    match_embed: Embed | None = None,
) -> list[Suggestion]:
    """Clusters of at least ``min_sessions`` sessions, each verified with the golden matcher
    (see the module's notes), most sessions first. Pure but for the optional model calls."""
    pool = list(sessions)
    accepted: list[tuple[str, list[UnmatchedSession]]] = []
    for _ in range(ROUNDS):
        by_query: dict[str, list[UnmatchedSession]] = {}
        for s in pool:
            by_query.setdefault(normalize_query(s.query), []).append(s)
        keys = list(by_query)
        clusters = cluster_queries(keys, [len(by_query[k]) for k in keys], similarity, embed)
        candidates = [_display(c.representative, by_query) for c in clusters if c.sessions >= min_sessions]
        if not candidates:
            break
        drafts = [q for q, _ in accepted] + candidates
        placed = _place(pool, drafts, fuzzy_threshold, embedding_threshold, match_embed)
        new = [(q, placed.get(q, [])) for q in candidates if len(placed.get(q, [])) >= min_sessions]
        if not new:
            break
        accepted += new
        taken = {id(s) for _, members in new for s in members}
        pool = [s for s in pool if id(s) not in taken]
    # One last look with every draft in one index: a session two drafts could claim is ambiguous
    # to the matcher, and a draft left with too few sessions is not proposed.
    everyone = [s for _, members in accepted for s in members]
    placed = _place(everyone, [q for q, _ in accepted], fuzzy_threshold, embedding_threshold, match_embed)
    out = []
    for query, _ in accepted:
        members = placed.get(query, [])
        if len(members) >= min_sessions:
            phrasings = Counter(s.query for s in members).most_common(PHRASINGS)
            out.append(Suggestion(eval_id="", query=query, sessions=members, phrasings=phrasings))
    out.sort(key=lambda s: (-len(s.sessions), s.query))
    ids: set[str] = set()
    for suggestion in out:
        suggestion.eval_id = _unique(_slug(suggestion.query), ids)
    return out


def _display(normalized: str, by_query: dict[str, list[UnmatchedSession]]) -> str:
    """The way most sessions wrote a normalised query (case and punctuation as users type them)."""
    return Counter(s.query.strip() for s in by_query[normalized]).most_common(1)[0][0]


def _place(
    sessions: Sequence[UnmatchedSession],
    drafts: Sequence[str],
    fuzzy_threshold: float,
    embedding_threshold: float | None,
    match_embed: Embed | None,
) -> dict[str, list[UnmatchedSession]]:
    """Draft query → the sessions the golden matcher matches to it (ambiguous ones to none)."""
    cases = [
        EvalCase(eval_id=str(n), conversation=[Invocation(invocation_id="1", user_content=MessageContent.user(q))])
        for n, q in enumerate(drafts)
    ]
    index = GoldenIndex(
        [EvalSet(eval_set_id="drafts", eval_cases=cases)],
        fuzzy_threshold=fuzzy_threshold,
        embedding_threshold=embedding_threshold,
        embed=match_embed,
    )
    placed: dict[str, list[UnmatchedSession]] = {}
    for s in sessions:
        match = index.match(s.query)
        if match.case is not None:
            placed.setdefault(drafts[int(match.case.eval_id)], []).append(s)
    return placed


def _slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", normalize_query(text))
    return "_".join(words)[:48].strip("_") or "case"


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _path(trajectory: Trajectory) -> tuple[str, ...]:
    return tuple(c.name for c in expected_calls(trajectory.turns[0])) if trajectory.turns else ()


def draft_case(suggestion: Suggestion, trajectories: Sequence[Trajectory]) -> EvalCase:
    """The cluster as a golden case (see the module's notes); ``trajectories`` of its sessions."""
    usable = [t for t in trajectories if t.turns]
    if not usable:
        raise ValueError(f"no stored spans for the sessions of cluster {suggestion.query!r}")
    paths = Counter(_path(t) for t in usable)
    common, count = paths.most_common(1)[0]
    on_path = [t for t in usable if _path(t) == common]
    wanted = normalize_query(suggestion.query)
    representative = next((t for t in on_path if normalize_query(t.query) == wanted), on_path[0])
    case = session_case(representative, suggestion.eval_id)
    first = case.conversation[0]
    calls = [expected_calls(t.turns[0]) for t in on_path]
    unpinned: list[str] = []
    expected = []
    for i, call in enumerate(calls[0]):
        args = dict(call.args)
        for key in sorted(args):
            values = [json.dumps(c[i].args.get(key, _MISSING), sort_keys=True, default=str) for c in calls]
            if len(set(values)) > 1:
                args[key] = IGNORE
                unpinned.append(f"{call.name}[{i}].{key}")
        expected.append(ExpectedToolCall(name=call.name, args=args))
    first.user_content = MessageContent.user(suggestion.query)
    first.expected_tool_trajectory = expected
    suggestion.path_share = round(count / len(usable), 4)
    suggestion.unpinned = unpinned
    case.name = suggestion.query
    case.tags = ["suggested"]
    case.metadata = {
        "source": SOURCE,
        "sessions": len(suggestion.sessions),
        "example_session_ids": [s.session_id for s in suggestion.sessions[:EXAMPLES]],
        "phrasings": [{"query": q, "sessions": n} for q, n in suggestion.phrasings],
        "tool_path": list(common),
        "tool_path_share": suggestion.path_share,
        "unpinned_arguments": unpinned,
        "representative_session_id": representative.session_id,
        "agent_version": representative.agent_version,
    }
    return case


_MISSING = "\x00missing"


def suggest(
    db_paths: Sequence[DbPath], min_sessions: int, since: str | None = None, **matching: Any
) -> list[Suggestion]:
    """Clusters with their draft cases (trajectories read from the databases)."""
    suggestions = cluster_sessions(unmatched_sessions(db_paths, since), min_sessions, **matching)
    for suggestion in suggestions:
        by_db: dict[str, list[str]] = {}
        for s in sorted(suggestion.sessions, key=lambda s: s.created_at)[:MAX_LOADED]:
            by_db.setdefault(s.db, []).append(s.session_id)
        trajectories = [loaded.trajectory for db, ids in by_db.items() for loaded in load_sessions(db, ids)]
        suggestion.case = draft_case(suggestion, trajectories)
    return suggestions


def draft_eval_set(suggestions: Sequence[Suggestion], eval_set_id: str = "suggested") -> dict[str, Any]:
    """The drafts as a google-adk EvalSet (JSON-ready), each case's ``metadata`` kept (ADK's
    EvalCase allows extra keys; otel-eval reads it back)."""
    cases = [s.case for s in suggestions if s.case is not None]
    data = adk_eval_set(
        EvalSet(
            eval_set_id=eval_set_id,
            name="Suggested cases",
            description=f"{len(cases)} draft case(s) from unmatched live sessions, by {SOURCE}; "
            "review each before adding it to a golden set",
            eval_cases=cases,
        )
    )
    for raw, case in zip(data["eval_cases"], cases):
        raw["metadata"] = case.metadata
    return data


# --- CLI ---------------------------------------------------------------------------------------


def add_suggest_arguments(parser: argparse.ArgumentParser) -> None:
    """``otel-eval golden suggest``'s options: where to read, how big and how alike a cluster must be,
    the output file and the matching options ``rescore`` takes."""
    from .embedding_options import add_embedding_arguments

    parser.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="PATH",
        help="database file; repeat to combine several collectors (default otel-eval.db)",
    )
    parser.add_argument("--since", metavar="ISO-TIME", help="only sessions scored since then (e.g. 2025-01-31)")
    parser.add_argument(
        "--min-sessions", type=int, default=5, metavar="N", help="smallest cluster proposed as a case (default 5)"
    )
    parser.add_argument(
        "--similarity",
        type=float,
        default=DEFAULT_SIMILARITY,
        metavar="COSINE",
        help=f"cosine (0-1) at which queries cluster together (default {DEFAULT_SIMILARITY})",
    )
    parser.add_argument(
        "--fuzzy-threshold",
        type=float,
        default=90.0,
        metavar="SCORE",
        help="the matcher's fuzzy threshold the drafts are checked with, as rescore takes it (default 90)",
    )
    parser.add_argument("--eval-set-id", default="suggested", help="the draft set's eval_set_id (default suggested)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the draft .evalset.json")
    add_embedding_arguments(parser)


def suggest_main(args: argparse.Namespace) -> int:
    """``otel-eval golden suggest``: write the draft cases as an ADK EvalSet to ``--output`` and list
    them; nothing to suggest is not an error (exit 0)."""
    from .embedding_options import embedding_backend

    if args.min_sessions < 1:
        raise InputError("--min-sessions", f"must be at least 1, got {args.min_sessions}")
    if not 0.0 < args.similarity <= 1.0:
        raise InputError("--similarity", f"must be above 0 and at most 1, got {args.similarity}")
    since_ns = parse_since(args.since)
    model = embedding_backend(args)
    suggestions = suggest(
        args.db or ["otel-eval.db"],
        args.min_sessions,
        None if since_ns is None else iso_utc(since_ns / 1e9),
        similarity=args.similarity,
        embed=model,
        fuzzy_threshold=args.fuzzy_threshold,
        embedding_threshold=args.embedding_threshold,
        match_embed=model,
    )
    if not suggestions:
        print(f"nothing to suggest: no cluster of at least {args.min_sessions} unmatched sessions", file=sys.stderr)
        return 0
    Path(args.output).write_text(
        json.dumps(draft_eval_set(suggestions, args.eval_set_id), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    for s in suggestions:
        unpinned = f"; any value for {', '.join(s.unpinned)}" if s.unpinned else ""
        print(
            f"{s.eval_id}: {len(s.sessions)} sessions, {len(s.phrasings)} phrasing(s), tool path "
            f"{' → '.join(s.case.metadata['tool_path']) or '(none)'} in {s.path_share:.0%}{unpinned}"
            if s.case
            else s.eval_id
        )
    print(f"{len(suggestions)} draft case(s) written to {args.output}", file=sys.stderr)
    return 0
