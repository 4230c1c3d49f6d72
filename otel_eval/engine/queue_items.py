"""What the one writer's queue carries: one type an item, each with what its sender waits on.

Ingest batches (the caller waits for the commit), finished evaluations from the score workers,
judge outcomes, requests to end sessions, barriers (``flush``), and the writer's own signals
(stop, wake, start the WAL over). :class:`~.writer.Writer` drains them in rounds."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..judging.jobs import JudgeJob
from ..models.results import CriterionResult
from ..pipeline import FinishedEvaluation
from ..span_rows import SpanRow
from ..spans import LogEvent
from .api import IngestResult


@dataclass
class IngestBatch:
    """Spans or log records to store; ``done`` is set once committed (or failed: ``error``)."""

    spans: Sequence[SpanRow] = ()
    """Read into rows on the caller's thread (:func:`otel_eval.span_rows.span_row`)."""
    logs: Sequence[LogEvent] = ()
    done: threading.Event = field(default_factory=threading.Event)
    result: IngestResult = field(default_factory=IngestResult)
    error: BaseException | None = None
    enqueued: float = field(default_factory=time.perf_counter)
    unattended: bool = False
    """Pulled from a span source: no caller waits for it, and it is not in the queue's count."""

    @property
    def size(self) -> int:
        """Spans and log records in the batch: what it counts against ``max_queue_spans``."""
        return len(self.spans) + len(self.logs)


@dataclass
class StoreEvaluation:
    """A score worker's finished evaluation, committed with the next group."""

    finished: FinishedEvaluation
    attempts: int = 0


@dataclass
class CompleteJudgment:
    """The judge pool's outcome for one job (:meth:`otel_eval.store.Store.complete_judgment`):
    committed with the next group as the session's next revision."""

    job: JudgeJob
    results: list[CriterionResult]
    usage: list[tuple[str, int, int]]
    """``(criterion, calls, tokens)`` spent."""
    retry: bool
    info: dict[str, Any] | None = None
    """The revision the commit stored (:meth:`otel_eval.store.Store.complete_judgment`'s answer);
    None until committed, or when it completed nothing."""


@dataclass
class EndSessions:
    """End a session now (or every open one); ``ended`` says how many were."""

    session_id: str | None
    """None: every open session (shutdown with ``score_open``)."""
    done: threading.Event = field(default_factory=threading.Event)
    ended: int = 0


@dataclass
class Barrier:
    """Acknowledged once everything queued before it is committed (``flush``)."""

    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class Stop:
    """The last item: the writer commits this round and ends."""


@dataclass
class Wake:
    """A span source has something: start a round now rather than at the next tick."""


@dataclass
class RestartWal:
    """The checkpointer has copied a large WAL back: start it over, from the writer's own
    connection, before the next round (see :class:`~.checkpointer.Checkpointer`)."""


WriterItem = IngestBatch | StoreEvaluation | CompleteJudgment | EndSessions | Barrier | Stop | Wake | RestartWal
