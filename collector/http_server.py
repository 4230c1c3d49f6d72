"""OTLP/HTTP receiver: a small ASGI app served by uvicorn.

Routes: ``POST /v1/traces`` and ``POST /v1/logs`` (``application/x-protobuf`` or
``application/json``, optionally ``Content-Encoding: gzip``), ``GET /healthz``,
``GET /metrics`` (Prometheus text) and, with ``--ui``, the dashboard under ``/ui``. Answers
follow the OTLP/HTTP spec: the response message, or a ``google.rpc.Status`` for 4xx/5xx, in the
encoding the request used.

Memory stays bounded: the compressed body is read with a byte limit, and gzip is inflated with
the same limit on its output, so neither a huge upload nor a small gzip bomb can exhaust memory;
all requests together hold at most the byte budget (:mod:`collector.budget`).

Slow clients cost a socket, not service: a request must send its headers within
``header_timeout`` and its body within ``body_timeout``, and only requests being processed count
against the concurrency cap, so sockets that trickle bytes never make others wait or fail.
Requests whose ``Host`` is not a loopback name, the listen address or an ``--allowed-host`` get
403 (:mod:`collector.hosts`, against DNS rebinding).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import socket
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import h11
import uvicorn
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from uvicorn.protocols.http.h11_impl import H11Protocol

from otel_eval.errors import InputError
from otel_eval.otlp_json import parse_logs_request, parse_trace_request

from .budget import ByteBudget, OverBudget, Reservation
from .config import Endpoint
from .gate_view import GateView
from .hosts import HostPolicy
from .prometheus import CollectorCounters
from .receiver import RETRY_AFTER_SECONDS, Receiver, RetryLater

log = logging.getLogger("otel_eval.collector")

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"
# google.rpc.Code values for the Status body of error responses.
_INVALID_ARGUMENT, _RESOURCE_EXHAUSTED, _INTERNAL, _UNAVAILABLE, _UNAUTHENTICATED = 3, 8, 13, 14, 16
_SIGNALS: dict[str, tuple[str, type[Message], Callable[[Any, str], Message]]] = {
    "/v1/traces": ("traces", ExportTraceServiceRequest, parse_trace_request),
    "/v1/logs": ("logs", ExportLogsServiceRequest, parse_logs_request),
}


@dataclass
class HttpResponse:
    """What the HTTP receiver answers one request with."""

    status: int
    body: bytes = b""
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)


class BodyTooLarge(Exception):
    """The request body, as sent or after gunzip, is over ``max_request_bytes``: a 413 answer."""

    pass


class BadBody(Exception):
    """The request body is not what its path and headers say (bad gzip, protobuf or OTLP JSON): a 400 answer."""

    pass


class ClientGone(Exception):
    """The client closed the connection before sending the whole body: nobody to answer."""


#: Output inflated per step, so the budget is charged as the body grows, not after.
_INFLATE_STEP = 1024 * 1024


def gunzip_bounded(data: bytes, limit: int, reservation: Reservation | None = None) -> bytes:
    """Inflate gzip ``data`` (one or more members) producing at most ``limit`` bytes, charging
    the output to ``reservation`` as it grows (raises :class:`OverBudget` when it does not fit)."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            before = len(out)
            try:
                out += inflater.decompress(data, min(_INFLATE_STEP, limit + 1 - len(out)))
            except zlib.error as exc:
                raise BadBody(f"body is not valid gzip: {exc}") from None
            if reservation is not None:
                reservation.add(len(out) - before)
            if len(out) > limit:
                raise BodyTooLarge(f"decompressed body exceeds {limit} bytes")
            data = inflater.unconsumed_tail
            if inflater.eof or not data:
                break
        if not inflater.eof:
            raise BadBody("gzip body is truncated")
        data = inflater.unused_data
    return bytes(out)


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _status_body(code: int, message: str, content_type: str) -> bytes:
    status = Status(code=code, message=message)
    if content_type == PROTOBUF:
        return status.SerializeToString()
    return json.dumps(json_format.MessageToDict(status)).encode()


def _error(
    http_status: int, rpc_code: int, message: str, content_type: str, headers: dict[str, str] | None = None
) -> HttpResponse:
    content_type = content_type if content_type in (PROTOBUF, JSON) else JSON
    return HttpResponse(http_status, _status_body(rpc_code, message, content_type), content_type, headers or {})


