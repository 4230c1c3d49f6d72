"""Errors a user sees: each says which input, where in it, and what was wrong."""

from __future__ import annotations


class OtelEvalError(Exception):
    """Base class for errors reported to the user without a traceback."""


class InputError(OtelEvalError):
    """A file or payload could not be read.

    ``source`` names the file (or request), ``location`` the JSON path inside it
    (``$.eval_cases[2].conversation[0].user_content``), ``reason`` what was wrong.
    """

    def __init__(self, source: str, reason: str, location: str = "$"):
        self.source = source
        self.location = location
        self.reason = reason
        super().__init__(f"{source}: at {location}: {reason}")


class StorageUnavailable(OtelEvalError):
    """The database cannot take this batch now, through no fault of the sender: disk full, locked
    past the deadline, a failed commit. The batch was not stored and may be retried unchanged, so
    receivers answer HTTP 503 + Retry-After / gRPC UNAVAILABLE (exporters retry those)."""

    retry_after: float = 1.0
