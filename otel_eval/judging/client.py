"""A small asyncio HTTP/1.1 client: POST a body, read the answer, keep the connection for the
next call (keep-alive). Standard library only, like the synchronous judge. The caller bounds the
time (``asyncio.wait_for``): a connection whose call was cancelled is closed, never reused."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_BODY = 8 * 1024 * 1024
"""An answer larger than this is refused (a judge's answer is a few KiB)."""


class HttpError(Exception):
    """The exchange failed below HTTP (connection refused or reset, a malformed answer)."""


@dataclass
class Response:
    """An HTTP answer, read whole: the judge's answers are small JSON documents."""

    status: int
    headers: dict[str, str]
    body: bytes


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass


class Client:
    """Keeps up to ``max_idle`` idle connections per host for reuse. One event loop only."""

    def __init__(self, max_idle: int = 64):
        self.max_idle = max_idle
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self.connections_opened = 0

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Response:
        """POSTs ``body`` and reads the whole answer, over a kept-alive connection to the host when one
        is idle. Raises :class:`HttpError` when no answer could be read."""
        parts = urlsplit(url)
        scheme = parts.scheme or "http"
        if scheme not in ("http", "https"):
            raise HttpError(f"unsupported URL scheme {scheme!r} in {url}")
        host = parts.hostname or "127.0.0.1"
        port = parts.port or (443 if scheme == "https" else 80)
        key = (scheme, host, port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = [
            f"POST {path} HTTP/1.1",
            f"Host: {parts.netloc}",
            f"Content-Length: {len(body)}",
            "Connection: keep-alive",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        for attempt in (0, 1):
            reused = bool(self._idle.get(key))
            conn = self._idle[key].pop() if reused else await self._open(scheme, host, port)
            try:
                conn.writer.write(payload)
                await conn.writer.drain()
                response, keep = await _read_response(conn.reader)
            except asyncio.CancelledError:
                conn.close()
                raise
            except (OSError, asyncio.IncompleteReadError, HttpError, ValueError) as exc:
                conn.close()
                if reused and attempt == 0:
                    continue  # the server closed an idle connection: try once on a fresh one
                if isinstance(exc, HttpError):
                    raise
                raise HttpError(f"connection to {host}:{port} failed: {exc or type(exc).__name__}") from None
            if keep and len(self._idle.setdefault(key, [])) < self.max_idle:
                self._idle[key].append(conn)
            else:
                conn.close()
            return response
        raise HttpError("unreachable")  # pragma: no cover

    async def _open(self, scheme: str, host: str, port: int) -> _Conn:
        context = ssl.create_default_context() if scheme == "https" else None
        try:
            reader, writer = await asyncio.open_connection(host, port, ssl=context)
        except OSError as exc:
            raise HttpError(f"cannot reach {host}:{port}: {exc.strerror or exc}") from None
        self.connections_opened += 1
        return _Conn(reader, writer)

    def close(self) -> None:
        """Closes the kept-alive connections; the client can still be used and opens new ones."""
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


async def _read_response(reader: asyncio.StreamReader) -> tuple[Response, bool]:
    status_line = await reader.readline()
    if not status_line:
        raise HttpError("the server closed the connection without an answer")
    parts = status_line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise HttpError(f"not an HTTP answer: {status_line[:100]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    keep = headers.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        size_total = 0
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                break
            size_total += size
            if size_total > MAX_BODY:
                raise HttpError("answer too large")
            chunks.append(await reader.readexactly(size))
            await reader.readline()
        body = b"".join(chunks)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BODY:
            raise HttpError("answer too large")
        body = await reader.readexactly(length)
    else:
        body = await reader.read(MAX_BODY)
        keep = False
    return Response(status, headers, body), keep
