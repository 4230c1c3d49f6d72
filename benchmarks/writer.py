"""Writer benchmark: what the engine's one writer thread pays per evaluation and per span, in-process.

Run by hand, not in CI::

    .venv/bin/python -m benchmarks.writer                       # both parts, 1,000 sessions, 40 requests
    .venv/bin/python -m benchmarks.writer --part evaluations --profile 30

No gRPC, no score workers, no second process: every number is CPU time of this one thread, so it
is precise enough to compare a change of a few µs even on a shared machine (keep the best of
``--repeat`` runs: the neighbours only ever add time).

``evaluations``  The scoring benchmark's sessions are stored and scored once (untimed); each
                 finished evaluation is pickled as a score worker process sends it. Timed, on a
                 fresh copy of the database each run: ``unpickle`` (what the collector's process
                 pays to receive it) and ``commit`` (``pipeline.commit_evaluation``, each in its
                 own savepoint, 64 per transaction, as the writer commits a backlog).
                 As in the engine, a :class:`~otel_eval.engine.writer.Checkpointer` thread folds
                 the WAL back while the writer writes (its CPU is not counted: it is not the
                 writer's), so the WAL is reused rather than grown to hundreds of MiB.
``ingest``       The ingest benchmark's raw requests (~512 spans of whole sessions each, fresh ids)
                 are encoded once (untimed). Timed, into a fresh database each run: ``decode``
                 (``ExportTraceServiceRequest.FromString`` + ``spans.from_otlp``, as the receiver
                 does) and ``write`` (one writer round per request: sessions resolved, spans,
                 traces and sessions stored, committed).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pickle
import pstats
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from . import ingest as load
from . import scoring

#: Evaluations committed per transaction, as the writer does with a backlog (``writer.MAX_GROUP``).
GROUP = 64
#: Finished evaluations per pickle, as a score worker process answers (``workers.PROCESS_BATCH``).
WORKER_BATCH = 32


def _cpu(fn: Callable[[], Any]) -> float:
    started = time.thread_time()
    fn()
    return time.thread_time() - started


def _profiled(fn: Callable[[], Any], top: int, sort: str) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(fn)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(top)
    return out.getvalue()


@contextmanager
def _checkpointing(store: Any) -> Iterator[None]:
    """The engine's checkpointer thread, running while the timed writes do."""
    from otel_eval.engine.writer import Checkpointer

    checkpointer = Checkpointer(store.path).start()
    try:
        yield
    finally:
        checkpointer.stop()


