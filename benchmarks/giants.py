"""Head-of-line blocking benchmark (issue 34.2): do small sessions wait behind a giant one? Run by
hand, not in CI::

    .venv/bin/python -m benchmarks.giants                       # 3 rounds, 32,000-span giant, 200 small sessions
    .venv/bin/python -m benchmarks.giants --repeat 5 --score-workers 0    # the in-process way: scoring in a thread
    .venv/bin/python -m benchmarks.giants --turns 2000 --repeat 1         # a smaller giant, a quicker look

Each phase starts its own collector process (:class:`~benchmarks.ingest_parts.server_process.ServerProcess`:
``collector.config.load_config`` + ``collector.app.run``, i.e. ``otel-eval collect``) on free
ports with its own SQLite file, and talks to it over OTLP/gRPC with pre-encoded requests:

- ``alone``: ``--small`` sessions (``benchmarks.ingest``'s realistic 5-20-span sessions), one
  request each, ``--interval`` apart (50 ms: other agents' traffic goes on, so the collector's
  own process never counts its ingest as idle and leaves scoring to its worker); each ends
  explicitly (``otel_eval.session.end`` on its last turn's root span), so it ends
  ``--trace-quiet`` after its last span.
- ``giant``: first one session of ``--turns`` turns (four spans each: agent, LLM, tool, LLM;
  8,000 turns = 32,000 spans), sent in requests of whole turns (``--spans-per-request``), ended
  explicitly by its last span; then, as soon as its last request is acknowledged, the same small
  sessions as in ``alone``. They end just after the giant.

For every small session it reads from the database, once all are scored: ``end→stored``
(``evaluations.created_at`` − ``sessions.ended_ns``: from the moment the engine marked it ended
to its verdict being committed) and ``due→stored`` (from ``last span received + trace_quiet``,
when it was due to end: also counts a writer too busy to notice the end). It prints p50 / p99 /
max of each phase, the giant's own end→stored (how long it took to score and store), and the
giant phase over the alone phase measured in the same round. Rounds alternate the phases
(alone, giant, alone, giant, ...); the summary gives the medians over rounds (2 shared cores:
single runs swing).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .ingest_parts.agent_spans import SpanSpec, turn_builder
from .ingest_parts.golden import GoldenCase, follow_up, golden_evalset, make_golden_cases
from .ingest_parts.server_process import ServerProcess
from .ingest_parts.sessions import SessionSpec, make_sessions, session_id_of_index
from .ingest_parts.stats import percentile
from .ingest_parts.stored import scored_sessions, session_status_counts
from .ingest_parts.templates import TRACE_EXPORT_METHOD, RawTemplate, encode_template

#: The explicit end every session of this benchmark carries on its last turn's root span.
END_ATTRIBUTE = "otel_eval.session.end"
#: Index of the giant in its template (small sessions use 0..small-1).
GIANT_INDEX = 0xFFF0
#: Each request gets a new epoch (trace and session ids), across phases and rounds.
_EPOCHS = itertools.count(1)


# --------------------------------------------------------------------------------------------
# The workload (pure, seeded).
# --------------------------------------------------------------------------------------------


def ended_explicitly(session: SessionSpec) -> SessionSpec:
    """The session with ``otel_eval.session.end=true`` on its last turn's root span."""
    last = max(span.trace_no for span in session.spans)
    spans = [
        replace(span, attributes={**span.attributes, END_ATTRIBUTE: True})
        if span.trace_no == last and span.parent_no == 0
        else span
        for span in session.spans
    ]
    return replace(session, spans=spans)


