"""Attribute dialects, one module each, tried in DESIGN §4 order (first ``detect`` wins).

Listed here by import, not discovered: a dialect whose module fails to import must stop the
program with its error, not be dropped so that its spans quietly read as another dialect's.
"""

from __future__ import annotations

from . import (
    dspy,
    genai,
    google_adk,
    langfuse,
    logfire,
    mastra,
    mlflow,
    noveum,
    openinference,
    pydantic_ai,
    semantic_kernel,
    traceloop,
    vercel_ai,
)
from .base import Convention

#: DESIGN §4 order, with each specific dialect ahead of the general one it builds on:
#: pydantic_ai and ADK spans also carry gen_ai.* attributes (their own keys must win), and
#: Traceloop LLM spans carry gen_ai.prompt.N attributes next to traceloop.* ones; the Vercel AI
#: SDK's model-call spans carry gen_ai.request.* / gen_ai.usage.* next to its ai.* keys, and
#: Mastra's spans are GenAI spans with mastra.* keys that fill the gaps; Semantic Kernel's are
#: GenAI spans (known by their scope) whose function names carry the plugin. Langfuse's own
#: langfuse.observation.* spans go ahead of the general GenAI and Noveum readers, as do MLflow's
#: mlflow.* ones. DSPy's spans are OpenInference spans (known by their scope) with DSPy's own
#: shapes; Logfire's spans carry gen_ai.* keys beside its own attributes (Pydantic AI's, which
#: Logfire also marks, stay Pydantic AI's).
CONVENTIONS: list[Convention] = [
    dspy,
    openinference,
    pydantic_ai,
    google_adk,
    logfire,
    traceloop,
    vercel_ai,
    mastra,
    semantic_kernel,
    langfuse,
    mlflow,
    genai,
    noveum,
]

DETECTION_ORDER = tuple(module.NAME for module in CONVENTIONS)

#: ``merge_logs`` for a span no dialect recognises: log records in the GenAI event form, which any
#: instrumentation may send beside its spans, still fill its reading.
merge_logs_of_unrecognised = genai.merge_logs
