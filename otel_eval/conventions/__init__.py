"""Attribute dialects, one module each, tried in DESIGN §4 order (first ``detect`` wins)."""

from __future__ import annotations

from types import ModuleType

CONVENTIONS: list[ModuleType] = []

#: DESIGN §4 order, with each specific dialect ahead of the general one it builds on:
#: pydantic_ai and adk spans also carry gen_ai.* attributes (their own keys must win), and
#: Traceloop LLM spans carry gen_ai.prompt.N attributes next to traceloop.* ones.
DETECTION_ORDER = ("openinference", "pydantic_ai", "adk", "traceloop", "genai", "noveum")


def _load() -> None:
    import importlib

    for name in DETECTION_ORDER:
        try:
            CONVENTIONS.append(importlib.import_module(f"{__name__}.{name}"))
        except ModuleNotFoundError as exc:  # a dialect not written yet
            if exc.name != f"{__name__}.{name}":
                raise


_load()