def giant_session(cases: Sequence[GoldenCase], turns: int, seed: int, convention: str = "openinference") -> SessionSpec:
    """One conversation of ``turns`` turns, one tool call each (4 spans a turn): a golden case's
    turns, then follow-ups. Each LLM span carries the system prompt and the last two turns (a
    long conversation's framework trims its history; the whole of it would make span sizes grow
    with the turn number)."""
    rng = random.Random(seed)
    case = rng.choice([c for c in cases if all(len(t.steps) == 1 for t in c.turns)])
    plan = list(case.turns)
    while len(plan) < turns:
        plan.append(follow_up(rng, plan[-1]))
    session_id = session_id_of_index(GIANT_INDEX)
    build = turn_builder(convention)
    spans: list[SpanSpec] = []
    history: list[dict] = []
    offset = 0
    for trace_no, turn in enumerate(plan[:turns], start=1):
        turn_spans, offset = build(turn, trace_no, offset, session_id, "user-giant", history[-4:], False, rng)
        spans.extend(turn_spans)
        history += [{"role": "user", "content": turn.query}, {"role": "assistant", "content": turn.answer}]
        offset += 1_000_000
    return ended_explicitly(SessionSpec(GIANT_INDEX, convention, "exact", spans, turns))


def giant_requests(giant: SessionSpec, spans_per_request: int, now_ns: int) -> list[RawTemplate]:
    """The giant in requests of whole turns (a trace's spans in one request), every request with
    the same clock (one session, one timeline)."""
    by_trace: dict[int, list[SpanSpec]] = {}
    for span in giant.spans:
        by_trace.setdefault(span.trace_no, []).append(span)
    begin = now_ns - giant.duration
    requests, chunk = [], []
    for trace_no in sorted(by_trace):
        chunk.extend(by_trace[trace_no])
        if len(chunk) >= spans_per_request or trace_no == max(by_trace):
            part = replace(giant, spans=chunk)
            requests.append(encode_template([part], begin + part.duration))
            chunk = []
    return requests


@dataclass
class Workload:
    golden_path: Path
    giant: list[RawTemplate]
    giant_spans: int
    small: list[RawTemplate]
    small_spans: tuple[int, int]


def build_workload(args: argparse.Namespace, workdir: Path) -> Workload:
    cases = make_golden_cases(args.golden_cases, args.seed)
    golden_path = workdir / "golden.evalset.json"
    golden_path.write_text(json.dumps(golden_evalset(cases)))
    giant = giant_session(cases, args.turns, args.seed + 1, args.convention)
    now = time.time_ns()
    small = [ended_explicitly(s) for s in make_sessions(cases, args.small, args.seed + 2)]
    sizes = [len(s.spans) for s in small]
    return Workload(
        golden_path,
        giant_requests(giant, args.spans_per_request, now),
        len(giant.spans),
        [encode_template([s], now) for s in small],
        (min(sizes), max(sizes)),
    )


# --------------------------------------------------------------------------------------------
# One phase: a collector, what it is sent, what it stored.
# --------------------------------------------------------------------------------------------


def _send(export: Any, template: RawTemplate, epoch: int) -> None:
    import grpc

    for attempt in range(100):
        try:
            export(template.render(epoch), timeout=120)
            return
        except grpc.RpcError as exc:  # a full queue answers UNAVAILABLE: the exporter would retry
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise RuntimeError("the collector kept answering UNAVAILABLE")


def _counts(db: Path) -> dict[str, int]:
    return session_status_counts(db) if db.exists() else {}


@dataclass
class Phase:
    name: str
    small_end_to_stored_ms: list[float]
    small_due_to_stored_ms: list[float]
    giant_end_to_stored_ms: float | None
    in_flight_due_to_stored_ms: list[float]
    """due→stored of the small sessions due while the giant was in flight (ended, not stored)."""
    send_giant_s: float
    scored: int
    expected: int


