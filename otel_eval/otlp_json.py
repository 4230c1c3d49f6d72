"""OTLP requests from JSON and from captured files.

Two JSON spellings exist: OTLP/JSON as sent on the wire (hex trace and span ids, integer or named
enums) and protobuf's canonical JSON (``MessageToDict``: base64 ids). Both parse into the same
protobuf messages here, so the HTTP receiver and ``otel-eval evaluate`` share one decoder.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .errors import InputError

_ID_KEYS = {"traceId": 16, "spanId": 8, "parentSpanId": 8, "trace_id": 16, "span_id": 8, "parent_span_id": 8}


def _ids_to_base64(node: Any) -> Any:
    """Rewrite hex ids (OTLP/JSON) as base64 (what protobuf's JSON parser expects for bytes)."""
    if isinstance(node, dict):
        out = {}
        for key, val in node.items():
            size = _ID_KEYS.get(key)
            if size and isinstance(val, str) and len(val) == 2 * size:
                try:
                    val = base64.b64encode(bytes.fromhex(val)).decode("ascii")
                except ValueError:
                    pass  # not hex: already base64 (canonical JSON), or invalid and rejected later
            out[key] = _ids_to_base64(val)
        return out
    if isinstance(node, list):
        return [_ids_to_base64(v) for v in node]
    return node


def parse_trace_request(data: Any, source: str = "<request>") -> ExportTraceServiceRequest:
    """An ``ExportTraceServiceRequest`` from decoded JSON (either spelling)."""
    return _parse(data, ExportTraceServiceRequest(), source)


def parse_logs_request(data: Any, source: str = "<request>") -> ExportLogsServiceRequest:
    """An ``ExportLogsServiceRequest`` from decoded JSON (either spelling of the ids)."""
    return _parse(data, ExportLogsServiceRequest(), source)


def _parse(data: Any, message: Any, source: str) -> Any:
    if not isinstance(data, dict):
        raise InputError(source, f"expected a JSON object, got {type(data).__name__}")
    try:
        return json_format.ParseDict(_ids_to_base64(data), message, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, ValueError, TypeError, OverflowError) as exc:
        # A JSON number such as 1e400 parses as infinity; in an enum field (span kind, severityNumber)
        # protobuf then fails without saying where. Say where.
        where = _non_finite_number(data, "$")
        if where is not None:
            raise InputError(source, f"JSON number out of range (infinite or NaN): {where[1]!r}", where[0]) from None
        raise InputError(source, f"not an OTLP {type(message).__name__}: {exc}") from None


def _non_finite_number(node: Any, path: str) -> tuple[str, float] | None:
    """The JSON path and value of the first infinite or NaN number in ``node``, if any."""
    if isinstance(node, float) and not math.isfinite(node):
        return path, node
    if isinstance(node, dict):
        for key, val in node.items():
            found = _non_finite_number(val, f"{path}.{key}")
            if found:
                return found
    elif isinstance(node, list):
        for i, val in enumerate(node):
            found = _non_finite_number(val, f"{path}[{i}]")
            if found:
                return found
    return None


def read_trace_file(path: str | Path) -> list[ExportTraceServiceRequest]:
    """Requests from a captured file.

    Accepted: one JSON request, a JSON list of them, JSON lines (one request per line), or the
    length-prefixed protobuf capture (``[uint32 big-endian length][bytes]`` repeated, ``.pb``).
    """
    return _read_requests(path, ExportTraceServiceRequest, parse_trace_request)


def read_logs_file(path: str | Path) -> list[ExportLogsServiceRequest]:
    """Log requests from a captured file, in the same forms as :func:`read_trace_file`."""
    return _read_requests(path, ExportLogsServiceRequest, parse_logs_request)


def _read_requests(path: str | Path, kind: Any, parse: Any) -> list[Any]:
    path = Path(path)
    source = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(source, "file not found") from None
    if path.suffix == ".pb":
        return list(_read_length_prefixed(raw, source, kind))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(source, "not UTF-8 JSON (a protobuf capture must end in .pb)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if data is None:
        requests = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(source, f"invalid JSON on line {lineno}: {exc.msg}", f"line {lineno}") from None
            requests.append(parse(item, f"{source}:{lineno}"))
        return requests
    if isinstance(data, list):
        return [parse(item, f"{source}: $[{i}]") for i, item in enumerate(data)]
    return [parse(data, source)]


def _read_length_prefixed(raw: bytes, source: str, kind: Any = ExportTraceServiceRequest) -> Iterator[Any]:
    offset = 0
    index = 0
    while offset < len(raw):
        if offset + 4 > len(raw):
            raise InputError(source, "truncated length prefix", f"request {index} at byte {offset}")
        (size,) = struct.unpack(">I", raw[offset : offset + 4])
        offset += 4
        if offset + size > len(raw):
            raise InputError(source, f"request of {size} bytes runs past the end of the file", f"request {index}")
        request = kind()
        try:
            request.ParseFromString(raw[offset : offset + size])
        except Exception as exc:  # protobuf raises DecodeError, a private subclass
            raise InputError(source, f"not a protobuf {kind.__name__}: {exc}", f"request {index}") from None
        offset += size
        index += 1
        yield request


def looks_like_otlp(path: str | Path) -> bool:
    """True for files ``read_trace_file`` reads (as opposed to a Noveum ``dataset.json``)."""
    path = Path(path)
    if path.suffix == ".pb":
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a span file") from None
    return "resourceSpans" in head or "resource_spans" in head
