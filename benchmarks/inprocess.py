"""In-process benchmark: what ``EvalSpanProcessor`` costs an instrumented agent, next to the
SDK's own ``BatchSpanProcessor``. Run by hand, not in CI::

    .venv/bin/python -m benchmarks.inprocess                  # 20,000 spans per setup
    .venv/bin/python -m benchmarks.inprocess --spans 50000 --repeat 5 --score-workers 1

The "agent" replays the ingest benchmark's sessions (same generator: OpenInference and GenAI
attributes, ~1.5 KB prompts) through a real ``TracerProvider``, in one thread, nested as an agent
nests them: each trace's root is started, its steps (LLM and tool calls) start and end as its
children, then the root ends. Per setup it reports

``agent thread``  CPU µs per span of that thread (``time.thread_time``), minus the same loop with
                  no processor at all: what the processor's ``on_end`` costs the agent.
``process``       CPU µs per span of the whole process from the first span until everything is
                  flushed (and, for EvalSpanProcessor, every session stored and scored), score
                  worker processes included.

Every setup starts from a collected heap and runs ``--repeat`` times, the setups taking turns;
the best run of each counts. One run alone says little: a full pass of the cyclic GC (~0.1 s
with a few hundred thousand objects alive) lands on whichever thread allocates when it is due,
so a single run's agent thread may or may not pay one, whatever the setup.

Setups: ``none`` (no processor), ``batch+noop`` (BatchSpanProcessor, an exporter that does
nothing), ``batch+otlp`` (BatchSpanProcessor + the OTLP/HTTP exporter, sending to a sink in a
separate process on 127.0.0.1 that answers 200), ``eval`` (EvalSpanProcessor, a 10,000-case
golden set, its own SQLite file). Targets (issue 11): agent thread ≤ 1.2x ``batch+noop``, process
≤ 2x ``batch+otlp``. CPU time, not wall time, so a busy neighbour skews the numbers less.
"""

from __future__ import annotations

import argparse
import json
import gc
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

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


def _agent_spans(count: int, seed: int, golden_cases: int) -> tuple[list[Any], Path]:
    """(name, attributes, is_root) of ``count`` spans from generated sessions, in each trace the
    root first, and the golden file."""
    cases = load.make_golden_cases(golden_cases, seed)
    golden = Path(tempfile.mkdtemp(prefix="otel-eval-inprocess-")) / "golden.evalset.json"
    golden.write_text(json.dumps(load.golden_evalset(cases)))
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
    return out[:count], golden


#: Seconds between the bursts of a paced agent (``--agent-rate``): an agent step's spans end together.
PACE_TICK = 0.01


