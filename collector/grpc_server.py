"""OTLP/gRPC receiver: TraceService/Export and LogsService/Export.

The generated servicers would let grpc deserialize requests itself, and a malformed body would
then come back as ``INTERNAL`` ("Exception deserializing request!"). OTLP wants
``INVALID_ARGUMENT`` for data the client should not retry, so the methods are registered with raw
bytes in and parsed here; the servicer classes are still the generated ones' subclasses, so they
also work with ``add_TraceServiceServicer_to_server`` unchanged.
"""

from __future__ import annotations

import hmac
import logging
import socket
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import DecodeError, Message
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from .budget import ByteBudget, OverBudget, Reservation
from .config import Endpoint
from .prometheus import CollectorCounters
from .receiver import RETRY_AFTER_SECONDS, Receiver, RetryLater

log = logging.getLogger("otel_eval.collector")

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
#: The trailer the OTLP exporters read for how long to back off (opentelemetry-python does).
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"


class TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    """OTLP's TraceService: each ``Export`` goes to the shared :class:`Receiver`, its outcome counted."""

    def __init__(self, receiver: Receiver, metrics: CollectorCounters):
        self.receiver = receiver
        self.metrics = metrics

    def Export(self, request: ExportTraceServiceRequest, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        return _export(self.receiver.export_traces, request, context, self.metrics, "traces")


class LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    """OTLP's LogsService: each ``Export`` goes to the shared :class:`Receiver`, its outcome counted."""

    def __init__(self, receiver: Receiver, metrics: CollectorCounters):
        self.receiver = receiver
        self.metrics = metrics

    def Export(self, request: ExportLogsServiceRequest, context: grpc.ServicerContext) -> ExportLogsServiceResponse:
        return _export(self.receiver.export_logs, request, context, self.metrics, "logs")


def _export(
    handle: Callable[[Any], Any], request: Any, context: grpc.ServicerContext, metrics: CollectorCounters, signal: str
) -> Any:
    try:
        response = handle(request)
    except RetryLater as exc:
        metrics.request("grpc", signal, "unavailable")
        _abort_unavailable(context, exc.reason, exc.retry_after)
    except Exception:
        log.exception("gRPC %s export failed", signal)
        metrics.request("grpc", signal, "error")
        context.abort(grpc.StatusCode.INTERNAL, "internal error while storing the batch (see collector log)")
    metrics.request("grpc", signal, "ok")
    return response


def _abort_unavailable(context: grpc.ServicerContext, reason: str, retry_after: int) -> None:
    retry = RetryInfo(retry_delay=Duration(seconds=retry_after))
    context.set_trailing_metadata(((RETRY_INFO_KEY, retry.SerializeToString()),))
    context.abort(grpc.StatusCode.UNAVAILABLE, reason)


def _raw_bytes_handler(
    export: Callable[[Any, grpc.ServicerContext], Any],
    request_type: type[Message],
    response_type: type[Message],
    metrics: CollectorCounters,
    signal: str,
    budget: ByteBudget | None = None,
) -> grpc.RpcMethodHandler:
    def parse_then_export(body: bytes, context: grpc.ServicerContext) -> Any:
        with Reservation(budget) as reservation:
            try:
                reservation.add(len(body))
            except OverBudget as exc:
                metrics.request("grpc", signal, "unavailable")
                del body  # do not hold it while the answer goes out
                _abort_unavailable(context, str(exc), RETRY_AFTER_SECONDS)
            request = request_type()
            try:
                request.ParseFromString(body)
            except (DecodeError, ValueError, RuntimeError) as exc:
                metrics.request("grpc", signal, "invalid")
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"request is not a valid {request_type.__name__} protobuf: {exc}"
                )
            del body
            return export(request, context)

    return grpc.unary_unary_rpc_method_handler(
        parse_then_export, request_deserializer=None, response_serializer=response_type.SerializeToString
    )


class BearerTokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose ``authorization`` metadata is not ``Bearer <token>``."""

    def __init__(self, token: str, metrics: CollectorCounters):
        self._expected = f"Bearer {token}".encode()
        self._metrics = metrics

        def deny(_request: Any, context: grpc.ServicerContext) -> None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Callable, handler_call_details: Any) -> Any:
        given = ""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                given = value if isinstance(value, str) else value.decode("latin-1")
                break
        # Constant-time: the comparison must not reveal how much of a guess was right.
        if hmac.compare_digest(given.encode(), self._expected):
            return continuation(handler_call_details)
        signal = "logs" if LOGS_SERVICE in (handler_call_details.method or "") else "traces"
        self._metrics.request("grpc", signal, "unauthenticated")
        return self._deny


class GrpcServer:
    """A running OTLP/gRPC server; :meth:`start` binds (and returns the port), :meth:`stop` drains."""

    def __init__(
        self,
        receiver: Receiver,
        metrics: CollectorCounters,
        endpoint: Endpoint,
        *,
        auth_token: str | None = None,
        tls: tuple[bytes, bytes] | None = None,
        max_request_bytes: int = 16 * 1024 * 1024,
        max_workers: int = 8,
        budget: ByteBudget | None = None,
    ):
        self.endpoint = endpoint
        self.port: int | None = None
        self.tls = tls is not None
        interceptors = [BearerTokenInterceptor(auth_token, metrics)] if auth_token else []
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="otlp-grpc"),
            interceptors=interceptors,
            options=[
                # grpc enforces it on the decompressed message too, so gzip cannot get around it.
                ("grpc.max_receive_message_length", max_request_bytes),
                ("grpc.max_send_message_length", 4 * 1024 * 1024),
                # Without this, a second collector on the same port would silently share it.
                ("grpc.so_reuseport", 0),
            ],
            # In-flight calls each hold a request in memory: bound them (excess → RESOURCE_EXHAUSTED).
            maximum_concurrent_rpcs=max_workers * 2,
        )
        traces = TraceServicer(receiver, metrics)
        logs = LogsServicer(receiver, metrics)
        self._server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    TRACE_SERVICE,
                    {
                        "Export": _raw_bytes_handler(
                            traces.Export,
                            ExportTraceServiceRequest,
                            ExportTraceServiceResponse,
                            metrics,
                            "traces",
                            budget,
                        ),
                    },
                ),
                grpc.method_handlers_generic_handler(
                    LOGS_SERVICE,
                    {
                        "Export": _raw_bytes_handler(
                            logs.Export, ExportLogsServiceRequest, ExportLogsServiceResponse, metrics, "logs", budget
                        ),
                    },
                ),
            )
        )
        self._tls_pair = tls

    def start(self) -> int:
        """Bind and start serving; returns the port. A port that cannot be bound raises OSError here,
        since grpc itself would only log it."""
        address = str(self.endpoint)
        # grpc reports a failed bind only through a C-core log line on stderr; find out first.
        check_bindable(self.endpoint, "gRPC")
        try:
            if self._tls_pair is not None:
                cert, key = self._tls_pair
                port = self._server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
            else:
                port = self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(f"cannot listen for gRPC on {address}: {exc}") from None
        if not port:
            raise OSError(f"cannot listen for gRPC on {address} (address in use or not available)")
        self._server.start()
        self.port = port
        return port

    def stop(self, grace: float = 5.0) -> None:
        """Stop accepting calls and wait up to ``grace`` seconds for in-flight ones to commit."""
        self._server.stop(grace).wait()


def check_bindable(endpoint: Endpoint, what: str) -> None:
    """Raise ``OSError("cannot listen for <what> on HOST:PORT: <reason>")`` if the address cannot be bound."""
    try:
        infos = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"cannot listen for {what} on {endpoint}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As grpc does: a port whose old connections linger in TIME_WAIT is free; one with a listener is not.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise OSError(f"cannot listen for {what} on {endpoint}: {exc.strerror or exc}") from None
