"""Shared test fixtures: free ports, a running collector on a temp database, a self-signed cert."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import paths


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stored_span_ids(db: str | Path) -> set[tuple[str, str]]:
    """(trace_id, span_id) of every span committed to the database file."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return set(conn.execute("SELECT trace_id, span_id FROM spans"))
    finally:
        conn.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A test that fails because the shared fixtures are not there says so first. (Such a test
    fails, never skips: a checkout without the fixtures cannot pass.)"""
    outcome = yield
    report = outcome.get_result()
    missing = paths.FIXTURES
    if report.failed and not missing.is_dir() and str(missing) in str(report.longrepr):
        report.longrepr = (
            f"the shared fixtures this test reads are missing: {missing} is not a directory "
            f"(put them at ../shared/fixtures beside the checkout, or set OTEL_EVAL_FIXTURES)"
            f"\n\n{report.longrepr}"
        )


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Start an in-process collector (real Engine, real servers on free loopback ports).

    Keyword arguments override :class:`collector.config.CollectorConfig` fields.
    """
    from collector.app import Collector
    from collector.config import CollectorConfig, Endpoint

    started = []

    def start(**overrides):
        settings = dict(
            db=str(tmp_path / "eval.db"),
            grpc=Endpoint("127.0.0.1", 0),
            http=Endpoint("127.0.0.1", 0),
            trace_quiet=0.2,
            session_idle=0.2,
            score_workers=0,
        )
        settings.update(overrides)
        collector = Collector(CollectorConfig(**settings)).start()
        started.append(collector)
        return collector

    yield start
    for collector in started:
        collector.stop(grace=1.0)


@pytest.fixture(scope="session")
def self_signed_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(cert.pem, key.pem) valid for 127.0.0.1 and localhost, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def sdk_spans(traces: int = 1, session_id: str | None = None, service: str = "test-agent") -> list:
    """Finished SDK spans of ``traces`` small agent traces (agent → llm, tool), as exporters get them."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.collector")
    extra = {"session.id": session_id} if session_id else {}
    for i in range(traces):
        with tracer.start_as_current_span(
            "invoke_agent weather",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather",
                **extra,
            },
        ):
            with tracer.start_as_current_span(
                "chat gpt-4o",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    **extra,
                },
            ):
                pass
            with tracer.start_as_current_span(
                "execute_tool get_weather",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.arguments": f'{{"city": "Paris {i}"}}',
                    **extra,
                },
            ):
                pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def ids_of(spans: list) -> set[tuple[str, str]]:
    return {(format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")) for s in spans}


@pytest.fixture
def channel_to():
    """Open a gRPC channel to a started collector; closed at the end of the test."""
    import grpc

    channels = []

    def open_channel(collector) -> grpc.Channel:
        channel = grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}")
        channels.append(channel)
        return channel

    yield open_channel
    for channel in channels:
        channel.close()


def request_with(spans: list[tuple[bytes, bytes, str]]) -> Any:
    """An ExportTraceServiceRequest holding spans given as (trace_id bytes, span_id bytes, name)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope_spans = request.resource_spans.add().scope_spans.add()
    for trace_id, span_id, name in spans:
        span = scope_spans.spans.add()
        span.trace_id, span.span_id, span.name = trace_id, span_id, name
        span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_000_500_000_000
    return request


@pytest.fixture(scope="session")
def bigsky_oracle():
    """Big Sky Agents' own evaluators (its published package, run by node; see tests/reference)."""
    from tests.reference.client import BigSkyOracle

    oracle = BigSkyOracle()
    yield oracle
    oracle.close()


@pytest.fixture(scope="session")
def reference_oracle():
    """google-adk's and rouge-score's own code, in the reference environment (see tests/reference)."""
    from tests.reference.client import Oracle

    oracle = Oracle()
    yield oracle
    oracle.close()
