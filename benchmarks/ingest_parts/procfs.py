"""A process measured from outside: its CPU, its children's CPU and its memory, from /proc (or
psutil when installed), and memory sampled over a run."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from .stats import second_half_slope


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (psutil when installed, else /proc/<pid>/stat)."""
    try:
        import psutil

        times = psutil.Process(pid).cpu_times()
        return times.user + times.system
    except ImportError:
        pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def descendants_cpu_seconds(pid: int) -> float:
    """User + system CPU of the processes below ``pid`` that are alive now (the score workers
    and their helpers: a forkserver's children are the collector's grandchildren). Read from
    /proc; 0.0 where there is none."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # it exited meanwhile
            continue
        parents[int(entry)], stats[int(entry)] = int(fields[1]), fields
    below: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - below
        below |= frontier
    ticks = sum(int(stats[child][11]) + int(stats[child][12]) for child in below)
    return ticks / os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> set[int]:
    """``pid`` and every process below it that is alive now."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    tree, frontier = {pid}, {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - tree
        tree |= frontier
    return tree


def runqueue_wait_seconds(pid: int) -> tuple[float, float]:
    """(the process's, its descendants') seconds spent runnable but waiting for a CPU, summed
    over their threads (``/proc/<pid>/task/<tid>/schedstat``, second field, ns): on a shared
    machine, how much of a phase a server spent waiting for the other processes' CPU rather
    than working. Threads that ended are not counted; (0.0, 0.0) where schedstat is missing."""

    def waited(process: int) -> float:
        total = 0
        try:
            tasks = os.listdir(f"/proc/{process}/task")
        except OSError:
            return 0.0
        for tid in tasks:
            try:
                with open(f"/proc/{process}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                continue
        return total / 1e9

    below = _tree(pid) - {pid}
    return waited(pid), sum(waited(child) for child in below)


#: The parts of RSS /proc/<pid>/status names: anonymous memory (the heap: where a leak shows),
#: file-backed pages (libraries and mapped files, SQLite's WAL index among them) and shared memory.
RSS_PARTS = ("RssAnon", "RssFile", "RssShmem")


def memory_parts_mib(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM (peak RSS) and the parts of RSS (``RSS_PARTS``), in MiB, from /proc/<pid>/status."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, amount = line.partition(":")
            if key in ("VmRSS", "VmHWM") or key in RSS_PARTS:
                values[key] = int(amount.split()[0]) / 1024
    return values


def memory_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) in MiB."""
    values = memory_parts_mib(pid)
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


class MemorySampler(threading.Thread):
    """RSS (and its parts) every ``interval`` seconds: the evidence for (or against) "memory stays flat"."""

    def __init__(self, pid: int, interval: float = 1.0):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.parts: list[tuple[float, dict[str, float]]] = []  # (monotonic, {part: MiB})
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                parts = memory_parts_mib(self.pid)
            except OSError:
                return
            self.parts.append((time.monotonic(), parts))
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

    def between(self, start: float, end: float, part: str = "VmRSS") -> list[tuple[float, float]]:
        """(monotonic, MiB) of ``part`` (VmRSS or one of ``RSS_PARTS``) sampled in [start, end]."""
        return [(t, parts.get(part, 0.0)) for t, parts in self.parts if start <= t <= end]


def rss_profile(sampler: MemorySampler, start: float, end: float) -> dict[str, Any]:
    """RSS sampled in [start, end]: at the start, each quarter and the end, and the slope of the
    second half; each part of RSS first and last, and its slope."""
    samples = sampler.between(start, end)
    if not samples:
        return {}
    rss = [r for _, r in samples]
    slope = second_half_slope(samples)
    quarter = [rss[min(len(rss) - 1, int(len(rss) * q))] for q in (0.0, 0.25, 0.5, 0.75)] + [rss[-1]]
    out: dict[str, Any] = {
        "rss_quarters_mib": [round(r, 1) for r in quarter],
        "rss_slope_mib_per_min_2nd_half": None if slope is None else round(slope, 2),
    }
    for part in RSS_PARTS:
        series = sampler.between(start, end, part)
        part_slope = second_half_slope(series)
        out[f"{part}_first_last_mib"] = [round(series[0][1], 1), round(series[-1][1], 1)]
        out[f"{part}_slope_mib_per_min_2nd_half"] = None if part_slope is None else round(part_slope, 2)
    return out
