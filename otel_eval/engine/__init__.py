"""The engine: one writer, a session scheduler, score workers, and the events they produce.

::

    api.py          IngestResult, the retryable errors (EngineUnavailable and its kinds), IngestTarget
    settings.py     EngineSettings: every knob, shared by Engine, EvalSpanProcessor, collector, evaluate,
                    rescore; the Engine's keyword arguments merged over them
    core.py         Engine: the facade that wires the parts below, and its lifecycle
    file_lock.py    one engine per database (``<db>.lock``)
    writer.py       the one writer thread (group commit, savepoints)
    queue_items.py  what the writer's queue carries, one type an item
    checkpointer.py the WAL's checkpointer, off the writer's path
    scheduler.py    session resolution and timers (which session a trace is in; when it ends)
    workers.py      score workers: a thread, or child processes (worker_process.py) that only read
    events.py       EvaluationStored, what listeners get after each commit
    stats.py        the counters behind Engine.stats() and /metrics

Data flows one way: ingest → writer (commit, ack) → scheduler (ended) → workers (read, score) →
writer (commit the record) → listeners.
"""

from .api import (
    EngineClosed,
    EngineUnavailable,
    IngestResult,
    IngestTarget,
    QueueFull,
    StorageUnavailable,
)
from .core import Engine
from .events import EvaluationStored
from .settings import EngineSettings
from .writer import EngineHealth

__all__ = [
    "Engine",
    "EngineClosed",
    "EngineHealth",
    "EngineSettings",
    "EngineUnavailable",
    "EvaluationStored",
    "IngestResult",
    "IngestTarget",
    "QueueFull",
    "StorageUnavailable",
]
