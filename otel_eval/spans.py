"""SpanRecord: the neutral span every input is turned into before the engine sees it.

The SDK processor (:func:`from_sdk_span`), the OTLP receivers (:func:`from_otlp`) and the
offline Noveum reader (:func:`from_noveum`) all produce the same frozen record, so nothing
downstream knows where a span came from.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from typing import Any

from . import json_text
from .errors import InputError
from .user_feedback import is_user_feedback

STATUS_OK, STATUS_ERROR, STATUS_UNSET = "ok", "error", "unset"
#: SQLite stores integers as signed 64-bit. OTLP timestamps are fixed64, so a well-formed request can
#: carry 2^63 ns or more (after the year 2262): such a span cannot be stored and is rejected at
#: decode time, before it could join (and fail) a group commit with other clients' batches.
MAX_TIME_NS = 2**63 - 1
_KIND_NAMES = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUS_NAMES = {0: STATUS_UNSET, 1: STATUS_OK, 2: STATUS_ERROR}


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """An event of a span (a message, an exception), as the readers see it whatever its source."""

    name: str
    time_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span as every input produces it (see the module docstring): ids, name, times, status,
    attributes, events and resource, immutable."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    kind: str = "internal"
    status: str = STATUS_UNSET
    status_message: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope: str = ""

    @property
    def is_root(self) -> bool:
        """Whether the span has no parent: a trace's entry point, where a turn's input and answer are."""
        return not self.parent_span_id

    @property
    def duration_ns(self) -> int:
        """The span's length, never negative (a clock skewed between start and end reads as 0)."""
        return max(0, self.end_ns - self.start_ns)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :func:`from_dict` reads it back unchanged."""
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "name": self.name,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "kind": self.kind,
            "status": self.status,
            "status_message": self.status_message,
            "attributes": dict(self.attributes),
            "events": [{"name": e.name, "time_ns": e.time_ns, "attributes": dict(e.attributes)} for e in self.events],
            "resource": dict(self.resource),
            "scope": self.scope,
        }


def from_dict(data: Mapping[str, Any]) -> SpanRecord:
    """The span :meth:`SpanRecord.to_dict` wrote, back as a record: how stored spans are read."""
    get = data.get
    events = get("events")
    # Positional, in field order: a frozen dataclass's __init__ costs ~0.5 µs more by keyword, and
    # every stored span comes through here at every scoring (the round trip test checks the order).
    return SpanRecord(
        data["trace_id"],
        data["span_id"],
        get("parent_span_id") or None,
        get("name", ""),
        int(get("start_ns", 0)),
        int(get("end_ns", 0)),
        get("kind", "internal"),
        get("status", STATUS_UNSET),
        get("status_message", ""),
        get("attributes") or {},
        tuple(SpanEvent(e["name"], int(e.get("time_ns", 0)), e.get("attributes") or {}) for e in events)
        if events
        else (),
        get("resource") or {},
        get("scope", ""),
    )


def to_json(span: SpanRecord) -> str:
    """The span as the JSON text the store's ``raw`` column holds."""
    return json_text.dumps(span.to_dict())


def from_json(text: str) -> SpanRecord:
    """The span :func:`to_json` wrote, back as a record."""
    return from_dict(json_text.loads(text))


# --- OpenTelemetry SDK -----------------------------------------------------------------------


def from_sdk_span(span: Any, resource: Mapping[str, Any] | None = None) -> SpanRecord:
    """Build a record from an SDK ``ReadableSpan`` (what ``SpanProcessor.on_end`` receives).
    ``resource``: the span's resource attributes already converted (:func:`sdk_resource`), as a
    caller converting many spans of one ``TracerProvider`` has them."""
    ctx = span.context
    parent = span.parent
    status = span.status
    return SpanRecord(
        trace_id=format(ctx.trace_id, "032x"),
        span_id=format(ctx.span_id, "016x"),
        parent_span_id=format(parent.span_id, "016x") if parent is not None and parent.span_id else None,
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or span.start_time or 0,
        kind=span.kind.name.lower() if span.kind is not None else "internal",
        status=_STATUS_NAMES.get(status.status_code.value, STATUS_UNSET) if status is not None else STATUS_UNSET,
        status_message=(status.description or "") if status is not None else "",
        attributes=_plain(_ended_attributes(span)),
        events=tuple(SpanEvent(e.name, e.timestamp or 0, _plain(e.attributes)) for e in span.events),
        resource=resource if resource is not None else sdk_resource(span.resource),
        scope=span.instrumentation_scope.name if span.instrumentation_scope is not None else "",
    )


