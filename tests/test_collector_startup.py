"""``python -m collector`` refusing to start: one stderr line naming the file or address and the
problem, exit status 2, no traceback, no grpc C-core log line. And a database that stops taking
writes while running: exports answer 503 (retryable), /healthz says unhealthy, both recover."""

from __future__ import annotations

import os
import re
import resource
import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from google.rpc.status_pb2 import Status

from tests.conftest import request_with, stored_span_ids
from tests.polling import wait_until

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX processes, Linux rlimits")


def run_collector(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "collector", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout
    )


def assert_refused(result: subprocess.CompletedProcess, *expected: str) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in lines[0]
    return lines[0]


@pytest.fixture
def listening_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_grpc_port_in_use(tmp_path, listening_port):
    result = run_collector("--db", str(tmp_path / "e.db"), "--http", "off", "--grpc", f"127.0.0.1:{listening_port}")
    assert_refused(result, f"cannot listen for gRPC on 127.0.0.1:{listening_port}", "Address already in use")


def test_http_port_in_use(tmp_path, listening_port):
    result = run_collector(
        "--db", str(tmp_path / "e.db"), "--grpc", "127.0.0.1:0", "--http", f"127.0.0.1:{listening_port}"
    )
    assert_refused(result, f"cannot listen for HTTP on 127.0.0.1:{listening_port}")


def test_an_address_of_no_local_interface(tmp_path):
    result = run_collector("--db", str(tmp_path / "e.db"), "--http", "off", "--grpc", "192.0.2.1:4317")
    assert_refused(result, "cannot listen for gRPC on 192.0.2.1:4317", "address")


def test_an_impossible_ip_is_refused_when_flags_are_parsed(tmp_path):
    result = run_collector("--db", str(tmp_path / "e.db"), "--grpc", "256.1.1.1:4317")
    assert_refused(result, "--grpc", "'256.1.1.1' is not a valid IPv4 address")
    assert not (tmp_path / "e.db").exists()


