"""The dashboard as an ASGI app: routing, security headers, static files, the JSON API; who may
read and write is :mod:`otel_eval.ui.guard`'s.

Mounted by the collector under ``/ui`` on its HTTP port (``--ui``), or served on its own by
``otel-eval ui`` (:func:`ui_main`). Routes, relative to the mount point:

``/``                     sessions with filters (``case``, ``version``, ``result``, ``q``, ``page``)
``/sessions/{id}``        one session: criteria, aligned trajectory, spans tree with AgentData
``/api/stamp``            ``{"stamp": ...}``: changes when anything is written (the pages poll it)
``/api/sessions``         the sessions list as JSON (same filters), with result counts
``/api/sessions/{id}``    one session's evaluation as JSON
``/coverage``             golden coverage: cases with sessions per day and version, never exercised, unmatched share
``/clusters``             unmatched sessions clustered by query, most sessions first
``/labels``               human labels: judge calibration per criterion, user feedback per verdict, latest labels
``/release``              the release gate and trajectory drift of two agent versions (``baseline``, ``candidate``)
``/static/ui.css|ui.js``  the only assets; nothing is loaded from another host
``/login``                POST ``token=...``: a browser's way to present the bearer token
``/label``                POST: a reviewer's label of a session's verdict (the session page's form)

With a token configured, a request needs ``Authorization: Bearer TOKEN`` (what the receiver
accepts) or the cookie ``/login`` sets, which holds a hash of the token, not the token.

**The one write.** The pages only read (``mode=ro``); ``POST /label`` is the only request that
writes, one label through :meth:`otel_eval.store.Store.add_label`, and only after: the Host check
(when the app checks Host itself: ``otel-eval ui``; the collector checks it before), a same-origin
check, the token (when set), and the form's CSRF token (:mod:`otel_eval.ui.guard`). GET never
writes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from ..drift import drift
from ..errors import InputError
from ..gate import gate
from ..hosts import HostPolicy
from ..listen_address import parse_endpoint
from ..read import evaluations, labels, sessions, spans
from ..read.coverage import coverage
from ..read.database import open_database
from ..read.paths import path_counts
from ..read.times import iso_utc, parse_since
from ..read.unmatched import unmatched_queries
from ..read.verdicts import verdict_counts
from ..store import Store
from ..store.labels import LABELS, MAX_NOTE_CHARS, UnlabellableSession
from .guard import Guard, cross_site
from .markup import Links, layout, message_page
from .release_page import release_page
from .session_page import session_page
from .sessions_page import sessions_page
from .summary_pages import clusters_page, coverage_page, labels_page

HTML = "text/html; charset=utf-8"
JSON = "application/json"
MAX_LOGIN_BYTES = 4096
#: A label form: the note (at most MAX_NOTE_CHARS characters, up to 4 bytes each once encoded) and a few fields.
MAX_LABEL_BYTES = 4 * MAX_NOTE_CHARS * 3 + 2048
#: Seconds a label's write waits for the collector's writer before the page says "try again".
LABEL_WRITE_TIMEOUT_S = 5.0
FORM = "application/x-www-form-urlencoded"
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = {
    # No inline script or style anywhere, no other origin: a hostile span value that slipped
    # past escaping still could not run.
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    # No Referer to other sites. Not "no-referrer": under it a browser sends ``Origin: null`` with
    # the page's own form POSTs, and the label form's same-origin check needs the real origin.
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}


@dataclass
class Reply:
    """One HTTP answer of the dashboard: status, body, content type and extra headers (the ASGI
    send in ``__call__`` adds the security headers every answer carries)."""

    status: int
    body: bytes
    content_type: str = HTML
    headers: dict[str, str] = field(default_factory=dict)


def _json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(data, ensure_ascii=False, default=str).encode(), JSON)


class DashboardApp:
    """ASGI app over one SQLite file, read-only but for ``POST /label``. ``prefix`` is where it is
    mounted. ``hosts(host_header) -> bool``: the Host names to answer (None: the server that mounts
    the app checks them, as the collector does)."""

    def __init__(
        self,
        db: str,
        *,
        auth_token: str | None = None,
        prefix: str = "/ui",
        poll_seconds: float = 2.0,
        hosts: Callable[[str | None], bool] | None = None,
    ):
        self.db = str(db)
        self.prefix = prefix.rstrip("/")
        self.links = Links(self.prefix)
        self.poll_seconds = poll_seconds
        self.hosts = hosts
        self.guard = Guard(auth_token, self.prefix or "/")

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":  # served with lifespan="off": no startup or shutdown work
            return
        reply = await self._dispatch(scope, receive)
        headers = [
            (b"content-type", reply.content_type.encode()),
            (b"content-length", str(len(reply.body)).encode()),
            (b"cache-control", b"no-store"),
        ]
        headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
        headers += [(k.lower().encode(), v.encode("latin-1")) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body if scope["method"] != "HEAD" else b""})

    # --- login and the label form ---------------------------------------------------------------

    def _unauthorized(self, api: bool, message: str = "this dashboard needs the collector's bearer token") -> Reply:
        headers = {"WWW-Authenticate": 'Bearer realm="otel-eval"'}
        if api:
            return Reply(401, json.dumps({"error": "missing or wrong bearer token"}).encode(), JSON, headers)
        page = message_page(self.links, "Token required", message, login=True)
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
        if not self.guard.token_required:
            return Reply(303, b"", HTML, {"Location": self.links.home()})
        if not self.guard.accepts_login(token):
            return self._unauthorized(False, "wrong token, try again")
        cookie = self.guard.login_cookie(https=scope.get("scheme") == "https")
        return Reply(303, b"", HTML, {"Location": self.links.home(), "Set-Cookie": cookie})

    async def _label(self, scope: dict, receive: Callable, headers: dict[str, str]) -> Reply:
        """``POST /label``: every check, then one label stored; 303 back to the session page."""
        refused = cross_site(headers)
        if refused:
            return self._refused(403, "Request refused", refused)
        if not self.guard.authorized(headers):
            return self._unauthorized(False)
        if headers.get("content-type", "").split(";")[0].strip().lower() != FORM:
            return self._refused(415, "Not a form", f"a label is posted as {FORM}")
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_LABEL_BYTES:
                return self._refused(413, "Too large", f"a label form is at most {MAX_LABEL_BYTES} bytes")
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                break
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if not self.guard.form_is_ours(headers, form.get("csrf", "")):
            return self._refused(
                403,
                "Form expired",
                "this form is not from this dashboard, or is from before it "
                "restarted: reload the session page and label again",
            )
        session_id, label = form.get("session", ""), form.get("label", "")
        if not session_id or label not in LABELS:
            return self._refused(400, "Bad label", "a label needs a session and agree or disagree")
        who = form.get("by", "").strip()[:200] or "dashboard"
        try:
            await asyncio.to_thread(self._write_label, session_id, label, form.get("note"), who)
        except UnlabellableSession as exc:
            why = "it is not scored yet" if exc.state in ("open", "ended") else "no such session"
            return self._refused(
                404 if exc.state is None else 409,
                "Nothing to label",
                f"session {session_id!r} cannot be labelled: {why}",
            )
        except ValueError as exc:
            return self._refused(400, "Bad label", str(exc))
        except sqlite3.Error as exc:  # the collector's writer held the file past the timeout, disk full, ...
            return Reply(
                503,
                message_page(self.links, "Label not stored", f"database {self.db}: {exc}; try again").encode(),
                headers={"Retry-After": "2"},
            )
        return Reply(303, b"", HTML, {"Location": self.links.session(session_id) + "#labels"})

    def _write_label(self, session_id: str, label: str, note: str | None, who: str) -> None:
        """The dashboard's only write: one short transaction on a connection of its own."""
        store = Store(self.db, timeout=LABEL_WRITE_TIMEOUT_S)
        try:
            store.add_label(session_id, label, note=note, who=who, source="dashboard")
        finally:
            store.close()

    def _refused(self, status: int, title: str, message: str) -> Reply:
        return Reply(status, message_page(self.links, title, message).encode())

    # --- routing -----------------------------------------------------------------------------

    async def _dispatch(self, scope: dict, receive: Callable) -> Reply:
        path: str = scope["path"]
        if not (path == self.prefix or path.startswith(self.prefix + "/")):
            return Reply(404, b"not found", "text/plain")
        route = path[len(self.prefix) :] or "/"
        method = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.hosts is not None and not self.hosts(headers.get("host")):
            # DNS rebinding: a page whose name now points at us must not read or write anything.
            return Reply(
                403,
                f"Host {headers.get('host')!r} is not served here (DNS rebinding protection)".encode(),
                "text/plain",
            )
        if route == "/login":
            if method != "POST":
                return Reply(405, b"use POST", "text/plain", {"Allow": "POST"})
            return await self._login(scope, receive)
        if route == "/label":
            if method != "POST":
                return Reply(
                    405, b"labels are posted by the session page's form: use POST", "text/plain", {"Allow": "POST"}
                )
            return await self._label(scope, receive, headers)
        if method not in ("GET", "HEAD"):
            return Reply(405, b"the dashboard is read-only: use GET", "text/plain", {"Allow": "GET, HEAD"})
        if route.startswith("/static/"):
            # Assets hold no data; serving them without a token lets the login page be styled.
            return self._static(route[len("/static/") :])
        if not self.guard.authorized(headers):
            return self._unauthorized(route.startswith("/api/"))
        params = parse_qs(scope.get("query_string", b"").decode("utf-8", "replace"))
        nonce, fresh = self.guard.form_nonce(headers)
        try:
            reply = await asyncio.to_thread(self._page, route, params, self.guard.csrf_token(nonce))
            if fresh and reply.content_type == HTML and reply.status == 200:
                reply.headers["Set-Cookie"] = self.guard.csrf_cookie(nonce, https=scope.get("scheme") == "https")
            return reply
        except InputError as exc:
            where = f" ({exc.location})" if exc.location not in ("", "$") else ""
            message = f"{exc.source}{where}: {exc.reason}"
            if route.startswith("/api/"):
                return _json_reply({"error": message}, 400 if exc.source == "query string" else 503)
            status = 400 if exc.source == "query string" else 503
            return Reply(status, message_page(self.links, "Cannot show this page", message).encode())
        except sqlite3.Error as exc:
            message = f"database {self.db}: {exc}"
            if route.startswith("/api/"):
                return _json_reply({"error": message}, 503)
            return Reply(
                503, message_page(self.links, "Database unavailable", message).encode(), headers={"Retry-After": "2"}
            )

    def _static(self, name: str) -> Reply:
        if name not in STATIC:
            return Reply(404, b"no such asset", "text/plain")
        data = resources.files(__package__).joinpath("static").joinpath(name).read_bytes()
        return Reply(200, data, STATIC[name])

    def _page(self, route: str, params: dict[str, list[str]], csrf: str = "") -> Reply:
        """Runs on a worker thread: SQLite reads must not stall the receiver's event loop.
        ``csrf``: the token a label form of this page carries."""
        conn = open_database(self.db)
        try:
            if route == "/":
                return self._sessions(conn, params, api=False)
            if route == "/api/sessions":
                return self._sessions(conn, params, api=True)
            if route == "/api/stamp":
                return _json_reply({"stamp": self._stamp(conn)})
            if route == "/coverage":
                return self._coverage(conn, params)
            if route == "/clusters":
                return self._clusters(conn, params)
            if route == "/labels":
                return self._labels(conn)
            if route == "/release":
                return self._release(params)
            for base, api in (("/sessions/", False), ("/api/sessions/", True)):
                if route.startswith(base) and len(route) > len(base):
                    return self._session(conn, route[len(base) :], api, csrf)
            if route.startswith("/api/"):
                return _json_reply({"error": f"no such API route {route}"}, 404)
            return Reply(404, message_page(self.links, "Not found", f"no page at {self.prefix}{route}").encode())
        finally:
            conn.close()

    @staticmethod
    def _stamp(conn: sqlite3.Connection) -> str:
        """Changes when spans, sessions, evaluations, labels or feedback are written."""
        return f"{sessions.change_stamp(conn)}-{labels.label_stamp(conn)}"

    def _sessions(self, conn: sqlite3.Connection, params: dict[str, list[str]], api: bool) -> Reply:
        f = sessions.SessionFilter.from_query(params)
        rows, total = sessions.list_sessions(conn, f)
        counts = sessions.result_counts(conn, f)
        stamp = self._stamp(conn)
        if api:
            return _json_reply(
                {
                    "stamp": stamp,
                    "total": total,
                    "page": f.page,
                    "page_size": f.page_size,
                    "counts": counts,
                    "sessions": [r.to_dict() for r in rows],
                }
            )
        main = sessions_page(
            self.links,
            f,
            rows,
            total,
            counts,
            sessions.filter_options(conn),
            evaluations.pass_rate_points(conn, f.case or None),
        )
        return Reply(
            200,
            layout(
                self.links, "sessions", main, stamp=stamp, poll_seconds=self.poll_seconds, current="sessions"
            ).encode(),
        )

    def _session(self, conn: sqlite3.Connection, session_id: str, api: bool, csrf: str = "") -> Reply:
        overview = sessions.session_overview(conn, session_id)
        if overview is None:
            if api:
                return _json_reply({"error": f"no session {session_id!r}"}, 404)
            return Reply(
                404, message_page(self.links, "Session not found", f"no session {session_id!r} in {self.db}").encode()
            )
        if api:
            return _json_reply(overview.to_dict())
        stamp = self._stamp(conn)
        main = session_page(
            self.links,
            overview,
            spans.session_traces(conn, session_id),
            spans.session_agent_data(conn, session_id),
            csrf=csrf,
        )
        return Reply(
            200, layout(self.links, f"session {session_id}", main, stamp=stamp, poll_seconds=self.poll_seconds).encode()
        )

    def _coverage(self, conn: sqlite3.Connection, params: dict[str, list[str]]) -> Reply:
        since = _since(params)
        main = coverage_page(self.links, coverage([self.db], since), _one(params, "since"))
        return Reply(
            200,
            layout(
                self.links,
                "golden coverage",
                main,
                stamp=self._stamp(conn),
                poll_seconds=self.poll_seconds,
                current="coverage",
            ).encode(),
        )

    def _clusters(self, conn: sqlite3.Connection, params: dict[str, list[str]]) -> Reply:
        from ..golden_suggest import UnmatchedSession, cluster_sessions

        since = _since(params)
        text = _one(params, "min")
        if text and (not text.isdigit() or not 1 <= int(text) <= 1000):
            raise InputError("query string", f"min must be a whole number from 1 to 1000, got {text!r}", "min")
        least = int(text) if text else DEFAULT_CLUSTER_MIN
        found = unmatched_queries(conn, since, MAX_CLUSTERED)
        pool = [UnmatchedSession(self.db, sid, query, created_at) for sid, query, created_at in found.sessions]
        clusters = cluster_sessions(pool, least)
        main = clusters_page(self.links, clusters, found, least, _one(params, "since"))
        # No live refresh: clustering is the one page that costs more than a few queries.
        return Reply(200, layout(self.links, "unmatched clusters", main, current="clusters").encode())

    def _release(self, params: dict[str, list[str]]) -> Reply:
        counts = verdict_counts([self.db])
        baseline, candidate = _release_versions(counts, params)
        result = drift_results = None
        if baseline and candidate and baseline != candidate:
            result = gate(counts, baseline, candidate)
            drift_results = drift(path_counts([self.db], baseline, candidate))
        main = release_page(self.links, counts.sessions, baseline, candidate, result, drift_results or [])
        return Reply(
            200, layout(self.links, "release", main, poll_seconds=self.poll_seconds, current="release").encode()
        )

    def _labels(self, conn: sqlite3.Connection) -> Reply:
        main = labels_page(self.links, labels.calibration([self.db]), labels.recent_labels(conn))
        return Reply(
            200,
            layout(
                self.links,
                "human labels",
                main,
                stamp=self._stamp(conn),
                poll_seconds=self.poll_seconds,
                current="labels",
            ).encode(),
        )


