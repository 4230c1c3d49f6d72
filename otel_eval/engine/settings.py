"""EngineSettings: every knob of ingest, session timing and scoring, in one value shared by the
Engine, EvalSpanProcessor, the collector, ``evaluate()`` and ``rescore()``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..criteria.base import JudgeClient
from ..golden.embedding import EmbedFunction
from ..golden.matcher import GoldenIndex
from ..models.evalset import EvalConfig, EvalSet
from ..pipeline import config_hash
from ..sessions import Timing
from ..truncation import DEFAULT_LIMIT


@dataclass(frozen=True)
class EngineSettings:
    """Every knob of ingest, timing and scoring, with defaults for an agent's own process."""

    config: EvalConfig = field(default_factory=EvalConfig.default)
    """The criteria sessions are scored with."""
    trace_quiet: float = 5.0
    """Seconds without a new span, once the root ended, before a trace counts as complete."""
    session_idle: float = 60.0
    """Seconds without a new trace, once every trace is complete, before a session ends."""
    max_queue_spans: int = 100_000
    """Spans (and log records) waiting for the writer before ingest answers :class:`QueueFull`."""
    max_value_chars: int = DEFAULT_LIMIT
    """Characters kept per mapped text value (the raw span is stored whole)."""
    fuzzy_threshold: float = 90.0
    embedding_threshold: float | None = None
    """Offline embedding match after fuzzy fails (0-100); None turns it off."""
    embed: EmbedFunction | None = None
    """The embedding step's model (a callable ``texts -> vectors``); None: the offline n-grams.
    Sent to score worker processes, so it must pickle."""
    score_workers: int = 0
    """0: score in a thread of this process; N: in N worker processes (uses more cores)."""
    score_when_idle: bool = False
    """With worker processes: while sessions wait for them and no spans have arrived for
    :data:`~otel_eval.engine.core.INGEST_IDLE_SECONDS`, this process scores waiting sessions too,
    one at a time (a backlog then drains on every core). The collector turns it on; in an agent's
    process the idle time is the agent's."""
    judge: JudgeClient | None = None
    """An LLM judge for the judge criteria (in-process scoring only: it is not sent to workers)."""
    judge_concurrency: int = 16
    """Judge calls in flight at most (the judge pool, :mod:`otel_eval.judging`)."""
    judge_queue: int = 10_000
    """Judge jobs waiting or running at most; past it a session's judge criteria are recorded not
    evaluated, "judge queue full"."""
    judge_deadline: float = 45.0
    """Seconds from a session's evaluation to its judge outcome, at most: an answer, or the reason
    there is none (retries, waits for a free slot and a hanging judge included)."""
    judge_models: tuple[tuple[str, str], ...] = ()
    """google-adk judge model names → the judge endpoint's models (``("gemini-2.5-flash",
    "gpt-4o-mini")`` pairs), for the ADK judge metrics; ``OTEL_EVAL_JUDGE_MODELS`` adds to them."""
    judge_breaker_failures: int = 5
    """Consecutive failed judge calls that open the circuit breaker."""
    judge_breaker_cooldown: float = 30.0
    """Seconds the breaker stays open before one probe call."""
    write_cache_mib: int | None = None
    """SQLite's page cache for the writer's connection, in MiB; None keeps SQLite's 2 MB. Trace
    ids are random, so every span lands on a random page of the indexes keyed by them: with a
    cache that holds those pages the writer reads far fewer of them back (benchmarks/README.md,
    "Random ids"). The collector's ``--sqlite-cache-mib``; in-process it stays None (the agent's memory)."""

    session_attributes: tuple[str, ...] = ()
    """Span attribute keys that name a session, ahead of the built-in ones (``session.id``,
    ``gen_ai.conversation.id``, ...): for a framework that files the id under a key of its own."""
    user_attributes: tuple[str, ...] = ()
    """The same for the user id."""

    def replace(self, **changes: Any) -> EngineSettings:
        """A copy with the named settings changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    @property
    def timing(self) -> Timing:
        """The session timers' settings (``trace_quiet``, ``session_idle``) as the scheduler takes them."""
        return Timing(self.trace_quiet, self.session_idle)

    @property
    def config_hash(self) -> str:
        """Groups evaluations made with the same criteria (stored with every evaluation)."""
        return config_hash(self.config)


#: A keyword argument that was not given: None is a value too (``embedding_threshold=None`` turns
#: the embedding step off).
UNSET: Any = object()


def merged_settings(
    settings: EngineSettings | None, config: EvalConfig | None = None, **overrides: Any
) -> EngineSettings:
    """``settings`` (default: every default) with each keyword argument that was given (not
    :data:`UNSET`) and ``config`` when it is not None: how the Engine's flat keyword arguments
    override its ``settings``."""
    given = {name: value for name, value in overrides.items() if value is not UNSET}
    if config is not None:
        given["config"] = config
    return (settings or EngineSettings()).replace(**given)


def golden_index(eval_sets: Iterable[EvalSet], settings: EngineSettings) -> GoldenIndex:
    """The GoldenIndex these settings describe (thresholds, embedding model)."""
    return GoldenIndex(
        eval_sets,
        fuzzy_threshold=settings.fuzzy_threshold,
        embedding_threshold=settings.embedding_threshold,
        embed=settings.embed,
    )
