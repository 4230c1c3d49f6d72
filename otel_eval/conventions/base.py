"""What a convention reads from one span: the contract between conventions and the mapper.

Each convention module (``openinference``, ``genai``, ``google_adk``, ``traceloop``, ``noveum``,
...) is a :class:`Convention`: it defines every member of that protocol, the optional hooks as
``None`` / ``False`` when it has no use for them, and is listed, in detection order, in
``otel_eval.conventions.CONVENTIONS``. The mapper
(:mod:`otel_eval.mapping`) turns a :class:`Reading` into ``AgentData``; the trajectory builder
(:mod:`otel_eval.trajectory`) turns the readings of a session into turns and tool calls. Neither
looks at raw attributes, so a new dialect is one new module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..json_text import parse_json_maybe
from ..models.agent_data import ToolSchema

SpanType = Literal["agent", "llm", "tool", "retriever", "chain", "unknown"]

if TYPE_CHECKING:
    from ..spans import LogEvent, SpanRecord


@runtime_checkable
class Convention(Protocol):
    """One attribute dialect: what every convention module defines."""

    NAME: str
    """The name stored with each span (``spans.convention``): "openinference", "genai", ..."""

    def detect(self, span: SpanRecord) -> bool:
        """Cheap: looks at attribute keys and the span name only."""

    def read(self, span: SpanRecord) -> Reading:
        """Pure: never raises on missing or malformed attributes."""

    # Read-only members (properties), so that a module's function or its ``None`` satisfies them:
    # a plain attribute here would be settable, and mypy would hold each module to the exact union.
    @property
    def quick_span_type(self) -> Callable[[SpanRecord], SpanType] | None:
        """``read(span).span_type``, cheaply, so ingest can store it; None: known only at scoring."""

    @property
    def tool_observations(self) -> Callable[[Sequence[SpanRecord]], dict[str, Any]] | None:
        """``spans -> {llm span id: observation}`` for a dialect whose tool spans record outputs that
        cannot be trusted (Noveum: the run's final answer), so its tool results come only from what
        the LLM was later shown; None: tool spans are believed."""

    SEQUENTIAL_NESTING: bool
    """True: parent links chain consecutive steps instead of meaning "called from inside"."""

    IDENTITY_KEYS: IdentityKeys
    """The attributes that name a span's session and user in this dialect."""

    def merge_logs(self, span: SpanRecord, reading: Reading, events: Sequence[LogEvent]) -> Reading:
        """A copy of ``reading`` with the content its span's OTLP log records carry merged in
        (span attributes win). Log records in the GenAI event form may come beside any
        instrumentation's spans, so every dialect merges those (``genai.merge_logs``); one whose
        names differ from what the records say (Semantic Kernel's plugin prefix) fixes them after."""


@dataclass(frozen=True)
class IdentityKeys:
    """Which span attributes name the session and the user, as one dialect writes them.

    :mod:`otel_eval.mapping` takes a span's session (and user) from the first key set, in this
    order (DESIGN §4): the keys a user named (``--session-attribute``); :data:`OTEL_IDENTITY`;
    every dialect's ``session`` keys, in detection order; each of those on the span's resource;
    then the span's own dialect's ``own_session`` keys; then what the dialect's reader found.
    """

    session: tuple[str, ...] = ()
    """Read on spans of *every* dialect: an SDK stamps them on spans another dialect may read
    (Traceloop's association properties on an OpenAI client's span; ADK's session on a span
    OpenInference's ADK instrumentation also marks)."""
    user: tuple[str, ...] = ()
    own_session: tuple[str, ...] = ()
    """Read only on this dialect's own spans (its metadata spellings), after every shared key."""
    own_user: tuple[str, ...] = ()


#: OpenTelemetry's own keys, ahead of any dialect's: ``session.id`` and ``user.id`` /
#: ``enduser.id`` of the general semantic conventions, and the GenAI spellings that most
#: dialects here build on.
OTEL_IDENTITY = IdentityKeys(
    session=("session.id", "gen_ai.conversation.id"), user=("user.id", "enduser.id", "gen_ai.user.id")
)


@dataclass
class RequestedToolCall:
    """A tool call an LLM response (or an agent action) asked for.

    One call, four roles, one spelling of its arguments (``args``, as the EvalSet's and ADK's
    ``FunctionCall``), except where a spec fixes another name:

    - :class:`RequestedToolCall` (asked for) and :class:`ExecutedToolCall` (a tool span's run):
      what a convention reads from one span;
    - :class:`otel_eval.trajectory.ActualToolCall`: the call the agent made, in the session's
      trajectory (the two above, paired by call id);
    - :class:`otel_eval.models.evalset.ExpectedToolCall`: the call a golden case expects;
    - :class:`otel_eval.models.agent_data.ToolCall`: AgentData's, whose fields the AgentData spec
      names ``tool_name``, ``parameters`` and ``call_id`` (mapping.py fills them from ``name``,
      ``args`` and ``call_id``).
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None


@dataclass
class ExecutedToolCall:
    """What a tool span did: the call as executed, and its outcome (the roles of the other
    tool-call classes: :class:`RequestedToolCall`)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    result: Any = None
    error: str | None = None
    """None on success; the error message (status message, exception message) on failure."""


@dataclass
class ToolResponse:
    """A tool's result as a message carries it back to the model."""

    call_id: str | None
    name: str | None
    value: Any
    is_error: bool = False
    """The shape says the call failed: Bedrock ``toolResult.status == "error"``, Anthropic
    ``tool_result.is_error``, LangChain ``ToolMessage.status == "error"``."""


@dataclass
class Reading:
    """What one span says, whatever its instrumentation: its kind, the texts, tools and calls it
    carries, in one shape so the trajectory and AgentData need not know any dialect."""

    convention: str
    span_type: SpanType = "unknown"
    agent_name: str | None = None
    user_input: str | None = None
    """The user's request as this span saw it (agent task, or the last user message of an LLM call)."""
    system_prompt: str | None = None
    response: str | None = None
    """The span's output as text (agent final answer, LLM completion text, tool output)."""
    tools_available: list[ToolSchema] = field(default_factory=list)
    requested_calls: list[RequestedToolCall] = field(default_factory=list)
    """Tool calls decided by this span (LLM tool_calls of one response = one parallel group)."""
    tool: ExecutedToolCall | None = None
    sent_back: list[ToolResponse] | Callable[[], list[ToolResponse]] = field(
        default_factory=list, repr=False, compare=False
    )
    """What :meth:`tool_results` returns, or how to read it: a model call's input is parsed for
    them only when asked (most spans never are), which is ~7% of mapping a span."""
    parameters: dict[str, Any] = field(default_factory=dict)
    retrieval_query: list[str] | None = None
    retrieved_documents: list[str] | None = None
    session_id: str | None = None
    user_id: str | None = None
    agent_exit: bool = False
    is_wrapper: bool = False
    """A span that groups or forwards calls (ADK ``(merged tools)``, an MCP client wrapper): never a call."""
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    trace: str | None = None
    """JSON dump of the span's events, where the convention keeps them (Noveum agent spans)."""
    sources: dict[str, str] = field(default_factory=dict)
    """AgentData field → the attribute it came from (shown by ``otel-eval inspect``)."""
    unread: list[str] = field(default_factory=list)
    """What the reading could not read, one short reason each (``"gen_ai.choice event: message
    looks like JSON but does not parse"``, ``"gen_ai.output.messages: unknown content part type
    'foo'"``): the fields it would have filled stay empty, or hold the unread part as JSON text."""

    def tool_results(self) -> list[ToolResponse]:
        """The tool results a model call was sent back, in order: the tool messages after the
        newest user message of its input. A loop whose tools are not traced (an agent written by
        hand, traced only by its model client's instrumentation) records its calls' results
        nowhere else."""
        found = self.sent_back
        if callable(found):
            found = self.sent_back = found()
        return found


MAX_UNREAD = 20


def note_unread(reading: Reading, reason: str) -> None:
    """Add a reason to ``reading.unread`` (each once; at most :data:`MAX_UNREAD`)."""
    if reason not in reading.unread and len(reading.unread) < MAX_UNREAD:
        reading.unread.append(reason)


_last_key_text: tuple[object, str] = (None, "")
"""The attribute mapping asked about last and its keys as one text (:func:`key_text`), as one
value, so threads detecting spans at once each read a consistent pair."""


def key_text(attributes: Mapping[str, Any]) -> str:
    """The keys of ``attributes`` joined into one text, each after a newline. Detection asks six
    dialects in a row whether one span has a key with their prefix, so the text is kept for the
    mapping asked about last and made once per span, not six times. Kept by identity: a
    span's attributes do not change (``SpanRecord`` is immutable), and the mapping kept cannot be
    collected while kept, so its id cannot be reused."""
    global _last_key_text
    last = _last_key_text
    if last[0] is not attributes:
        last = _last_key_text = (attributes, "\n" + "\n".join(attributes))
    return last[1]


def any_key_starts(attributes: Mapping[str, Any], prefix: str) -> bool:
    """Does any attribute key start with ``prefix``? Detection asks this of every span at
    ingest, six times for a GenAI span, and the answer is nearly always no: that is settled on
    the keys as one text (:func:`key_text`), where a key starting with ``prefix`` shows as a
    newline and ``prefix``. Only a yes is checked key by key, since a key may itself hold a
    newline."""
    if "\n" + prefix not in key_text(attributes):
        return False
    return any(map(str.startswith, attributes, repeat(prefix)))


def may_have_key_starting(attributes: Mapping[str, Any], *prefixes: str) -> bool:
    """False when no attribute key starts with any of ``prefixes``; True when one may. Readers
    ask this before looking for optional attribute families, which most spans lack: the keys
    are searched as one text (:func:`key_text`, in C, ~2x faster than :func:`any_key_starts`
    on a span's ten-odd keys). A key that merely contains a prefix gives True: only for a
    caller whose search then finds nothing, never a missed key."""
    keys = key_text(attributes)
    for prefix in prefixes:
        if prefix in keys:
            return True
    return False


def as_arguments(value: Any, single_key: str = "input") -> dict[str, Any]:
    """Tool arguments as a dict, by the one rule every dialect shares (docs/conventions-table.md):
    JSON strings parsed; a call wrapper unwrapped (:func:`unwrap_call_input`); a bare value
    becomes ``{single_key: value}``."""
    parsed = parse_json_maybe(value)
    if parsed is None:
        return {}
    if type(parsed) is dict:
        if "kwargs" in parsed or "args" in parsed:
            return unwrap_call_input(parsed, single_key)
        return parsed
    return {single_key: parsed}


_WRAPPER_KEYS = frozenset({"args", "kwargs"})


def _flags_beside_kwargs(value: dict[str, Any]) -> bool:
    """``{"args": [], "kwargs": {...}, "sanitize_inputs_outputs": true}`` (smolagents): a call
    record with the framework's own switches beside it, which are no arguments."""
    return isinstance(value.get("kwargs"), dict) and all(
        key in _WRAPPER_KEYS or isinstance(flag, bool) or flag is None for key, flag in value.items()
    )


def unwrap_call_input(value: dict[str, Any], single_key: str = "input") -> dict[str, Any]:
    """A Python call recorded as ``{"kwargs": {...}}`` or ``{"args": [...], "kwargs": {...}}``
    (LlamaIndex through OpenInference, Traceloop's decorators) → the arguments by name.

    Only a dict whose keys are those (and, beside ``kwargs``, the framework's boolean switches,
    as smolagents records ``sanitize_inputs_outputs``) is a wrapper: a tool with a real
    parameter named ``args`` next to others keeps it. Positional arguments have no names in the record: a lone
    one that is an object is the input itself, a lone plain value is ``{single_key: v}`` (the
    bare-value rule), several are kept under their index (``"0"``, ``"1"``, ...)."""
    if not value.keys() <= _WRAPPER_KEYS and not _flags_beside_kwargs(value):
        return value
    kwargs, args = value.get("kwargs"), value.get("args")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = []
    elif not isinstance(args, list):
        args = [args]
    if not isinstance(kwargs, dict):
        return value
    positional = [parse_json_maybe(a) for a in args if a is not None]
    kwargs = {k: v for k, v in kwargs.items()}
    out = dict(kwargs)
    if len(positional) == 1:
        only = positional[0]
        if isinstance(only, dict) and not out:
            return dict(only)
        out.setdefault(single_key, only)
    else:
        for index, item in enumerate(positional):
            out.setdefault(str(index), item)
    return out


def tool_schema(name: Any, description: Any, parameters: Any) -> ToolSchema:
    """A tool definition as AgentData keeps it: name and description as text (no description: ""),
    the parameters only when they are a JSON-schema object."""
    return ToolSchema(
        name=str(name),
        description=str(description or ""),
        args_schema=parameters if isinstance(parameters, dict) else None,
    )


def as_int(value: Any) -> int | None:
    """A count attribute as an int; missing or non-numeric values are None, not an error."""
    if value in (None, "") or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def span_error(span: SpanRecord) -> str | None:
    """A failed span's error as one line (``"ValueError: Unknown city"``), or None if it
    succeeded; the same rule in every dialect.

    A span failed when its status is ERROR or it carries ``error.type`` (the semconv's failure
    marker). The ``exception`` event's message is preferred to the status description, whose
    LangChain form is the exception repr followed by the whole traceback; of the description, and
    of a message that carries its stack (LangChain.js), only the first line is kept. The type (``error.type``, else the event's ``exception.type``) is put
    in front unless the message already names it.
    """
    error_type = _text_or_none(span.attributes.get("error.type"))
    if span.status != "error" and error_type is None:
        return None
    exception = next((e for e in reversed(span.events) if e.name == "exception"), None)
    message = None
    if exception is not None:
        error_type = error_type or _text_or_none(exception.attributes.get("exception.type"))
        message = _text_or_none(exception.attributes.get("exception.message"))
        if message is not None and "\n" in message.strip():  # JavaScript puts the stack after the message
            message = message.strip().splitlines()[0].strip() or message
    if message is None:
        lines = (span.status_message or "").strip().splitlines()
        message = lines[0] if lines else None
    if message and error_type and error_type not in message and error_type not in _NO_TYPE:
        return f"{error_type}: {message}"
    return message or error_type or "error"


#: ``error.type`` values that name no type: the semconv's fallback, and Mastra's when it has no error id.
_NO_TYPE = frozenset({"_OTHER", "unknown"})


def _text_or_none(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