#: Smallest cluster the Unmatched clusters page lists unless ``?min=`` says otherwise.
DEFAULT_CLUSTER_MIN = 2
#: Unmatched sessions the clusters page reads at most (the most recent), so it stays a page.
MAX_CLUSTERED = 1000


def _release_versions(counts: Any, params: dict[str, list[str]]) -> tuple[str, str]:
    """The page's two versions: as asked, else the two with most sessions, the one seen with fewer
    sessions as the candidate (a canary takes a share of the traffic)."""
    ranked = sorted(counts.sessions, key=lambda v: (-counts.sessions[v], v))
    baseline = _one(params, "baseline") or (ranked[0] if ranked else "")
    candidate = _one(params, "candidate") or next((v for v in ranked if v != baseline), "")
    return baseline, candidate


def _one(params: dict[str, list[str]], name: str) -> str:
    return ((params.get(name) or [""])[-1]).strip()


def _since(params: dict[str, list[str]]) -> str | None:
    """``?since=`` as the store's ``created_at`` form; a bad value is a 400 naming the parameter."""
    try:
        since_ns = parse_since(_one(params, "since"), "since")
    except InputError as exc:
        raise InputError("query string", exc.reason, "since") from None
    return None if since_ns is None else iso_utc(since_ns / 1e9)


