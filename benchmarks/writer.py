"""Writer benchmark: what the engine's one writer thread pays per evaluation and per span, in-process.

Run by hand, not in CI::

    .venv/bin/python -m benchmarks.writer                       # both parts, 1,000 sessions, 40 requests
    .venv/bin/python -m benchmarks.writer --part evaluations --profile 30

No gRPC, no score workers, no second process: every number is CPU time of this one thread, so it
is precise enough to compare a change of a few µs even on a shared machine (keep the best of
``--repeat`` runs: the neighbours only ever add time). To compare two versions of the code, run
them in lock step, so both meet the same neighbours::

    git worktree add /tmp/before main
    .venv/bin/python -m benchmarks.writer --compare /tmp/before --repeat 10

``evaluations``  The scoring benchmark's sessions are stored and scored once (untimed); each
                 finished evaluation is pickled as a score worker process sends it (without the
                 full result, as when no listener reads results: the collector's default). Timed, on a
                 fresh copy of the database each run: ``unpickle`` (what the collector's process
                 pays to receive it) and ``commit`` (writer rounds of 64 evaluations, as the
                 engine's writer commits a backlog: one transaction, a savepoint each).
                 As in the engine, a :class:`~otel_eval.engine.checkpointer.Checkpointer` thread folds
                 the WAL back while the writer writes, so the WAL is reused rather than grown to
                 hundreds of MiB. Its CPU is not the writer's: it is printed apart, as
                 ``checkpoint`` (its thread's CPU clock, plus the copy of what it left at the end).
``ingest``       The ingest benchmark's raw requests (~512 spans of whole sessions each, fresh ids)
                 are encoded once (untimed). Timed, into a fresh database each run: ``decode``
                 (``ExportTraceServiceRequest.FromString`` + ``spans.from_otlp`` + ``span_row``, as
                 the receiver does) and ``write`` (one writer round per request: sessions resolved, spans,
                 traces and sessions stored, committed), and ``checkpoint`` as above.
                 ``--random-ids`` renews trace and session ids at random, as W3C trace ids are;
                 by default they grow from request to request and every index is appended to.

``--page-size BYTES`` sets the page size of the benchmark's new databases (the store's
``PAGE_SIZE`` otherwise)::

    .venv/bin/python -m benchmarks.writer --part ingest --requests 300 --random-ids --page-size 8192
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pickle
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

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


def _cpu_and_wall(fn: Callable[[], Any], busy: bool) -> tuple[float, float]:
    """(CPU s of this thread, wall s) of ``fn``, next to a busy thread when ``busy``."""
    with _busy_neighbour(busy):
        started, cpu_started = time.perf_counter(), time.thread_time()
        fn()
        return time.thread_time() - cpu_started, time.perf_counter() - started


@contextmanager
def _busy_neighbour(on: bool) -> Iterator[None]:
    """A thread that runs Python without pause, as a collector's gRPC threads decoding or an
    agent's tight loop do: what the writer meets each time it wants the GIL back (``--busy``)."""
    if not on:
        yield
        return
    halt = threading.Event()

    def spin() -> None:
        while not halt.is_set():
            pass

    neighbour = threading.Thread(target=spin, daemon=True)
    neighbour.start()
    try:
        yield
    finally:
        halt.set()
        neighbour.join()


def _profiled(fn: Callable[[], Any], top: int, sort: str) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(fn)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(top)
    return out.getvalue()


class _CheckpointerCPU:
    """CPU seconds the checkpointer thread used (known once it has stopped)."""

    seconds = 0.0


@contextmanager
def _checkpointing(store: Any) -> Iterator[_CheckpointerCPU]:
    """The engine's checkpointer thread, running while the timed writes do; what it cost is
    reported apart (it is not the writer's CPU, but every page the writer commits is copied by it)."""
    from otel_eval.engine.checkpointer import Checkpointer

    checkpointer = Checkpointer(store.path).start()
    ident = checkpointer._thread.ident
    assert ident is not None, "the checkpointer thread runs once start() returned"
    clock = time.pthread_getcpuclockid(ident)
    used = _CheckpointerCPU()
    try:
        yield used
    finally:
        used.seconds = time.clock_gettime(clock)  # read before the thread ends and its clock with it
        # What the rounds left in the WAL is copied here, timed, rather than by the stopping
        # thread: a short run would otherwise leave most of the copying uncounted.
        started = time.thread_time()
        _settle(Path(store.path))
        used.seconds += time.thread_time() - started
        checkpointer.stop()