def _ended_attributes(span: Any) -> Mapping[str, Any]:
    """An ended SDK span's attributes, as fast as they can be read.

    ``ReadableSpan.attributes`` is a read-only view of the SDK's ``BoundedAttributes``, a
    ``MutableMapping`` written in Python: going through it costs a Python ``__getitem__`` per key,
    more than half of converting a span, which the in-process writer does for every span the
    agent ends (and the slower it converts, the more spans wait in memory for it). The values
    sit in a plain dict inside, frozen once the span has ended: read that one when it is there,
    and the public view otherwise (another SDK version, another span class)."""
    inner = getattr(getattr(span, "_attributes", None), "_dict", None)
    return inner if type(inner) is dict else span.attributes


def sdk_resource(resource: Any) -> dict[str, Any]:
    """An SDK ``Resource``'s attributes as a record's ``resource``."""
    return _plain(resource.attributes) if resource is not None else {}


def _plain(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    # SDK attribute sequences are tuples; lists keep JSON round trips equal.
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (attrs or {}).items()}


# --- OTLP protobuf ---------------------------------------------------------------------------


@dataclass
class DecodeResult:
    """What decoding an OTLP trace request gave: the spans, and how many were rejected and why (the
    receiver answers a partial success with them)."""

    spans: list[SpanRecord]
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def error_message(self) -> str:
        """The first three errors, and how many more: short enough for an OTLP partial-success message."""
        if not self.errors:
            return ""
        more = f" (and {len(self.errors) - 3} more)" if len(self.errors) > 3 else ""
        return "; ".join(self.errors[:3]) + more


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value (kvlists become dicts, bytes base64 text)."""
    which = value.WhichOneof("value")
    if which == "string_value":  # by far the most common: checked first
        return value.string_value
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, which)


def key_values(kvs: Iterable[Any]) -> dict[str, Any]:
    """OTLP ``KeyValue`` messages as a plain dict of Python values (arrays as lists, kvlists as
    dicts, bytes as base64 text), the attributes as the readers see them."""
    out: dict[str, Any] = {}
    for kv in kvs:
        value = kv.value
        # Inline for the common case: most attributes of an agent's spans are strings, and this
        # runs for every attribute of every span a collector receives. ``value`` is a oneof, so a
        # non-empty ``string_value`` is the one set: reading it first spares the ``WhichOneof``
        # call (a third of this loop's time); an empty string or another type goes the long way.
        text = value.string_value
        if text:
            out[kv.key] = text
            continue
        val = any_value(value)
        out[kv.key] = val
        if type(val) is dict:
            out.update(flatten(val, kv.key))
    return out


def from_otlp(resource_spans: Iterable[Any]) -> DecodeResult:
    """Records from the ``resource_spans`` of an ``ExportTraceServiceRequest``.

    Spans that cannot be stored are rejected and counted, with a reason, as the OTLP spec asks
    (``partial_success``); the rest are returned. Rejected: a trace or span id of the wrong length
    or all zeros, a parent id of the wrong length, a timestamp (start, end, event) of 2^63 ns or
    more. Everything else a span carries is stored as given.
    """
    result = DecodeResult(spans=[])
    append = result.spans.append
    for rs in resource_spans:
        resource = key_values(rs.resource.attributes)
        for ss in rs.scope_spans:
            scope = ss.scope.name
            for s in ss.spans:
                # Each field is read once: a upb accessor builds a new Python object at every read,
                # and this loop runs for every span a collector receives. The check below is
                # span_problem's, on the values already read; span_problem says what is wrong.
                trace_id, span_id, parent = s.trace_id, s.span_id, s.parent_span_id
                start, end, events = s.start_time_unix_nano, s.end_time_unix_nano, s.events
                if (
                    len(trace_id) != 16
                    or len(span_id) != 8
                    or trace_id == _ZERO_TRACE_ID
                    or span_id == _ZERO_SPAN_ID
                    or (parent and len(parent) != 8)
                    or start > MAX_TIME_NS
                    or end > MAX_TIME_NS
                    or (events and any(e.time_unix_nano > MAX_TIME_NS for e in events))
                ):
                    result.rejected += 1
                    result.errors.append(f"span {s.name[:200]!r}: {span_problem(s)}")
                    continue
                status = s.status
                append(
                    SpanRecord(  # positional, in field order (see from_dict)
                        trace_id.hex(),
                        span_id.hex(),
                        parent.hex() if parent and parent != _ZERO_SPAN_ID else None,
                        s.name,
                        start,
                        end or start,
                        _KIND_NAMES.get(s.kind, "unspecified"),
                        _STATUS_NAMES.get(status.code, STATUS_UNSET),
                        status.message,
                        key_values(s.attributes),
                        tuple(SpanEvent(e.name, e.time_unix_nano, key_values(e.attributes)) for e in events)
                        if events
                        else (),
                        resource,
                        scope,
                    )
                )
    return result


_ZERO_TRACE_ID, _ZERO_SPAN_ID = bytes(16), bytes(8)


def span_problem(span: Any) -> str:
    """Why an OTLP ``Span`` cannot be stored, or "" when it can."""
    problem = _id_problem(span.trace_id, 16, "trace_id") or _id_problem(span.span_id, 8, "span_id")
    if problem:
        return problem
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return f"parent_span_id has {len(span.parent_span_id)} bytes, expected 8"
    problem = _time_problem(span.start_time_unix_nano, "start_time_unix_nano") or _time_problem(
        span.end_time_unix_nano, "end_time_unix_nano"
    )
    if problem:
        return problem
    for i, event in enumerate(span.events):
        problem = _time_problem(event.time_unix_nano, f"events[{i}].time_unix_nano")
        if problem:
            return problem
    return ""


def _time_problem(value: int, name: str) -> str:
    if value > MAX_TIME_NS:
        return f"{name} {value} is out of range (at most 2^63-1 ns, i.e. before the year 2262)"
    return ""


def _id_problem(raw: bytes, size: int, name: str) -> str:
    if len(raw) != size:
        return f"{name} has {len(raw)} bytes, expected {size}"
    if not any(raw):
        return f"{name} is all zeros"
    return ""


# --- Noveum dataset.json ---------------------------------------------------------------------


def from_noveum(span: Mapping[str, Any], source: str = "<noveum>", index: int = 0) -> SpanRecord:
    """A span of the Noveum ``dataset.json`` export (noveum-trace-python).

    Ids are UUIDs and kept as given; nested attribute dicts stay under their key and are also
    flattened to dotted keys; ``"parent_span_id": ""`` and ``null`` both mean "no parent";
    span times are naive ``YYYY-MM-DD HH:MM:SS.fffffffff`` UTC strings.
    """
    where = f"$[{index}]"
    if not isinstance(span, Mapping):
        raise InputError(source, f"expected a span object, got {type(span).__name__}", where)
    for key in ("trace_id", "span_id"):
        if not isinstance(span.get(key), str) or not span.get(key):
            raise InputError(source, f"missing or empty {key}", f"{where}.{key}")
    attrs_in = span.get("attributes") or {}
    if not isinstance(attrs_in, Mapping):
        raise InputError(source, "attributes must be an object", f"{where}.attributes")
    attributes = dict(attrs_in)
    for key, val in attrs_in.items():
        if isinstance(val, Mapping):
            attributes.update(flatten(val, key))
    events = []
    for j, ev in enumerate(span.get("events") or []):
        if not isinstance(ev, Mapping) or "name" not in ev:
            raise InputError(source, "event must be an object with a name", f"{where}.events[{j}]")
        events.append(SpanEvent(ev["name"], _time_ns(ev.get("timestamp")), dict(ev.get("attributes") or {})))
    metadata = span.get("metadata") or {}
    resource: dict[str, Any] = {"service.name": span.get("project") or "noveum"}
    if span.get("environment"):
        resource["deployment.environment.name"] = span["environment"]
    if isinstance(metadata, Mapping):
        for key in ("session_id", "user_id"):
            if metadata.get(key):
                attributes.setdefault(f"metadata.{key}", metadata[key])
    status = str(span.get("status") or STATUS_UNSET).lower()
    return SpanRecord(
        trace_id=span["trace_id"],
        span_id=span["span_id"],
        parent_span_id=span.get("parent_span_id") or None,
        name=span.get("name", ""),
        start_ns=_time_ns(span.get("start_time")),
        end_ns=_time_ns(span.get("end_time")),
        kind="internal",
        status=status if status in (STATUS_OK, STATUS_ERROR) else STATUS_UNSET,
        status_message=span.get("status_message") or "",
        attributes=attributes,
        events=tuple(events),
        resource=resource,
        scope=(span.get("sdk") or {}).get("name", "noveum-trace") if isinstance(span.get("sdk"), Mapping) else "",
    )


def read_noveum_file(path: str) -> list[SpanRecord]:
    """All spans of a Noveum ``dataset.json`` file (a JSON array of spans)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, list):
        raise InputError(path, f"expected a JSON array of spans, got {type(data).__name__}")
    return [from_noveum(s, path, i) for i, s in enumerate(data)]