def _process_cpu() -> float:
    """CPU seconds of this process and of its children that have exited (score worker
    processes exit with their engine, inside the run; the HTTP sink is reaped only at the end)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _run(spans: Sequence[Any], add_processor: Callable[[Any], Optional[Callable[[], None]]],
         rate: float = 0.0) -> tuple[float, float]:
    """(agent thread CPU s, process CPU s until flushed) for one setup; ``rate`` > 0 paces the
    agent at that many spans per second (a burst every ``PACE_TICK`` s), 0 runs a tight loop."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from opentelemetry.trace import set_span_in_context

    provider = TracerProvider(resource=Resource.create(load.RESOURCE_ATTRIBUTES))
    finish = add_processor(provider)
    tracer = provider.get_tracer("benchmarks.inprocess")
    # As an agent nests them: a trace's root stays open while its steps (LLM and tool calls,
    # children of the root) start and end, and ends after them.
    root: Any = None
    inside: Any = None

    def replay(name: str, attributes: dict, is_root: bool) -> None:
        nonlocal root, inside
        if is_root:
            if root is not None:
                root.end()
            root = tracer.start_span(name, attributes=attributes)
            inside = set_span_in_context(root)
        else:
            tracer.start_span(name, attributes=attributes, context=inside).end()

    gc.collect()  # no setup pays for the garbage of the one before
    process_start = _process_cpu()
    thread_start = time.thread_time()
    if rate > 0:
        burst = max(1, round(rate * PACE_TICK))
        began = time.monotonic()
        for at in range(0, len(spans), burst):
            for span in spans[at:at + burst]:
                replay(*span)
            wait = began + (at + burst) / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # sleeping costs the thread no CPU: only the spans are counted
    else:
        for span in spans:
            replay(*span)
    if root is not None:
        root.end()
    thread_cpu = time.thread_time() - thread_start
    if finish is not None:
        finish()
    provider.shutdown()
    return thread_cpu, _process_cpu() - process_start


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.inprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--golden-cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each setup, taking turns; the best counts")
    parser.add_argument("--score-workers", type=int, default=0, metavar="N",
                        help="also measure EvalSpanProcessor scoring in N worker processes (their CPU counted)")
    parser.add_argument("--agent-rate", type=float, default=0.0, metavar="SPANS_PER_S",
                        help="pace the agent at this many spans per second, in bursts every 10 ms (default 0: a "
                             "tight loop, which outruns any processor that does more than queue the span)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    spans, golden = _agent_spans(args.spans, args.seed, args.golden_cases)
    sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    assert sink.stdout is not None
    port = int(sink.stdout.readline())
    workdir = golden.parent

    def none(provider: Any) -> None:
        return None

    def batch_noop(provider: Any) -> Callable[[], None]:
        processor = BatchSpanProcessor(NoopExporter(), max_queue_size=len(spans))  # no drops: they would flatter it
        provider.add_span_processor(processor)
        return lambda: processor.force_flush()

    def batch_otlp(provider: Any) -> Callable[[], None]:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"),
                                       max_queue_size=len(spans))
        provider.add_span_processor(processor)
        return lambda: processor.force_flush()

    def evaluating(score_workers: int) -> Callable[[Any], Callable[[], None]]:
        def setup(provider: Any) -> Callable[[], None]:
            from otel_eval import EvalSpanProcessor
            from otel_eval.engine import EngineSettings

            db = workdir / f"eval-{time.monotonic_ns()}.db"
            processor = EvalSpanProcessor(db=db, golden=[golden], trace_quiet=3600, session_idle=3600,
                                          settings=EngineSettings(score_workers=score_workers))
            provider.add_span_processor(processor)
            return processor.shutdown  # commits, ends every session and scores it
        return setup

    setups: dict[str, Callable[[Any], Optional[Callable[[], None]]]] = {
        "none": none, "batch+noop": batch_noop, "batch+otlp": batch_otlp, "eval": evaluating(0)}
    if args.score_workers:
        setups[f"eval+{args.score_workers}proc"] = evaluating(args.score_workers)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
    try:
        _run(spans[: min(2000, len(spans))], batch_noop)  # warm-up: imports, caches
        for round_ in range(args.repeat):
            for name, setup in setups.items():
                thread_cpu, process_cpu = _run(spans, setup, args.agent_rate)
                runs[name].append((thread_cpu, process_cpu))
                print(f"  run {round_ + 1} {name}: agent thread {thread_cpu / len(spans) * 1e6:.1f} us/span, "
                      f"process {process_cpu / len(spans) * 1e6:.1f} us/span", file=sys.stderr)
    finally:
        sink.kill()
        sink.wait()
        shutil.rmtree(workdir, ignore_errors=True)  # the golden set and a database per eval run
    n = len(spans)
    # The best run of each: noise (neighbours, a GC pass landing on one run) only ever adds.
    results: dict[str, Any] = {"spans": n, "repeat": args.repeat, "runs": runs}
    for name, measured in runs.items():
        results[name] = {"thread_cpu": min(t for t, _ in measured), "process_cpu": min(p for _, p in measured)}
    base = results["none"]["thread_cpu"]
    costed = [name for name in setups if name != "none"]
    on_end = {k: (results[k]["thread_cpu"] - base) / n * 1e6 for k in costed}
    pace = f"paced at {args.agent_rate:g} spans/s" if args.agent_rate > 0 else "a tight loop"
    print(f"{n} spans, one agent thread ({pace}), CPU µs per span, best of {args.repeat} runs")
    print(f"{'setup':<12} {'agent thread':>13} {'on_end cost':>12} {'process':>9}")
    for k in setups:
        r = results[k]
        cost = f"{on_end[k]:12.1f}" if k in on_end else f"{'-':>12}"
        print(f"{k:<12} {r['thread_cpu'] / n * 1e6:13.1f} {cost} {r['process_cpu'] / n * 1e6:9.1f}")
    for k in (name for name in setups if name.startswith("eval")):
        # The best run says whether a full GC pass could be dodged; the median, what one costs.
        median = statistics.median(t for t, _ in runs[k]) / statistics.median(t for t, _ in runs["batch+noop"])
        print(f"{k} / batch+noop, agent thread: {results[k]['thread_cpu'] / results['batch+noop']['thread_cpu']:.2f}x "
              f"whole thread, {on_end[k] / max(on_end['batch+noop'], 1e-9):.2f}x on_end cost (target <= 1.2x); "
              f"median run {median:.2f}x")
        process_median = statistics.median(p for _, p in runs[k]) / statistics.median(p for _, p in runs["batch+otlp"])
        print(f"{k} / batch+otlp, process: {results[k]['process_cpu'] / results['batch+otlp']['process_cpu']:.2f}x "
              f"(target <= 2x; eval also stores and scores every session); median run {process_median:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
