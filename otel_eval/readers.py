"""Span files on disk → SpanRecords: Noveum ``dataset.json`` and OTLP captures."""

from __future__ import annotations

from pathlib import Path

from .otlp_json import looks_like_otlp, read_logs_file, read_trace_file
from .spans import LogEvent, SpanRecord, decode_logs, from_otlp, read_noveum_file


def read_spans(path: str | Path) -> list[SpanRecord]:
    """Every span in a file, whatever its format; spans with invalid ids are skipped, as a receiver would."""
    path = Path(path)
    if looks_like_otlp(path):
        spans: list[SpanRecord] = []
        for request in read_trace_file(path):
            spans.extend(from_otlp(request.resource_spans).spans)
        return spans
    return read_noveum_file(str(path))


def read_log_events(path: str | Path) -> list[LogEvent]:
    """The span-tied OTLP log records of a captured logs file (``.logs.pb`` or OTLP/JSON):
    GenAI content some instrumentations send only as log events."""
    events: list[LogEvent] = []
    for request in read_logs_file(path):
        events.extend(decode_logs(request.resource_logs).events)
    return events


def is_logs_file(path: str | Path) -> bool:
    """A logs capture (``*.logs.pb``, or JSON holding ``resourceLogs``) rather than spans."""
    path = Path(path)
    if path.name.endswith(".logs.pb"):
        return True
    if path.suffix == ".pb":
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return ("resourceLogs" in head or "resource_logs" in head) and "resourceSpans" not in head