def test_tls_files_that_cannot_be_used(tmp_path, self_signed_cert):
    cert, key = self_signed_cert
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    common = ("--db", str(tmp_path / "e.db"), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
    assert_refused(
        run_collector(*common, "--tls-cert", str(garbage), "--tls-key", str(key)),
        f"cannot use TLS certificate {garbage} with key {key}",
    )
    assert_refused(
        run_collector(*common, "--tls-cert", str(cert), "--tls-key", str(cert)),
        f"TLS private key {cert} is not a PEM private key",
    )
    other_key = tmp_path / "other.key"
    subprocess.run(["openssl", "genrsa", "-out", str(other_key), "2048"], check=True, capture_output=True)
    assert_refused(
        run_collector(*common, "--tls-cert", str(cert), "--tls-key", str(other_key)),
        "the key does not belong to the certificate",
    )


def _foreign_spans_table(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE spans (id INTEGER PRIMARY KEY, payload TEXT)")
    conn.commit()
    conn.close()


def _newer_schema(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()


def _corrupted(db: Path) -> None:
    from otel_eval.store import Store

    store = Store(db)
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO spans (trace_id, span_id, raw) VALUES (?, ?, ?)",
            [(f"{i:032x}", f"{i:016x}", "x" * 500) for i in range(2000)],
        )
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")  # the file's page size, from its header
    for offset in range(page * 3, len(data) - page, page * 7):  # scribble over every 7th page header
        data[offset : offset + 16] = b"\xff" * 16
    db.write_bytes(bytes(data))


def _undecodable_schema(db: Path) -> None:
    """Damage that SQLite itself does not call corruption: a column type that is not UTF-8."""
    from otel_eval.store import Store

    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        """UPDATE sqlite_master SET sql = replace(sql, '"trace_id" TEXT', '"trace_id" ' || """
        """CAST(X'C0FF' AS TEXT)) WHERE name = 'spans'"""
    )
    conn.commit()
    conn.close()


def _not_sqlite(db: Path) -> None:
    db.write_text("just some text, not a database\n" * 200)


@pytest.mark.parametrize(
    "spoil, expected",
    [
        (_foreign_spans_table, "has a 'spans' table otel-eval did not create (missing columns:"),
        (_newer_schema, "schema version 99 is newer than this otel-eval supports"),
        (_corrupted, "is corrupted"),
        (_undecodable_schema, "is corrupted (Could not decode to UTF-8"),
        (_not_sqlite, "is not a SQLite database"),
    ],
)
def test_a_database_it_cannot_write_is_refused_at_start(tmp_path, spoil, expected):
    db = tmp_path / "spoiled.db"
    spoil(db)
    line = assert_refused(
        run_collector("--db", str(db), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"), f"database {db}: ", expected
    )
    assert re.search(r"ERROR|error", line)


def test_a_database_in_a_missing_directory_is_refused(tmp_path):
    db = tmp_path / "no" / "such" / "dir" / "e.db"
    assert_refused(
        run_collector("--db", str(db), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"),
        f"database {db}: directory {db.parent} does not exist",
    )


def test_a_read_only_database_is_refused(tmp_path):
    from otel_eval.store import Store

    db = tmp_path / "ro.db"
    Store(db).close()
    if os.geteuid() == 0:  # root writes through file modes: make the file immutable instead
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here")
    else:
        os.chmod(db, 0o444)
    try:
        result = run_collector("--db", str(db), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(db)], check=True)
    assert_refused(result, f"database {db}: is read-only for this user")


# --- run time: a disk that fills up ---------------------------------------------------------


class LimitedCollector:
    """The collector in a process whose files may not grow past ``limit`` bytes (RLIMIT_FSIZE):
    SQLite's writes then fail the way they do on a full disk. ``unlimit()`` gives the space back."""

    def __init__(self, db: Path, limit: int):
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "collector",
                "--db",
                str(db),
                "--grpc",
                "off",
                "--http",
                "127.0.0.1:0",
                "--session-idle",
                "3600",
                "--trace-quiet",
                "3600",
                "--score-workers",
                "0",
            ],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=REPO,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY)),
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.port = int(self._wait_for(r"OTLP/HTTP listening on http://127\.0\.0\.1:(\d+)").group(1))

    def _read(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.lines.append(line.rstrip("\n"))

    def _wait_for(self, pattern: str, timeout: float = 30) -> re.Match:
        def matching_line() -> re.Match | None:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            return None

        return wait_until(
            matching_line,
            timeout=timeout,
            what=lambda: f"a line matching {pattern!r} in collector output:\n" + "\n".join(self.lines),
        )

    def unlimit(self) -> None:
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def test_a_full_disk_answers_503_and_unhealthy_then_recovers(tmp_path):
    db = tmp_path / "full.db"
    from otel_eval.store import Store

    Store(db).close()
    collector = LimitedCollector(db, limit=db.stat().st_size + 200_000)
    base = f"http://127.0.0.1:{collector.port}"
    trace = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    try:
        assert httpx.get(f"{base}/healthz").status_code == 200
        answers = []
        for n in range(1, 40):  # ~100 kB per request: the file limit is hit within a few
            request = request_with([(trace, bytes.fromhex(f"{n:08x}{i:08x}"), "y" * 5000) for i in range(20)])
            answer = httpx.post(
                f"{base}/v1/traces",
                content=request.SerializeToString(),
                headers={"Content-Type": "application/x-protobuf"},
                timeout=60,
            )
            answers.append(answer)
            if answer.status_code != 200:
                break
        failed = answers[-1]
        assert failed.status_code == 503, failed.text
        assert failed.headers["retry-after"] == "1"
        assert "cannot write to the database" in Status.FromString(failed.content).message
        assert all(a.status_code in (200, 503) for a in answers)
        health = httpx.get(f"{base}/healthz")
        assert health.status_code == 503
        assert health.json()["status"] == "unhealthy"

        collector.unlimit()  # space is back: the exporter's retry of the same request is stored
        retried = httpx.post(
            f"{base}/v1/traces",
            content=request.SerializeToString(),
            headers={"Content-Type": "application/x-protobuf"},
            timeout=60,
        )
        assert retried.status_code == 200
        assert httpx.get(f"{base}/healthz").status_code == 200
    finally:
        collector.stop()
    assert (trace.hex(), f"{len(answers):08x}{19:08x}") in stored_span_ids(db)
    assert not [line for line in collector.lines if "Traceback" in line and "otel-eval-writer" in line]
