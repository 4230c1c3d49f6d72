"""The protocol-neutral part of the receivers.

:class:`Receiver` is the part both servers share: decoded request in, engine
commit, OTLP response out. The servers only translate transport details (status codes, headers,
encodings) around it, so both protocols behave the same by construction.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_eval.engine import EngineClosed, EngineUnavailable, IngestTarget, QueueFull, StorageUnavailable
from otel_eval.spans import decode_logs, from_otlp

from .prometheus import CollectorCounters

__all__ = ["Receiver", "RetryLater"]

#: Seconds an exporter is told to wait after a full queue (HTTP Retry-After, gRPC RetryInfo).
RETRY_AFTER_SECONDS = 1


class RetryLater(Exception):
    """The receiver's answer to the sender: the batch was not committed, send it again in
    ``retry_after`` seconds (HTTP 503 + Retry-After, gRPC UNAVAILABLE + RetryInfo). Every kind of
    :class:`~otel_eval.engine.EngineUnavailable` (a full queue, shutting down, storage
    unavailable) and a commit timeout become one; a retry is safe because the engine stores each
    (trace_id, span_id) once."""

    def __init__(self, reason: str, retry_after: int = RETRY_AFTER_SECONDS):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


@dataclass
class Receiver:
    """Decoded OTLP request in, engine commit, OTLP response out: the part both servers share, so
    both protocols answer the same."""

    engine: IngestTarget
    metrics: CollectorCounters
    commit_timeout: float | None = 30.0
    """How long one request may wait for its commit before the exporter is told to retry."""
    write_failure: str | None = None
    """Why the last commit failed on our side (disk full, locked, ...); None once one succeeds."""

    def health_problem(self) -> str | None:
        """Why the collector cannot store spans now, or None: ``/healthz`` answers 503 with it.
        The engine's own view (``engine.health_problem()``, when it has one) comes first."""
        return self.engine.health_problem() or self.write_failure

    def export_traces(self, request: ExportTraceServiceRequest) -> ExportTraceServiceResponse:
        """Store the request's valid spans and answer only after they are committed.

        Spans with invalid ids are left out and reported through ``partial_success``, as the
        OTLP spec asks, so one bad span does not make the exporter retry (or drop) the rest.
        Raises :class:`RetryLater` when the engine cannot take the batch now.
        """
        started = time.perf_counter()
        decoded = from_otlp(request.resource_spans)
        if decoded.spans:
            self._commit(self.engine.ingest, decoded.spans)
        self.metrics.ingest_seconds(time.perf_counter() - started)
        response = ExportTraceServiceResponse()
        if decoded.rejected:
            self.metrics.rejected(decoded.rejected)
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=decoded.rejected, error_message=decoded.error_message)
            )
        return response

    def export_logs(self, request: ExportLogsServiceRequest) -> ExportLogsServiceResponse:
        """Store log records tied to a span (GenAI content some instrumentations only log).

        Records without trace/span ids are valid OTLP but useless here; they are ignored and the
        exporter is told so as a partial-success *warning* (rejected = 0), so it neither retries
        nor counts them as failures.
        """
        started = time.perf_counter()
        decoded = decode_logs(request.resource_logs)
        events, ignored = decoded.events, decoded.ignored
        if events:
            self._commit(self.engine.ingest_logs, events)
        self.metrics.ingest_seconds(time.perf_counter() - started)
        self.metrics.logs(len(events), ignored + decoded.rejected)
        response = ExportLogsServiceResponse()
        notes = [decoded.error_message] if decoded.rejected else []
        if ignored:
            notes.append(f"{ignored} log record(s) without a trace and span id were ignored")
        if notes:
            response.partial_success.CopyFrom(
                ExportLogsPartialSuccess(rejected_log_records=decoded.rejected, error_message="; ".join(notes))
            )
        return response

    def _commit(self, ingest: Callable[..., Any], items: list) -> None:
        try:
            ingest(items, wait=True, timeout=self.commit_timeout)
        except QueueFull as exc:
            retry_after = max(1, math.ceil(exc.retry_after))
            raise RetryLater(f"{exc or 'ingest queue full'}; retry later", retry_after) from None
        except EngineClosed:
            raise RetryLater("collector is shutting down; retry later") from None
        except (StorageUnavailable, sqlite3.Error) as exc:
            # Our fault, not the sender's (disk full, database locked, failed commit): the batch was
            # not stored, and a retry is harmless. StorageUnavailable is the engine's word for it;
            # sqlite3.Error covers SQLite's own errors should one get through.
            self.write_failure = f"cannot write to the database: {str(exc).removesuffix('; retry later')}"
            retry_after = max(1, math.ceil(getattr(exc, "retry_after", RETRY_AFTER_SECONDS)))
            raise RetryLater(f"{self.write_failure}; retry later", retry_after) from None
        except EngineUnavailable as exc:  # any other retryable refusal of the engine
            raise RetryLater(
                str(exc) or "could not store the batch; retry later", max(1, math.ceil(exc.retry_after))
            ) from None
        except TimeoutError:
            # The batch stays queued and will be stored; a retry is harmless (idempotent ids).
            raise RetryLater(f"not committed within {self.commit_timeout} s; retry later") from None
        self.write_failure = None
