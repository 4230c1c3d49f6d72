"""The otel-eval sidecar: OTLP receivers (gRPC and HTTP) in front of one :class:`otel_eval.engine.Engine`.

``collector.receiver`` holds the protocol-neutral part both servers share; ``grpc_server`` and
``http_server`` translate transport details around it; ``app`` wires them to the engine.
"""

from __future__ import annotations

from .receiver import Receiver, RetryLater

__all__ = ["Receiver", "RetryLater", "main"]


def main(argv: list[str] | None = None) -> int:
    """Run the collector (``otel-eval collect``'s command line); returns the exit status."""
    from .app import main as app_main

    return app_main(argv)
