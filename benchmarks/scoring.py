"""Scoring benchmark: how fast stored sessions are mapped, scored and committed, on one core.

Run by hand, not in CI::

    .venv/bin/python -m benchmarks.scoring                      # 2,000 sessions, 10,000-case golden set
    .venv/bin/python -m benchmarks.scoring --sessions 4000 --profile 25

It builds the ingest benchmark's load (same generator, same seed: half OpenInference, half GenAI,
10,000-case golden set), stores the sessions through a real :class:`otel_eval.engine.Engine` into a
temp SQLite file (timers long, so nothing is scored while loading), then times, in this one
process and thread:

``baseline``  read each session's raw span rows and ``json.loads`` them: the floor any scorer pays.
``map``       :func:`otel_eval.pipeline.load_session` (read + decode + map every span); per span.
``score``     load, map, assemble, match, score and build the record of every session (no writes).
``commit``    the same plus committing the records through the store, as the engine's writer does
              with a backlog: ``MAX_GROUP`` (64) records a transaction, stored together with one
              statement a table (``--commit-group 1`` commits every record alone).

``--gc sidecar`` (the default) runs with the cyclic GC the collector and its score worker
processes run with (``otel_eval.engine.own_process``: a wide young generation); ``--gc agent`` with
Python's defaults, as ``EvalSpanProcessor`` scores inside an agent's process.

Numbers are printed absolute and as a ratio to the baseline of the same run (the machine may be
shared, so absolute numbers are noisy). ``--profile N`` also prints the top N functions of a
cProfile of the ``commit`` phase (cumulative time; ``--profile-phase map`` or ``score`` profiles
that phase instead). What the targets are: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import json
import pstats
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import ingest as load


def build_database(db: Path, sessions: int, golden_cases: int, seed: int) -> tuple[Path, list[str], int]:
    """Store ``sessions`` generated sessions in ``db``; returns (golden path, session ids, span count)."""
    from otel_eval.engine import Engine
    from otel_eval.spans import from_sdk_span

    cases = load.make_golden_cases(golden_cases, seed)
    golden = db.parent / "golden.evalset.json"
    golden.write_text(json.dumps(load.golden_evalset(cases)))
    specs = load.make_sessions(cases, sessions, seed + 2)
    records = [from_sdk_span(s) for s in load.SpanFactory().spans(specs, random.Random(seed + 1))]
    engine = Engine(db, golden=[golden], trace_quiet=3600, session_idle=3600).start()
    try:
        for start in range(0, len(records), 512):
            engine.ingest(records[start : start + 512])
    finally:
        engine.close(score_open=False)
    from otel_eval.store import Store

    store = Store(db)
    try:
        ids = [r[0] for r in store.conn.execute("SELECT session_id FROM sessions ORDER BY rowid")]
    finally:
        store.close()
    return golden, ids, len(records)


def _timed(fn: Callable[[], Any]) -> float:
    # CPU seconds of this process, not wall time: the phases run in one thread, and on a shared
    # machine wall time mostly measures the neighbours.
    started = time.process_time()
    fn()
    return time.process_time() - started


def _set_gc(choice: str) -> str:
    """Set this process's cyclic GC as ``choice`` says; returns what was set, for the report."""
    import gc

    if choice == "sidecar":
        try:
            from otel_eval.engine.own_process import widen_young_generation
        except ImportError:  # code from before the collector tuned its GC: its processes ran the defaults
            return f"sidecar (this code's processes run Python's defaults: {gc.get_threshold()})"
        widen_young_generation()
        return f"sidecar (the collector's and its workers': thresholds {gc.get_threshold()})"
    return f"agent (Python's defaults: thresholds {gc.get_threshold()})"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from otel_eval.golden import GoldenIndex, load_golden
    from otel_eval.models.evalset import EvalConfig
    from otel_eval.store import Store
    from otel_eval.store.session_rows import session_span_rows

    results: dict[str, Any] = {"gc": _set_gc(args.gc)}
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-scoring-"))
    db = workdir / "bench.db"
    built = time.perf_counter()
    golden, session_ids, span_count = build_database(db, args.sessions, args.golden_cases, args.seed)
    print(
        f"stored {len(session_ids)} sessions, {span_count} spans in {time.perf_counter() - built:.1f} s ({db})",
        file=sys.stderr,
    )
    # The loaded set is not kept, as the engine does not keep it: its ~350k objects (10,000 cases)
    # would make every full pass of the cyclic GC walk them, ~0.3 s a pass, where the engine's
    # heap after loading the index holds ~85k in all (its cases are kept as numbers).
    index = GoldenIndex([load_golden(golden)])
    config = EvalConfig.default()
    scorer = _scorer(index, config)
    store = Store(db)
    results.update(sessions=len(session_ids), spans=span_count)
    try:

        def baseline() -> None:
            for sid in session_ids:
                for raw, _, _ in session_span_rows(store.conn, sid):
                    json.loads(raw)

        def mapping() -> None:
            for sid in session_ids:
                scorer.load(store, sid)

        def scoring() -> None:
            for sid in session_ids:
                scorer.score(store, sid)

        def committing() -> None:
            group = max(1, args.commit_group)
            for start in range(0, len(session_ids), group):
                with store.transaction():
                    scorer.commit_group(store, session_ids[start : start + group])

        baseline()  # warm the page cache and the interpreter's caches for every phase alike
        # A live engine has imported and set up everything scoring uses before its first session
        # (sqlglot's import and dialect setup alone take ~0.1 s): score one session untimed.
        scorer.score(store, session_ids[0])
        phases = {"baseline": baseline, "map": mapping, "score": scoring, "commit": committing}
        for name, fn in phases.items():
            # Every phase meets the sessions as a live engine would: for the first time. Otherwise
            # a phase would find the statements the one before it parsed in sqlglot's caches.
            _forget_caches()
            if name == args.profile_phase and args.profile:
                profiler = cProfile.Profile()
                seconds = _timed(lambda: profiler.runcall(fn))
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats(args.profile_sort).print_stats(args.profile)
                results["profile"] = out.getvalue()
                seconds = _timed(fn)  # the profiler's overhead is not the number we report
            else:
                seconds = _timed(fn)
            for _ in range(args.repeat - 1):
                # On a shared machine the neighbours only ever add time: the fastest run is the
                # one closest to what the code costs.
                _forget_caches()
                seconds = min(seconds, _timed(fn))
            results[name] = seconds
    finally:
        store.close()
        if not args.keep:  # a 1,000-session database is ~40 MB; a day of runs filled /tmp
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def _forget_caches() -> None:
    """Empty every cache of answers: ``functools.lru_cache``s, the golden index's remembered fuzzy
    searches and parsed cases, and the SQL finder's recent parses. (Without the fuzzy memo and the
    parsed cases cleared, the commit phase and repeated runs would find every session's golden
    match already searched and its case already parsed.)"""
    import functools
    import gc

    try:
        from otel_eval.golden.fuzzy_search import QueryTable
    except ImportError:
        QueryTable = None  # type: ignore[assignment,misc]
    try:
        from otel_eval.golden.matcher import _RecentCases
    except ImportError:  # code from before the parsed-case cache
        _RecentCases = None  # type: ignore[assignment,misc]
    for obj in gc.get_objects():
        if isinstance(obj, functools._lru_cache_wrapper):
            obj.cache_clear()
        elif QueryTable is not None and isinstance(obj, QueryTable):
            obj._remembered.clear()
        elif _RecentCases is not None and isinstance(obj, _RecentCases):
            _RecentCases.__init__(obj)  # empty, with a new lock: what a copy sent to another process starts as
    try:
        from otel_eval.metrics import sql
    except ImportError:
        return
    getattr(sql, "_recent_parses", {}).clear()