def run_phase(name: str, with_giant: bool, args: argparse.Namespace, workdir: Path, workload: Workload) -> Phase:
    import grpc

    db = workdir / f"{name}.db"
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
            "600",
            "--log-level",
            "warning",
            *(["--score-workers", str(args.score_workers)] if args.score_workers is not None else []),
        ],
        workdir / f"{name}.log",
    )
    giant_epoch = next(_EPOCHS)
    small_epochs = [next(_EPOCHS) for _ in workload.small]
    send_giant = 0.0
    try:
        with grpc.insecure_channel(
            f"127.0.0.1:{server.ports['grpc']}", options=[("grpc.max_send_message_length", 64 << 20)]
        ) as channel:
            export = channel.unary_unary(TRACE_EXPORT_METHOD)
            if with_giant:
                began = time.monotonic()
                for template in workload.giant:
                    _send(export, template, giant_epoch)
                send_giant = time.monotonic() - began
            began = time.monotonic()
            for n, (template, epoch) in enumerate(zip(workload.small, small_epochs)):
                pause = began + n * args.interval - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                _send(export, template, epoch)
        expected = len(workload.small) + int(with_giant)
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            counts = _counts(db)
            if counts.get("scored", 0) >= expected and not counts.get("open") and not counts.get("ended"):
                break
            time.sleep(0.25)
    finally:
        server.stop()
    giant_id = session_id_of_index(GIANT_INDEX).replace("zzzzzzzz", f"{giant_epoch:08x}")
    sessions = scored_sessions(db)
    giant = [s for s in sessions if s.session_id == giant_id]
    small = [s for s in sessions if s.session_id != giant_id]
    quiet_ns = int(args.trace_quiet * 1e9)
    in_flight = [s for s in small if giant and giant[0].ended_ns <= s.last_received_ns + quiet_ns <= giant[0].stored_ns]
    return Phase(
        name=name,
        small_end_to_stored_ms=[(s.stored_ns - s.ended_ns) / 1e6 for s in small if s.ended_ns],
        small_due_to_stored_ms=[(s.stored_ns - s.last_received_ns - quiet_ns) / 1e6 for s in small],
        giant_end_to_stored_ms=(giant[0].stored_ns - giant[0].ended_ns) / 1e6 if giant else None,
        in_flight_due_to_stored_ms=[(s.stored_ns - s.last_received_ns - quiet_ns) / 1e6 for s in in_flight],
        send_giant_s=send_giant,
        scored=len(sessions),
        expected=len(workload.small) + int(with_giant),
    )


# --------------------------------------------------------------------------------------------
# Report.
# --------------------------------------------------------------------------------------------


