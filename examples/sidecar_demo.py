"""The sidecar path of the demo: the agent exports OTLP, a separate collector process evaluates.

The collector runs as ``python -m collector`` in a child process rather than as a ``Collector``
object in this one, because that is how it is deployed: the spans cross a real process
boundary through the standard exporters, the ports and database are what its startup banner
says, and it is stopped the way an orchestrator stops it (SIGTERM, drain, exit 0). It binds
port 0 on loopback and the demo reads the ports it got from the banner, so there is no window
in which a "free" port picked in advance could be taken by someone else.

The agent side is plain OpenTelemetry: a ``TracerProvider`` with a ``BatchSpanProcessor``
around ``OTLPSpanExporter`` — the gRPC one for some sessions, the HTTP/protobuf one for others.
Nothing of otel-eval is imported into the agent's tracing setup.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from rich.console import Console
from rich.markup import escape

from examples.demo import (
    FAIL,
    GOLDEN_FILES,
    UNMATCHED,
    Judgement,
    Scenario,
    check_expectations,
    print_report,
    print_session_run,
    print_verdict,
)
from examples.weather_agent import run_session

if TYPE_CHECKING:
    from otel_eval.read.evaluations import StoredEvaluation

REPO = Path(__file__).resolve().parents[1]
GRPC, HTTP = "grpc", "http"
TRANSPORT_TITLES = {GRPC: "OTLP/gRPC exporter", HTTP: "OTLP/HTTP (protobuf) exporter"}

#: (transport, scenario). Each transport gets a pass and a failure with a visible reason; some
#: sessions end explicitly (otel_eval.session.end on the last root span), the others by going idle.
SIDECAR_SCENARIOS: tuple[tuple[str, Scenario], ...] = (
    (GRPC, Scenario("tokyo", ("What's the weather in Tokyo?",), expect_case="weather_tokyo", mark_end=True)),
    (
        GRPC,
        Scenario("followup", ("What's the weather in Paris?", "What about tomorrow?"), expect_case="paris_followup"),
    ),
    (
        GRPC,
        Scenario(
            "tokyo",
            ("What's the weather in Tokyo?",),
            version="2.0.0",
            expect=FAIL,
            expect_case="weather_tokyo",
            expect_failing=("trajectory_match",),
            mark_end=True,
        ),
    ),
    (
        HTTP,
        Scenario(
            "top-users",
            ("Show me the top 10 users by revenue",),
            expect_case="top_users_by_revenue",
            user_id="user-bob",
            mark_end=True,
        ),
    ),
    (
        HTTP,
        Scenario(
            "top-users",
            ("Show me the top 10 users by revenue",),
            version="2.0.0",
            expect=FAIL,
            expect_case="top_users_by_revenue",
            expect_failing=("table_usage",),
            user_id="user-bob",
        ),
    ),
    (HTTP, Scenario("small-talk", ("Tell me a joke",), expect=UNMATCHED)),
)

#: ``2026-01-01 12:00:00,123 INFO otel_eval.collector: `` — the collector's logging format.
_LOG_PREFIX = re.compile(r"^\S+ \S+ (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


class CollectorStartError(RuntimeError):
    """The collector process exited or stayed silent before saying where it listens."""


class CollectorProcess:
    """``python -m collector`` as a child process; its stderr is kept line by line."""

    def __init__(self, db: Path, golden: Sequence[Path], trace_quiet: float, session_idle: float):
        self.command = [
            sys.executable,
            "-m",
            "collector",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--db",
            str(db),
            "--trace-quiet",
            f"{trace_quiet:g}",
            "--session-idle",
            f"{session_idle:g}",
            "--log-level",
            "info",
        ]
        for path in golden:
            self.command += ["--golden", str(path)]
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self.grpc_port = 0
        self.http_port = 0
        self._reader: threading.Thread | None = None

    def start(self, timeout: float = 20.0) -> CollectorProcess:
        env = dict(os.environ)
        # The collector package comes from this checkout even when the project is not installed.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO
        )
        self._reader = threading.Thread(target=self._read, name="collector-stderr", daemon=True)
        self._reader.start()
        try:
            self.grpc_port = int(self.wait_for(r"OTLP/gRPC listening on 127\.0\.0\.1:(\d+)", timeout).group(1))
            self.http_port = int(self.wait_for(r"OTLP/HTTP listening on http://127\.0\.0\.1:(\d+)/", timeout).group(1))
        except CollectorStartError:
            self.kill()
            raise
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            exited = self.proc is not None and self.proc.poll() is not None
            if (exited and not (self._reader and self._reader.is_alive())) or time.monotonic() > deadline:
                status = (
                    f"exited with status {self.proc.returncode}"
                    if exited and self.proc
                    else f"said nothing matching {pattern!r} within {timeout:g} s"
                )
                output = "\n".join(self.lines) or "(no output)"
                raise CollectorStartError(f"the collector ({' '.join(self.command)}) {status}:\n{output}")
            time.sleep(0.02)

    def messages(self) -> list[str]:
        """Its log lines without the timestamp and logger prefix."""
        return [_LOG_PREFIX.sub("", line) for line in self.lines]

    def metrics(self, timeout: float = 5.0) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=timeout) as response:
            return response.read().decode("utf-8")

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM (the collector drains, commits and exits 0), then the exit status; kill if it hangs."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._reader is not None:
            self._reader.join(5)
        return self.proc.returncode

    def kill(self) -> None:
        """For error paths only (a stuck start, an exception in the demo): the child must not outlive us."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def exporter_for(transport: str, collector: CollectorProcess) -> SpanExporter:
    """The stock OTLP exporter of ``transport``, pointed at the collector."""
    if transport == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=10)
    if transport == HTTP:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10)
    raise ValueError(f"unknown transport {transport!r}; expected {GRPC!r} or {HTTP!r}")


