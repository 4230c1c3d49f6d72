"""What callers of the engine need of it: ingest results, the errors they must handle, and the
small protocol the receivers (OTLP gRPC/HTTP, the SDK processor) are written against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .. import errors
from ..spans import LogEvent, SpanRecord


@dataclass
class IngestResult:
    """What became of an ingested batch: spans accepted, stored anew, and already stored (a retried export)."""

    accepted: int = 0
    stored: int = 0
    duplicates: int = 0


class EngineUnavailable(Exception):
    """The engine did not store the batch, through no fault of the batch: the sender should retry
    it unchanged after ``retry_after`` seconds (receivers answer HTTP 503 + Retry-After, gRPC
    UNAVAILABLE). Retrying is harmless: each (trace_id, span_id) is stored once."""

    retry_after: float = 1.0


class QueueFull(EngineUnavailable):
    """The bounded ingest queue cannot take this batch now."""


class EngineClosed(EngineUnavailable):
    """The engine is shutting down (or not started) and accepts no more spans."""


class StorageUnavailable(EngineUnavailable, errors.OtelEvalError):
    """Our side failed to commit: disk full, database locked past its deadline, an I/O error.
    Nothing of the batch was stored, through no fault of the sender, and it may be retried
    unchanged. (An :class:`~otel_eval.errors.OtelEvalError` too: a command that meets it, such as
    ``otel-eval evaluate``, prints it as one line.)"""


class IngestTarget(Protocol):
    """The part of :class:`otel_eval.engine.Engine` a receiver uses."""

    def ingest(self, spans: Sequence[SpanRecord], wait: bool = True, timeout: float | None = None) -> IngestResult:
        """Store the spans (:meth:`otel_eval.engine.Engine.ingest`); :class:`EngineUnavailable`: retry later."""
        ...

    def ingest_logs(self, events: Sequence[LogEvent], wait: bool = True, timeout: float | None = None) -> IngestResult:
        """Store log records (:meth:`otel_eval.engine.Engine.ingest_logs`), as :meth:`ingest`."""
        ...

    def health_problem(self) -> str | None:
        """Why spans cannot be stored now (the writer keeps failing), or None."""
