"""The Host check against DNS rebinding (:class:`HostPolicy`) is :mod:`otel_eval.hosts`, shared
with the dashboard served on its own (``otel-eval ui``); the collector's modules import it here."""

from otel_eval.hosts import ANY, LOOPBACK_NAMES, HostPolicy, split_host

__all__ = ["ANY", "LOOPBACK_NAMES", "HostPolicy", "split_host"]
