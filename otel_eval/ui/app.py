"""The dashboard as an ASGI app: routing, auth, security headers, static files, the JSON API.

Mounted by the collector under ``/ui`` on its HTTP port (``--ui``), or served on its own by
``otel-eval ui`` (:func:`ui_main`). Routes, relative to the mount point:

``/``                     sessions with filters (``case``, ``version``, ``result``, ``q``, ``page``)
``/sessions/{id}``        one session: criteria, aligned trajectory, spans tree with AgentData
``/api/stamp``            ``{"stamp": ...}``: changes when anything is written (the pages poll it)
``/api/sessions``         the sessions list as JSON (same filters), with result counts
``/api/sessions/{id}``    one session's evaluation as JSON
``/static/ui.css|ui.js``  the only assets; nothing is loaded from another host
``/login``                POST ``token=...``: a browser's way to present the bearer token

With a token configured, a request needs ``Authorization: Bearer TOKEN`` (what the receiver
accepts) or the cookie ``/login`` sets, which holds a hash of the token, not the token.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import sqlite3
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Optional
from urllib.parse import parse_qs

from ..errors import InputError
from ..listen_address import parse_endpoint
from ..read import evaluations, sessions, spans
from ..read.database import open_database
from . import pages

HTML = "text/html; charset=utf-8"
JSON = "application/json"
COOKIE = "otel_eval_ui"
MAX_LOGIN_BYTES = 4096
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = {
    # No inline script or style anywhere, no other origin: a hostile span value that slipped
    # past escaping still could not run.
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = HTML
    headers: dict[str, str] = field(default_factory=dict)


def _json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(data, ensure_ascii=False, default=str).encode(), JSON)


def cookie_value(token: str) -> str:
    """What the login cookie holds: a digest of the token, so the cookie never reveals it."""
    return hashlib.sha256(f"otel-eval-ui:{token}".encode()).hexdigest()


class DashboardApp:
    """ASGI app over one SQLite file, read-only. ``prefix`` is where it is mounted."""

    def __init__(self, db: str, *, auth_token: Optional[str] = None, prefix: str = "/ui", poll_seconds: float = 2.0):
        self.db = str(db)
        self.prefix = prefix.rstrip("/")
        self.links = pages.Links(self.prefix)
        self.poll_seconds = poll_seconds
        self._bearer = f"Bearer {auth_token}".encode() if auth_token else None
        self._cookie = cookie_value(auth_token).encode() if auth_token else None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":  # served with lifespan="off": no startup or shutdown work
            return
        reply = await self._dispatch(scope, receive)
        headers = [(b"content-type", reply.content_type.encode()), (b"content-length", str(len(reply.body)).encode()),
                   (b"cache-control", b"no-store")]
        headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
        headers += [(k.lower().encode(), v.encode("latin-1")) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body if scope["method"] != "HEAD" else b""})

    # --- auth --------------------------------------------------------------------------------

    def authorized(self, headers: dict[str, str]) -> bool:
        if self._bearer is None:
            return True
        if hmac.compare_digest(headers.get("authorization", "").encode("latin-1"), self._bearer):
            return True
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode("latin-1"), self._cookie):  # type: ignore[arg-type]
                return True
        return False

    def _unauthorized(self, api: bool, message: str = "this dashboard needs the collector's bearer token") -> Reply:
        headers = {"WWW-Authenticate": 'Bearer realm="otel-eval"'}
        if api:
            return Reply(401, json.dumps({"error": "missing or wrong bearer token"}).encode(), JSON, headers)
        page = pages.message_page(self.links, "Token required", message, login=True)
        return Reply(401, page.encode(), HTML, headers)

    async def _login(self, scope: dict, receive: Callable) -> Reply:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_LOGIN_BYTES:
                return Reply(413, b"login form too large", "text/plain")
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                break
        token = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0]
        if self._bearer is None:
            return Reply(303, b"", HTML, {"Location": self.links.home()})
        if not hmac.compare_digest(f"Bearer {token}".encode(), self._bearer):
            return self._unauthorized(False, "wrong token, try again")
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        cookie = f"{COOKIE}={self._cookie.decode()}; Path={self.prefix or '/'}; HttpOnly; SameSite=Strict{secure}"  # type: ignore[union-attr]
        return Reply(303, b"", HTML, {"Location": self.links.home(), "Set-Cookie": cookie})

    # --- routing -----------------------------------------------------------------------------

    async def _dispatch(self, scope: dict, receive: Callable) -> Reply:
        path: str = scope["path"]
        if not (path == self.prefix or path.startswith(self.prefix + "/")):
            return Reply(404, b"not found", "text/plain")
        route = path[len(self.prefix):] or "/"
        method = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if route == "/login":
            if method != "POST":
                return Reply(405, b"use POST", "text/plain", {"Allow": "POST"})
            return await self._login(scope, receive)
        if method not in ("GET", "HEAD"):
            return Reply(405, b"the dashboard is read-only: use GET", "text/plain", {"Allow": "GET, HEAD"})
        if route.startswith("/static/"):
            # Assets hold no data; serving them without a token lets the login page be styled.
            return self._static(route[len("/static/"):])
        if not self.authorized(headers):
            return self._unauthorized(route.startswith("/api/"))
        params = parse_qs(scope.get("query_string", b"").decode("utf-8", "replace"))
        try:
            return await asyncio.to_thread(self._page, route, params)
        except InputError as exc:
            where = f" ({exc.location})" if exc.location not in ("", "$") else ""
            message = f"{exc.source}{where}: {exc.reason}"
            if route.startswith("/api/"):
                return _json_reply({"error": message}, 400 if exc.source == "query string" else 503)
            status = 400 if exc.source == "query string" else 503
            return Reply(status, pages.message_page(self.links, "Cannot show this page", message).encode())
        except sqlite3.Error as exc:
            message = f"database {self.db}: {exc}"
            if route.startswith("/api/"):
                return _json_reply({"error": message}, 503)
            return Reply(503, pages.message_page(self.links, "Database unavailable", message).encode(),
                         headers={"Retry-After": "2"})

    def _static(self, name: str) -> Reply:
        if name not in STATIC:
            return Reply(404, b"no such asset", "text/plain")
        data = resources.files(__package__).joinpath("static", name).read_bytes()
        return Reply(200, data, STATIC[name])

    def _page(self, route: str, params: dict[str, list[str]]) -> Reply:
        """Runs on a worker thread: SQLite reads must not stall the receiver's event loop."""
        conn = open_database(self.db)
        try:
            if route == "/":
                return self._sessions(conn, params, api=False)
            if route == "/api/sessions":
                return self._sessions(conn, params, api=True)
            if route == "/api/stamp":
                return _json_reply({"stamp": sessions.change_stamp(conn)})
            for base, api in (("/sessions/", False), ("/api/sessions/", True)):
                if route.startswith(base) and len(route) > len(base):
                    return self._session(conn, route[len(base):], api)
            if route.startswith("/api/"):
                return _json_reply({"error": f"no such API route {route}"}, 404)
            return Reply(404, pages.message_page(self.links, "Not found", f"no page at {self.prefix}{route}").encode())
        finally:
            conn.close()

    def _sessions(self, conn: sqlite3.Connection, params: dict[str, list[str]], api: bool) -> Reply:
        f = sessions.SessionFilter.from_query(params)
        rows, total = sessions.list_sessions(conn, f)
        counts = sessions.result_counts(conn, f)
        stamp = sessions.change_stamp(conn)
        if api:
            return _json_reply({"stamp": stamp, "total": total, "page": f.page, "page_size": f.page_size,
                                "counts": counts, "sessions": rows})
        main = pages.sessions_page(self.links, f, rows, total, counts, sessions.filter_options(conn),
                                   evaluations.pass_rate_points(conn, f.case or None))
        return Reply(200, pages.layout(self.links, "sessions", main, stamp=stamp,
                                       poll_seconds=self.poll_seconds).encode())

    def _session(self, conn: sqlite3.Connection, session_id: str, api: bool) -> Reply:
        overview = sessions.session_overview(conn, session_id)
        if overview is None:
            if api:
                return _json_reply({"error": f"no session {session_id!r}"}, 404)
            return Reply(404, pages.message_page(self.links, "Session not found",
                                                 f"no session {session_id!r} in {self.db}").encode())
        if api:
            return _json_reply(overview)
        stamp = sessions.change_stamp(conn)
        main = pages.session_page(self.links, overview, spans.session_traces(conn, session_id),
                                  spans.session_agent_data(conn, session_id))
        return Reply(200, pages.layout(self.links, f"session {session_id}", main, stamp=stamp,
                                       poll_seconds=self.poll_seconds).encode())


