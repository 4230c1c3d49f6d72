"""Judge pool benchmark (issue 30): a fake OpenAI-compatible judge on 127.0.0.1 answering every
call in ``--judge-seconds`` (1 s), an in-process Engine on its own SQLite file. Run by hand::

    .venv/bin/python -m benchmarks.judge                      # both parts, defaults below
    .venv/bin/python -m benchmarks.judge --sessions 640 --concurrency 32 --rate 100 --duration 10

Part 1, ``throughput``: ``--sessions`` sessions ended at once, every one judged
(``sample_rate`` 1), ``--concurrency`` calls in flight: judged sessions per second, from the first
session handed in to the last judge outcome recorded.

Part 2, ``latency``: sessions handed in at ``--rate`` per second for ``--duration`` seconds (half
of what the machine scores, so a queue of our own does not blur the judge's effect), once with the
judge off and once with it on at 10% sampling. Per run: the time from a session's last span
being committed to its deterministic verdict being stored (p50 / p99; sessions end explicitly,
so this includes ``trace_quiet``, 0.05 s here), the ingest rate reached, and the end-to-end time
from the first session to the last outcome recorded (judge outcomes included). Ratios: on / off.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from otel_eval import Engine, EngineSettings
from otel_eval.models import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent
from otel_eval.models.evalset import CriterionConfig, EvalConfig
from otel_eval.spans import SpanRecord

GOLDEN = EvalSet(
    eval_set_id="weather",
    eval_cases=[
        EvalCase(
            eval_id="tokyo",
            conversation=[
                Invocation(
                    invocation_id="t1",
                    user_content=MessageContent.user("What's the weather in Tokyo?"),
                    expected_tool_trajectory=[ExpectedToolCall(name="get_weather", args={"city": "Tokyo"})],
                    expected_final_response=MessageContent.assistant("It is 22°C and sunny in Tokyo."),
                )
            ],
        )
    ],
)

ANSWER = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "usage": {"total_tokens": 300},
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": json.dumps({"scores": {"correctness": {"score": 5, "reason": "right"}}}),
                },
            }
        ],
    }
).encode()


def fake_judge(seconds: float) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(seconds)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ANSWER)))
            self.end_headers()
            self.wfile.write(ANSWER)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def session(n: int) -> list[SpanRecord]:
    trace = f"{n + 1:032x}"
    common = {"session.id": f"s{n}"}
    root = SpanRecord(
        trace,
        f"{n + 1:016x}",
        None,
        "agent.invoke",
        1_000,
        9_000,
        attributes={
            **common,
            "openinference.span.kind": "AGENT",
            "input.value": "What's the weather in Tokyo?",
            "output.value": "It is 22°C and sunny in Tokyo.",
            "otel_eval.session.end": True,
        },
    )
    tool = SpanRecord(
        trace,
        f"{n + 1:08x}{0xABC:08x}",
        root.span_id,
        "get_weather",
        2_000,
        3_000,
        attributes={
            **common,
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": json.dumps({"city": "Tokyo"}),
            "input.mime_type": "application/json",
            "output.value": "22°C and sunny in Tokyo",
        },
    )
    return [root, tool]


def config(url: str | None, sample_rate: float) -> EvalConfig:
    base = EvalConfig.default().criteria
    criteria = {n: c for n, c in base.items() if n in ("trajectory_match", "response_match")}
    if url:
        criteria["llm_judge"] = CriterionConfig(
            threshold=0.7, options={"base_url": url, "sample_rate": sample_rate, "timeout": 30}
        )
    return EvalConfig(criteria=criteria)


class Clock:
    """When each session was committed, got its deterministic verdict, and its final outcome."""

    def __init__(self) -> None:
        self.committed: dict[str, float] = {}
        self.first: dict[str, float] = {}
        self.final: dict[str, float] = {}
        self.lock = threading.Lock()

    def stored(self, event) -> None:
        now = time.perf_counter()
        with self.lock:
            self.first.setdefault(event.session_id, now)
            if event.final:
                self.final[event.session_id] = now


def run(
    db: Path,
    url: str | None,
    sample_rate: float,
    concurrency: int,
    sessions: int,
    rate: float | None,
    deadline: float = 45.0,
):
    clock = Clock()
    settings = EngineSettings(
        config=config(url, sample_rate),
        trace_quiet=0.05,
        session_idle=60,
        judge_concurrency=concurrency,
        judge_deadline=deadline,
    )
    engine = Engine(db, golden=[GOLDEN], settings=settings)
    engine.on_evaluation(clock.stored, with_result=False)
    engine.start()
    started = time.perf_counter()
    try:
        for n in range(sessions):
            if rate:
                due = started + n / rate
                pause = due - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            engine.ingest(session(n))
            clock.committed[f"s{n}"] = time.perf_counter()
        ingest_seconds = time.perf_counter() - started
        deadline = time.monotonic() + 600
        while len(clock.final) < sessions and time.monotonic() < deadline:
            time.sleep(0.02)
        finished = max(clock.final.values()) if clock.final else time.perf_counter()
        judge = engine.stats().get("judge", {})
    finally:
        engine.close()
    latencies = sorted(clock.first[s] - clock.committed[s] for s in clock.first if s in clock.committed)
    return {
        "sessions": sessions,
        "final": len(clock.final),
        "ingest_per_s": sessions / ingest_seconds,
        "end_to_end_s": finished - started,
        "verdict_p50_ms": 1000 * statistics.median(latencies),
        "verdict_p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "judge_calls_ok": judge.get("calls", {}).get("ok", 0),
        "judge_calls": dict(judge.get("calls", {})),
        "last_outcome_after_last_verdict_s": (finished - max(clock.first.values())) if clock.first else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge-seconds", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sessions", type=int, default=640, help="sessions of the throughput part")
    parser.add_argument("--rate", type=float, default=100.0, help="sessions/s of the latency part")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of the latency part")
    parser.add_argument("--part", choices=("throughput", "latency", "both"), default="both")
    parser.add_argument("--sample-rate", type=float, default=0.1, help="judge sampling of the latency part")
    parser.add_argument(
        "--judge-deadline",
        type=float,
        default=45.0,
        help="EngineSettings.judge_deadline (with --judge-seconds 600: a judge that never answers)",
    )
    args = parser.parse_args()
    server, url = fake_judge(args.judge_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("throughput", "both"):
            r = run(Path(tmp) / "t.db", url, 1.0, args.concurrency, args.sessions, None)
            print(
                f"throughput: {r['final']}/{r['sessions']} sessions judged in {r['end_to_end_s']:.1f} s = "
                f"{r['final'] / r['end_to_end_s']:.1f} judged sessions/s with {args.concurrency} in flight "
                f"(judge answers in {args.judge_seconds:g} s; {r['judge_calls_ok']} calls); deterministic "
                f"verdict p50 {r['verdict_p50_ms']:.0f} ms, p99 {r['verdict_p99_ms']:.0f} ms"
            )
        if args.part in ("latency", "both"):
            n = int(args.rate * args.duration)
            off = run(Path(tmp) / "off.db", None, 0.0, args.concurrency, n, args.rate)
            on = run(Path(tmp) / "on.db", url, args.sample_rate, args.concurrency, n, args.rate, args.judge_deadline)
            for name, r in (("judge off", off), (f"judge on, {args.sample_rate:.0%} sampled", on)):
                print(
                    f"{name:>22}: {n} sessions at {args.rate:g}/s: ingest {r['ingest_per_s']:.0f} sessions/s, "
                    f"end -> deterministic verdict p50 {r['verdict_p50_ms']:.0f} ms p99 {r['verdict_p99_ms']:.0f} ms, "
                    f"end to end {r['end_to_end_s']:.1f} s, judge calls {r['judge_calls_ok']}"
                )
            print(
                f"judge on: calls {on['judge_calls']}; last judge outcome {on['last_outcome_after_last_verdict_s']:.1f} s "
                "after the last deterministic verdict"
            )
            print(
                f"ratios on/off: ingest {on['ingest_per_s'] / off['ingest_per_s']:.2f}, verdict p99 "
                f"{on['verdict_p99_ms'] / off['verdict_p99_ms']:.2f}, end to end "
                f"{on['end_to_end_s'] / off['end_to_end_s']:.2f} (the judged sessions' last answer comes "
                f"{args.judge_seconds:g} s after their verdict)"
            )
    server.shutdown()


if __name__ == "__main__":
    main()
