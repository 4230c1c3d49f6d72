"""In-process benchmark: what ``EvalSpanProcessor`` costs an instrumented agent, next to the
SDK's own ``BatchSpanProcessor``. Run by hand, not in CI::

    .venv/bin/python -m benchmarks.inprocess                              # both workloads, 5 rounds
    .venv/bin/python -m benchmarks.inprocess --workload loop --spans 20000 --repeat 7
    .venv/bin/python -m benchmarks.inprocess --agent-rate 5000                # paced, in bursts

Two agents, each one thread:

``loop``    issue 34's loop: ``start_span``, ten ``set_attribute`` (one a 2 KiB prompt, each span's
            own; one the session id, ten spans a session), ``end``; every span a trace of its own.
``replay``  the ingest benchmark's sessions (OpenInference and GenAI attributes, ~1.5 KB prompts),
            nested as an agent nests them: each trace's root is started, its steps (LLM and tool
            calls) start and end as its children, then the root ends.

Per setup and run:

``wall``         µs per span of the agent's loop by the wall clock: what the agent waits for,
                 GIL waits and the cyclic GC passes it runs included (paced, ``--agent-rate``:
                 its bursts, not the sleeps between them). Target (issue 34.1): ``eval`` ≤ 1.2x
                 ``batch+noop``.
``agent CPU``    µs per span of the agent thread's CPU (``time.thread_time``): blind to GIL waits.
``flushed``      process CPU µs per span from the first span until every span is stored
                 (``force_flush``), worker processes included. Target: ≤ 2x ``batch+noop``.
``scored``       the same until the processor's shutdown has stored and scored every session
                 (``eval`` only does that); issue 11 held it against ``batch+otlp`` (≤ 2x).

Setups: ``none`` (no processor), ``batch+noop`` (BatchSpanProcessor, an exporter that drops
every span), ``batch+otlp`` (BatchSpanProcessor + the OTLP/HTTP exporter, sending to a sink in a
separate process on 127.0.0.1 that answers 200), ``eval`` (EvalSpanProcessor, a 10,000-case
golden set, its own SQLite file: spans converted and sessions scored in threads of the agent's
process), ``eval+procs`` (the same with ``score_workers=--score-workers``: the user allows worker
processes, so spans are converted in a converter process and sessions scored in a score worker
process). Every setup starts from a collected heap, each is warmed up (one span, flushed: a
worker process has started), and setups take turns for ``--repeat`` rounds; the report gives
medians, each round's ratio to ``batch+noop`` of the same round, and their range (the noise).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import ingest as load

SINK = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

#: Seconds between the bursts of a paced agent (``--agent-rate``): an agent step's spans end together.
PACE_TICK = 0.01
#: Spans a session of the ``loop`` agent.
LOOP_SESSION_SPANS = 10
#: The prompt each span of the ``loop`` agent carries (its own copy, numbered: a real agent's prompts differ).
PROMPT_BYTES = 2048


def _replay_spans(count: int, seed: int, cases: Any) -> list[Any]:
    """(name, attributes, is_root) of ``count`` spans from generated sessions, in each trace the root first."""
    out: list[Any] = []
    index = 0
    rng = random.Random(seed + 1)
    while len(out) < count:
        for session in load.make_sessions(cases, 200, seed + 2 + index):
            session_id = f"inproc-{rng.getrandbits(64):016x}"
            for spec in session.spans:
                attributes = dict(spec.attributes)
                for key in load.SESSION_KEYS:
                    if key in attributes:
                        attributes[key] = session_id
                out.append((spec.name, attributes, spec.parent_no == 0))
        index += 1
    return out[:count]


def _loop_spans(count: int, seed: int) -> list[tuple[str, str]]:
    """(session id, prompt) of each span of the ``loop`` agent, made before the timed loop."""
    rng = random.Random(seed)
    words = "the weather in Tokyo today is sunny with a light breeze and a chance of rain later".split()
    text = " ".join(rng.choice(words) for _ in range(PROMPT_BYTES // 3))[: PROMPT_BYTES - 16]
    sessions = [f"loop-{rng.getrandbits(64):016x}" for _ in range(count // LOOP_SESSION_SPANS + 1)]
    return [(sessions[i // LOOP_SESSION_SPANS], f"{i:>15} {text}") for i in range(count)]


def _issue_loop(tracer: Any, spans: Sequence[tuple[str, str]], first: int = 0) -> None:
    for i, (session_id, prompt) in enumerate(spans, first):
        span = tracer.start_span("chat gpt-4o")
        span.set_attribute("session.id", session_id)
        span.set_attribute("gen_ai.system", "openai")
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "gpt-4o")
        span.set_attribute("gen_ai.prompt", prompt)
        span.set_attribute("gen_ai.completion", "It is 22°C and sunny in Tokyo.")
        span.set_attribute("gen_ai.usage.input_tokens", 512)
        span.set_attribute("gen_ai.usage.output_tokens", 12)
        span.set_attribute("gen_ai.response.finish_reasons", ("stop",))
        span.set_attribute("llm.turn", i)
        span.end()


class Replay:
    """The replay agent: as an agent nests them, a trace's root stays open while its steps (LLM
    and tool calls, children of the root) start and end, and ends after them."""

    def __init__(self, tracer: Any):
        self.tracer = tracer
        self.root: Any = None
        self.inside: Any = None

    def __call__(self, spans: Sequence[Any]) -> None:
        from opentelemetry.trace import set_span_in_context

        for name, attributes, is_root in spans:
            if is_root:
                self.end()
                self.root = self.tracer.start_span(name, attributes=attributes)
                self.inside = set_span_in_context(self.root)
            else:
                self.tracer.start_span(name, attributes=attributes, context=self.inside).end()

    def end(self) -> None:
        if self.root is not None:
            self.root.end()
            self.root = None


def _agent(workload: str, tracer: Any, spans: Sequence[Any], rate: float) -> float:
    """Run the agent; returns the seconds its thread spent ending spans, by the wall clock. At
    ``rate`` > 0 spans a second it ends them in bursts every :data:`PACE_TICK` s and sleeps in
    between, as an agent between model calls; its sleeps are not counted."""
    replay = Replay(tracer)

    def burst(at: int, size: int) -> None:
        if workload == "loop":
            _issue_loop(tracer, spans[at : at + size], at)
        else:
            replay(spans[at : at + size])

    if rate <= 0:
        started = time.perf_counter()
        burst(0, len(spans))
        replay.end()
        return time.perf_counter() - started
    size = max(1, round(rate * PACE_TICK))
    busy = 0.0
    began = time.monotonic()
    for at in range(0, len(spans), size):
        started = time.perf_counter()
        burst(at, size)
        if at + size >= len(spans):
            replay.end()
        busy += time.perf_counter() - started
        wait = began + (at + size) / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    return busy


def _live_children_cpu(pids: Sequence[int]) -> float:
    """CPU seconds so far of child processes still running (a converter or score worker process)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone: once reaped, RUSAGE_CHILDREN has it
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _wait_started(pids: Sequence[int], timeout: float = 60.0) -> None:
    """Until the worker processes have started (imports, a score worker's golden index): idle,
    their CPU still for 0.2 s. A start is the processor's, once; not the agent's loop."""
    deadline = time.monotonic() + timeout
    last = -1.0
    while time.monotonic() < deadline:
        now = _live_children_cpu(pids)
        if now == last:
            return
        last = now
        time.sleep(0.2)