class _Scorer:
    """The three steps timed, through whatever the code under test offers."""

    def __init__(self, load: Callable, score: Callable, commit: Callable, commit_group: Callable | None = None):
        self.load, self.score, self.commit = load, score, commit
        self.commit_group = commit_group or (lambda store, sids: [commit(store, sid) for sid in sids])


def _scorer(index: Any, config: Any) -> _Scorer:
    try:
        from otel_eval import pipeline
    except ImportError:
        pipeline = None  # type: ignore[assignment]
    if pipeline is not None:
        settings = pipeline.ScoringContext(index=index, config=config)

        def commit(store: Any, sid: str) -> None:
            finished = pipeline.score_stored_session(store, sid, settings)
            if finished is not None:
                with store.transaction():
                    pipeline.commit_evaluation(store, finished)

        def commit_group(store: Any, sids: Sequence[str]) -> None:
            if not hasattr(pipeline, "commit_evaluations"):  # before the writer stored a round together
                for sid in sids:
                    commit(store, sid)
                return
            scored = [pipeline.score_stored_session(store, sid, settings) for sid in sids]
            pipeline.commit_evaluations(store, [finished for finished in scored if finished is not None])

        return _Scorer(
            lambda store, sid: pipeline.load_session(store, sid),
            lambda store, sid: pipeline.score_stored_session(store, sid, settings),
            commit,
            commit_group,
        )
    # Before the pipeline module existed (before 359bc23, which made prepare_evaluation into
    # pipeline.score_stored_session): the engine's own functions, looked up by name because the
    # engine this file is type-checked against no longer has it.
    engine = importlib.import_module("otel_eval.engine")
    prepare_evaluation: Callable[..., Any] = engine.prepare_evaluation
    from otel_eval.mapping import map_spans

    def load_old(store: Any, sid: str) -> Any:
        return map_spans(store.session_spans(sid))

    def score_old(store: Any, sid: str) -> Any:
        return prepare_evaluation(store, sid, index, config, None, 65536, "bench")

    def commit_old(store: Any, sid: str) -> None:
        prepared = score_old(store, sid)
        if prepared is not None:
            store.record_evaluation(sid, prepared.result, **prepared.record)

    return _Scorer(load_old, score_old, commit_old)