# --- `otel-eval ui`: the dashboard on its own, over an existing database ------------------------

def add_ui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default="otel-eval.db", help="SQLite file written by the collector (default otel-eval.db)")
    parser.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                        help="address to serve the dashboard on, under /ui (default 127.0.0.1:8080)")
    parser.add_argument("--auth-token", default=None, metavar="TOKEN",
                        help="require this bearer token (or the login cookie); env OTEL_EVAL_AUTH_TOKEN")


def ui_main(args: argparse.Namespace) -> int:
    """Serve the dashboard until interrupted. Exit 2 on a bad address or a missing database."""
    import sys

    import uvicorn

    try:
        endpoint = parse_endpoint(args.listen, "--listen")
        if endpoint is None:
            raise InputError("--listen", "the dashboard needs an address, not 'off'")
        open_database(args.db).close()
    except InputError as exc:
        print(f"otel-eval ui: error: {exc.source}: {exc.reason}", file=sys.stderr)
        return 2
    token = args.auth_token or os.environ.get("OTEL_EVAL_AUTH_TOKEN") or None
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    print(f"dashboard at http://{host}:{endpoint.port}/ui/ over {args.db}"
          + (" (bearer token required)" if token else ""), file=sys.stderr)
    uvicorn.run(DashboardApp(args.db, auth_token=token), host=endpoint.host, port=endpoint.port,
                log_level="warning", access_log=False, server_header=False, lifespan="off")
    return 0