def _settle(db: Path) -> None:
    """Fold the WAL into the file, so a copy of the one file is the whole database."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def evaluations(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from otel_eval import pipeline
    from otel_eval.golden import GoldenIndex, load_golden
    from otel_eval.models.evalset import EvalConfig
    from otel_eval.store import Store

    pristine = workdir / "scored.db"
    golden, session_ids, _ = scoring.build_database(pristine, args.sessions, args.golden_cases, args.seed)
    context = pipeline.ScoringContext(index=GoldenIndex([load_golden(golden)]), config=EvalConfig.default())
    store = Store(pristine)
    try:
        finished = [pipeline.score_session(store, sid, context) for sid in session_ids]
    finally:
        store.close()
    finished = [f for f in finished if f is not None]
    payloads = [pickle.dumps(finished[at:at + WORKER_BATCH], protocol=pickle.HIGHEST_PROTOCOL)
                for at in range(0, len(finished), WORKER_BATCH)]
    _settle(pristine)

    def unpickle() -> list[Any]:
        return [item for payload in payloads for item in pickle.loads(payload)]

    received = unpickle()

    def fresh_store() -> Any:
        run_db = workdir / "run.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{run_db}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(pristine, run_db)
        opened = Store(run_db)
        opened.conn.execute("PRAGMA wal_autocheckpoint=0")  # as the engine: its checkpointer does it
        return opened

    def commit_all(target: Any) -> None:
        for at in range(0, len(received), GROUP):
            with target.transaction():
                for item in received[at:at + GROUP]:
                    with target.transaction():
                        pipeline.commit_evaluation(target, item)

    results: dict[str, Any] = {"evaluations": len(received),
                               "pickle_bytes": sum(map(len, payloads)) / len(received)}
    best = {"unpickle": float("inf"), "commit": float("inf")}
    for _ in range(args.repeat):
        best["unpickle"] = min(best["unpickle"], _cpu(unpickle))
        target = fresh_store()
        try:
            with _checkpointing(target):
                best["commit"] = min(best["commit"], _cpu(lambda: commit_all(target)))
        finally:
            target.close()
    if args.profile:
        target = fresh_store()
        try:
            results["profile"] = _profiled(lambda: (unpickle(), commit_all(target)), args.profile, args.profile_sort)
        finally:
            target.close()
    results.update({name: seconds / len(received) * 1e6 for name, seconds in best.items()})
    return results


def ingest(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_eval.engine.stats import EngineStats
    from otel_eval.engine.scheduler import SessionScheduler
    from otel_eval.engine.writer import IngestBatch, Writer
    from otel_eval.sessions import Timing
    from otel_eval.spans import from_otlp
    from otel_eval.store import Store

    cases = load.make_golden_cases(args.golden_cases, args.seed)
    by_size: dict[int, list[Any]] = {}
    for session in load.make_sessions(cases, 600, args.seed + 2):
        by_size.setdefault(len(session.spans), []).append(session)
    rng = random.Random(args.seed + 1)
    now = time.time_ns()
    templates = []
    for number in range(min(args.requests, 8)):
        chosen = load.pick_sessions(by_size, 512, rng)
        renumbered = [load.SessionSpec(number * 100 + i, s.convention, s.variant, s.spans, s.traces)
                      for i, s in enumerate(chosen)]
        templates.append(load.encode_template(renumbered, now))
    requests = [templates[n % len(templates)].render(n + 1) for n in range(args.requests)]
    span_count = sum(templates[n % len(templates)].spans for n in range(args.requests))

    def decode() -> list[list[Any]]:
        return [from_otlp(ExportTraceServiceRequest.FromString(body).resource_spans).spans for body in requests]

    decoded = decode()

    def fresh_writer() -> Any:
        run_db = workdir / "ingest.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{run_db}{suffix}").unlink(missing_ok=True)
        store = Store(run_db)
        store.conn.execute("PRAGMA wal_autocheckpoint=0")
        # Timers far out: nothing ends (and nothing is scored) while the batches are written.
        scheduler = SessionScheduler(Timing(trace_quiet=3600, session_idle=3600))
        return Writer(store, scheduler, EngineStats(), ended=lambda ids: None, stored=lambda *a: None,
                      given_up=lambda f: None, released=lambda n: None)

    def write_all(writer: Any) -> None:
        for spans in decoded:
            batch = IngestBatch(spans=spans)
            writer._round([batch])
            if batch.error is not None:
                raise batch.error

    best = {"decode": float("inf"), "write": float("inf")}
    for _ in range(args.repeat):
        best["decode"] = min(best["decode"], _cpu(decode))
        writer = fresh_writer()
        try:
            with _checkpointing(writer.store):
                best["write"] = min(best["write"], _cpu(lambda: write_all(writer)))
        finally:
            writer.store.close()
    results: dict[str, Any] = {"requests": len(requests), "spans": span_count,
                               "bytes_per_span": sum(map(len, requests)) / span_count}
    if args.profile:
        writer = fresh_writer()
        try:
            results["profile"] = _profiled(lambda: (decode(), write_all(writer)), args.profile, args.profile_sort)
        finally:
            writer.store.close()
    results.update({name: seconds / span_count * 1e6 for name, seconds in best.items()})
    return results


def print_report(part: str, results: dict[str, Any]) -> None:
    if part == "evaluations":
        print(f"evaluations: {results['evaluations']}, {results['pickle_bytes']:.0f} pickled bytes each; "
              "CPU µs per evaluation (best of runs)")
        print(f"  unpickle {results['unpickle']:7.1f}   commit {results['commit']:7.1f}   "
              f"total {results['unpickle'] + results['commit']:7.1f}")
    else:
        print(f"ingest: {results['requests']} requests, {results['spans']} spans, "
              f"{results['bytes_per_span']:.0f} bytes per span; CPU µs per span (best of runs)")
        print(f"  decode   {results['decode']:7.2f}   write  {results['write']:7.2f}   "
              f"total {results['decode'] + results['write']:7.2f}")
    if "profile" in results:
        print(results["profile"])


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("evaluations", "ingest", "both"), default="both")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions scored for the evaluations part")
    parser.add_argument("--requests", type=int, default=40, help="requests (~512 spans each) for the ingest part")
    parser.add_argument("--golden-cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="runs per part; the fastest counts")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print the top N functions of a cProfile of one run of each part")
    parser.add_argument("--profile-sort", default="tottime", help="pstats sort key (default tottime)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-writer-"))
    try:
        for part, run in (("evaluations", evaluations), ("ingest", ingest)):
            if args.part in (part, "both"):
                print_report(part, run(args, workdir))
                sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
