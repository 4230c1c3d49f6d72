"""The long attacks of issue 12 against a real collector process on 127.0.0.1. Run by hand::

    .venv/bin/python -m benchmarks.attacks                   # every attack, short settings (~2-3 min)
    .venv/bin/python -m benchmarks.attacks fuzz --bodies 20000
    .venv/bin/python -m benchmarks.attacks kill9 --rounds 25
    .venv/bin/python -m benchmarks.attacks slow --sockets 500
    .venv/bin/python -m benchmarks.attacks memory

Each attack starts its own ``python -m collector`` on free ports with a fresh SQLite file in a
temp dir, and a *good* client that exports real spans all along; it prints what the attacker
got, what the good client got, and whether every span the good client saw acknowledged is in
the database. Figures and their meaning: docs/collector.md ("Attacks").
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PB = {"Content-Type": "application/x-protobuf"}


class Server:
    """``python -m collector`` with its ports read from the banner."""

    def __init__(self, folder: Path, *args: str, db: Path | None = None):
        self.db = db or folder / "attack.db"
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "collector",
                "--db",
                str(self.db),
                "--grpc",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
                "--trace-quiet",
                "1",
                "--session-idle",
                "2",
                *args,
            ],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=REPO,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.http = int(self.wait_for(r"OTLP/HTTP listening on http://127\.0\.0\.1:(\d+)").group(1))
        self.grpc = int(self.wait_for(r"OTLP/gRPC listening on 127\.0\.0\.1:(\d+)").group(1))
        self.url = f"http://127.0.0.1:{self.http}"

    def _read(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError("collector did not start:\n" + "\n".join(self.lines[-20:]))

    def rss(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in MiB."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        values = {k: int(v.split()[0]) // 1024 for k, v in re.findall(r"(VmRSS|VmHWM):\s+(.*)", status)}
        return values["VmRSS"], values["VmHWM"]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def errors(self) -> list[str]:
        return [line for line in self.lines if " ERROR " in line or "Traceback" in line]


def stored(db: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return set(conn.execute("SELECT trace_id, span_id FROM spans"))
    finally:
        conn.close()


def make_request(n_spans: int, rng: random.Random, size: int = 200) -> tuple[Any, set[tuple[str, str]]]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "attack-good-client"
    spans = rs.scope_spans.add().spans
    trace = rng.randbytes(16)
    ids = set()
    now = time.time_ns()
    for i in range(n_spans):
        span = spans.add(
            trace_id=trace,
            span_id=rng.randbytes(8),
            name=f"op {i}",
            kind=1 + i % 5,
            start_time_unix_nano=now,
            end_time_unix_nano=now + 1000,
        )
        span.attributes.add(key="gen_ai.operation.name").value.string_value = "chat"
        span.attributes.add(key="payload").value.string_value = "x" * size
        ids.add((trace.hex(), span.span_id.hex()))
    return request, ids


class GoodClient(threading.Thread):
    """Exports fresh spans over HTTP (protobuf) and gRPC in turn until stopped, retrying 503 /
    UNAVAILABLE like the SDK exporters do; records what was acknowledged and what failed."""

    def __init__(self, server: Server, seed: int = 1, pause: float = 0.005):
        super().__init__(daemon=True)
        self.server, self.rng, self.pause = server, random.Random(seed), pause
        self.acked: set[tuple[str, str]] = set()
        self.failures: Counter = Counter()
        self.retries = 0
        self.latencies: list[float] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        import grpc

        channel = grpc.insecure_channel(f"127.0.0.1:{self.server.grpc}")
        raw = channel.unary_unary(EXPORT)
        with httpx.Client(timeout=30) as client:
            n = 0
            while not self.stop_event.is_set():
                n += 1
                request, ids = make_request(20, self.rng)
                body = request.SerializeToString()
                started = time.perf_counter()
                status: int | str = 0
                for _attempt in range(20):
                    try:
                        if n % 2:
                            answer = client.post(self.server.url + "/v1/traces", content=body, headers=PB)
                            status = answer.status_code
                        else:
                            raw(body, timeout=30)
                            status = 200
                    except grpc.RpcError as exc:
                        status = exc.code().name
                    except httpx.HTTPError as exc:
                        status = type(exc).__name__
                    if status in (503, "UNAVAILABLE", "RESOURCE_EXHAUSTED"):
                        self.retries += 1
                        time.sleep(0.2)
                        continue
                    break
                if status == 200:
                    self.acked |= ids
                    self.latencies.append(time.perf_counter() - started)
                else:
                    self.failures[str(status)] += 1
                time.sleep(self.pause)
        channel.close()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(60)


# --- fuzzing -------------------------------------------------------------------------------


def fuzz_bodies(rng: random.Random, count: int) -> list[tuple[str, bytes, dict]]:
    """``(protocol, body, headers)``: valid requests mangled at the byte level and at the field level."""
    out: list[tuple[str, bytes, dict]] = []
    for i in range(count):
        request, _ = make_request(rng.randint(1, 8), rng, size=rng.choice((0, 10, 300)))
        span = request.resource_spans[0].scope_spans[0].spans[0]
        choice = rng.randrange(10)
        if choice == 0:
            span.end_time_unix_nano = rng.choice((2**63, 2**64 - 1, 2**63 + rng.randrange(2**62)))
        elif choice == 1:
            span.events.add(name="e", time_unix_nano=2**64 - 1)
        elif choice == 2:
            span.kind = rng.choice((-1, 6, 2**31 - 1, -(2**31)))
            span.status.code = rng.choice((3, 99, -5))
        elif choice == 3:
            value = span.attributes.add(key="deep").value
            for _ in range(rng.randint(1, 40)):
                value = value.kvlist_value.values.add(key="k").value
            value.double_value = rng.choice((float("nan"), float("inf"), -0.0, 1e308))
        elif choice == 4:
            span.attributes.add(key="session.id").value.bytes_value = rng.randbytes(rng.randint(0, 64))
        body = request.SerializeToString()
        if choice >= 5:  # byte-level: flips, truncation, splices
            data = bytearray(body)
            for _ in range(rng.randint(1, 12)):
                op = rng.randrange(3)
                if op == 0 and data:
                    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                elif op == 1 and data:
                    del data[rng.randrange(len(data)) :]
                else:
                    pos = rng.randrange(len(data) + 1)
                    data[pos:pos] = rng.randbytes(rng.randint(1, 16))
            body = bytes(data)
        kind = rng.randrange(5)
        if kind == 0:
            out.append(("grpc", body, {}))
        elif kind == 1:
            out.append(("http", gzip.compress(body), {**PB, "Content-Encoding": "gzip"}))
        elif kind == 2:
            out.append(("http", _json_poison(rng, i), {"Content-Type": "application/json"}))
        else:
            out.append(("http", body, PB))
    return out


def _json_poison(rng: random.Random, i: int) -> bytes:
    span = {
        "traceId": "%032x" % (i + 1),
        "spanId": "%016x" % (i + 1),
        "name": "j",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000000000001",
    }
    field, value = rng.choice(
        [
            ("kind", "1e400"),
            ("kind", "-1e400"),
            ("kind", "NaN"),
            ("kind", "2.5"),
            ("kind", '"SPAN_KIND_NOPE"'),
            ("startTimeUnixNano", '"18446744073709551615"'),
            ("startTimeUnixNano", '"99999999999999999999999"'),
            ("endTimeUnixNano", "1e30"),
            ("status", '{"code": 1e400}'),
            ("attributes", '[{"key":"a","value":{"intValue":"1e400"}}]'),
            ("attributes", '[{"key":"a","value":{"doubleValue":1e400}}]'),
            ("name", '"\\ud800"'),
            ("traceId", '"zz"'),
            ("events", '[{"timeUnixNano":"18446744073709551615","name":"e"}]'),
        ]
    )
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    text = (
        text.replace('"name": "j"', f'"name": "j", "{field}": {value}', 1)
        if field != "name"
        else text.replace('"name": "j"', f'"name": {value}', 1)
    )
    return text.encode()


def attack_fuzz(folder: Path, bodies: int, seed: int) -> dict:
    server = Server(folder)
    good = GoodClient(server)
    good.start()
    import grpc

    rng = random.Random(seed)
    answers: Counter = Counter()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc}")
    raw = channel.unary_unary(EXPORT)
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for protocol, body, headers in fuzz_bodies(rng, bodies):
            if protocol == "grpc":
                try:
                    raw(body, timeout=30)
                    answers["grpc OK"] += 1
                except grpc.RpcError as exc:
                    answers[f"grpc {exc.code().name}"] += 1
            else:
                try:
                    answers[
                        f"http {client.post(server.url + '/v1/traces', content=body, headers=headers).status_code}"
                    ] += 1
                except httpx.HTTPError as exc:
                    answers[f"http {type(exc).__name__}"] += 1
    elapsed = time.perf_counter() - started
    channel.close()
    good.stop()
    alive = httpx.get(server.url + "/healthz").status_code
    server.stop()
    lost = good.acked - stored(server.db)
    return {
        "attack": "fuzz",
        "bodies": bodies,
        "seconds": round(elapsed, 1),
        "answers": dict(sorted(answers.items())),
        "server errors (500/INTERNAL/UNKNOWN)": sum(
            v for k, v in answers.items() if k.endswith(("500", "INTERNAL", "UNKNOWN"))
        ),
        "healthz after": alive,
        "good client acked spans": len(good.acked),
        "good client failures": dict(good.failures),
        "good client retries": good.retries,
        "acked but not stored": len(lost),
        "collector ERROR lines": len(server.errors()),
    }


# --- kill -9 under load --------------------------------------------------------------------


def attack_kill9(folder: Path, rounds: int, seed: int) -> dict:
    db = folder / "kill9.db"
    rng = random.Random(seed)
    acked: set[tuple[str, str]] = set()
    failures: Counter = Counter()
    for r in range(rounds):
        server = Server(folder, db=db)
        clients = [GoodClient(server, seed=seed * 1000 + r * 10 + i, pause=0) for i in range(3)]
        for client in clients:
            client.start()
        time.sleep(rng.uniform(0.3, 1.5))
        server.proc.kill()  # SIGKILL: no drain, no commit of what is queued
        server.proc.wait()
        for client in clients:
            client.stop()
            acked |= client.acked
        Path(str(db) + ".lock").unlink(missing_ok=True)
    final = Server(folder, db=db)  # a clean start on what the kills left
    ok = httpx.get(final.url + "/healthz").status_code
    final.stop()
    lost = acked - stored(db)
    return {
        "attack": "kill9",
        "rounds": rounds,
        "acked spans": len(acked),
        "acked but not stored": len(lost),
        "healthz after restart": ok,
        "client failures (expected: the kills)": dict(failures),
    }


# --- slow sockets ----------------------------------------------------------------------------


def _exports(server: Server, count: int, rng: random.Random) -> tuple[int, float]:
    ok, started = 0, time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            request, _ = make_request(20, rng)
            ok += (
                client.post(server.url + "/v1/traces", content=request.SerializeToString(), headers=PB).status_code
                == 200
            )
    return ok, (time.perf_counter() - started) / count


def attack_slow(folder: Path, sockets: int, seed: int) -> dict:
    server = Server(folder)
    rng = random.Random(seed)
    base_ok, base_latency = _exports(server, 50, rng)
    slow = []
    for i in range(sockets):
        sock = socket.create_connection(("127.0.0.1", server.http))
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
            if i % 2
            else b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 100000\r\n\r\nabc"
        )
        slow.append(sock)
    ok, latency = _exports(server, 50, rng)
    health = httpx.get(server.url + "/healthz").status_code
    metrics = httpx.get(server.url + "/metrics").status_code
    # The header timeout closes the trickling half after 10 s; the body timeout the other after 60 s.
    time.sleep(11)
    closed = 0
    for sock in slow:
        sock.setblocking(False)
        try:
            closed += sock.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        sock.close()
    server.stop()
    return {
        "attack": "slow",
        "slow sockets": sockets,
        "exports ok without them": f"{base_ok}/50",
        "exports ok with them": f"{ok}/50",
        "latency ratio with/without": round(latency / base_latency, 2),
        "healthz": health,
        "metrics": metrics,
        "closed by the server after 11 s": closed,
        "collector ERROR lines": len(server.errors()),
    }


# --- memory burst ----------------------------------------------------------------------------


def _big_body(mb: int) -> bytes:
    request, _ = make_request(mb * 1024 * 1024 // 2100, random.Random(mb), size=2000)
    return request.SerializeToString()


def attack_memory(folder: Path, http_clients: int, grpc_clients: int, mb: int, budget: int | None) -> dict:
    import grpc

    args = ["--max-request-bytes", str((mb + 1) * 1024 * 1024)]
    if budget is not None:
        args += ["--max-inflight-bytes", str(budget)]
    server = Server(folder, *args, db=folder / f"memory-{budget}.db")
    body = _big_body(mb)
    idle_rss, _ = server.rss()
    answers: Counter = Counter()
    lock = threading.Lock()
    peak = [0]

    def http_send() -> None:
        status: int | str
        try:
            status = httpx.post(server.url + "/v1/traces", content=body, headers=PB, timeout=300).status_code
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        with lock:
            answers[f"http {status}"] += 1

    def grpc_send() -> None:
        channel = grpc.insecure_channel(
            f"127.0.0.1:{server.grpc}", options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
        )
        try:
            channel.unary_unary(EXPORT)(body, timeout=300)
            status = "OK"
        except grpc.RpcError as exc:
            status = exc.code().name
        channel.close()
        with lock:
            answers[f"grpc {status}"] += 1

    threads = [threading.Thread(target=http_send) for _ in range(http_clients)]
    threads += [threading.Thread(target=grpc_send) for _ in range(grpc_clients)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak[0] = max(peak[0], server.rss()[0])
        time.sleep(0.05)
    after_burst, hwm = server.rss()
    time.sleep(5)
    settled, _ = server.rss()
    server.stop()
    return {
        "attack": "memory",
        "budget": budget or "default",
        "bodies": f"{http_clients} HTTP + {grpc_clients} gRPC x {len(body) / 2**20:.1f} MiB",
        "answers": dict(sorted(answers.items())),
        "RSS idle MiB": idle_rss,
        "peak RSS (VmHWM) MiB": hwm,
        "RSS right after MiB": after_burst,
        "RSS 5 s later MiB": settled,
    }


ATTACKS = ("fuzz", "kill9", "slow", "memory")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Checked below, not with ``choices``: Python 3.11's argparse checks an empty "*" positional
    # (and a list default) against the choices as one value and rejects it, so a bare run (every
    # attack) failed.
    parser.add_argument(
        "attacks", nargs="*", metavar="{" + ",".join(ATTACKS) + "}", help="the attacks to run (default: all)"
    )
    parser.add_argument("--bodies", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sockets", type=int, default=500)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--memory-budgets",
        default="1000000000000,default",
        help="comma-separated --max-inflight-bytes values for the memory attack "
        "('default' = the collector's default; a huge number = no bound)",
    )
    args = parser.parse_args(argv)
    attacks = args.attacks or list(ATTACKS)
    unknown = [name for name in attacks if name not in ATTACKS]
    if unknown:
        parser.error(f"unknown attack {unknown[0]!r} (choose from {', '.join(ATTACKS)})")
    with tempfile.TemporaryDirectory(prefix="otel-eval-attacks-") as tmp:
        folder = Path(tmp)
        for attack in attacks:
            if attack == "fuzz":
                results = [attack_fuzz(folder, args.bodies, args.seed)]
            elif attack == "kill9":
                results = [attack_kill9(folder, args.rounds, args.seed)]
            elif attack == "slow":
                results = [attack_slow(folder, args.sockets, args.seed)]
            else:
                results = [
                    attack_memory(folder, 64, 16, 16, None if b == "default" else int(b))
                    for b in args.memory_budgets.split(",")
                ]
            for result in results:
                print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
