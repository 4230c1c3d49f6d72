"""Results back into OpenTelemetry, and received spans passed on unchanged.

**Evaluation results** become OTLP log records following the GenAI semantic conventions' event
``gen_ai.evaluation.result`` (attributes ``gen_ai.evaluation.name`` — required —,
``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label``,
``gen_ai.evaluation.explanation``, ``error.type``), one record per criterion, parented to the
session's first trace and its root span so a backend shows them on the trace they judge, and
carrying ``gen_ai.response.id`` (recommended "when available") of the session's last completion —
the one whose answer the response criteria judge — when its spans recorded one. Criteria that were
skipped (not applicable: no expected answer, no judge configured) are not sent unless
``forward_skipped`` asks for them: they say nothing about the agent. They are
sent by the OpenTelemetry SDK's own LoggerProvider → BatchLogRecordProcessor → OTLPLogExporter
(gRPC or HTTP by URL scheme; with no URL the exporter's standard ``OTEL_EXPORTER_OTLP_*``
variables decide). :class:`ResultForwarder` is an Engine listener::

    forwarder = forward_results(engine, "grpc://otel-backend:4317")   # engine.add_listener(...)
    ...
    forwarder.shutdown()                                               # flushes what is queued

**Span forwarding** (:class:`SpanForwarder`) sends each accepted OTLP trace request as it came,
from a background thread with a bounded queue: ingestion never waits for the other endpoint, and
what does not fit is dropped and counted.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import InputError
from ..models.results import CriterionResult, EvalCaseResult
from ..read.database import open_database
from ..read.spans import first_trace, last_response_id

log = logging.getLogger("otel_eval.export.otel")

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "otel_eval"
LABEL_PASS, LABEL_FAIL, LABEL_SKIPPED, LABEL_ERROR = "pass", "fail", "skipped", "error"
CRITERION_ERROR = "otel_eval.criterion_error"
"""``error.type`` of a criterion that failed to run (bad option, judge timeout): low cardinality,
the message itself is in the explanation."""
EXPLANATION_CHARS = 1000

Locator = Callable[[str], tuple[str | None, str | None]]


# --- the records ---------------------------------------------------------------------------------


def _explanation(c: CriterionResult) -> str:
    if c.error:
        return c.error[:EXPLANATION_CHARS]
    if c.skipped:
        return str(c.details.get("reason") or "skipped")[:EXPLANATION_CHARS]
    relation = ">=" if c.passed else "<"
    return f"score {c.score:g} {relation} threshold {c.threshold:g}"


def _label(c: CriterionResult) -> str:
    if c.error:
        return LABEL_ERROR
    if c.skipped:
        return LABEL_SKIPPED
    return LABEL_PASS if c.passed else LABEL_FAIL


def evaluation_attributes(
    result: EvalCaseResult, criterion: CriterionResult, response_id: str | None = None
) -> dict[str, Any]:
    """The attributes of one ``gen_ai.evaluation.result`` record (pure; what gets sent)."""
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": criterion.criterion,
        "gen_ai.evaluation.score.label": _label(criterion),
        "gen_ai.evaluation.explanation": _explanation(criterion),
        "otel_eval.criterion.threshold": float(criterion.threshold),
        "otel_eval.case.passed": bool(result.passed),
        "otel_eval.case.verdict": result.verdict,
    }
    if result.evaluated:  # a session where nothing was checked has no score (not 0)
        attributes["otel_eval.case.score"] = float(result.score)
    if not criterion.skipped and not criterion.error:
        attributes["gen_ai.evaluation.score.value"] = float(criterion.score)
    if criterion.error:
        attributes["error.type"] = CRITERION_ERROR
    if result.session_id:
        attributes["session.id"] = result.session_id
        attributes["gen_ai.conversation.id"] = result.session_id
    if result.eval_id:
        attributes["otel_eval.case_id"] = result.eval_id
    if response_id:
        attributes["gen_ai.response.id"] = response_id
    return attributes


def is_skip(criterion: CriterionResult) -> bool:
    """Skipped without an error: the criterion did not apply (a criterion that failed to run is
    an error, and always forwarded)."""
    return bool(criterion.skipped) and not criterion.error


def database_response_id(db: str | Path) -> Callable[[str], str | None]:
    """session id → ``gen_ai.response.id`` of the session's last completion (the latest-ending
    span that has one), read from an otel-eval database; None when no span recorded one."""
    return _lookup(db, last_response_id, None, "the response id")


def database_locator(db: str | Path) -> Locator:
    """session id → (trace id, root span id) of its first trace, read from an otel-eval database.

    A fresh read-only connection per lookup: listeners run on the engine's scorer thread, and an
    evaluation is rare next to the spans it judges."""
    return _lookup(db, first_trace, (None, None), "the trace")


def _lookup(
    db: str | Path, query: Callable[[sqlite3.Connection, str], Any], fallback: Any, what: str
) -> Callable[[str], Any]:
    """``query`` of a session on a fresh read-only connection; a database that cannot answer is
    logged and gives ``fallback`` (forwarding results must never stop the scorer)."""
    path = str(db)

    def lookup(session_id: str) -> Any:
        try:
            conn = open_database(path, timeout=10.0)
        except (InputError, sqlite3.Error) as exc:
            log.warning("cannot open %s to find %s of session %s: %s", path, what, session_id, exc)
            return fallback
        try:
            return query(conn, session_id)
        except sqlite3.Error as exc:
            log.warning("cannot find %s of session %s in %s: %s", what, session_id, path, exc)
            return fallback
        finally:
            conn.close()

    return lookup


def _hex_id(value: str | None, length: int) -> int | None:
    """OTLP ids are hex; Noveum's UUID ids (dashes) still fit once the dashes go."""
    if not value:
        return None
    text = value.replace("-", "").lower()
    if len(text) != length:
        return None
    try:
        number = int(text, 16)
    except ValueError:
        return None
    return number or None