def _settle(db: Path) -> None:
    """Fold the WAL into the file, so a copy of the one file is the whole database."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _writer(store: Any) -> Any:
    """The engine's writer on ``store``, driven round by round from this thread (not started)."""
    from otel_eval.engine.scheduler import SessionScheduler
    from otel_eval.engine.stats import EngineStats
    from otel_eval.engine.writer import Writer
    from otel_eval.sessions import Timing

    # Timers far out: nothing ends (and nothing is scored) while the benchmark writes.
    scheduler = SessionScheduler(Timing(trace_quiet=3600, session_idle=3600))
    return Writer(
        store,
        scheduler,
        EngineStats(),
        ended=lambda ids: None,
        stored=lambda *a: None,
        given_up=lambda f: None,
        released=lambda n: None,
    )


class EvaluationsPart:
    """Finished evaluations as a score worker sends them, committed by the writer."""

    name = "evaluations"

    def __init__(self, args: argparse.Namespace, workdir: Path):
        from otel_eval import pipeline
        from otel_eval.golden import GoldenIndex, load_golden
        from otel_eval.models.evalset import EvalConfig
        from otel_eval.store import Store

        self.workdir = workdir
        self.busy = args.busy
        self.pristine = workdir / "scored.db"
        golden, session_ids, _ = scoring.build_database(self.pristine, args.sessions, args.golden_cases, args.seed)
        context = pipeline.ScoringContext(index=GoldenIndex([load_golden(golden)]), config=EvalConfig.default())
        store = Store(self.pristine)
        try:
            finished = [pipeline.score_stored_session(store, sid, context) for sid in session_ids]
        finally:
            store.close()
        # As a collector's worker sends them when no listener reads full results (its default:
        # /metrics and alerts read only the event's fields).
        finished = [f.without_result() for f in finished if f is not None]
        self.payloads = [
            pickle.dumps(finished[at : at + WORKER_BATCH], protocol=pickle.HIGHEST_PROTOCOL)
            for at in range(0, len(finished), WORKER_BATCH)
        ]
        _settle(self.pristine)
        self.received = self.unpickle()
        self.facts = {
            "evaluations": len(self.received),
            "pickle_bytes": sum(map(len, self.payloads)) / len(self.received),
        }

    def unpickle(self) -> list[Any]:
        return [item for payload in self.payloads for item in pickle.loads(payload)]

    def fresh_store(self) -> Any:
        from otel_eval.engine.writer import tune_writer_connection
        from otel_eval.store import Store

        run_db = self.workdir / "run.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{run_db}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.pristine, run_db)
        opened = Store(run_db)
        tune_writer_connection(opened)  # as the engine's writer has it
        return opened

    def commit_all(self, store: Any) -> None:
        from otel_eval.engine.queue_items import StoreEvaluation

        writer = _writer(store)
        for at in range(0, len(self.received), GROUP):
            writer._round([StoreEvaluation(item) for item in self.received[at : at + GROUP]])

    def run_once(self) -> dict[str, float]:
        """CPU µs per evaluation of one unpickle and one commit of them all (fresh database)."""
        unpickle = _cpu(self.unpickle)
        store = self.fresh_store()
        try:
            with _checkpointing(store) as checkpoint:
                commit, wall = _cpu_and_wall(lambda: self.commit_all(store), self.busy)
        finally:
            store.close()
        n = len(self.received)
        out = {"unpickle": unpickle / n * 1e6, "commit": commit / n * 1e6, "checkpoint": checkpoint.seconds / n * 1e6}
        if self.busy:
            out["commit wall"] = wall / n * 1e6
        return out

    def profile(self, top: int, sort: str) -> str:
        store = self.fresh_store()
        try:

            def unpickle_and_commit() -> None:
                self.unpickle()
                self.commit_all(store)

            return _profiled(unpickle_and_commit, top, sort)
        finally:
            store.close()


