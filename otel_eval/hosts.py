"""Which ``Host`` headers an HTTP server of otel-eval answers (the collector's receiver, and the
dashboard served on its own by ``otel-eval ui``): the defence against DNS rebinding.

A web page in the user's browser can point a name it controls at 127.0.0.1 and then read the
collector's answers as same-origin; the only trace of that is the attacker's name in ``Host``. So
only names that cannot be rebound are accepted by default: ``localhost``, loopback IP literals,
the address the receiver listens on and, when it listens on every interface (``0.0.0.0`` /
``::``), any IP literal (a browser that sends an IP literal is on an origin that *is* that IP, so
it is no rebinding). ``--allowed-host`` adds names (a reverse proxy's, a service's DNS name);
``*`` turns the check off.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

LOOPBACK_NAMES = ("localhost",)
ANY = "*"


def split_host(header: str) -> tuple[str, str | None]:
    """``host[:port]`` / ``[v6][:port]`` → (lower-case host without brackets or trailing dot, port)."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        host, rest = value[1:end], value[end + 1 :]
        return host, rest[1:] if rest.startswith(":") else None
    if value.count(":") == 1:
        host, port = value.split(":")
        return host.rstrip("."), port
    return value.rstrip("."), None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


class HostPolicy:
    """``allows(host_header)``: True for the names above. Built once from the listen address and
    the configured extra names."""

    def __init__(self, listen_host: str, extra: Iterable[str] = ()):
        extra = [e.strip().lower() for e in extra if e and e.strip()]
        self.any = ANY in extra
        listen = split_host(listen_host)[0]
        listen_ip = _ip(listen)
        self.any_ip = listen_ip is not None and listen_ip.is_unspecified
        self.names = set(LOOPBACK_NAMES) | {split_host(e)[0] for e in extra if e != ANY}
        if not self.any_ip:
            self.names.add(listen)

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header may be served: a name allowed, a loopback IP
        (or any IP when listening on all addresses); no header at all is allowed (never a browser)."""
        if self.any:
            return True
        if header is None:
            # No Host at all is HTTP/1.0 from a script, never a browser: nothing to rebind.
            return True
        host, port = split_host(header)
        if port is not None and not port.isdigit():
            return False
        if host in self.names:
            return True
        ip = _ip(host)
        return ip is not None and (ip.is_loopback or self.any_ip)

    def describe(self) -> str:
        """The allowed hosts in words, for the message that refuses a request from another host."""
        if self.any:
            return "any Host (--allowed-host '*')"
        names = sorted(self.names)
        return ", ".join(names + ["loopback IPs"] + (["any IP literal"] if self.any_ip else []))