async def _send(send: Callable, scope: dict, response: HttpResponse) -> None:
    headers = [(b"content-type", response.content_type.encode()), (b"content-length", str(len(response.body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in response.headers.items()]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body if scope["method"] != "HEAD" else b""})


def _client(scope: dict) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown client"


class OtlpHttpApp:
    """The ASGI application. ``stats`` returns the engine's counters for ``/metrics``."""

    def __init__(
        self,
        receiver: Receiver,
        metrics: CollectorCounters,
        *,
        auth_token: str | None = None,
        max_request_bytes: int = 16 * 1024 * 1024,
        stats: Callable[[], Mapping[str, float]] = dict,
        ui: Callable[..., Any] | None = None,
        hosts: HostPolicy | None = None,
        budget: ByteBudget | None = None,
        max_active_exports: int = 64,
        body_timeout: float = 60.0,
        gate: GateView | None = None,
    ):
        """``ui``: the dashboard's ASGI app (``otel_eval.ui.DashboardApp``), given every ``/ui`` request;
        it checks the same bearer token itself, and also accepts its login cookie. ``hosts``: the
        Host names served (default: loopback only). ``budget``: request-body bytes held at once,
        shared with the gRPC receiver. ``max_active_exports``: exports decoded or committed at once.
        ``gate``: the release gate, served at ``/gate`` and as gauges on ``/metrics``."""
        self.receiver = receiver
        self.ui = ui
        self.metrics = metrics
        self.max_request_bytes = max_request_bytes
        self.stats = stats
        self.hosts = hosts or HostPolicy("127.0.0.1")
        self.budget = budget
        self.max_active_exports = max_active_exports
        self.body_timeout = body_timeout
        self.gate = gate
        self.active_exports = 0
        self.draining = False
        self._expected_auth = f"Bearer {auth_token}".encode() if auth_token else None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":  # served with lifespan="off": no startup or shutdown work
            return
        path = scope["path"]
        if path != "/healthz":
            host = None
            for key, value in scope.get("headers", ()):
                if key == b"host":
                    host = value.decode("latin-1")
                    break
            if not self.hosts.allows(host):
                # DNS rebinding: a page whose name now points at us must not read or write anything.
                await _send(
                    send,
                    scope,
                    HttpResponse(
                        403,
                        json.dumps(
                            {
                                "error": f"Host {host!r} is not served here (DNS rebinding protection); allowed: "
                                f"{self.hosts.describe()}. Add it with --allowed-host."
                            }
                        ).encode(),
                    ),
                )
                return
        if self.ui is not None and (path == "/ui" or path.startswith("/ui/")):
            await self.ui(scope, receive, send)
            return
        try:
            response = await self._route(scope, receive)
        except ClientGone as exc:
            log.info("HTTP %s %s from %s: %s", scope["method"], path, _client(scope), exc)
            return
        await _send(send, scope, response)

    async def _route(self, scope: dict, receive: Callable) -> HttpResponse:
        path, method = scope["path"], scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if path == "/healthz":
            if method not in ("GET", "HEAD"):
                return HttpResponse(405, b'{"error":"use GET"}', headers={"Allow": "GET, HEAD"})
            if self.draining:
                return HttpResponse(503, b'{"status":"draining"}')
            problem = self.receiver.health_problem()
            if problem:
                return HttpResponse(503, json.dumps({"status": "unhealthy", "reason": problem}).encode())
            return HttpResponse(200, b'{"status":"ok"}')
        if path == "/metrics":
            if method not in ("GET", "HEAD"):
                return HttpResponse(405, b'{"error":"use GET"}', headers={"Allow": "GET, HEAD"})
            if not self._authorized(headers):
                return self._unauthorized(JSON)
            text = await asyncio.to_thread(self._metrics_text)
            return HttpResponse(200, text.encode(), PROMETHEUS)
        if path == "/gate":
            if method not in ("GET", "HEAD"):
                return HttpResponse(405, b'{"error":"use GET"}', headers={"Allow": "GET, HEAD"})
            if not self._authorized(headers):
                return self._unauthorized(JSON)
            if self.gate is None:
                return HttpResponse(404, b'{"error":"the release gate is off (the collector has no database view)"}')
            status, answer = await asyncio.to_thread(self.gate.answer, scope.get("query_string", b"").decode("latin-1"))
            return HttpResponse(status, json.dumps(answer).encode())
        if path == "/ui" or path.startswith("/ui/"):
            return HttpResponse(404, b'{"error":"the dashboard is off; start the collector with --ui"}')
        if path not in _SIGNALS:
            return HttpResponse(
                404, json.dumps({"error": f"no such path {path}; OTLP uses /v1/traces and /v1/logs"}).encode()
            )
        signal = _SIGNALS[path][0]
        content_type = _media_type(headers.get("content-type", ""))
        if method != "POST":
            return _error(405, _INVALID_ARGUMENT, f"{path} accepts POST only", content_type, {"Allow": "POST"})
        if not self._authorized(headers):
            self.metrics.request("http", signal, "unauthenticated")
            return self._unauthorized(content_type)
        if content_type not in (PROTOBUF, JSON):
            self.metrics.request("http", signal, "unsupported_media_type")
            return _error(
                415,
                _INVALID_ARGUMENT,
                f"unsupported Content-Type {headers.get('content-type', '')!r}; use {PROTOBUF} or {JSON}",
                JSON,
            )
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", ""):
            self.metrics.request("http", signal, "unsupported_media_type")
            return _error(
                415, _INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}; use gzip or none", content_type
            )
        try:
            declared = int(headers.get("content-length", "0") or 0)
        except ValueError:
            return _error(400, _INVALID_ARGUMENT, "Content-Length is not a number", content_type)
        if declared > self.max_request_bytes:
            self.metrics.request("http", signal, "too_large")
            return _error(
                413,
                _RESOURCE_EXHAUSTED,
                f"body of {declared} bytes exceeds the limit of {self.max_request_bytes}",
                content_type,
            )
        reservation = Reservation(self.budget)
        try:
            try:
                body = await asyncio.wait_for(self._read_body(receive, reservation), self.body_timeout)
            except (BodyTooLarge, OverBudget) as exc:
                return self._refused(signal, exc, content_type)
            except asyncio.TimeoutError:
                self.metrics.request("http", signal, "invalid")
                return _error(
                    408,
                    _INVALID_ARGUMENT,
                    f"body not received within {self.body_timeout:g} s",
                    content_type,
                    {"Connection": "close"},
                )
            if self.active_exports >= self.max_active_exports:
                # Only requests being decoded or committed count: idle, slow or half-sent ones do not.
                self.metrics.request("http", signal, "unavailable")
                return _error(
                    503,
                    _UNAVAILABLE,
                    f"{self.active_exports} exports in progress; retry later",
                    content_type,
                    {"Retry-After": str(RETRY_AFTER_SECONDS)},
                )
            self.active_exports += 1
            try:
                # Decoding and waiting for the commit block: keep them off the event loop.
                return await asyncio.to_thread(self.export, path, content_type, encoding, body, reservation)
            finally:
                self.active_exports -= 1
        finally:
            reservation.close()

    def _metrics_text(self) -> str:
        text = self.metrics.render(self.stats())
        if self.gate is not None:
            lines = self.gate.metrics_lines()
            if lines:
                text = text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
        return text

    def _refused(self, signal: str, exc: Exception, content_type: str) -> HttpResponse:
        """The answer to a body refused while it was read or decoded, whichever step found it."""
        if isinstance(exc, BodyTooLarge):
            self.metrics.request("http", signal, "too_large")
            return _error(413, _RESOURCE_EXHAUSTED, str(exc), content_type)
        if isinstance(exc, OverBudget):
            self.metrics.request("http", signal, "unavailable")
            return _error(503, _UNAVAILABLE, str(exc), content_type, {"Retry-After": str(RETRY_AFTER_SECONDS)})
        self.metrics.request("http", signal, "invalid")  # BadBody
        return _error(400, _INVALID_ARGUMENT, str(exc), content_type)

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        if self._expected_auth is None:
            return True
        # Constant-time: the comparison must not reveal how much of a guess was right.
        return hmac.compare_digest(headers.get("authorization", "").encode("latin-1"), self._expected_auth)

    def _unauthorized(self, content_type: str) -> HttpResponse:
        return _error(
            401,
            _UNAUTHENTICATED,
            "missing or wrong bearer token",
            content_type,
            {"WWW-Authenticate": 'Bearer realm="otel-eval"'},
        )

    async def _read_body(self, receive: Callable, reservation: Reservation) -> bytes:
        """The whole body; its bytes are charged to the budget as they arrive, so a client that
        trickles holds only what it sent, and one that does not fit is refused before it grows."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone(f"disconnected after {size} bytes of the body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_request_bytes:
                raise BodyTooLarge(f"body exceeds the limit of {self.max_request_bytes} bytes")
            reservation.add(len(chunk))
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def export(
        self, path: str, content_type: str, encoding: str, body: bytes, reservation: Reservation | None = None
    ) -> HttpResponse:
        """Decode one export request, commit it and build the OTLP answer (runs on a worker thread)."""
        signal, request_type, parse_json = _SIGNALS[path]
        try:
            if encoding == "gzip":
                body = gunzip_bounded(body, self.max_request_bytes, reservation)
            request = self._decode(body, content_type, request_type, parse_json)
        except (BodyTooLarge, BadBody, OverBudget) as exc:
            return self._refused(signal, exc, content_type)
        handle = self.receiver.export_traces if signal == "traces" else self.receiver.export_logs
        try:
            response = handle(request)
        except RetryLater as exc:
            self.metrics.request("http", signal, "unavailable")
            return _error(503, _UNAVAILABLE, exc.reason, content_type, {"Retry-After": str(exc.retry_after)})
        except Exception:
            log.exception("HTTP %s export failed", signal)
            self.metrics.request("http", signal, "error")
            return _error(500, _INTERNAL, "internal error while storing the batch (see collector log)", content_type)
        self.metrics.request("http", signal, "ok")
        if content_type == PROTOBUF:
            return HttpResponse(200, response.SerializeToString(), PROTOBUF)
        return HttpResponse(200, json.dumps(json_format.MessageToDict(response)).encode(), JSON)

    @staticmethod
    def _decode(
        body: bytes, content_type: str, request_type: type[Message], parse_json: Callable[[Any, str], Message]
    ) -> Message:
        if content_type == PROTOBUF:
            request = request_type()
            try:
                request.ParseFromString(body)
            except (DecodeError, ValueError, RuntimeError) as exc:
                raise BadBody(f"body is not a valid {request_type.__name__} protobuf: {exc}") from None
            return request
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise BadBody(f"body is not valid JSON: {exc}") from None
        try:
            return parse_json(data, "request body")
        except InputError as exc:
            raise BadBody(f"{exc.reason} (at {exc.location})" if exc.location != "$" else exc.reason) from None
        except RecursionError:
            raise BadBody("JSON body is nested too deeply") from None
        except Exception as exc:  # whatever else the JSON → protobuf mapping trips on is still the body's fault
            raise BadBody(f"body is not an OTLP {request_type.__name__}: {type(exc).__name__}: {exc}") from None


class _TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers.

    uvicorn times out idle keep-alive connections but not a request whose headers arrive a byte
    at a time, nor a connection that never sends anything: each would hold its socket forever.
    Here the clock starts when the connection opens or the previous response is complete, and a
    request whose headers are not all in after ``header_timeout`` seconds loses its connection.
    """

    header_timeout: float = 10.0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
            self._disarm_header_deadline()
        elif self._header_deadline is None:
            self._arm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm_header_deadline()  # keep-alive: the next request's headers get the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm_header_deadline(self) -> None:
        deadline = getattr(self, "_header_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.debug(
                "closing connection from %s: no complete request headers within %g s",
                f"{self.client[0]}:{self.client[1]}" if self.client else "unknown client",
                self.header_timeout,
            )
            self.transport.close()