class IngestPart:
    """Raw OTLP requests decoded as the receiver does and written by the writer."""

    name = "ingest"

    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.workdir = workdir
        self.busy = args.busy
        cases = load.make_golden_cases(args.golden_cases, args.seed)
        by_size: dict[int, list[Any]] = {}
        for session in load.make_sessions(cases, 600, args.seed + 2):
            by_size.setdefault(len(session.spans), []).append(session)
        rng = random.Random(args.seed + 1)
        now = time.time_ns()
        templates = []
        for number in range(min(args.requests, 8)):
            chosen = load.pick_sessions(by_size, 512, rng)
            renumbered = [s.renumbered(number * 100 + i) for i, s in enumerate(chosen)]
            templates.append(load.encode_template(renumbered, now))
        self.requests = [templates[n % len(templates)].render(n + 1, args.random_ids) for n in range(args.requests)]
        self.span_count = sum(templates[n % len(templates)].spans for n in range(args.requests))
        self.decoded = self.decode()
        self.facts = {
            "requests": len(self.requests),
            "spans": self.span_count,
            "bytes_per_span": sum(map(len, self.requests)) / self.span_count,
        }

    def decode(self) -> list[list[Any]]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        from otel_eval.span_rows import span_row
        from otel_eval.spans import from_otlp

        # As Engine.ingest on a receiver's thread: each span read into the row the writer stores.
        return [
            [span_row(span) for span in from_otlp(ExportTraceServiceRequest.FromString(body).resource_spans).spans]
            for body in self.requests
        ]

    def fresh_writer(self) -> Any:
        from otel_eval.engine.writer import tune_writer_connection
        from otel_eval.store import Store

        run_db = self.workdir / "ingest.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{run_db}{suffix}").unlink(missing_ok=True)
        store = Store(run_db)
        tune_writer_connection(store)  # as the engine's writer has it
        return _writer(store)

    def write_all(self, writer: Any) -> None:
        from otel_eval.engine.queue_items import IngestBatch

        for spans in self.decoded:
            batch = IngestBatch(spans=spans)
            writer._round([batch])
            if batch.error is not None:
                raise batch.error

    def run_once(self) -> dict[str, float]:
        """CPU µs per span of one decode and one write of every request (fresh database)."""
        decode = _cpu(self.decode)
        writer = self.fresh_writer()
        try:
            with _checkpointing(writer.store) as checkpoint:
                write, wall = _cpu_and_wall(lambda: self.write_all(writer), self.busy)
        finally:
            writer.store.close()
        out = {
            "decode": decode / self.span_count * 1e6,
            "write": write / self.span_count * 1e6,
            "checkpoint": checkpoint.seconds / self.span_count * 1e6,
        }
        if self.busy:
            out["write wall"] = wall / self.span_count * 1e6
        return out

    def profile(self, top: int, sort: str) -> str:
        writer = self.fresh_writer()
        try:

            def decode_and_write() -> None:
                self.decode()
                self.write_all(writer)

            return _profiled(decode_and_write, top, sort)
        finally:
            writer.store.close()


PARTS: dict[str, type[EvaluationsPart] | type[IngestPart]] = {"evaluations": EvaluationsPart, "ingest": IngestPart}


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per measure the fastest run (the neighbours only ever add time), plus their total."""
    best = {name: min(run[name] for run in runs) for name in runs[0]}
    best["total"] = sum(best.values())
    return best


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    medians = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    medians["total"] = sum(medians.values())
    return medians


def print_report(part: str, facts: dict[str, Any], best: dict[str, float], label: str = "") -> None:
    if part == "evaluations":
        head = f"evaluations: {facts['evaluations']}, {facts['pickle_bytes']:.0f} pickled bytes each; CPU µs per evaluation (\"wall\": wall time, beside a busy thread)"
    else:
        head = (
            f"ingest: {facts['requests']} requests, {facts['spans']} spans, {facts['bytes_per_span']:.0f} bytes "
            "per span; CPU µs per span (\"wall\": wall time, beside a busy thread)"
        )
    if not label:
        print(head + " (best of runs)")
    print(f"  {label:12s}" + "   ".join(f"{name} {value:7.2f}" for name, value in best.items()))


def _opened(pipe: IO[str] | None) -> IO[str]:
    """A child's pipe that Popen was asked to open (``subprocess.PIPE``)."""
    if pipe is None:
        raise RuntimeError("the child process was started without this pipe")
    return pipe