def _writer_group() -> int:
    try:
        from otel_eval.engine.writer import MAX_GROUP
    except ImportError:  # before the one-writer engine: every evaluation committed alone
        return 1
    return MAX_GROUP


def print_report(results: dict[str, Any]) -> None:
    n, spans = results["sessions"], results["spans"]
    base = results["baseline"]
    print(f"{n} sessions, {spans} spans ({spans / n:.1f} per session), one thread, CPU seconds; GC: {results['gc']}")
    print(f"{'phase':<10} {'seconds':>8} {'sessions/s':>11} {'us/span':>8} {'x baseline time':>16}")
    for name in ("baseline", "map", "score", "commit"):
        seconds = results[name]
        print(f"{name:<10} {seconds:8.2f} {n / seconds:11.0f} {seconds / spans * 1e6:8.1f} {seconds / base:16.1f}")
    if "profile" in results:
        print(results["profile"])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scoring", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=2000, help="sessions to store and score (default 2000)")
    parser.add_argument("--golden-cases", type=int, default=10_000, help="cases in the golden set (default 10000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print the top N functions of a cProfile of the --profile-phase phase",
    )
    parser.add_argument(
        "--profile-phase",
        choices=("map", "score", "commit"),
        default="commit",
        help="the phase --profile profiles (default commit)",
    )
    parser.add_argument(
        "--profile-sort", default="cumulative", help="pstats sort key (default cumulative; e.g. tottime)"
    )
    parser.add_argument(
        "--commit-group",
        type=int,
        default=_writer_group(),
        help="records per transaction in the commit phase (default: the writer's MAX_GROUP)",
    )
    parser.add_argument(
        "--gc",
        choices=("sidecar", "agent"),
        default="sidecar",
        help="the cyclic GC's settings: the collector's and its score workers' (default), or "
        "Python's defaults, as in an agent's process",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark's database (its path is printed)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run every phase N times and report the fastest (default 1; the commit phase "
        "then stores N revisions of each session)",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    print_report(results)
    if args.json:
        args.json.write_text(json.dumps({k: v for k, v in results.items() if k != "profile"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