def summary(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """(p50, p99, max), nearest rank."""
    return percentile(values, 50), percentile(values, 99), (max(values) if values else None)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def print_round(number: int, alone: Phase, giant: Phase) -> dict[str, float]:
    out: dict[str, float] = {}
    for phase in (alone, giant):
        e50, e99, emax = summary(phase.small_end_to_stored_ms)
        d50, d99, dmax = summary(phase.small_due_to_stored_ms)
        extra = ""
        if phase.giant_end_to_stored_ms is not None:
            f50, _, fmax = summary(phase.in_flight_due_to_stored_ms)
            extra = (
                f"; giant sent in {phase.send_giant_s:.1f} s, its end→stored "
                f"{_ms(phase.giant_end_to_stored_ms)} ms; {len(phase.in_flight_due_to_stored_ms)} small "
                f"due while it was in flight: due→stored p50 {_ms(f50)} max {_ms(fmax)} ms"
            )
        print(
            f"  round {number} {phase.name:>5}: {phase.scored}/{phase.expected} scored; small end→stored "
            f"p50 {_ms(e50)} p99 {_ms(e99)} max {_ms(emax)} ms; due→stored p50 {_ms(d50)} p99 {_ms(d99)} "
            f"max {_ms(dmax)} ms{extra}",
            flush=True,
        )
        for key, value in (("e50", e50), ("e99", e99), ("emax", emax), ("d50", d50), ("d99", d99), ("dmax", dmax)):
            out[f"{phase.name}_{key}"] = value if value is not None else float("nan")
    out["giant_ms"] = giant.giant_end_to_stored_ms or float("nan")
    out["in_flight_max"] = max(giant.in_flight_due_to_stored_ms, default=float("nan"))
    out["send_giant_s"] = giant.send_giant_s
    return out


def print_summary(rounds: list[dict[str, float]]) -> None:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    print(f"\nmedians over {len(rounds)} round(s), small sessions (ms):")
    print(f"{'':>22} {'p50':>8} {'p99':>8} {'max':>8}")
    for phase in ("alone", "giant"):
        for kind, label in (("e", "end→stored"), ("d", "due→stored")):
            print(
                f"{phase + ' ' + label:>22} {med(f'{phase}_{kind}50'):>8,.0f} {med(f'{phase}_{kind}99'):>8,.0f} "
                f"{med(f'{phase}_{kind}max'):>8,.0f}"
            )
    print(
        f"giant end→stored {med('giant_ms'):,.0f} ms (sent in {med('send_giant_s'):.1f} s); small sessions due "
        f"while it was in flight, due→stored max {med('in_flight_max'):,.0f} ms"
    )
    waits = [r["giant_dmax"] - r["alone_dmax"] for r in rounds]
    print(
        "wait behind the giant (giant − alone, due→stored max, per round): "
        + ", ".join(f"{w:,.0f}" for w in waits)
        + f" ms; median {statistics.median(waits):,.0f} ms"
    )
    print(
        "ratios giant/alone (median of rounds): end→stored p99 "
        f"{statistics.median(r['giant_e99'] / r['alone_e99'] for r in rounds):.2f}, due→stored max "
        f"{statistics.median(r['giant_dmax'] / r['alone_dmax'] for r in rounds):.2f}"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.giants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=8000, help="turns of the giant, 4 spans each (default 8000)")
    parser.add_argument(
        "--small",
        type=int,
        default=200,
        help="small sessions sent after it (default 200: at --interval 0.05, 10 s of them, past "
        "the giant's verdict, so those ending while it is scored, handed over and committed count)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=0.05,
        help="seconds between two small sessions (default 0.05: a steady trickle, so the collector "
        "never counts its ingest as idle; 0: all at once)",
    )
    parser.add_argument("--convention", choices=("openinference", "genai"), default="openinference")
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--golden-cases", type=int, default=1000)
    parser.add_argument("--trace-quiet", type=float, default=0.5, help="collector --trace-quiet (default 0.5 s)")
    parser.add_argument(
        "--score-workers",
        type=int,
        default=None,
        metavar="N",
        help="collector --score-workers (default: the collector's own; 0 scores in a thread, "
        "as EvalSpanProcessor does)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds, each alone then giant (default 3)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a phase waits for its verdicts")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (databases, logs)")
    parser.add_argument("--json", type=Path, help="also write every round's figures to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-giants-"))
    try:
        started = time.monotonic()
        workload = build_workload(args, workdir)
        size = sum(len(t.data) for t in workload.giant)
        print(
            f"workload: a giant of {workload.giant_spans:,} spans ({args.turns:,} turns, {args.convention}, "
            f"{size / workload.giant_spans / 1024:.1f} KiB/span encoded, {len(workload.giant)} requests), "
            f"{len(workload.small)} small sessions of {workload.small_spans[0]}-{workload.small_spans[1]} spans, "
            f"{args.golden_cases} golden cases; built in {time.monotonic() - started:.1f} s",
            flush=True,
        )
        rounds = []
        for number in range(1, max(1, args.repeat) + 1):
            folder = workdir / f"round-{number}"
            folder.mkdir()
            alone = run_phase("alone", False, args, folder, workload)
            giant = run_phase("giant", True, args, folder, workload)
            rounds.append(print_round(number, alone, giant))
        print_summary(rounds)
        if args.json:
            args.json.write_text(
                json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rounds": rounds}, indent=2)
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