def _process_cpu(pids: Sequence[int] = ()) -> float:
    """CPU seconds of this process, of its children that have exited and been reaped, and of
    ``pids`` still running (the HTTP sink of ``batch+otlp`` is neither: it is the receiver)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + _live_children_cpu(pids)


class Setup:
    """What a setup adds to the provider: ``flush()`` stores every span, ``finish()`` stops it
    (EvalSpanProcessor: ends, scores and stores every session), ``pids()`` its worker processes."""

    def __init__(
        self,
        processor: Any = None,
        flush: Callable[[], Any] = lambda: None,
        finish: Callable[[], Any] = lambda: None,
        pids: Callable[[], list[int]] = lambda: [],
    ):
        self.processor, self.flush, self.finish, self.pids = processor, flush, finish, pids


def _run(workload: str, spans: Sequence[Any], make: Callable[[Any], Setup], rate: float = 0.0) -> dict[str, float]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create(load.RESOURCE_ATTRIBUTES))
    setup = make(provider)
    tracer = provider.get_tracer("benchmarks.inprocess")
    tracer.start_span("warm-up").end()  # every setup alike; an EvalSpanProcessor's worker processes answer once
    setup.flush()
    pids = setup.pids()
    _wait_started(pids)
    gc.collect()  # no setup pays for the garbage of the one before
    process_start = _process_cpu(pids)
    thread_start = time.thread_time()
    wall = _agent(workload, tracer, spans, rate)
    thread_cpu = time.thread_time() - thread_start
    setup.flush()
    flushed = _process_cpu(pids) - process_start
    setup.finish()
    provider.shutdown()
    scored = _process_cpu(pids) - process_start
    n = len(spans) / 1e6  # everything in µs a span
    return {"wall": wall / n, "agent_cpu": thread_cpu / n, "flushed": flushed / n, "scored": scored / n}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.inprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("loop", "replay", "both"), default="both")
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--golden-cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="rounds, setups taking turns in each; medians reported")
    parser.add_argument(
        "--score-workers",
        type=int,
        default=1,
        metavar="N",
        help="score worker processes of the eval+procs setup (0: leave that setup out)",
    )
    parser.add_argument("--setups", help="comma-separated subset of the setups (batch+noop is always run)")
    parser.add_argument(
        "--agent-rate",
        type=float,
        default=0.0,
        metavar="SPANS_PER_S",
        help="pace the agent at this many spans a second, in bursts every 10 ms (default 0: a tight "
        "loop); wall then counts the bursts only, not the sleeps between them",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from otel_eval import EvalSpanProcessor
    from otel_eval.engine import EngineSettings

    class NoopExporter(SpanExporter):
        """Drops every span; counts them, so a run whose processor dropped some is told."""

        exported = 0

        def export(self, spans: Any) -> SpanExportResult:
            NoopExporter.exported += len(spans)
            return SpanExportResult.SUCCESS

    cases = load.make_golden_cases(args.golden_cases, args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="otel-eval-inprocess-"))
    golden = workdir / "golden.evalset.json"
    golden.write_text(json.dumps(load.golden_evalset(cases)))
    workloads = ["loop", "replay"] if args.workload == "both" else [args.workload]
    spans = {"loop": _loop_spans(args.spans, args.seed), "replay": _replay_spans(args.spans, args.seed, cases)}
    # The benchmark's own data (the workloads, the generated cases) is not the agent's heap: out
    # of the cyclic GC's way, so a full collection during a run walks what the run made, the
    # processors' objects and an otel-eval engine's golden index, as in a small agent. Left in,
    # it made every full collection of a BatchSpanProcessor run (whose queued spans bring them
    # on) walk ~100,000 more objects: 40-46 µs a span instead of 27-33.
    del cases
    gc.collect()
    gc.freeze()
    sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    assert sink.stdout is not None
    port = int(sink.stdout.readline())

    def none(provider: Any) -> Setup:
        return Setup()

    def batch_noop(provider: Any) -> Setup:
        # The SDK's defaults, as an agent runs it (a queue of 2,048 spans, batches of 512). A
        # queue as long as the run costs the agent's thread more here (27-28 against 40-44 µs a
        # span), and the defaults drop none of this benchmark's spans: each run checks it.
        processor = BatchSpanProcessor(NoopExporter())
        provider.add_span_processor(processor)
        return Setup(processor, processor.force_flush)

    def batch_otlp(provider: Any) -> Setup:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # A queue as long as the run, as issue 11 measured it: the exporter is slower than the
        # loop, and the defaults would drop spans, which would flatter it.
        processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"), max_queue_size=args.spans + 1
        )
        provider.add_span_processor(processor)
        return Setup(processor, processor.force_flush)

    def evaluating(score_workers: int) -> Callable[[Any], Setup]:
        def setup(provider: Any) -> Setup:
            processor = EvalSpanProcessor(
                db=workdir / f"eval-{time.monotonic_ns()}.db",
                golden=[golden],
                trace_quiet=3600,
                session_idle=3600,
                settings=EngineSettings(score_workers=score_workers),
            )
            provider.add_span_processor(processor)

            def pids() -> list[int]:
                converter = getattr(processor, "converter_pid", lambda: None)()  # None before issue 34.1
                return [pid for pid in [converter, *processor.engine.worker_pids()] if pid]

            return Setup(processor, processor.force_flush, processor.shutdown, pids)

        return setup

    setups: dict[str, Callable[[Any], Setup]] = {
        "none": none,
        "batch+noop": batch_noop,
        "batch+otlp": batch_otlp,
        "eval": evaluating(0),
    }
    if args.score_workers:
        setups["eval+procs"] = evaluating(args.score_workers)
    if args.setups:
        wanted = {"batch+noop", *args.setups.split(",")}
        setups = {name: make for name, make in setups.items() if name in wanted}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {w: {name: [] for name in setups} for w in workloads}
    load_before = os.getloadavg()
    try:
        _run("loop", spans["loop"][:2000], batch_noop)  # warm-up: imports, caches
        for round_ in range(args.repeat):
            for workload in workloads:
                for name, make in setups.items():
                    exported = NoopExporter.exported
                    measured = _run(workload, spans[workload], make, args.agent_rate)
                    if name == "batch+noop" and NoopExporter.exported - exported < len(spans[workload]) + 1:
                        print(
                            f"  (batch+noop dropped {len(spans[workload]) + 1 - NoopExporter.exported + exported} "
                            "spans in this run)",
                            file=sys.stderr,
                        )
                    runs[workload][name].append(measured)
                    print(
                        f"  round {round_ + 1} {workload} {name}: "
                        + ", ".join(f"{k} {v:.1f}" for k, v in measured.items())
                        + " us/span",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        sink.kill()
        sink.wait()
        shutil.rmtree(workdir, ignore_errors=True)  # the golden set and a database per eval run
    load_after = os.getloadavg()
    results: dict[str, Any] = {
        "spans": args.spans,
        "repeat": args.repeat,
        "load_average": [load_before, load_after],
        "runs": runs,
    }
    pace = f"paced at {args.agent_rate:g} spans/s, wall counting its bursts" if args.agent_rate > 0 else "a tight loop"
    print(
        f"{args.spans} spans a run, one agent thread ({pace}), {args.repeat} rounds (setups in turn); "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    for workload in workloads:
        results[workload] = _report(workload, runs[workload])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def _report(workload: str, runs: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Print one workload's table (medians, µs a span) and its ratios; returns them."""
    base = runs["batch+noop"]
    out: dict[str, Any] = {}
    print(f"\n{workload}: medians, µs a span (ratios: to batch+noop's median; [range of the rounds' own ratios])")
    print(f"{'setup':<11} {'wall':>22} {'agent CPU':>10} {'flushed':>22} {'scored':>9}")
    for name, measured in runs.items():
        row: dict[str, Any] = {}
        cells = []
        for key in ("wall", "agent_cpu", "flushed", "scored"):
            median = statistics.median(m[key] for m in measured)
            row[key] = median
            if key in ("wall", "flushed"):
                per_round = [m[key] / b[key] for m, b in zip(measured, base)]
                ratio = median / statistics.median(b[key] for b in base)
                row[key + "_ratio"] = ratio
                row[key + "_round_ratios"] = per_round
                cells.append(f"{median:7.1f} {ratio:4.2f}x [{min(per_round):4.2f}-{max(per_round):4.2f}]")
            else:
                cells.append(f"{median:{10 if key == 'agent_cpu' else 9}.1f}")
        out[name] = row
        print(f"{name:<11} {cells[0]:>22} {cells[1]:>10} {cells[2]:>22} {cells[3]:>9}")
    for name in (n for n in runs if n.startswith("eval")):
        row = out[name]
        print(
            f"{name}: wall {row['wall_ratio']:.2f}x batch+noop (target <= 1.2x), process CPU until stored "
            f"{row['flushed_ratio']:.2f}x (target <= 2x)",
            end="",
        )
        if "batch+otlp" in out:
            print(f"; until scored {row['scored'] / out['batch+otlp']['scored']:.2f}x batch+otlp (issue 11: <= 2x)")
        else:
            print()
    return out


if __name__ == "__main__":
    raise SystemExit(main())
