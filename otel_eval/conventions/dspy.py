"""DSPy through openinference-instrumentation-dspy (scope ``openinference.instrumentation.dspy``):
OpenInference spans (:mod:`.openinference` reads them) with three shapes of DSPy's own.

Read from the instrumentation's source (``_ToolCallWrapper``, ``_ModuleForwardWrapper``) and DSPy's
``dspy.ReAct``, checked against a real capture (``dspy_openinference``):

* a ``dspy.Tool`` call is a TOOL span named ``<tool name>.__call__`` (``.acall`` when awaited) with
  no ``tool.name``; its ``input.value`` is the bound call, ``{"kwargs": {...}}``. The tool's name
  is the span name without that suffix (only on a TOOL span without ``tool.name``: any other
  name is kept as it is);
* ``dspy.ReAct`` adds a tool of its own, ``finish`` (``lambda: "Completed."``, no arguments), that
  the model picks to end the loop: the end of the agent's reasoning, not a call of one of its
  tools. It is read as a step (chain), never a call; ReAct always replaces a user's tool of
  that name with it;
* a module's span records ``forward``'s bound arguments: a module whose ``forward`` takes
  ``**input_args`` (ReAct, ProgramOfThought, CodeAct) has its inputs nested under that
  parameter's name (``{"input_args": {"question": ..., "history": ...}}``). The user's request is
  the conventional field (``question``, ``query``, ...) of the inputs, else their one text field
  besides the conversation ``history``; the answer is the prediction's conventional output field,
  else its one text field besides ReAct's ``trajectory`` and the ``reasoning`` a
  ``ChainOfThought`` adds.

The model calls (``LM.__call__`` and, with openinference-instrumentation-litellm, the LiteLLM
``completion`` inside it) are plain OpenInference LLM spans.
"""

from __future__ import annotations

from typing import Any

from ..json_text import parse_json_maybe
from ..spans import SpanRecord
from . import genai, openinference
from .base import IdentityKeys, Reading, SpanType

NAME = "dspy"
tool_observations = None  # tool spans are believed
SEQUENTIAL_NESTING = False
IDENTITY_KEYS = IdentityKeys()  # OpenInference's session.id / user.id: OpenTelemetry's own
merge_logs = genai.merge_logs  # log records in the GenAI event form
SCOPE = "openinference.instrumentation.dspy"
#: The suffixes the instrumentation puts after a ``dspy.Tool``'s name (sync and async call).
TOOL_CALL_SUFFIXES = (".__call__", ".acall")
#: ReAct's end-of-loop pseudo-tool.
FINISH = "finish"
#: Prediction fields that are the module's working, not its answer.
_NOT_ANSWERS = frozenset({"trajectory", "reasoning", "rationale"})
#: Input fields that are no request: the conversation so far, ReAct's trajectory.
_NOT_REQUESTS = frozenset({"history", "trajectory"})


def detect(span: SpanRecord) -> bool:
    """An OpenInference span from the DSPy instrumentation's scope."""
    return span.scope == SCOPE and openinference.KIND_KEY in span.attributes


def tool_name(span: SpanRecord) -> str | None:
    """The ``dspy.Tool`` a TOOL span ran: ``tool.name`` when set, else the span name less the
    instrumentation's ``.__call__`` / ``.acall``; None for a span of another kind."""
    if openinference.quick_span_type(span) != "tool":
        return None
    name = span.attributes.get("tool.name")
    if name not in (None, ""):
        return str(name)
    for suffix in TOOL_CALL_SUFFIXES:
        if span.name.endswith(suffix) and len(span.name) > len(suffix):
            return span.name[: -len(suffix)]
    return span.name


def is_finish(span: SpanRecord) -> bool:
    """ReAct's ``finish``: the model ending the loop, not a tool call."""
    return tool_name(span) == FINISH and "tool.name" not in span.attributes


def quick_span_type(span: SpanRecord) -> SpanType:
    """The span type :func:`read` gives, without reading the content (stored at ingest)."""
    if is_finish(span):
        return "chain"
    return openinference.quick_span_type(span)


def read(span: SpanRecord) -> Reading:
    """The OpenInference reading, with the tool's own name, ReAct's ``finish`` as a step, and a
    module's request and answer found in DSPy's shapes."""
    reading = openinference.read(span)
    reading.convention = NAME
    if reading.span_type == "tool":
        _read_tool(span, reading)
    elif reading.span_type in ("agent", "chain"):
        _read_module(span, reading)
    return reading


def _read_tool(span: SpanRecord, reading: Reading) -> None:
    name = tool_name(span)
    if reading.tool is None or name is None:
        return
    if is_finish(span):
        reading.span_type = "chain"
        reading.tool = None
        reading.parameters = {}
        reading.sources.pop("tool_calls", None)
        reading.sources.pop("parameters_passed", None)
        reading.sources.pop("tool_call_results", None)
        reading.sources["span_type"] = "ReAct's finish (the end of its loop, not a tool call)"
        return
    if "tool.name" not in span.attributes:
        reading.tool.name = name
        reading.sources["tool_calls"] = "span name (less .__call__ / .acall)"


def _read_module(span: SpanRecord, reading: Reading) -> None:
    inputs = _io(span, "input")
    if isinstance(inputs, dict) and len(inputs) == 1:
        only = next(iter(inputs.values()))
        if isinstance(only, dict):  # forward(**input_args): the inputs under the parameter's name
            inputs = only
    request = module_request(inputs)
    if request is not None:
        reading.user_input = request
        reading.sources["agent_task"] = "input.value"
    answer = prediction_answer(_io(span, "output"))
    if answer is not None:
        reading.response = answer
        reading.sources["agent_response"] = "output.value"


def module_request(inputs: Any) -> str | None:
    """The user's request among a module's inputs: a conventional field, else the one text field
    besides ``history`` and ``trajectory``; None when there is no such field or several."""
    if not isinstance(inputs, dict):
        return None
    found = openinference.user_text(inputs)
    if found is not None:
        return found
    texts = [v for k, v in inputs.items() if k not in _NOT_REQUESTS and isinstance(v, str) and v]
    return texts[0] if len(texts) == 1 else None


def prediction_answer(prediction: Any) -> str | None:
    """The answer in a module's prediction: a conventional field (``answer``, ``output``, ...),
    else the one text field besides the module's working (``trajectory``, ``reasoning``); None
    when the prediction is no object or has no such field."""
    if not isinstance(prediction, dict):
        return None
    for key in ("answer", "output", "result", "final_output", "response"):
        if isinstance(prediction.get(key), str) and prediction[key]:
            return str(prediction[key])
    texts = [v for k, v in prediction.items() if k not in _NOT_ANSWERS and isinstance(v, str) and v]
    return texts[0] if len(texts) == 1 else None


def _io(span: SpanRecord, which: str) -> Any:
    return parse_json_maybe(span.attributes.get(f"{which}.value"))
