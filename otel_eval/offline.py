"""Offline evaluation: span files (or SpanRecords) through the live engine, every session ended
and scored at the end. The engine's own path, so an offline result is what the collector would
have stored."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from .engine import Engine, EngineSettings
from .golden.embedding import EmbedFunction
from .models.evalset import EvalConfig, EvalSet
from .models.results import EvalCaseResult
from .readers import is_logs_file, read_log_events, read_spans
from .spans import LogEvent, SpanRecord


def evaluate(
    inputs: Iterable[str | Path | SpanRecord | LogEvent],
    golden: Iterable[str | Path | EvalSet] = (),
    config: EvalConfig | str | Path | None = None,
    db: str | Path | None = None,
    on_result: Callable[[EvalCaseResult], object] | None = None,
    progress: Callable[[int], object] | None = None,
    fuzzy_threshold: float = 90.0,
    embedding_threshold: float | None = None,
    embed: EmbedFunction | None = None,
    settings: EngineSettings | None = None,
) -> list[EvalCaseResult]:
    """Evaluate captured spans offline: files (Noveum ``dataset.json``, OTLP JSON/JSON lines/.pb,
    and OTLP logs captures such as ``*.logs.pb`` for content sent as log events), SpanRecords or
    LogEvents. Every session found is ended and scored, its judge criteria answered (each within
    the judge deadline); results are also stored in ``db``.
    ``settings`` (an :class:`otel_eval.engine.EngineSettings`) gives every other knob; the
    session timers are set long here, since every session is ended at the end anyway."""
    spans: list[SpanRecord] = []
    logs: list[LogEvent] = []
    for item in inputs:
        if isinstance(item, SpanRecord):
            spans.append(item)
        elif isinstance(item, LogEvent):
            logs.append(item)
        elif is_logs_file(item):
            logs.extend(read_log_events(item))
        else:
            spans.extend(read_spans(item))
    if isinstance(config, (str, Path)):  # a TOML file or google-adk's test_config.json
        from .adk_config.resolve import resolve_config

        config = resolve_config(config).config
    results: list[EvalCaseResult] = []
    tmp = None
    if db is None:
        tmp = tempfile.TemporaryDirectory()
        db = Path(tmp.name) / "otel-eval.db"
    settings = settings or EngineSettings(fuzzy_threshold=fuzzy_threshold)
    overrides = {
        name: value
        for name, value in dict(config=config, embedding_threshold=embedding_threshold, embed=embed).items()
        if value is not None
    }
    settings = settings.replace(**overrides)
    engine = Engine(
        db, golden=golden, settings=settings.replace(trace_quiet=3600, session_idle=3600), on_result=results.append
    )
    if on_result:
        engine.add_listener(on_result)
    engine.start()
    try:
        step = 500
        for start in range(0, len(logs), step):  # content logs first: each span reads them when scored
            engine.ingest_logs(logs[start : start + step])
        for start in range(0, len(spans), step):
            chunk = spans[start : start + step]
            engine.ingest(chunk)
            if progress:
                progress(len(chunk))
    finally:
        engine.close(score_open=True, wait_judge=True)
        if tmp is not None:
            tmp.cleanup()
    return results
