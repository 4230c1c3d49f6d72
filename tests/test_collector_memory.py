"""The collector's allocator settings (collector/memory.py), observed in child processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from collector import memory
from tests.paths import REPO

pytestmark = pytest.mark.skipif(not memory.available(), reason="glibc only")

HEAPS = textwrap.dedent("""
    import ctypes, ctypes.util, re, sys, tempfile, threading
    from collector import memory

    if sys.argv[1] == "limited":
        memory.limit_arenas()
    hold, barrier = [], threading.Barrier(8)

    def allocate():
        barrier.wait()
        hold.append([bytearray(100_000) for _ in range(20)])  # malloc'd, below the mmap threshold

    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fopen.restype = ctypes.c_void_p
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, ctypes.c_void_p(stream))
        libc.fclose(ctypes.c_void_p(stream))
        print(len(re.findall(r'<heap nr="', open(out.name).read())))
""")

TRIM = textwrap.dedent("""
    import os
    from collector import memory

    def rss_mib():
        return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20

    blocks = [bytearray(60_000) for _ in range(4000)]  # ~240 MiB from malloc's heap, not mmap
    kept = blocks[-1]  # holds the top of the heap: what sits below it can only go back by a trim
    del blocks
    freed = rss_mib()
    memory.release_memory()
    print(freed, rss_mib())
""")


def _child(script: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


def test_receiving_threads_share_two_malloc_arenas():
    assert int(_child(HEAPS, "default")) > memory.ARENAS  # glibc's own default: an arena per thread
    assert int(_child(HEAPS, "limited")) <= memory.ARENAS


def test_release_memory_returns_freed_heap_pages_to_the_os():
    freed, trimmed = map(int, _child(TRIM).split())
    assert freed > 200  # freeing alone leaves it resident: why the budget trims after a burst
    assert trimmed < freed - 150
