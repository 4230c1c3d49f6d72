"""Attribute dialects, one module each, tried in DESIGN §4 order (first ``detect`` wins)."""

from __future__ import annotations

from types import ModuleType

CONVENTIONS: list[ModuleType] = []


def _load() -> None:
    import importlib

    for name in ("openinference", "genai", "adk", "traceloop", "noveum"):
        try:
            CONVENTIONS.append(importlib.import_module(f"{__name__}.{name}"))
        except ModuleNotFoundError as exc:  # a dialect not written yet
            if exc.name != f"{__name__}.{name}":
                raise


_load()
