"""One measured phase: a server process started, loaded, drained and probed (the collector) or
loaded (the baseline), stopped, and read back into one dict of figures."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .clients import exporter_sender, raw_sender, run_load, send_probes
from .procfs import MemorySampler, cpu_seconds, descendants_cpu_seconds, memory_mib, rss_profile, runqueue_wait_seconds
from .server_process import ServerProcess
from .stats import percentile
from .stored import SessionTimes, read_only, scored_sessions, session_status_counts
from .workload import Workload


def _log_problems(path: Path) -> tuple[int, str | None]:
    text = path.read_text(errors="replace").splitlines()
    bad = [line for line in text if " ERROR " in line or " CRITICAL " in line]
    return len(bad), (bad[0] if bad else None)


def measure_collector(
    protocol: str,
    args: argparse.Namespace,
    workdir: Path,
    workload: Workload,
    name: str | None = None,
    extra_args: Sequence[str] = (),
) -> dict[str, Any]:
    """One collector phase with ``protocol``'s client; ``name`` (default the protocol) names the
    phase, its database and log; ``extra_args`` are more collector options (e.g. ``--config``)."""
    name = name or protocol
    db = workdir / f"collector-{name}.db"
    server = ServerProcess(
        "collector",
        [
            "--db",
            str(db),
            "--golden",
            str(workload.golden_path),
            "--trace-quiet",
            str(args.trace_quiet),
            "--session-idle",
            str(args.session_idle),
            "--log-level",
            args.log_level,
            *(["--score-workers", str(args.score_workers)] if args.score_workers is not None else []),
            *extra_args,
        ],
        workdir / f"collector-{name}.log",
    )
    out: dict[str, Any] = {"phase": f"collector/{name}", "startup_s": round(server.startup_seconds, 2)}
    sampler = MemorySampler(server.pid)
    sampler.start()
    try:
        if protocol == "raw":
            make = raw_sender(server.ports["grpc"], workload.templates, args.random_ids)
        else:
            make = exporter_sender(protocol, server.ports[protocol], workload.by_size, args.spans_per_request)
        cpu0, workers_cpu0 = cpu_seconds(server.pid), descendants_cpu_seconds(server.pid)
        waited0 = runqueue_wait_seconds(server.pid)
        began = time.monotonic()
        load = run_load(make, args.concurrency, args.duration, args.max_requests, args.rate)
        load_end = time.monotonic()
        cpu_load = cpu_seconds(server.pid) - cpu0
        workers_cpu_load = descendants_cpu_seconds(server.pid) - workers_cpu0
        waited = [after - before for after, before in zip(runqueue_wait_seconds(server.pid), waited0)]
        at_load_end = session_status_counts(db)
        # Let every session of the load end and be scored (bounded), then a trickle of single
        # sessions measures end → stored evaluation without a queue in front of the scorer.
        drain_deadline = time.monotonic() + args.drain_timeout
        while time.monotonic() < drain_deadline:
            counts = session_status_counts(db)
            if not counts.get("open") and not counts.get("ended"):
                break
            time.sleep(0.25)
        drain_s = time.monotonic() - load_end
        cpu_drain = cpu_seconds(server.pid) - cpu0
        probe_started_ns = time.time_ns()
        probe_sent = send_probes(server.ports["grpc"], workload.probe_templates, args.probe_sessions)
        probe_deadline = time.monotonic() + args.session_idle + args.trace_quiet + 30
        while time.monotonic() < probe_deadline:
            counts = session_status_counts(db)
            if not counts.get("open") and not counts.get("ended"):
                break
            time.sleep(0.1)
        peak = memory_mib(server.pid)[1]
        memory = rss_profile(sampler, began, load_end)
    finally:
        exit_code = _stop_all(sampler, server)
    errors, first_error = _log_problems(server.log_path)

    conn = read_only(db)
    try:
        stored = conn.execute("SELECT COUNT(*) FROM spans WHERE received_ns <= ?", (load.ended_ns,)).fetchone()[0]
        final_status = dict(conn.execute("SELECT status, COUNT(*) FROM sessions GROUP BY status").fetchall())
    finally:
        conn.close()
    sessions = scored_sessions(db)
    load_sessions = [s for s in sessions if s.first_received_ns <= load.ended_ns]
    probe_sessions = [s for s in sessions if s.first_received_ns >= probe_started_ns]
    scored_during_load = sum(1 for s in load_sessions if s.stored_ns <= load.ended_ns)
    last_stored = max((s.stored_ns for s in load_sessions), default=load.started_ns)
    idle_ns = int(max(args.trace_quiet, args.session_idle) * 1e9)

    def latency_ms(group: list[SessionTimes]) -> dict[str, Any]:
        end_to_stored = [(s.stored_ns - s.ended_ns) / 1e6 for s in group if s.ended_ns]
        due_to_stored = [(s.stored_ns - s.last_received_ns - idle_ns) / 1e6 for s in group]
        return {
            "n": len(group),
            "end_to_stored_p50_ms": _round(percentile(end_to_stored, 50)),
            "end_to_stored_p99_ms": _round(percentile(end_to_stored, 99)),
            "due_to_stored_p50_ms": _round(percentile(due_to_stored, 50)),
            "due_to_stored_p99_ms": _round(percentile(due_to_stored, 99)),
        }

    methods: dict[str, int] = {}
    for s in load_sessions:
        methods[s.matched_by] = methods.get(s.matched_by, 0) + 1
    out.update(
        {
            "requests": load.requests,
            "failed_requests": load.failed,
            "failures": load.failures,
            "elapsed_s": round(load.elapsed, 2),
            "spans_acknowledged": load.spans_accepted,
            "spans_stored": stored,
            "spans_per_s": round(stored / load.elapsed, 1) if load.elapsed else 0.0,
            "sessions_at_load_end": at_load_end,
            "sessions_final": final_status,
            "sessions_scored_during_load": scored_during_load,
            "sessions_scored_per_s_during_load": round(scored_during_load / load.elapsed, 1) if load.elapsed else 0.0,
            "load_sessions_scored": len(load_sessions),
            "sessions_scored_per_s_incl_drain": round(
                len(load_sessions) / max(1e-9, (last_stored - load.started_ns) / 1e9), 1
            ),
            "drain_s": round(drain_s, 2),
            "match_methods": methods,
            # Issue 11's full-load measure: first span sent → last evaluation stored, the latter the
            # `created_at` the writer gives an evaluation in the transaction that commits it. The
            # drain is polled every 0.25 s, so the polled figure (kept for comparison with earlier
            # runs) reads up to that much, plus a status query on a large file, too late.
            "end_to_end_spans_per_s": round(stored / ((last_stored - load.started_ns) / 1e9), 1)
            if load.elapsed and last_stored > load.started_ns
            else 0.0,
            "end_to_end_spans_per_s_polled": round(stored / (load.elapsed + drain_s), 1) if load.elapsed else 0.0,
            "last_stored_after_load_s": round((last_stored - load.ended_ns) / 1e9, 2),
            "collector_cpu_s_load": round(cpu_load, 2),
            "collector_cpu_s_load_and_drain": round(cpu_drain, 2),
            "collector_cpu_util_load": round(cpu_load / load.elapsed, 2) if load.elapsed else 0.0,
            "workers_cpu_s_load": round(workers_cpu_load, 2),
            # Runnable but not running: seconds its threads waited for a CPU during the load.
            "collector_cpu_wait_s_load": round(waited[0], 2),
            "workers_cpu_wait_s_load": round(waited[1], 2),
            "workers_cpu_util_load": round(workers_cpu_load / load.elapsed, 2) if load.elapsed else 0.0,
            # Per unit of work: steadier than the rates when the machine's speed swings, since both
            # the work done and the CPU it took come from the same seconds.
            "collector_cpu_us_per_span_load": round(cpu_load / stored * 1e6, 1) if stored else None,
            "workers_cpu_us_per_session_load": round(workers_cpu_load / scored_during_load * 1e6, 1)
            if scored_during_load
            else None,
            "client_cpu_s": round(load.client_cpu, 2),
            "collector_peak_rss_mib": round(peak, 1),
            **memory,
            "latency_under_load": latency_ms(load_sessions),
            "latency_probe": latency_ms(probe_sessions),
            "probe_sessions_sent": probe_sent,
            "log_errors": errors,
            "first_log_error": first_error,
            "exit_code": exit_code,
        }
    )
    return out


def measure_baseline(args: argparse.Namespace, workdir: Path, workload: Workload) -> dict[str, Any]:
    db = workdir / "baseline.db"
    server = ServerProcess("baseline", ["--db", str(db)], workdir / "baseline.log")
    sampler = MemorySampler(server.pid)
    sampler.start()
    try:
        cpu0 = cpu_seconds(server.pid)
        waited0 = runqueue_wait_seconds(server.pid)[0]
        began = time.monotonic()
        load = run_load(
            raw_sender(server.ports["grpc"], workload.templates, args.random_ids),
            args.concurrency,
            args.duration,
            args.max_requests,
        )
        cpu_load = cpu_seconds(server.pid) - cpu0
        waited = runqueue_wait_seconds(server.pid)[0] - waited0
        peak = memory_mib(server.pid)[1]
        memory = rss_profile(sampler, began, time.monotonic())
    finally:
        exit_code = _stop_all(sampler, server)
    conn = read_only(db)
    try:
        stored = conn.execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    finally:
        conn.close()
    return {
        "phase": "baseline/raw",
        "requests": load.requests,
        "failed_requests": load.failed,
        "failures": load.failures,
        "elapsed_s": round(load.elapsed, 2),
        "spans_acknowledged": load.spans_accepted,
        "spans_stored": stored,
        "spans_per_s": round(stored / load.elapsed, 1) if load.elapsed else 0.0,
        "collector_cpu_s_load": round(cpu_load, 2),
        "collector_cpu_util_load": round(cpu_load / load.elapsed, 2) if load.elapsed else 0.0,
        "collector_cpu_wait_s_load": round(waited, 2),
        "client_cpu_s": round(load.client_cpu, 2),
        "collector_peak_rss_mib": round(peak, 1),
        **memory,
        "exit_code": exit_code,
    }


def _stop_all(sampler: MemorySampler, server: ServerProcess) -> int:
    """Stop the server whatever else fails: a crashed benchmark must not leave a server running."""
    try:
        sampler.stop()
    finally:
        exit_code = server.stop()
    return exit_code


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
