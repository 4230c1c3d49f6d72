"""The collector as a process: startup banner, SIGTERM drain, kill -9 without losing acknowledged spans."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.conftest import ids_of, sdk_spans, stored_span_ids
from tests.polling import wait_until

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


class CollectorProcess:
    """``python -m collector`` on ephemeral ports; the ports are read from its startup banner."""

    def __init__(self, *args: str):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "collector", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=REPO,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.http_port = int(self.wait_for(r"OTLP/HTTP listening on http://127\.0\.0\.1:(\d+)/v1/traces").group(1))
        self.grpc_port = int(self.wait_for(r"OTLP/gRPC listening on 127\.0\.0\.1:(\d+)").group(1))

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match:
        def matching_line() -> re.Match | None:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            if self.proc.poll() is not None and not self._reader.is_alive():  # no more lines will come
                raise AssertionError(f"no line matching {pattern!r} in collector output:\n" + "\n".join(self.lines))
            return None

        return wait_until(
            matching_line,
            timeout=timeout,
            what=lambda: f"a line matching {pattern!r} in collector output:\n" + "\n".join(self.lines),
        )

    @property
    def traces_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/v1/traces"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)


@pytest.fixture
def processes():
    started: list[CollectorProcess] = []

    def start(*args: str) -> CollectorProcess:
        process = CollectorProcess(*args)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait(10)


def session_status(db: Path, session_id: str) -> str | None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT status FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        return row[0] if row else None
    finally:
        conn.close()


def test_banner_says_where_it_listens_what_it_writes_and_the_timing(processes, tmp_path):
    db = tmp_path / "eval.db"
    collector = processes("--db", str(db), "--trace-quiet", "0.2", "--session-idle", "0.5")
    collector.wait_for(re.escape(f"database: {db}"))
    collector.wait_for(r"golden set: none")
    collector.wait_for(r"a trace is complete 0\.2 s after its root span ends .* a session ends 0\.5 s after")
    assert collector.stop() == 0


def test_sigterm_commits_everything_and_a_restart_resumes_the_open_session(processes, tmp_path):
    db = tmp_path / "eval.db"
    first = processes("--db", str(db), "--trace-quiet", "0.2", "--session-idle", "60")
    spans = sdk_spans(traces=2, session_id="conversation-1")
    exporter = OTLPSpanExporter(endpoint=first.traces_url, timeout=10)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()

    assert first.stop(signal.SIGTERM) == 0
    first.wait_for(r"SIGTERM received")
    assert stored_span_ids(db) == ids_of(spans)
    assert session_status(db, "conversation-1") == "open"  # not scored early: it may continue after restart

    second = processes("--db", str(db), "--trace-quiet", "0.2", "--session-idle", "0.3")
    wait_until(
        lambda: session_status(db, "conversation-1") == "scored",
        timeout=15,
        what="the resumed session scored by the restarted collector",
    )
    assert second.stop(signal.SIGINT) == 0


def test_kill_9_loses_no_acknowledged_span(processes, tmp_path):
    db = tmp_path / "eval.db"
    collector = processes("--db", str(db), "--trace-quiet", "0.2", "--session-idle", "60")
    acknowledged: set[tuple[str, str]] = set()
    stop_sending = threading.Event()

    def send_until_refused() -> None:
        with httpx.Client(timeout=5) as client:
            n = 0
            while not stop_sending.is_set():
                n += 1
                request = ExportTraceServiceRequest()
                scope_spans = request.resource_spans.add().scope_spans.add()
                trace_id = n.to_bytes(16, "big")
                batch = set()
                for i in range(1, 21):
                    span = scope_spans.spans.add()
                    span.trace_id, span.span_id, span.name = trace_id, i.to_bytes(8, "big"), f"span {i}"
                    span.start_time_unix_nano = span.end_time_unix_nano = 1_700_000_000_000_000_000
                    batch.add((trace_id.hex(), i.to_bytes(8, "big").hex()))
                try:
                    response = client.post(
                        collector.traces_url,
                        content=request.SerializeToString(),
                        headers={"Content-Type": "application/x-protobuf"},
                    )
                except httpx.HTTPError:
                    return  # the collector is gone
                if response.status_code == 200:
                    acknowledged.update(batch)

    sender = threading.Thread(target=send_until_refused)
    sender.start()
    wait_until(lambda: len(acknowledged) >= 200, what="200 spans acknowledged")
    collector.proc.kill()  # SIGKILL mid-stream: no drain, no shutdown code runs
    collector.proc.wait(10)
    stop_sending.set()
    sender.join(10)

    assert len(acknowledged) >= 200
    assert acknowledged <= stored_span_ids(db)

    # The same database opens again and keeps accepting.
    restarted = processes("--db", str(db), "--trace-quiet", "0.2", "--session-idle", "60")
    spans = sdk_spans()
    exporter = OTLPSpanExporter(endpoint=restarted.traces_url, timeout=10)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    assert acknowledged | ids_of(spans) <= stored_span_ids(db)
    assert restarted.stop() == 0


def test_bad_flag_value_exits_2_with_the_reason(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "collector", "--grpc", "nowhere"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "python -m collector: error: --grpc: expected HOST:PORT or 'off', got 'nowhere'"


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":  # a zombie has exited; only its parent's wait() is missing
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if state[state.rindex(")") + 2] != "Z":
            alive.add(pid)
    return alive


def evaluation_counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT session_id, COUNT(*) FROM evaluations GROUP BY session_id"))
    finally:
        conn.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
def test_kill_9_takes_the_score_workers_along_and_each_session_is_scored_once(processes, tmp_path):
    db = tmp_path / "eval.db"
    collector = processes("--db", str(db), "--trace-quiet", "0.05", "--session-idle", "0.1", "--score-workers", "2")
    collector.wait_for(r"scoring: 2 worker process\(es\)")
    workers = _descendants(collector.proc.pid)
    assert len(workers) >= 2
    exporter = OTLPSpanExporter(endpoint=collector.traces_url, timeout=10)
    sessions = [f"conversation-{i}" for i in range(60)]
    for session_id in sessions:  # sessions end while later ones arrive: the workers are busy at the kill
        assert exporter.export(sdk_spans(session_id=session_id)) == SpanExportResult.SUCCESS
    exporter.shutdown()
    wait_until(
        lambda: evaluation_counts(db),
        timeout=15,
        what=lambda: "a first evaluation; collector output:\n" + "\n".join(collector.lines),
    )

    collector.proc.kill()  # SIGKILL: no shutdown code runs in the collector
    collector.proc.wait(10)
    wait_until(
        lambda: not _alive(workers), what=lambda: f"score workers {_alive(workers)} to exit with their collector"
    )

    # The restarted collector scores what was left; no session gets a second evaluation.
    restarted = processes("--db", str(db), "--trace-quiet", "0.05", "--session-idle", "0.1", "--score-workers", "1")
    wait_until(lambda: len(evaluation_counts(db)) >= len(sessions), timeout=30, what="every session scored")
    assert restarted.stop() == 0
    assert evaluation_counts(db) == dict.fromkeys(sessions, 1)
