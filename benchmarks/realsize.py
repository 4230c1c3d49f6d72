"""Real-size spans (issue 34.3): the captures of real frameworks replayed against a collector
process, next to the bare baseline receiver in the same round, with the online judge off and on.
Run by hand, not in CI::

    .venv/bin/python -m benchmarks.realsize                    # 3 rounds, 20 s a phase (~12 min)
    .venv/bin/python -m benchmarks.realsize --repeat 1 --duration 10 --no-half   # a quick look
    .venv/bin/python -m benchmarks.realsize --captures langgraph_openllmetry,crewai_openinference

The load: the sessions of ``--captures`` (tests/data/captures/<name>.traces.pb, the six scripted
conversations each framework played), each copy with fresh trace ids, session ids (wherever the
framework wrote them) and times, whole sessions packed into requests of ~``--spans-per-request``
spans, sent pre-encoded over OTLP/gRPC (``ingest_parts/captures.py``). The golden set: the six
conversations (tests/test_captures.py's right set) plus ``--golden-cases`` generated cases.

A round, each phase its own server process and SQLite file (``ingest_parts/phases.py``):

* ``baseline/raw``: the bare decode-and-insert receiver (``ingest_parts/baseline.py``), full load;
* ``collector/judge-off``, ``collector/judge-10pct``: the collector, full load, without and with
  ``llm_judge`` at ``--sample-rate`` (10%) against a fake OpenAI-compatible judge on 127.0.0.1
  answering in ``--judge-seconds`` (1 s);
* ``collector/half-off``, ``collector/half-10pct``: the same two paced at half the requests per
  second ``judge-off`` reached in this round (the latency a user sees when the collector is not
  at its limit).

Printed per round: ingest (spans stored / load seconds) and end to end (spans stored / first span
sent → last evaluation stored) of each full-load phase as a ratio of the round's baseline, and
the half-load end→stored p50 / p99; then every round's figures side by side with their medians
and ranges, and the load average. Targets: ingest and end to end ≥ 0.75x, half-load p99 < 500 ms.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .ingest_parts.captures import DEFAULT_CAPTURES, CapturedSession, captured_sessions, encode_captured, golden_evalset
from .ingest_parts.phases import measure_baseline, measure_collector
from .ingest_parts.stored import read_only
from .ingest_parts.workload import Workload
from .judge import fake_judge

#: The figures each round is judged on, and the targets of issue 34.3.
TARGET_RATIO = 0.75
TARGET_HALF_P99_MS = 500.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command's options; the phases' shared ones keep the ingest benchmark's names."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realsize", description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", default=",".join(DEFAULT_CAPTURES), help="capture names, comma-separated")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load per phase (default 20)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    parser.add_argument("--spans-per-request", type=int, default=512, help="spans per request, about (default 512)")
    parser.add_argument("--templates", type=int, default=8, help="distinct pre-encoded requests (default 8)")
    parser.add_argument("--golden-cases", type=int, default=1000, help="generated cases beside the six (default 1000)")
    parser.add_argument("--session-idle", type=float, default=0.5, help="collector --session-idle (default 0.5 s)")
    parser.add_argument("--trace-quiet", type=float, default=0.2, help="collector --trace-quiet (default 0.2 s)")
    parser.add_argument("--score-workers", type=int, default=None, help="collector --score-workers")
    parser.add_argument("--judge-seconds", type=float, default=1.0, help="the fake judge's answer time (default 1)")
    parser.add_argument("--sample-rate", type=float, default=0.1, help="llm_judge sample_rate when on (default 0.1)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, each against its own baseline (default 3)")
    parser.add_argument("--no-half", action="store_true", help="skip the half-load phases")
    parser.add_argument("--no-judge", action="store_true", help="skip the phases with the judge on")
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--drain-timeout", type=float, default=120.0)
    parser.add_argument("--probe-sessions", type=int, default=20)
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (databases, logs)")
    parser.add_argument("--json", type=Path, help="also write every round's results to this JSON file")
    args = parser.parse_args(argv)
    args.random_ids = False
    args.rate = None
    known = {
        p.name[: -len(".traces.pb")] for p in (Path(__file__).parents[1] / "tests/data/captures").glob("*.traces.pb")
    }
    args.capture_names = [n.strip() for n in args.captures.split(",") if n.strip()]
    unknown = [n for n in args.capture_names if n not in known]
    if unknown:
        parser.error(f"--captures: no capture named {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return args


def build_workload(args: argparse.Namespace, workdir: Path) -> tuple[Workload, list[CapturedSession]]:
    """The golden file, ``--templates`` requests of whole captured sessions, single-session probes."""
    golden = golden_evalset(args.golden_cases, args.seed)
    golden_path = workdir / "golden.evalset.json"
    golden_path.write_text(json.dumps(golden))
    pool = [s for name in args.capture_names for s in captured_sessions(name)]
    rng = random.Random(args.seed)
    now = time.time_ns()
    templates = []
    next_index = 0
    for _ in range(args.templates):
        chosen: list[tuple[int, CapturedSession]] = []
        spans = 0
        while spans < args.spans_per_request:
            session = rng.choice(pool)
            chosen.append((next_index, session))
            next_index = (next_index + 1) % 60000
            spans += len(session.spans)
        templates.append(encode_captured(chosen, now))
    probes = [encode_captured([(60001 + i, s)], now) for i, s in enumerate(pool[:: max(1, len(pool) // 16)])]
    sizes = [len(s.spans) for s in pool]
    workload = Workload(
        golden_path,
        len(golden["eval_cases"]),
        templates,
        {},
        probes,
        {},
        (min(sizes), sum(sizes) / len(sizes), max(sizes)),
    )
    return workload, pool


def judge_config(workdir: Path, url: str, sample_rate: float) -> Path:
    """A collector TOML file adding ``llm_judge`` to the default criteria."""
    path = workdir / "judge.toml"
    path.write_text(
        f'[criteria.llm_judge]\nthreshold = 0.7\n[criteria.llm_judge.options]\nbase_url = "{url}"\n'
        f"sample_rate = {sample_rate}\ntimeout = 30\n"
    )
    return path


def judge_figures(db: Path) -> dict[str, int]:
    """After a phase with the judge on: the calls the collector recorded (``judge_usage``), the
    judge outcomes stored (a session's later revision), and the sessions still waiting for
    theirs when the collector was stopped (they stay queued for its next start)."""
    conn = read_only(db)
    try:
        return {
            "judge_calls": int(conn.execute("SELECT COUNT(*) FROM judge_usage").fetchone()[0]),
            "judge_outcomes": int(conn.execute("SELECT COUNT(*) FROM evaluations WHERE revision > 1").fetchone()[0]),
            "judge_pending": int(
                conn.execute(
                    "SELECT COUNT(*) FROM evaluations e JOIN sessions s ON s.session_id = e.session_id"
                    " AND s.revision = e.revision WHERE e.judge_pending > 0"
                ).fetchone()[0]
            ),
        }
    finally:
        conn.close()


def run_round(number: int, args: argparse.Namespace, folder: Path, workload: Workload, toml: Path | None) -> dict:
    """One round: the baseline, the collector at full load without and with the judge, then both
    paced at half of what the collector reached without it."""
    results: dict[str, dict[str, Any]] = {}

    def phase(name: str, measure: Any) -> None:
        print(f"round {number}: {name} ... (load average {os.getloadavg()[0]:.1f})", flush=True)
        results[name] = measure()
        r = results[name]
        print(
            f"  {r['spans_per_s']:,.0f} spans/s"
            + (f", end to end {r['end_to_end_spans_per_s']:,.0f}" if r.get("end_to_end_spans_per_s") else "")
            + (
                f", end→stored p50/p99 {r['latency_under_load']['end_to_stored_p50_ms']}/"
                f"{r['latency_under_load']['end_to_stored_p99_ms']} ms"
                if r.get("latency_under_load")
                else ""
            )
            + f", matched {r.get('match_methods', '-')}",
            flush=True,
        )

    judged = [("off", ())] + ([] if toml is None else [("10pct", ("--config", str(toml)))])
    phase("baseline", lambda: measure_baseline(args, folder, workload))
    for label, extra in judged:
        phase(f"judge-{label}", lambda: measure_collector("raw", args, folder, workload, f"judge-{label}", extra))
        if label != "off":
            results[f"judge-{label}"].update(judge_figures(folder / f"collector-judge-{label}.db"))
    if not args.no_half:
        spans_per_request = sum(t.spans for t in workload.templates) / len(workload.templates)
        half = copy.copy(args)
        half.rate = results["judge-off"]["spans_per_s"] / spans_per_request / 2
        for label, extra in judged:
            phase(f"half-{label}", lambda: measure_collector("raw", half, folder, workload, f"half-{label}", extra))
            results[f"half-{label}"]["rate_requests_per_s"] = round(half.rate, 2)
            if label != "off":
                results[f"half-{label}"].update(judge_figures(folder / f"collector-half-{label}.db"))
    return results


def figures(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """A round's figures: ratios to its baseline, half-load latencies, CPU a span."""
    base = results["baseline"]["spans_per_s"]
    out: dict[str, float] = {}
    for name, r in results.items():
        if name == "baseline" or name.startswith("judge-"):
            # CPU a server got, and waited for (runnable, not running), as shares of the load's wall time.
            out[f"{name} cpu"] = r["collector_cpu_util_load"] + (r.get("workers_cpu_util_load") or 0.0)
            wait = r.get("collector_cpu_wait_s_load", 0.0) + r.get("workers_cpu_wait_s_load", 0.0)
            out[f"{name} cpu wait"] = wait / r["elapsed_s"] if r["elapsed_s"] else 0.0
        if name.startswith("judge-"):
            out[f"{name} ingest x"] = r["spans_per_s"] / base
            out[f"{name} end-to-end x"] = (r.get("end_to_end_spans_per_s") or 0.0) / base
            out[f"{name} µs/span"] = r.get("collector_cpu_us_per_span_load") or 0.0
        if name.startswith("half-"):
            lat = r["latency_under_load"]
            out[f"{name} p50 ms"] = lat["end_to_stored_p50_ms"] or 0.0
            out[f"{name} p99 ms"] = lat["end_to_stored_p99_ms"] or 0.0
    return out


def print_rounds(rounds: list[dict[str, dict[str, Any]]], loads: list[float]) -> None:
    """Every round's figures side by side, their medians and ranges, against the targets."""
    table = [figures(r) for r in rounds]
    print()
    print(f"{len(rounds)} round(s); load average at each round's start: {', '.join(f'{x:.1f}' for x in loads)}")
    for key in table[0]:
        values = [t[key] for t in table if key in t]
        fmt = "{:.2f}" if key.endswith((" x", " cpu", " cpu wait")) else "{:.0f}"
        target = ""
        if key.endswith(" x") and "µs" not in key:
            target = " (target ≥ 0.75x)"
        elif key.startswith("half-") and key.endswith("p99 ms"):
            target = " (target < 500 ms)"
        print(
            f"  {key:<26} median {fmt.format(statistics.median(values))} "
            f"[{fmt.format(min(values))}-{fmt.format(max(values))}]  rounds: "
            + ", ".join(fmt.format(v) for v in values)
            + target
        )
    for name in rounds[0]:
        if "judge_calls" in rounds[0][name]:
            figures_of = [(r[name]["judge_calls"], r[name]["judge_outcomes"], r[name]["judge_pending"]) for r in rounds]
            sessions = [r[name].get("load_sessions_scored", 0) for r in rounds]
            print(
                f"  {name}: judge calls / outcomes stored / still pending at the stop {figures_of} for "
                f"{sessions} sessions scored (latencies and end to end: each session's first verdict)"
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Build the load once, run the rounds, print each and the summary."""
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-realsize-"))
    judge_server = None
    try:
        t0 = time.monotonic()
        workload, pool = build_workload(args, workdir)
        spans = sum(t.spans for t in workload.templates)
        print(
            f"workload: {len(pool)} captured sessions of {', '.join(args.capture_names)}; sessions of "
            f"{workload.session_sizes[0]}-{workload.session_sizes[2]} spans (mean {workload.session_sizes[1]:.1f}); "
            f"{len(workload.templates)} requests of {min(t.spans for t in workload.templates)}-"
            f"{max(t.spans for t in workload.templates)} spans, "
            f"{sum(len(t.data) for t in workload.templates) / spans / 1024:.2f} KiB a span encoded; golden set "
            f"{workload.golden_cases} cases; built in {time.monotonic() - t0:.1f} s",
            flush=True,
        )
        toml = None
        if not args.no_judge:
            judge_server, url = fake_judge(args.judge_seconds)
            # A collector stopped with calls in flight closes their sockets: not the judge's error.
            judge_server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
            toml = judge_config(workdir, url, args.sample_rate)
        rounds, loads = [], []
        for number in range(1, args.repeat + 1):
            folder = workdir / f"round-{number}"
            folder.mkdir()
            loads.append(os.getloadavg()[0])
            rounds.append(run_round(number, args, folder, workload, toml))
            print_rounds(rounds[-1:], loads[-1:])
        if len(rounds) > 1:
            print_rounds(rounds, loads)
        if args.json:
            args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rounds": rounds}))
    finally:
        if judge_server is not None:
            judge_server.shutdown()
        if args.keep:
            print(f"databases and logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
