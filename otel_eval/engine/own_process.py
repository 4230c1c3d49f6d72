"""The cyclic GC of a process otel-eval owns: the collector and its score worker processes.

Never used in an agent's process (``EvalSpanProcessor``): the GC there is the agent's.
"""

from __future__ import annotations

import gc
import time

#: Allocations (less deallocations) between two young-generation collections. Python's 700 suits a
#: program whose objects die young one by one; otel-eval's are made in batches (a request's spans,
#: a session's mapped spans and scores) that die together a moment later, of their reference
#: counts. With a young generation this wide, a collector at full load ran 1-3 young collections
#: in 5 s instead of ~300, and its GC time fell from ~5% of its CPU to ~0.3% (benchmarks/README.md,
#: eighth pass); loading a large golden set runs fewer full collections over its growing heap.
YOUNG_THRESHOLD = 10_000
#: Seconds between two full collections the process runs itself. With so few young collections,
#: few objects reach the oldest generation and Python's own rule (a quarter more of it since the
#: last full collection) seldom fires: cyclic garbage that got there waited minutes, and a
#: collector at half load grew ~1.5 MiB a minute over ten minutes where it stayed flat before.
FULL_COLLECTION_EVERY = 60.0


def widen_young_generation() -> None:
    """At the start of the process, before the golden sets are loaded."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def freeze_long_lived() -> None:
    """Once the objects that live as long as the process are built (the golden index, the
    engine): no full collection walks them again."""
    gc.freeze()


class FullCollections:
    """``due()``, called now and then by a loop of the process, runs a full collection every
    :data:`FULL_COLLECTION_EVERY` seconds (tens of milliseconds, once a minute)."""

    def __init__(self, every: float = FULL_COLLECTION_EVERY):
        self._every = every
        self._next = time.monotonic() + every

    def due(self) -> None:
        """Run a full collection if its time has come; cheap otherwise (one clock read)."""
        now = time.monotonic()
        if now >= self._next:
            gc.collect()
            self._next = time.monotonic() + self._every
