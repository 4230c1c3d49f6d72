"""The known name a misspelled one most likely meant: one rule for golden files and configs."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` most likely misspells, if any is close (difflib, case-insensitive)."""
    lowered = {k.lower(): k for k in known}
    match = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.7)
    return lowered[match[0]] if match else None


def unknown_name(what: str, name: str, known: Iterable[str], scope: str = "") -> str:
    """``unknown setting 'threshhold' (did you mean 'threshold'?)``, or the known names when none is close."""
    known = sorted(set(known))
    head = f"unknown {what} '{name}'" + (f" for {scope}" if scope else "")
    guess = closest_key(name, known)
    if guess is not None:
        return f"{head} (did you mean '{guess}'?)"
    listed = ", ".join(known[:16]) + (", ..." if len(known) > 16 else "")
    return f"{head}; known: {listed}"