def serve(args: argparse.Namespace, workdir: Path) -> int:
    """``--serve``: prepare the parts, then run one pass of the part named on each stdin line and
    answer with one JSON line (what :func:`compare` drives)."""
    parts = {name: PARTS[name](args, workdir) for name in _part_names(args)}
    print(json.dumps({name: part.facts for name, part in parts.items()}), flush=True)
    for line in sys.stdin:
        print(json.dumps(parts[line.strip()].run_once()), flush=True)
    return 0


def compare(args: argparse.Namespace) -> int:
    """``--compare OTHER``: the same parts, in lock step, with this checkout's code and with the
    code of the checkout at OTHER (e.g. a ``git worktree`` of the commit before a change). Runs
    alternate between the two, so both meet the same neighbours; the best and the median of
    ``--repeat`` runs are printed for each."""
    import subprocess

    argv = [
        sys.executable,
        "-m",
        "benchmarks.writer",
        "--serve",
        "--part",
        args.part,
        "--sessions",
        str(args.sessions),
        "--requests",
        str(args.requests),
        "--golden-cases",
        str(args.golden_cases),
        "--seed",
        str(args.seed),
        *(["--busy"] if args.busy else []),
        *(["--random-ids"] if args.random_ids else []),
        *(["--page-size", str(args.page_size)] if args.page_size else []),
    ]
    sides = {"this": Path(__file__).resolve().parents[1], "other": Path(args.compare).resolve()}
    children = {}
    for side, root in sides.items():
        # Each child imports otel_eval and benchmarks from its own checkout (its start directory).
        children[side] = subprocess.Popen(
            argv,
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(root)),
        )
    try:
        # Both pipes were asked for (PIPE), so Popen opened them.
        pipes = {side: (_opened(child.stdin), _opened(child.stdout)) for side, child in children.items()}
        facts = {side: json.loads(pipes[side][1].readline()) for side in children}
        for part in _part_names(args):
            runs: dict[str, list[dict[str, float]]] = {side: [] for side in children}
            for _ in range(args.repeat):
                for side in children:
                    to_child, from_child = pipes[side]
                    to_child.write(part + "\n")
                    to_child.flush()
                    runs[side].append(json.loads(from_child.readline()))
            print(f"{part}: {args.repeat} alternating runs each; this = {sides['this']}, other = {sides['other']}")
            for side in children:
                print_report(part, facts[side][part], _best(runs[side]), label=f"{side} best")
                print_report(part, facts[side][part], _median(runs[side]), label=f"{side} med")
            sys.stdout.flush()
    finally:
        for child in children.values():
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=60)
    return 0


def _part_names(args: argparse.Namespace) -> list[str]:
    return [name for name in PARTS if args.part in (name, "both")]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("evaluations", "ingest", "both"), default="both")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions scored for the evaluations part")
    parser.add_argument("--requests", type=int, default=40, help="requests (~512 spans each) for the ingest part")
    parser.add_argument("--golden-cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="runs per part; the fastest counts")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also print the top N functions of a cProfile of one run of each part",
    )
    parser.add_argument("--profile-sort", default="tottime", help="pstats sort key (default tottime)")
    parser.add_argument("--compare", metavar="OTHER", help="run alternately against the checkout at OTHER")
    parser.add_argument(
        "--busy",
        action="store_true",
        help="run a thread that spins in Python beside the timed writes, and report their wall "
        "time too: each time the writer hands the GIL back (SQLite calls do), it waits for "
        "that thread's switch interval, as beside a collector's decoding or an agent's loop",
    )
    parser.add_argument(
        "--random-ids",
        action="store_true",
        help="ingest part: random trace and session ids, as W3C trace ids are (default: ids that "
        "grow from request to request, so every index is appended to)",
    )
    parser.add_argument(
        "--page-size",
        type=int,
        metavar="BYTES",
        help="page size of the benchmark's new databases (default: the store's PAGE_SIZE)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.page_size:
        from otel_eval.store import connection

        connection.PAGE_SIZE = args.page_size  # read when a Store creates a new file
    if args.compare:
        return compare(args)
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-writer-"))
    try:
        if args.serve:
            return serve(args, workdir)
        for name in _part_names(args):
            part = PARTS[name](args, workdir)
            print_report(name, part.facts, _best([part.run_once() for _ in range(args.repeat)]))
            if args.profile:
                print(part.profile(args.profile, args.profile_sort))
            sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
