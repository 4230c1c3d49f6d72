"""The ingest benchmark's printout: each round's table and notes, and the rounds side by side."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from .procfs import RSS_PARTS
from .workload import Workload


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_report(results: list[dict[str, Any]], args: argparse.Namespace, workload: Workload) -> None:
    baseline = next((r for r in results if r["phase"] == "baseline/raw"), None)
    base_rate = baseline["spans_per_s"] if baseline else 0.0
    print()
    print(
        f"ingest benchmark, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, duration {args.duration:g} s "
        f"per phase, concurrency {args.concurrency}, {args.spans_per_request} spans/request, golden set "
        f"{workload.golden_cases} cases, trace-quiet {args.trace_quiet:g} s, session-idle {args.session_idle:g} s"
        + (f", score workers {args.score_workers}" if args.score_workers is not None else "")
        + (f", paced at {args.rate:g} requests/s" if args.rate else "")
    )
    header = (
        f"{'phase':<16}{'spans stored':>13}{'spans/s':>10}{'x base':>8}{'sess/s':>8}{'cpu s':>8}"
        f"{'cpu %':>7}{'peak MiB':>10}{'end→stored p50/p99 ms (load)':>31}{'(probe)':>16}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        ratio = f"{r['spans_per_s'] / base_rate:.2f}" if base_rate else "-"
        load_lat = r.get("latency_under_load") or {}
        probe_lat = r.get("latency_probe") or {}
        lat = (
            f"{_fmt(load_lat.get('end_to_stored_p50_ms'))} / {_fmt(load_lat.get('end_to_stored_p99_ms'))}"
            if load_lat
            else "-"
        )
        plat = (
            f"{_fmt(probe_lat.get('end_to_stored_p50_ms'))} / {_fmt(probe_lat.get('end_to_stored_p99_ms'))}"
            if probe_lat
            else "-"
        )
        print(
            f"{r['phase']:<16}{_fmt(r['spans_stored']):>13}{_fmt(r['spans_per_s']):>10}{ratio:>8}"
            f"{_fmt(r.get('sessions_scored_per_s_incl_drain')):>8}{_fmt(r['collector_cpu_s_load']):>8}"
            f"{r['collector_cpu_util_load'] * 100:>6.0f}%{_fmt(r['collector_peak_rss_mib']):>10}{lat:>31}{plat:>16}"
        )
    print()
    for r in results:
        if r["phase"] == "baseline/raw":
            continue
        print(
            f"{r['phase']}: {r['requests']} requests ({r['failed_requests']} failed {r['failures'] or ''}) in "
            f"{r['elapsed_s']} s; sessions at load end {r['sessions_at_load_end']}, final {r['sessions_final']}; "
            f"scored during load {r['sessions_scored_during_load']} "
            f"({r['sessions_scored_per_s_during_load']}/s), all {r['load_sessions_scored']} after "
            f"{r['drain_s']} s more; matched {r['match_methods']}"
        )
        if r.get("end_to_end_spans_per_s"):
            e2e = r["end_to_end_spans_per_s"]
            ratio = f" = {e2e / base_rate:.2f}x the baseline" if base_rate else ""
            polled = r.get("end_to_end_spans_per_s_polled") or 0.0
            polled_ratio = f", {polled / base_rate:.2f}x" if base_rate else ""
            print(
                f"    end to end (first span sent → last evaluation stored): {e2e:,.1f} spans/s{ratio}; "
                f"last evaluation stored {r['last_stored_after_load_s']} s after the load "
                f"(with the drain as polled: {polled:,.1f} spans/s{polled_ratio})"
            )
        if "workers_cpu_s_load" in r:
            print(
                f"    CPU during the load: collector {r['collector_cpu_s_load']} s "
                f"({r['collector_cpu_util_load'] * 100:.0f}% of a core, "
                f"{_fmt(r['collector_cpu_us_per_span_load'])} µs a span stored), score worker processes "
                f"{r['workers_cpu_s_load']} s ({r['workers_cpu_util_load'] * 100:.0f}%, "
                f"{_fmt(r['workers_cpu_us_per_session_load'])} µs a session scored), "
                f"load client {r['client_cpu_s']} s"
            )
        lat, probe = r["latency_under_load"], r["latency_probe"]
        print(
            f"    due→stored p50/p99 ms: load {_fmt(lat['due_to_stored_p50_ms'])}/{_fmt(lat['due_to_stored_p99_ms'])}, "
            f"probe {_fmt(probe['due_to_stored_p50_ms'])}/{_fmt(probe['due_to_stored_p99_ms'])} "
            f"({probe['n']} probe sessions); RSS during load {r.get('rss_quarters_mib')} MiB, slope 2nd half "
            f"{_fmt(r.get('rss_slope_mib_per_min_2nd_half'))} MiB/min; collector startup {r['startup_s']} s; "
            f"client CPU {r['client_cpu_s']} s; log errors {r['log_errors']}"
            + (f" (first: {r['first_log_error']})" if r["first_log_error"] else "")
        )
        parts = [
            f"{part} {r[part + '_first_last_mib'][0]}→{r[part + '_first_last_mib'][1]} MiB "
            f"({_fmt(r[part + '_slope_mib_per_min_2nd_half'])}/min)"
            for part in RSS_PARTS
            if r.get(part + "_first_last_mib")
        ]
        if parts:
            print("    RSS parts during load (slope 2nd half): " + ", ".join(parts))
    if baseline:
        print(
            f"baseline/raw: {baseline['requests']} requests ({baseline['failed_requests']} failed) in "
            f"{baseline['elapsed_s']} s; RSS {baseline.get('rss_quarters_mib')} MiB; client CPU {baseline['client_cpu_s']} s"
        )


def round_ratios(results: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Per collector phase of one round: (ingest, end to end) as ratios of that round's baseline."""
    baseline = next((r for r in results if r["phase"] == "baseline/raw"), None)
    if baseline is None or not baseline["spans_per_s"]:
        return {}
    base = baseline["spans_per_s"]
    return {
        r["phase"]: (r["spans_per_s"] / base, (r.get("end_to_end_spans_per_s") or 0.0) / base)
        for r in results
        if r["phase"] != "baseline/raw"
    }


