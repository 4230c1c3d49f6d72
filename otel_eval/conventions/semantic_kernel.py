"""Semantic Kernel's own telemetry (``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS``).

Built on the GenAI semconv (:mod:`.genai` reads the shared attributes and, through the log
records SK sends its content as, the messages); what is SK's own:

* a function's name is plugin-qualified, ``<plugin>-<function>`` (``Tools-get_weather``), on
  tool spans, in the tool definitions offered to the model and so in the model's tool calls. SK
  plugin names are ``[A-Za-z0-9_]+``, so the part after the first ``-`` is the function a golden
  set names;
* ``gen_ai.tool.call.result`` is ``str(result)``: a Python repr for a dict or a list;
* the ``AutoFunctionInvocationLoop`` span groups a turn's model steps: a chain.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from ..spans import LogEvent, SpanRecord
from . import genai
from .base import IdentityKeys, Reading, SpanType

NAME = "semantic_kernel"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
IDENTITY_KEYS = IdentityKeys()  # gen_ai.conversation.id: OpenTelemetry's own
_SCOPE = "semantic_kernel"
_CHAIN_SPANS = frozenset({"AutoFunctionInvocationLoop"})


def detect(span: SpanRecord) -> bool:
    """Semantic Kernel's instrumentation scope: its spans are GenAI spans known by their scope."""
    return span.scope.startswith(_SCOPE)


def quick_span_type(span: SpanRecord) -> SpanType:
    """Chain for the function-calling loop, else the GenAI span type."""
    if span.name in _CHAIN_SPANS:
        return "chain"
    return genai.quick_span_type(span)


def read(span: SpanRecord) -> Reading:
    """The GenAI reading, with the function-calling loop as a chain and the plugin stripped from the
    function names."""
    reading = genai.read_as(span, NAME)
    if span.name in _CHAIN_SPANS:
        reading.span_type = "chain"
    return finish(span, reading)


def merge_logs(span: SpanRecord, reading: Reading, events: Sequence[LogEvent]) -> Reading:
    """The GenAI log records merged in (SK sends its content as log records), then :func:`finish`
    again: the model's calls they carry name functions with their plugin."""
    return finish(span, genai.merge_logs(span, reading, events))


def finish(span: SpanRecord, reading: Reading) -> Reading:
    """The function names without their plugin, and a repr result as the value it shows."""
    if reading.tool is not None:
        reading.tool.name = function_name(reading.tool.name)
        reading.tool.result = _repr_value(reading.tool.result)
    for call in reading.requested_calls:
        call.name = function_name(call.name)
    for schema in reading.tools_available:
        schema.name = function_name(schema.name)
    return reading


def function_name(qualified: str) -> str:
    """``Tools-get_weather`` → ``get_weather``; a name without a plugin is left as it is."""
    plugin, sep, function = qualified.partition("-")
    if sep and function and plugin.replace("_", "").isalnum():
        return function
    return qualified


def _repr_value(value: Any) -> Any:
    """``"{'sql': 'SELECT ...'}"`` → the dict; anything that is not a Python literal stays as it is."""
    if isinstance(value, str) and value[:1] in ("{", "[") and len(value) < 1_000_000:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value