def _time_ns(value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().replace("T", " ")
    frac_ns = 0
    tz: tzinfo = timezone.utc
    # Nanosecond fractions do not fit datetime; split them off first.
    main, _, rest = text.partition(".")
    if rest:
        digits = ""
        for i, ch in enumerate(rest):
            if ch.isdigit():
                digits += ch
            else:
                tail = rest[i:]
                if tail not in ("Z", "z"):
                    tz = datetime.strptime(tail.replace(":", ""), "%z").tzinfo or timezone.utc
                break
        frac_ns = int((digits + "000000000")[:9])
    else:
        for sep in ("+", "Z"):
            if sep in main[10:]:
                idx = main.index(sep, 10)
                tail = main[idx:]
                main = main[:idx]
                if tail != "Z":
                    tz = datetime.strptime(tail.replace(":", ""), "%z").tzinfo or timezone.utc
                break
    dt = datetime.strptime(main, "%Y-%m-%d %H:%M:%S").replace(tzinfo=tz)
    return int(dt.timestamp()) * 1_000_000_000 + frac_ns


def flatten(value: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
    """Nested mappings as ``(dotted.key, leaf)`` pairs."""
    for key, val in value.items():
        dotted = f"{prefix}.{key}"
        if isinstance(val, Mapping):
            yield from flatten(val, dotted)
        else:
            yield dotted, val


# --- OTLP log records ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogEvent:
    """An OTLP log record tied to a span: some instrumentations put GenAI content only here
    (``gen_ai.user.message``, ``gen_ai.choice``, ... events), so it must reach that span's AgentData.
    User feedback may have no span (``span_id`` ``""``) or trace (``trace_id`` ``""``)."""

    trace_id: str
    span_id: str
    time_ns: int
    event_name: str
    body: Any = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    resource: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The log record as plain JSON values (its mappings copied), for writing it out as JSON."""
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "time_ns": self.time_ns,
            "event_name": self.event_name,
            "body": self.body,
            "attributes": dict(self.attributes),
            "resource": dict(self.resource),
        }


@dataclass
class LogsDecodeResult:
    """What decoding an OTLP logs request gave: the events, and the records ignored or rejected."""

    events: list[LogEvent]
    ignored: int = 0
    """Valid records without a trace and span id: nothing to attach them to."""
    rejected: int = 0
    """Records that cannot be stored (a timestamp of 2^63 ns or more)."""
    errors: list[str] = field(default_factory=list)

    @property
    def error_message(self) -> str:
        """As :attr:`DecodeResult.error_message`, for the rejected log records."""
        return DecodeResult([], self.rejected, self.errors).error_message


def decode_logs(resource_logs: Iterable[Any]) -> LogsDecodeResult:
    """Log records that carry a trace and span id; the others are counted as ignored (without
    ids they cannot be attached to a span), records that cannot be stored as rejected. User
    feedback (:func:`otel_eval.user_feedback.is_user_feedback`) is kept without ids too (``""``):
    it may name only its session."""
    result = LogsDecodeResult(events=[])
    for rl in resource_logs:
        resource = key_values(rl.resource.attributes)
        for sl in rl.scope_logs:
            for rec in sl.log_records:
                attributes = None
                if len(rec.trace_id) != 16 or len(rec.span_id) != 8 or not any(rec.span_id):
                    # User feedback may name only its session or trace (otel_eval.user_feedback).
                    attributes = key_values(rec.attributes)
                    if not is_user_feedback(getattr(rec, "event_name", ""), attributes):
                        result.ignored += 1
                        continue
                time_ns = rec.time_unix_nano or rec.observed_time_unix_nano
                problem = _time_problem(time_ns, "time_unix_nano" if rec.time_unix_nano else "observed_time_unix_nano")
                if problem:
                    result.rejected += 1
                    result.errors.append(f"log record of span {rec.span_id.hex()}: {problem}")
                    continue
                if attributes is None:
                    attributes = key_values(rec.attributes)
                name = getattr(rec, "event_name", "") or str(attributes.get("event.name", ""))
                result.events.append(
                    LogEvent(
                        trace_id=rec.trace_id.hex() if len(rec.trace_id) == 16 and any(rec.trace_id) else "",
                        span_id=rec.span_id.hex() if len(rec.span_id) == 8 and any(rec.span_id) else "",
                        time_ns=time_ns,
                        event_name=name,
                        body=any_value(rec.body) if rec.HasField("body") else None,
                        attributes=attributes,
                        resource=resource,
                    )
                )
    return result
