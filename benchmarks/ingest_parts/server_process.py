"""A server under test in a child process of its own: the collector (as ``otel-eval collect``
runs it) or the baseline, on free ports, ready when it prints its ports, stopped by SIGTERM."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .baseline import serve_baseline

REPO = Path(__file__).resolve().parents[2]


def serve(role: str, argv: list[str]) -> int:
    """Child-process entry (``python -m benchmarks.ingest --serve ROLE ...``): start the server,
    print its ports as one JSON line, run until SIGTERM."""
    if role == "collector":
        return serve_collector(argv)
    if role == "baseline":
        return serve_baseline(argv)
    raise SystemExit(f"unknown server role {role!r}")


def serve_collector(argv: list[str]) -> int:
    """The collector as ``otel-eval collect`` runs it, with ``argv`` as its options, on free ports."""
    import logging

    from collector.app import serve as run_collector
    from collector.config import load_config

    config = load_config([*argv, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"], prog="benchmarks.ingest")
    logging.basicConfig(
        level=getattr(logging, config.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    def ready(collector: Any) -> None:
        print(json.dumps({"grpc": collector.grpc_port, "http": collector.http_port}), flush=True)

    return run_collector(config, ready=ready)


class ServerProcess:
    """A server started as ``python -m benchmarks.ingest --serve ROLE``, its stderr in ``log_path``."""

    def __init__(self, role: str, argv: list[str], log_path: Path, ready_timeout: float = 180.0):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.log_path = log_path
        self._log = open(log_path, "w")
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.ingest", "--serve", role, *argv],
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=REPO,
            env=env,
        )
        self.ports = json.loads(self._first_line(ready_timeout))
        self.startup_seconds = time.monotonic() - started

    def _first_line(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None:
                self.proc.kill()
                raise RuntimeError(f"server did not start; its log: {self.log_path}\n{self.log_tail()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                line += chunk
        return line.decode()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_tail(self, lines: int = 20) -> str:
        self._log.flush()
        return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 120.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode
