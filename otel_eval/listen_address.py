"""Listen addresses (``HOST:PORT``, ``[v6]:PORT`` or ``off``), as the collector's receivers and the
standalone dashboard take them: checked up front, so a typo is an error naming the flag, not a
bind failure later."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from .errors import InputError


@dataclass(frozen=True)
class Endpoint:
    """A checked listen address; ``str()`` writes it back as it is given (``[v6]:PORT`` for IPv6)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        """Listening only on this machine: on any other address the collector warns when no auth
        token is set."""
        return self.host in ("127.0.0.1", "::1", "localhost") or self.host.startswith("127.")


def parse_endpoint(text: str, source: str) -> Endpoint | None:
    """``HOST:PORT``, ``[v6]:PORT`` or ``off`` (None: that receiver is disabled)."""
    value = str(text).strip()
    if value.lower() == "off":
        return None
    host, sep, port_text = value.rpartition(":")
    if not sep or not host:
        raise InputError(source, f"expected HOST:PORT or 'off', got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise InputError(source, f"port must be a number, got {port_text!r} in {value!r}") from None
    if not 0 <= port <= 65535:
        raise InputError(source, f"port must be 0-65535, got {port}")
    problem = host_problem(host)
    if problem:
        raise InputError(source, f"{problem} in {value!r}")
    return Endpoint(host, port)


def host_problem(host: str) -> str:
    """Why ``host`` is neither an IP address nor a host name, or "" (``256.1.1.1`` is refused here,
    not later as a bind error)."""
    try:
        ipaddress.ip_address(host)
        return ""
    except ValueError:
        pass
    if ":" in host:
        return f"{host!r} is not a valid IPv6 address"
    if all(part.isdigit() for part in host.split(".")):
        return f"{host!r} is not a valid IPv4 address"
    labels = host.rstrip(".").split(".")
    if len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        return f"{host!r} is not a valid host name or IP address"
    return ""


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
