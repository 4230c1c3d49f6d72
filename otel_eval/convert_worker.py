"""The converter process: ``python -m otel_eval.convert_worker <parent pid>`` (see
:mod:`otel_eval.convert_process` for why and for the processor's end).

Frames on both pipes: 8-byte length + pickle. In: the setup (the session and user attribute keys
the parent reads), then lists of items (parts, :func:`otel_eval.sdk_rows.ended_parts`, or a
:class:`~otel_eval.spans.SpanRecord` for a span the parent could not take apart). Out, one frame
per list, in order: ``(rows, errors)``. Exits on end-of-file, and with its parent.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import struct
import sys
from typing import Any, BinaryIO


def _convert(items: list[Any]) -> tuple[list[Any], list[str]]:
    from .sdk_rows import row_of_parts
    from .span_rows import span_row

    rows: list[Any] = []
    errors: list[str] = []
    for item in items:
        try:
            rows.append(row_of_parts(item) if type(item) is tuple else span_row(item))
        except Exception as exc:  # an unreadable span must not take the others with it
            name = item[3] if type(item) is tuple and len(item) > 3 else getattr(item, "name", "?")
            errors.append(f"{name!r}: {type(exc).__name__}: {exc}")
    return rows, errors


#: This process's nice value: below the agent's. It converts in the background; when the machine's
#: cores are all busy, the kernel gives the agent's thread the core first (benchmarks/README.md,
#: "Issue 34.1"), and this process catches up as soon as the agent waits for anything.
NICE = 10


def _yield_to_the_agent() -> None:
    try:
        os.nice(NICE)
    except OSError:  # not allowed here: the default priority does too
        pass


def main(argv: list[str]) -> int:
    """Convert the batches the parent sends until it closes the pipe (or dies); 0 on a clean end."""
    from .engine.worker_process import _die_with_parent

    _die_with_parent(int(argv[0]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the agent's Ctrl-C is the agent's: we end with its pipe
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out: BinaryIO = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the pipe is ours alone: whatever a library prints goes to stderr
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s [converter]: %(message)s")
    from .engine.own_process import widen_young_generation
    from .engine.workers import read_frame
    from .mapping import use_identity_attributes

    widen_young_generation()
    _yield_to_the_agent()
    source = sys.stdin.buffer
    try:
        init = pickle.loads(read_frame(source))
    except EOFError:
        return 0
    use_identity_attributes(init.get("session_attributes", ()), init.get("user_attributes", ()))
    while True:
        try:
            items = pickle.loads(read_frame(source))
        except EOFError:
            return 0
        payload = pickle.dumps(_convert(items), protocol=pickle.HIGHEST_PROTOCOL)
        out.write(struct.pack("!Q", len(payload)) + payload)
        out.flush()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