# --- exporters -----------------------------------------------------------------------------------


def parse_export_url(url: str) -> tuple[str, str]:
    """``grpc://host:port`` → ("grpc", "host:port"); ``http(s)://host:port[/path]`` → ("http", url)."""
    parts = urlsplit(url)
    if parts.scheme == "grpc" and parts.netloc:
        return "grpc", parts.netloc
    if parts.scheme in ("http", "https") and parts.netloc:
        return "http", url
    raise InputError("endpoint", f"expected http://HOST:PORT, https://HOST:PORT or grpc://HOST:PORT, got {url!r}")


def _signal_url(url: str, signal: str) -> str:
    """An explicit OTLP/HTTP endpoint is used as is by the SDK; a bare base URL gets ``/v1/<signal>``."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + f"/v1/{signal}"
    return url


def log_exporter_for(endpoint: str | None = None, headers: dict[str, str] | None = None, timeout: float = 10.0) -> Any:
    """The SDK's OTLPLogExporter for ``endpoint``; with none, the ``OTEL_EXPORTER_OTLP_*``
    variables decide, ``OTEL_EXPORTER_OTLP_(LOGS_)PROTOCOL`` choosing gRPC (default) or HTTP."""
    if endpoint is None:
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL") or os.environ.get(
            "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"
        )
        if protocol.startswith("http"):
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

            return HttpExporter()
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        return GrpcExporter()
    kind, target = parse_export_url(endpoint)
    if kind == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        return GrpcExporter(endpoint=target, insecure=True, headers=headers, timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

    return HttpExporter(endpoint=_signal_url(target, "logs"), headers=headers, timeout=timeout)


# --- results → log records -------------------------------------------------------------------


class ResultForwarder:
    """An Engine listener that emits every evaluation as ``gen_ai.evaluation.result`` log records.

    ``locate(session_id) -> (trace_id, span_id)`` links the records to the session's spans (see
    :func:`database_locator`), ``response_id(session_id)`` finds the completion they judge (see
    :func:`database_response_id`); ``exporter`` defaults to :func:`log_exporter_for`
    ``(endpoint)``. Skipped criteria are left out unless ``forward_skipped``. Never raises into
    the engine: a failed lookup only leaves the ids out.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        db: str | Path | None = None,
        locate: Locator | None = None,
        exporter: Any = None,
        resource: Any = None,
        schedule_delay_millis: float = 1000,
        headers: dict[str, str] | None = None,
        response_id: Callable[[str], str | None] | None = None,
        forward_skipped: bool = False,
    ):
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        self.endpoint = endpoint
        self.locate = locate or (database_locator(db) if db is not None else (lambda _sid: (None, None)))
        self.response_id = response_id or (database_response_id(db) if db is not None else (lambda _sid: None))
        self.forward_skipped = forward_skipped
        self.exporter = exporter if exporter is not None else log_exporter_for(endpoint, headers)
        self.provider = LoggerProvider(
            resource=resource or Resource.create({"service.name": "otel-eval"}), shutdown_on_exit=False
        )
        self.provider.add_log_record_processor(
            BatchLogRecordProcessor(self.exporter, schedule_delay_millis=schedule_delay_millis)
        )
        self.logger = self.provider.get_logger(SCOPE_NAME)
        self.emitted = 0
        self.skipped = 0
        """Skipped criteria not sent (``forward_skipped`` off)."""

    def __call__(self, result: EvalCaseResult) -> None:
        try:
            self.emit(result)
        except Exception:  # a listener must never break scoring
            log.exception("could not emit evaluation records for session %s", result.session_id)

    def emit(self, result: EvalCaseResult) -> int:
        """Emit one record per criterion of ``result`` (skips only if ``forward_skipped``);
        returns how many."""
        from opentelemetry._logs import SeverityNumber
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

        criteria = [c for c in result.criterion_results if self.forward_skipped or not is_skip(c)]
        self.skipped += len(result.criterion_results) - len(criteria)
        if not criteria:
            return 0
        trace_id = span_id = None
        response_id = None
        if result.session_id:
            trace_hex, span_hex = self.locate(result.session_id)
            trace_id, span_id = _hex_id(trace_hex, 32), _hex_id(span_hex, 16)
            response_id = self.response_id(result.session_id)
        context = None
        if trace_id and span_id:
            parent = SpanContext(
                trace_id=trace_id, span_id=span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
            )
            context = set_span_in_context(NonRecordingSpan(parent))
        now = time.time_ns()
        for criterion in criteria:
            failed = criterion.error is not None
            self.logger.emit(
                timestamp=now,
                observed_timestamp=now,
                context=context,
                severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
                severity_text="WARN" if failed else "INFO",
                event_name=EVENT_NAME,
                attributes=evaluation_attributes(result, criterion, response_id),
            )
        self.emitted += len(criteria)
        return len(criteria)

    def force_flush(self, timeout_millis: int = 10000) -> bool:
        """Send the records emitted so far, waiting up to ``timeout_millis``; False if they were not all sent."""
        return self.provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Flush and stop the forwarder's log exporter (the collector's shutdown calls it)."""
        self.provider.shutdown()


def forward_results(engine: Any, endpoint: str | None = None, **kwargs: Any) -> ResultForwarder:
    """Attach a :class:`ResultForwarder` for ``engine``'s database to the engine; returns it."""
    kwargs.setdefault("db", engine.db_path)
    forwarder = ResultForwarder(endpoint, **kwargs)
    engine.add_listener(forwarder)
    return forwarder


