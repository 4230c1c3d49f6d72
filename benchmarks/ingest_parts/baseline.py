"""The baseline receiver: the least a span store can do, the floor the collector is compared to.
Runs in its own process (``server_process``)."""

from __future__ import annotations

import argparse
import json
import signal
import sqlite3
import threading
from typing import Any

from .templates import TRACE_SERVICE


def _python_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_python_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _python_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


def _python_attributes(attributes: Any) -> dict:
    return {kv.key: _python_value(kv.value) for kv in attributes}


class BaselineReceiver:
    """A minimal TraceService: decode, read every span's fields into Python, one row per span,
    one transaction per request. No mapping, no sessions: the floor our collector is compared to."""

    def __init__(self, db: str, max_workers: int = 8):
        from concurrent import futures

        import grpc

        self.conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS spans (trace_id TEXT, span_id TEXT, parent_span_id TEXT, name TEXT,"
            " kind INTEGER, start_ns INTEGER, end_ns INTEGER, status INTEGER, status_message TEXT,"
            " attributes TEXT, events TEXT, resource TEXT, scope TEXT, PRIMARY KEY (trace_id, span_id))"
        )
        self.lock = threading.Lock()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers),
            options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)],
            maximum_concurrent_rpcs=max_workers * 2,
        )
        handler = grpc.unary_unary_rpc_method_handler(self.export)  # bytes in, bytes out
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": handler}),)
        )
        self.port = 0

    def start(self) -> int:
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        return self.port

    def export(self, body: bytes, context: Any) -> bytes:
        import grpc
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        try:
            request = ExportTraceServiceRequest.FromString(body)
        except DecodeError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        rows = []
        for resource_spans in request.resource_spans:
            resource = json.dumps(_python_attributes(resource_spans.resource.attributes))
            for scope_spans in resource_spans.scope_spans:
                scope = scope_spans.scope.name
                for span in scope_spans.spans:
                    events = [
                        {"name": e.name, "time_ns": e.time_unix_nano, "attributes": _python_attributes(e.attributes)}
                        for e in span.events
                    ]
                    rows.append(
                        (
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex() or None,
                            span.name,
                            span.kind,
                            span.start_time_unix_nano,
                            span.end_time_unix_nano,
                            span.status.code,
                            span.status.message,
                            json.dumps(_python_attributes(span.attributes)),
                            json.dumps(events),
                            resource,
                            scope,
                        )
                    )
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany("INSERT OR IGNORE INTO spans VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            self.conn.execute("COMMIT")
        return b""  # an empty ExportTraceServiceResponse

    def stop(self, grace: float = 5.0) -> None:
        self.server.stop(grace).wait()
        self.conn.close()


def serve_baseline(argv: list[str]) -> int:
    """The baseline's child process: ``--db FILE``; prints its gRPC port, runs until SIGTERM."""
    parser = argparse.ArgumentParser(prog="benchmarks.ingest baseline")
    parser.add_argument("--db", required=True)
    options = parser.parse_args(argv)
    receiver = BaselineReceiver(options.db)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(json.dumps({"grpc": receiver.start()}), flush=True)
    while not stop.wait(0.5):
        pass
    receiver.stop()
    return 0