def scored_rows(db: Path, session_ids: set[str]) -> dict[str, StoredEvaluation]:
    """The current evaluation of each of ``session_ids`` that has one by now."""
    from otel_eval.read.evaluations import current_evaluations

    try:
        rows = current_evaluations([db])
    except sqlite3.OperationalError:  # a writer holds a lock for a moment; ask again on the next poll
        return {}
    return {row.session_id: row for row in rows if row.session_id in session_ids}


def run_sidecar_demo(
    db: Path,
    console: Console,
    scenarios: Sequence[tuple[str, Scenario]] = SIDECAR_SCENARIOS,
    golden: Sequence[Path] = tuple(GOLDEN_FILES),
    trace_quiet: float = 0.3,
    session_idle: float = 1.0,
    wait_scored: float = 15.0,
) -> int:
    """Start the collector on ``db``, run ``scenarios`` through the OTLP exporters, wait until every
    session is scored, print the report, stop the collector. 0 when every session was judged as
    expected and the collector exited cleanly."""
    run_id = uuid.uuid4().hex[:6]
    by_session = {f"sidecar-{transport}-{s.name}-v{s.version}-{run_id}": (transport, s) for transport, s in scenarios}
    expected = {sid: scenario for sid, (_, scenario) in by_session.items()}

    console.print(f"[bold]starting the collector[/]: python -m collector --db {db} (ports chosen by the OS)")
    collector = CollectorProcess(db, golden, trace_quiet, session_idle)
    try:
        collector.start()
    except CollectorStartError as exc:
        console.print(str(exc), markup=False, style="red")
        return 1
    try:
        banner_lines = len(collector.lines)
        for message in collector.messages():
            console.print(f"  [dim]collector:[/] {escape(message)}", highlight=False)

        for transport in (GRPC, HTTP):
            sessions = {sid: s for sid, (t, s) in by_session.items() if t == transport}
            if not sessions:
                continue
            port = collector.grpc_port if transport == GRPC else collector.http_port
            console.print(f"[bold]agent → {TRANSPORT_TITLES[transport]} → 127.0.0.1:{port}[/] (BatchSpanProcessor)")
            provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
            provider.add_span_processor(
                BatchSpanProcessor(exporter_for(transport, collector), schedule_delay_millis=200)
            )
            for session_id, scenario in sessions.items():
                outcome = run_session(
                    provider,
                    session_id,
                    list(scenario.turns),
                    version=scenario.version,
                    user_id=scenario.user_id,
                    mark_end=scenario.mark_end,
                )
                print_session_run(console, session_id, outcome)
            if not provider.force_flush(timeout_millis=10_000):
                console.print(f"[red]the {transport} exporter did not finish sending within 10 s[/]")
            provider.shutdown()

        console.print(
            f"[bold]scored by the collector[/] (explicit end after {trace_quiet:g} s quiet, "
            f"otherwise {session_idle:g} s idle; polling {db.name})"
        )
        judged: dict[str, Judgement] = {}
        deadline = time.monotonic() + wait_scored
        while len(judged) < len(by_session) and time.monotonic() < deadline:
            for session_id, row in scored_rows(db, set(by_session) - set(judged)).items():
                judged[session_id] = Judgement.of_row(row)
                print_verdict(console, session_id, judged[session_id])
            if len(judged) < len(by_session):
                time.sleep(0.1)
        missing = len(by_session) - len(judged)
        if missing:
            console.print(f"[red]{missing} session(s) not scored within {wait_scored:g} s[/]")

        console.print("[bold]collector /metrics[/] (export requests by protocol)")
        try:
            for line in collector.metrics().splitlines():
                if line.startswith(
                    (
                        "otel_eval_export_requests_total",
                        "otel_eval_spans_stored_total",
                        "otel_eval_sessions_scored_total",
                    )
                ):
                    console.print(f"  {line}", highlight=False)
        except OSError as exc:
            console.print(f"  /metrics unreachable: {exc}", markup=False, style="red")

        console.print("[bold]stopping the collector[/] (SIGTERM: drain, commit, exit)")
        seen = len(collector.lines)
        status = collector.stop()
        # Its shutdown lines, and any warning or error it logged while the agent ran.
        for index, (line, message) in enumerate(zip(collector.lines, collector.messages())):
            if index >= seen or (index >= banner_lines and re.search(r" (WARNING|ERROR|CRITICAL) ", line)):
                console.print(f"  [dim]collector:[/] {escape(message)}", highlight=False)
        console.print(f"  collector exited with status {status}")
    finally:
        collector.kill()

    console.rule(f"[bold]report from the collector's database {db}", style="dim")
    failures = [sid for sid in by_session if sid in judged and judged[sid].verdict == FAIL]
    print_report(db, console, session_ids=by_session, details_for=failures[:1])
    expectations_met = check_expectations(console, expected, judged, db)
    return expectations_met if status == 0 else 1
