"""Everything a run sends, built once before the first phase: the golden set file, the raw
requests, the session pool the exporters pick from, and the probe sessions."""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

from .golden import golden_evalset, make_golden_cases
from .sessions import SessionSpec, make_sessions, pick_sessions
from .templates import RawTemplate, encode_template


@dataclass
class Workload:
    golden_path: Path
    golden_cases: int
    templates: list[RawTemplate]
    by_size: dict[int, list[SessionSpec]]
    probe_templates: list[RawTemplate]
    variants: dict[str, int]
    session_sizes: tuple[int, float, int]  # min, mean, max spans per session


def build_workload(args: argparse.Namespace, workdir: Path) -> Workload:
    cases = make_golden_cases(args.golden_cases, args.seed)
    golden_path = workdir / "golden.evalset.json"
    golden_path.write_text(json.dumps(golden_evalset(cases)))
    rng = random.Random(args.seed + 1)
    pool = make_sessions(cases, 600, args.seed + 2)
    by_size: dict[int, list[SessionSpec]] = {}
    for session in pool:
        by_size.setdefault(len(session.spans), []).append(session)
    now = time.time_ns()
    templates = []
    next_index = 0
    for _ in range(args.templates):
        chosen = pick_sessions(by_size, args.spans_per_request, rng)
        # Within one request every session needs its own index (it is part of the ids).
        renumbered = [s.renumbered(next_index + i) for i, s in enumerate(chosen)]
        next_index = (next_index + len(chosen)) % 60000
        templates.append(encode_template(renumbered, now))
    probes = make_sessions(cases, 16, args.seed + 3, first_index=60001)
    probe_templates = [encode_template([s], now) for s in probes]
    variants: dict[str, int] = {}
    for s in pool:
        variants[s.variant] = variants.get(s.variant, 0) + 1
    sizes = [len(s.spans) for s in pool]
    return Workload(
        golden_path,
        len(cases),
        templates,
        by_size,
        probe_templates,
        variants,
        (min(sizes), sum(sizes) / len(sizes), max(sizes)),
    )
