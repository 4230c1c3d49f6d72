"""The load: senders (a raw gRPC channel with pre-encoded requests, or the SDK's OTLP exporters)
driven by threads for a duration, and single probe sessions."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .sdk_spans import SpanFactory
from .sessions import SessionSpec, pick_sessions
from .templates import TRACE_EXPORT_METHOD, RawTemplate

#: The clients: the SDK's OTLP exporters over gRPC and HTTP, and a gRPC channel with pre-encoded requests.
PROTOCOLS = ("grpc", "http", "raw")

#: Every request gets its own epoch: fresh trace ids and session ids, across threads and phases.
_EPOCHS = itertools.count(1)


class SendFailed(Exception):
    """A request the server refused or did not answer; the load counts it by its reason."""


Sender = Callable[[], int]  # sends one request; returns the spans the server accepted


@dataclass
class LoadResult:
    requests: int = 0
    failed: int = 0
    spans_accepted: int = 0
    elapsed: float = 0.0
    started_ns: int = 0
    ended_ns: int = 0
    client_cpu: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)


def run_load(
    make_sender: Callable[[int], tuple[Sender, Callable[[], None]]],
    concurrency: int,
    duration: float,
    max_requests: int,
    rate: float | None = None,
) -> LoadResult:
    """``concurrency`` threads send until ``duration`` has passed or ``max_requests`` were sent;
    with ``rate`` (requests per second, all threads together) request n is not sent before
    ``n / rate`` seconds into the load (a paced load instead of as fast as acknowledged).

    A request still in flight at the deadline is waited for (the exporters' own timeouts bound
    it), so ``elapsed`` runs from the first send to the last acknowledgement.
    """
    result = LoadResult()
    lock = threading.Lock()
    budget = itertools.count()
    senders = [make_sender(n) for n in range(concurrency)]  # connect before the clock starts
    start = threading.Event()
    deadline = [0.0]

    def worker(send: Sender) -> None:
        start.wait()
        while time.monotonic() < deadline[0]:
            n = next(budget)
            if n >= max_requests:
                break
            if rate:
                due = deadline[0] - duration + n / rate
                if due >= deadline[0]:
                    break
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            try:
                accepted = send()
            except SendFailed as exc:
                with lock:
                    result.failed += 1
                    result.failures[str(exc)] = result.failures.get(str(exc), 0) + 1
                time.sleep(0.05)
                continue
            with lock:
                result.requests += 1
                result.spans_accepted += accepted

    threads = [threading.Thread(target=worker, args=(send,), daemon=True) for send, _ in senders]
    for t in threads:
        t.start()
    cpu0 = time.process_time()
    result.started_ns = time.time_ns()
    began = time.monotonic()
    deadline[0] = began + duration
    start.set()
    for t in threads:
        t.join()
    result.elapsed = time.monotonic() - began
    result.ended_ns = time.time_ns()
    result.client_cpu = time.process_time() - cpu0
    for _, close in senders:
        close()
    return result


def raw_sender(
    port: int, templates: Sequence[RawTemplate], random_ids: bool = False
) -> Callable[[int], tuple[Sender, Callable[[], None]]]:
    """A grpc channel calling TraceService/Export with pre-encoded request bytes (no client-side encode)."""
    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    def make(n: int) -> tuple[Sender, Callable[[], None]]:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        export = channel.unary_unary(TRACE_EXPORT_METHOD)  # no serializers: bytes in, bytes out
        turn = itertools.count(n)

        def send() -> int:
            template = templates[next(turn) % len(templates)]
            try:
                reply = export(template.render(next(_EPOCHS), random_ids), timeout=60)
            except grpc.RpcError as exc:
                raise SendFailed(exc.code().name) from None
            return template.spans - ExportTraceServiceResponse.FromString(reply).partial_success.rejected_spans

        return send, channel.close

    return make


def exporter_sender(
    protocol: str, port: int, by_size: dict[int, list[SessionSpec]], spans_per_request: int
) -> Callable[[int], tuple[Sender, Callable[[], None]]]:
    """One real OTLPSpanExporter per thread, ``export(list_of_ReadableSpan)`` called directly."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    factory = SpanFactory()

    def make(n: int) -> tuple[Sender, Callable[[], None]]:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

            exporter: Any = GrpcExporter(endpoint=f"127.0.0.1:{port}", insecure=True, timeout=60)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

            exporter = HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=60)
        rng = random.Random(1000 + n)

        def send() -> int:
            spans = factory.spans(pick_sessions(by_size, spans_per_request, rng), rng)
            if exporter.export(spans) != SpanExportResult.SUCCESS:
                raise SendFailed("export FAILURE")
            return len(spans)

        return send, exporter.shutdown

    return make


def send_probes(port: int, templates: Sequence[RawTemplate], count: int, interval: float = 0.05) -> int:
    """Single sessions, one request each, spaced out: the scorer is never behind when they end."""
    import grpc

    if count <= 0:
        return 0
    sent = 0
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(TRACE_EXPORT_METHOD)
        for i in range(count):
            try:
                export(templates[i % len(templates)].render(next(_EPOCHS)), timeout=30)
                sent += 1
            except grpc.RpcError:
                pass
            time.sleep(interval)
    return sent
