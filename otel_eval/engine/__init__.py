"""The engine: one writer, a session scheduler, score workers, and the events they produce.

::

    api.py        IngestResult, the retryable errors (EngineUnavailable and its kinds), IngestTarget
    settings.py   EngineSettings: every knob, shared by Engine, EvalSpanProcessor, collector, evaluate, rescore
    core.py       Engine: the facade that wires the parts below
    writer.py     the one writer thread and its queue of typed items (group commit, savepoints)
    scheduler.py  session resolution and timers (which session a trace is in; when it ends)
    workers.py    score workers: a thread, or child processes (worker_process.py) that only read
    events.py     EvaluationStored, what listeners get after each commit
    stats.py      the counters behind Engine.stats() and /metrics

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
from .writer import Health

__all__ = [
    "Engine", "EngineClosed", "EngineSettings", "EngineUnavailable", "EvaluationStored", "Health",
    "IngestResult", "IngestTarget", "QueueFull", "StorageUnavailable",
]