# --- spans, passed on ------------------------------------------------------------------------------


@dataclass
class ForwardStats:
    """Counts of a :class:`SpanForwarder`: requests and spans sent, dropped (queue full) and failed."""

    requests_forwarded: int = 0
    spans_forwarded: int = 0
    spans_dropped: int = 0
    """Did not fit in the queue: the other endpoint is slower than the agents."""
    spans_failed: int = 0
    """Sent, and refused or unreachable after the retries."""


class SpanForwarder:
    """Sends OTLP trace requests, unchanged, to another endpoint from one background thread.

    ``submit`` never blocks: a full queue drops the request and counts its spans. A failed send
    (unreachable, gRPC UNAVAILABLE, HTTP 429/5xx) is retried ``retries`` times with backoff, then
    counted as failed.
    """

    def __init__(
        self,
        endpoint: str,
        max_queue: int = 1000,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.2,
        headers: dict[str, str] | None = None,
    ):
        self.kind, self.target = parse_export_url(endpoint)
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = dict(headers or {})
        self.stats = ForwardStats()
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._closing = threading.Event()
        self._send = self._grpc_sender() if self.kind == "grpc" else self._http_sender()
        self._thread = threading.Thread(target=self._run, name="otel-eval-span-forwarder", daemon=True)
        self._thread.start()

    def submit(self, request: Any) -> bool:
        """Queue an ``ExportTraceServiceRequest``; False when it was dropped (queue full or closed)."""
        spans = _span_count(request)
        if self._closing.is_set():
            self._count("spans_dropped", spans)
            return False
        try:
            self._queue.put_nowait(request)
        except queue.Full:
            self._count("spans_dropped", spans)
            return False
        return True

    def _count(self, name: str, amount: int) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + amount)

    def _run(self) -> None:
        while True:
            request = self._queue.get()
            if request is None:
                return
            spans = _span_count(request)
            for attempt in range(self.retries + 1):
                try:
                    self._send(request)
                except _Permanent as exc:
                    log.warning("forwarding %d span(s) to %s refused: %s", spans, self.endpoint, exc)
                    self._count("spans_failed", spans)
                    break
                except Exception as exc:
                    if attempt == self.retries or self._closing.is_set() and attempt:
                        log.warning("forwarding %d span(s) to %s failed: %s", spans, self.endpoint, exc)
                        self._count("spans_failed", spans)
                        break
                    time.sleep(self.backoff * (2**attempt))
                else:
                    self._count("requests_forwarded", 1)
                    self._count("spans_forwarded", spans)
                    break

    def _grpc_sender(self) -> Callable[[Any], None]:
        import grpc
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

        channel = grpc.insecure_channel(self.target)
        stub = TraceServiceStub(channel)
        metadata = tuple((k.lower(), v) for k, v in self.headers.items())
        self._close_transport = channel.close
        retryable = {
            grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.DEADLINE_EXCEEDED,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.StatusCode.ABORTED,
        }

        def send(request: Any) -> None:
            try:
                stub.Export(request, timeout=self.timeout, metadata=metadata or None)
            except grpc.RpcError as exc:
                if exc.code() in retryable:
                    raise
                raise _Permanent(f"{exc.code().name}: {exc.details()}") from None

        return send

    def _http_sender(self) -> Callable[[Any], None]:
        import httpx

        client = httpx.Client(timeout=self.timeout)
        self._close_transport = client.close
        url = _signal_url(self.target, "traces")
        headers = {"Content-Type": "application/x-protobuf", **self.headers}

        def send(request: Any) -> None:
            response = client.post(url, content=request.SerializeToString(), headers=headers)
            if response.status_code in (429, 502, 503, 504):
                raise RuntimeError(f"HTTP {response.status_code}")
            if response.status_code >= 300:
                raise _Permanent(f"HTTP {response.status_code}: {response.text[:200]}")

        return send

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (within ``timeout``), then stop; later submits are dropped."""
        self._closing.set()
        deadline = time.monotonic() + timeout
        while True:  # the sentinel must get in even when the queue is full
            try:
                self._queue.put(None, timeout=0.1)
                break
            except queue.Full:
                if time.monotonic() > deadline:
                    break
        self._thread.join(max(0.0, deadline - time.monotonic()))
        close = getattr(self, "_close_transport", None)
        if close is not None:
            close()


class _Permanent(Exception):
    """The endpoint refused the request for good (bad request, auth): retrying cannot help."""


def _span_count(request: Any) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
