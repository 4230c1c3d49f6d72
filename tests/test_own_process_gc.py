"""The GC settings of the processes otel-eval owns (``otel_eval.engine.own_process``), observed in a
child process so this test process keeps its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.paths import REPO

SCRIPT = textwrap.dedent("""
    import gc, time, weakref
    from otel_eval.engine.own_process import YOUNG_THRESHOLD, FullCollections, widen_young_generation

    widen_young_generation()
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD

    class Node:
        pass

    def cycles(n):
        refs = []
        for _ in range(n):
            a, b = Node(), Node()
            a.other, b.other = b, a  # garbage only the cyclic GC can free
            refs.append(weakref.ref(a))
        return refs

    gc.collect()
    refs = cycles(1000)  # fewer new objects than the young generation holds: no collection runs
    alive = sum(r() is not None for r in refs)
    full = FullCollections(every=0.2)
    full.due()  # not due yet
    before = sum(r() is not None for r in refs)
    time.sleep(0.25)  # the behaviour under test: the 0.2 s between full collections passing
    full.due()
    after = sum(r() is not None for r in refs)
    print(alive, before, after)
""")


def test_a_wide_young_generation_keeps_cyclic_garbage_until_the_full_collection_every_minute_frees_it():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    alive, before, after = map(int, out.stdout.split())
    assert (alive, before) == (1000, 1000)  # why the process needs its own full collections
    assert after == 0
