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
