"""The score worker process: ``python -m otel_eval.engine.worker_process <parent pid>``.

Reads frames from stdin (8-byte length + pickle): first the scoring setup, then lists of
session ids (each with whether the full results are wanted); answers each list, in order, with
one or more frames of answers (a frame at least every ``FLUSH_SECONDS``): per session a
FinishedEvaluation, None (no spans) or an error message. Reads the database through a read-only
connection only. Exits on end-of-file, and with its parent (``PR_SET_PDEATHSIG`` on Linux, plus
a parent-pid check).
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import struct
import sys
import time
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from ..pipeline import ScoringContext
    from .workers import Answer, WorkerInit

FLUSH_SECONDS = 0.02
"""A worker answers a list of sessions in frames: whatever is scored, at least this often."""


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(0)


def _context(init: WorkerInit) -> ScoringContext:
    from ..mapping import use_identity_attributes
    from ..models.evalset import EvalConfig, EvalSet
    from ..pipeline import ScoringContext
    from .settings import EngineSettings, golden_index

    use_identity_attributes(init.get("session_attributes", ()), init.get("user_attributes", ()))
    eval_sets = [EvalSet.model_validate_json(text) for text in init["eval_sets"]]
    index = golden_index(
        eval_sets,
        EngineSettings(
            fuzzy_threshold=init["fuzzy_threshold"],
            embedding_threshold=init["embedding_threshold"],
            embed=init.get("embed"),
        ),
    )
    return ScoringContext(
        index=index,
        config=EvalConfig.model_validate_json(init["config"]),
        max_value_chars=init["max_value_chars"],
        config_hash=init["config_hash"],
        defer_judge=bool(init.get("defer_judge", False)),
    )


def main(argv: list[str]) -> int:
    """Score the sessions the parent sends until it closes the pipe (or dies); 0 on a clean end."""
    _die_with_parent(int(argv[0]))
    # Ctrl-C (and a service manager's SIGTERM to the whole group) is for the collector, which
    # stops us by closing our stdin once it has the evaluations in flight; we die with it anyway.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # The pipe to the parent is ours alone: whatever a library prints goes to stderr instead.
    out: BinaryIO = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s [score worker]: %(message)s")
    from ..pipeline import score_stored_session
    from ..store import Store
    from .own_process import FullCollections, freeze_long_lived, widen_young_generation
    from .workers import read_frame

    widen_young_generation()  # before the golden index is built
    source = sys.stdin.buffer
    try:
        init: WorkerInit = pickle.loads(read_frame(source))
    except EOFError:
        return 0
    context = _context(init)
    # The golden index is most of this process's objects and lives as long as it does: out of the
    # collector's way, the cyclic GC no longer walks it in every full collection.
    freeze_long_lived()
    store = Store.open_read_only(init["db"])
    log = logging.getLogger("otel_eval.engine.worker")
    full_collections = FullCollections()
    while True:
        full_collections.due()
        try:
            session_ids, with_results = pickle.loads(read_frame(source))
        except EOFError:
            return 0
        answers: list[Answer] = []
        sent = time.perf_counter()
        for i, session_id in enumerate(session_ids):
            try:
                finished = score_stored_session(store, session_id, context)
                if finished is not None and not with_results:
                    finished.without_result()
                answers.append(finished)
            except Exception as exc:  # reading failed; scoring failures are already stored as errors
                log.exception("scoring session %s failed", session_id)
                answers.append(f"{type(exc).__name__}: {exc}")
            # Hand over what is done every FLUSH_SECONDS, not only at the end of the list: the
            # first session of a list of 32 must not wait for the other 31 to be scored.
            if i == len(session_ids) - 1 or time.perf_counter() - sent >= FLUSH_SECONDS:
                payload = pickle.dumps(answers, protocol=pickle.HIGHEST_PROTOCOL)
                out.write(struct.pack("!Q", len(payload)) + payload)
                out.flush()
                answers, sent = [], time.perf_counter()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
