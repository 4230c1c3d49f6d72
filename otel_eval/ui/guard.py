"""Who may read the dashboard and who may post its one form.

Reading: with a token configured, a request needs ``Authorization: Bearer TOKEN`` (what the
receiver accepts) or the cookie ``/login`` sets, which holds a hash of the token, not the token;
both compared in constant time.

Writing (``POST /label``): besides the token, a same-origin check (``Sec-Fetch-Site``, then
``Origin`` against ``Host``) and a CSRF token: an HMAC, under a key of this process, of a random
value in a ``SameSite=Strict``, ``HttpOnly`` cookie, so a form posted from another site (which
carries neither the cookie nor the token) is refused. The key is per process: a restart turns
open forms stale, and a reload gives a fresh one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

COOKIE = "otel_eval_ui"
CSRF_COOKIE = "otel_eval_csrf"
_NONCE_HEX = frozenset("0123456789abcdef")


def cookie_value(token: str) -> str:
    """What the login cookie holds: a digest of the token, so the cookie never reveals it."""
    return hashlib.sha256(f"otel-eval-ui:{token}".encode()).hexdigest()


def cookie_named(headers: dict[str, str], name: str) -> str | None:
    """The value of the request's cookie ``name`` (None: absent or empty)."""
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None


def cross_site(headers: dict[str, str]) -> str | None:
    """Why a write request does not come from this dashboard's own pages, or None. Browsers
    send ``Sec-Fetch-Site`` and ``Origin`` with a form POST; a client that sends neither
    (curl, a script) still needs the token and the CSRF cookie and field."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a {site} request cannot write here (Sec-Fetch-Site: {site})"
    origin = headers.get("origin")
    if origin is not None:
        host = headers.get("host", "").lower()
        if origin == "null" or urlsplit(origin).netloc.lower() != host:
            return f"Origin {origin!r} is not this dashboard ({host or 'no Host'}): cross-site writes are refused"
    return None


class Guard:
    """The dashboard's token, login cookie and CSRF key. ``path``: where its cookies apply (the
    mount point)."""

    def __init__(self, auth_token: str | None, path: str):
        self.path = path or "/"
        self._bearer = f"Bearer {auth_token}".encode() if auth_token else None
        self._cookie = cookie_value(auth_token).encode() if auth_token else None
        self._csrf_key = secrets.token_bytes(32)

    @property
    def token_required(self) -> bool:
        """Whether a token is configured (without one, every request may read)."""
        return self._bearer is not None

    def authorized(self, headers: dict[str, str]) -> bool:
        """Whether the request may read: always without a token, else with ``Authorization: Bearer``
        or the login cookie."""
        if self._bearer is None or self._cookie is None:  # no token: both are None together
            return True
        if hmac.compare_digest(headers.get("authorization", "").encode("latin-1"), self._bearer):
            return True
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode("latin-1"), self._cookie):
                return True
        return False

    def accepts_login(self, token: str) -> bool:
        """Whether ``token``, typed into the login form, is the configured one."""
        return self._bearer is not None and hmac.compare_digest(f"Bearer {token}".encode(), self._bearer)

    def login_cookie(self, https: bool) -> str:
        """The ``Set-Cookie`` value after a good login (only called with a token configured)."""
        assert self._cookie is not None
        return f"{COOKIE}={self._cookie.decode()}; Path={self.path}; HttpOnly; SameSite=Strict{_secure(https)}"

    def csrf_token(self, nonce: str) -> str:
        """The form's token for the browser holding ``nonce`` in its CSRF cookie."""
        return hmac.new(self._csrf_key, f"label:{nonce}".encode(), hashlib.sha256).hexdigest()

    def form_nonce(self, headers: dict[str, str]) -> tuple[str, bool]:
        """The browser's CSRF nonce, and whether it is new (then the page sets :meth:`csrf_cookie`)."""
        nonce = cookie_named(headers, CSRF_COOKIE)
        if nonce is not None and len(nonce) == 32 and _NONCE_HEX.issuperset(nonce):
            return nonce, False
        return secrets.token_hex(16), True

    def csrf_cookie(self, nonce: str, https: bool) -> str:
        """The ``Set-Cookie`` value that gives a browser its CSRF ``nonce`` (with the page that holds the form)."""
        return f"{CSRF_COOKIE}={nonce}; Path={self.path}; HttpOnly; SameSite=Strict{_secure(https)}"

    def form_is_ours(self, headers: dict[str, str], form_token: str) -> bool:
        """Whether a posted form carries the CSRF token of the cookie its browser holds."""
        nonce = cookie_named(headers, CSRF_COOKIE)
        return nonce is not None and hmac.compare_digest(form_token.encode(), self.csrf_token(nonce).encode())


def _secure(https: bool) -> str:
    return "; Secure" if https else ""