# --- `otel-eval ui`: the dashboard on its own, over an existing database ------------------------


def add_ui_arguments(parser: argparse.ArgumentParser) -> None:
    """``otel-eval ui``'s options: the database, the listen address, a token, and the Host names to answer."""
    parser.add_argument(
        "--db", default="otel-eval.db", help="SQLite file written by the collector (default otel-eval.db)"
    )
    parser.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="address to serve the dashboard on, under /ui (default 127.0.0.1:8080)",
    )
    parser.add_argument(
        "--auth-token",
        default=None,
        metavar="TOKEN",
        help="require this bearer token (or the login cookie); env OTEL_EVAL_AUTH_TOKEN",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this Host name (a reverse proxy's); loopback names and the "
        "--listen address are always answered, other names refused against DNS rebinding; "
        "repeatable, '*' turns the check off",
    )


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
    print(
        f"dashboard at http://{host}:{endpoint.port}/ui/ over {args.db}"
        + (" (bearer token required)" if token else ""),
        file=sys.stderr,
    )
    hosts = HostPolicy(endpoint.host, getattr(args, "allowed_host", None) or ())
    uvicorn.run(
        DashboardApp(args.db, auth_token=token, hosts=hosts.allows),
        host=endpoint.host,
        port=endpoint.port,
        log_level="warning",
        access_log=False,
        server_header=False,
        lifespan="off",
    )
    return 0