def print_rounds(rounds: list[list[dict[str, Any]]]) -> None:
    """Every round's ratios side by side, the CPU a unit of work took in each, and their medians."""
    by_phase: dict[str, list[tuple[float, float]]] = {}
    cpu: dict[str, list[tuple[float, float]]] = {}
    for results in rounds:
        for phase, pair in round_ratios(results).items():
            by_phase.setdefault(phase, []).append(pair)
        for r in results:
            if r.get("collector_cpu_us_per_span_load") and r.get("workers_cpu_us_per_session_load"):
                cpu.setdefault(r["phase"], []).append(
                    (r["collector_cpu_us_per_span_load"], r["workers_cpu_us_per_session_load"])
                )
    if not by_phase and not cpu:
        return
    print()
    print(f"{len(rounds)} rounds" + (", each collector phase against its round's baseline:" if by_phase else ":"))
    for phase, pairs in by_phase.items():
        ingest = ", ".join(f"{i:.2f}x" for i, _ in pairs)
        e2e = ", ".join(f"{e:.2f}x" for _, e in pairs)
        print(
            f"  {phase}: ingest {ingest} (median {statistics.median(i for i, _ in pairs):.2f}x); "
            f"end to end {e2e} (median {statistics.median(e for _, e in pairs):.2f}x)"
        )
    for phase, pairs in cpu.items():
        print(
            f"  {phase} CPU during the load: collector {', '.join(f'{c:.1f}' for c, _ in pairs)} µs a span stored "
            f"(median {statistics.median(c for c, _ in pairs):.1f}); score workers "
            f"{', '.join(f'{w:.0f}' for _, w in pairs)} µs a session scored "
            f"(median {statistics.median(w for _, w in pairs):.0f})"
        )