def _protocol_with_header_timeout(seconds: float) -> type:
    return type("TimedH11Protocol", (_TimedH11Protocol,), {"header_timeout": seconds})


class HttpServer:
    """uvicorn serving :class:`OtlpHttpApp` on its own thread.

    The socket is bound here, on the caller's thread, so "address in use" surfaces from
    :meth:`start` as an error instead of a log line from a background thread, and port 0 works.
    """

    def __init__(
        self,
        app: OtlpHttpApp,
        endpoint: Endpoint,
        *,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        log_level: str = "warning",
        header_timeout: float = 10.0,
    ):
        self.app = app
        self.endpoint = endpoint
        self.tls = bool(tls_cert)
        self.port: int | None = None
        self._config = uvicorn.Config(
            app,
            lifespan="off",
            access_log=False,
            log_level=log_level,
            ssl_certfile=tls_cert,
            ssl_keyfile=tls_key,
            # No limit_concurrency: uvicorn counts open connections, so idle or slow sockets would
            # make every request 503. The app caps active exports; the budget caps their memory.
            http=_protocol_with_header_timeout(header_timeout),
            timeout_graceful_shutdown=30,
            server_header=False,
        )
        self._server = uvicorn.Server(self._config)
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> int:
        """Load TLS, bind the socket and start uvicorn on its own thread; returns the port once it is
        serving. A bad certificate or a port in use raises OSError here, not in the server's thread."""
        try:
            self._config.load()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise OSError(f"cannot load TLS certificate/key for HTTP: {exc}") from None
        family = socket.AF_INET6 if ":" in self.endpoint.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.endpoint.host, self.endpoint.port))
        except OSError as exc:
            sock.close()
            raise OSError(f"cannot listen for HTTP on {self.endpoint}: {exc.strerror or exc}") from None
        sock.set_inheritable(True)
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="otlp-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"HTTP server on {self.endpoint} did not start")
            time.sleep(0.01)
        return self.port

    def stop(self, grace: float = 5.0) -> None:
        """Stop accepting connections and let in-flight requests finish (up to ``grace`` seconds)."""
        self.app.draining = True
        self._config.timeout_graceful_shutdown = max(1, int(grace))
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(grace + 5)
