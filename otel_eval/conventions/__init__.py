"""Attribute dialects, one module each, tried in DESIGN §4 order (first ``detect`` wins).

Listed here by import, not discovered: a dialect whose module fails to import must stop the
program with its error, not be dropped so that its spans quietly read as another dialect's.
"""

from __future__ import annotations

from . import genai, google_adk, noveum, openinference, pydantic_ai, traceloop
from .base import Convention

#: DESIGN §4 order, with each specific dialect ahead of the general one it builds on:
#: pydantic_ai and ADK spans also carry gen_ai.* attributes (their own keys must win), and
#: Traceloop LLM spans carry gen_ai.prompt.N attributes next to traceloop.* ones.
CONVENTIONS: list[Convention] = [openinference, pydantic_ai, google_adk, traceloop, genai, noveum]

DETECTION_ORDER = tuple(module.NAME for module in CONVENTIONS)
