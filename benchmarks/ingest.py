"""Ingest benchmark: a realistic agent span load against a real collector process, next to a
minimal baseline receiver, on 127.0.0.1 only. Run by hand, not in CI::

    .venv/bin/python -m benchmarks.ingest                       # 20 s per phase, every protocol
    .venv/bin/python -m benchmarks.ingest --protocol raw --duration 300 --golden-cases 10000
    .venv/bin/python -m benchmarks.ingest --protocol raw --repeat 5       # five rounds in turn, medians

Each phase starts its own server process (the collector through ``collector.config.load_config``
and ``collector.app.run``, or the baseline) on free ports with its own SQLite file in a temp dir,
sends for ``--duration`` seconds from ``--concurrency`` threads, lets the sessions end and be
scored, then stops the server with SIGTERM and reads the numbers from its database. What each
printed number means: benchmarks/README.md.

The load is built once from a seeded RNG: a golden set of ``--golden-cases`` cases, and agent
sessions drawn from it (5-20 spans, 1-3 turns, OpenInference or OTel GenAI attributes with ~2 KB
prompts, like the captures in shared/fixtures/realclients). Most sessions ask a golden query
verbatim, some with a typo (fuzzy match), some ask something the set does not have.

This module is the command (its options, the phases in turn, the report); its parts, one job a
module, are in benchmarks/ingest_parts/.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .ingest_parts.agent_spans import RESOURCE_ATTRIBUTES, SESSION_KEYS
from .ingest_parts.clients import PROTOCOLS
from .ingest_parts.golden import MIN_SESSION_SPANS, golden_evalset, make_golden_cases
from .ingest_parts.phases import measure_baseline, measure_collector
from .ingest_parts.report import print_report, print_rounds
from .ingest_parts.sdk_spans import SpanFactory
from .ingest_parts.server_process import serve
from .ingest_parts.sessions import make_sessions, pick_sessions
from .ingest_parts.templates import encode_template
from .ingest_parts.workload import build_workload

#: The workload's names the other benchmarks (inprocess, scoring, writer, matcher) build on, as
#: ``from . import ingest as load``; where each is made: benchmarks/ingest_parts/.
__all__ = [
    "RESOURCE_ATTRIBUTES",
    "SESSION_KEYS",
    "SpanFactory",
    "build_workload",
    "encode_template",
    "golden_evalset",
    "main",
    "make_golden_cases",
    "make_sessions",
    "parse_args",
    "pick_sessions",
]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load per phase (default 20)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (sender threads, default 4)")
    parser.add_argument("--spans-per-request", type=int, default=512, help="spans per export request (default 512)")
    parser.add_argument(
        "--protocol",
        choices=[*PROTOCOLS, "all"],
        default="all",
        help="client against the collector: grpc / http = the SDK OTLPSpanExporters, raw = a grpc "
        "channel with pre-encoded requests; all = each in turn (default). The baseline always "
        "runs with the raw client.",
    )
    parser.add_argument(
        "--golden-cases", type=int, default=10_000, help="cases in the generated golden set (default 10000)"
    )
    parser.add_argument("--session-idle", type=float, default=0.5, help="collector --session-idle (default 0.5 s)")
    parser.add_argument("--trace-quiet", type=float, default=0.2, help="collector --trace-quiet (default 0.2 s)")
    parser.add_argument("--max-requests", type=int, default=200_000, help="stop a phase after this many requests")
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=120.0,
        help="seconds to wait after the load for every session to be scored (default 120)",
    )
    parser.add_argument(
        "--probe-sessions",
        type=int,
        default=40,
        help="single sessions sent 50 ms apart after the drain, for unqueued latency (default 40)",
    )
    parser.add_argument("--templates", type=int, default=8, help="distinct pre-encoded requests for the raw client")
    parser.add_argument("--log-level", default="info", help="collector log level (default info, as deployed)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline phase")
    parser.add_argument(
        "--score-workers",
        type=int,
        default=None,
        metavar="N",
        help="collector --score-workers (default: the collector's own default)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        metavar="REQ_PER_S",
        help="pace the load at this many requests per second (all threads together); "
        "default: as fast as they are acknowledged",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--random-ids",
        action="store_true",
        help="raw client: random trace and session ids, as W3C trace ids and most session ids "
        "are (default: ids that grow from request to request, so every index is appended "
        "to; random ids make every server's indexes take random pages, the baseline's too)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the phases N times in turn (baseline, then each collector phase), each round "
        "in its own folder, and report every round and the median of the rounds' ratios "
        "(default 1): the machine's speed swings by several percent from one minute to the next",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (databases, logs) and print its path")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    for name in ("duration", "concurrency", "spans_per_request", "golden_cases", "max_requests", "templates"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be greater than 0")
    if args.spans_per_request < MIN_SESSION_SPANS:
        parser.error(f"--spans-per-request must be at least {MIN_SESSION_SPANS} (one whole session)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "--serve":
        return serve(argv[1], argv[2:])
    args = parse_args(argv)
    protocols = list(PROTOCOLS) if args.protocol == "all" else [args.protocol]
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-bench-"))
    try:
        t0 = time.monotonic()
        workload = build_workload(args, workdir)
        sizes = [t.spans for t in workload.templates]
        print(
            f"workload: {workload.golden_cases} golden cases ({workload.golden_path.stat().st_size / 1e6:.1f} MB), "
            f"{len(workload.templates)} raw requests of {min(sizes)}-{max(sizes)} spans "
            f"({sum(len(t.data) for t in workload.templates) / sum(sizes) / 1024:.1f} KiB/span encoded), "
            f"sessions of {workload.session_sizes[0]}-{workload.session_sizes[2]} spans (mean "
            f"{workload.session_sizes[1]:.1f} in the pool, {sum(sizes) / sum(t.sessions for t in workload.templates):.1f} "
            f"in the requests: they are picked by size), variants {workload.variants}, "
            f"built in {time.monotonic() - t0:.1f} s",
            flush=True,
        )
        rounds = []
        for number in range(1, max(1, args.repeat) + 1):
            # Each round in a folder of its own: a collector given last round's file would resume it.
            folder = workdir if args.repeat <= 1 else workdir / f"round-{number}"
            folder.mkdir(exist_ok=True)
            label = f" (round {number} of {args.repeat})" if args.repeat > 1 else ""
            results = []
            if not args.no_baseline:
                print(f"phase baseline/raw{label} ...", flush=True)
                results.append(measure_baseline(args, folder, workload))
                print(f"  {results[-1]['spans_per_s']:,.0f} spans/s", flush=True)
            for protocol in protocols:
                print(f"phase collector/{protocol}{label} ...", flush=True)
                results.append(measure_collector(protocol, args, folder, workload))
                print(f"  {results[-1]['spans_per_s']:,.0f} spans/s", flush=True)
            print_report(results, args, workload)
            rounds.append(results)
        if len(rounds) > 1:
            print_rounds(rounds)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "args": {k: str(v) for k, v in vars(args).items()},
                        "results": rounds[0] if len(rounds) == 1 else rounds,
                    },
                    indent=2,
                )
            )
    finally:
        if args.keep:
            print(f"databases and logs kept in {workdir}")
        else:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
