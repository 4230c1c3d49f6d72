"""Span files on disk → SpanRecords: Noveum ``dataset.json`` and OTLP captures."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from .otlp_json import looks_like_otlp, read_trace_file
from .spans import SpanRecord, from_otlp, read_noveum_file


def read_spans(path: Union[str, Path]) -> list[SpanRecord]:
    """Every span in a file, whatever its format; spans with invalid ids are skipped, as a receiver would."""
    path = Path(path)
    if looks_like_otlp(path):
        spans: list[SpanRecord] = []
        for request in read_trace_file(path):
            spans.extend(from_otlp(request.resource_spans).spans)
        return spans
    return read_noveum_file(str(path))
