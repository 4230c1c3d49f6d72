"""The checkpointer keeps the WAL bounded while a writer never stops."""

from __future__ import annotations

import os
import sqlite3
import threading

import otel_eval.engine.checkpointer as checkpointer_module
from otel_eval.engine.checkpointer import Checkpointer
from otel_eval.store import Store
from tests.polling import wait_until

#: Bytes each commit of :func:`_steady_writer` adds to the WAL (50 rows of 4,000 characters).
COMMIT_BYTES = 50 * 4000
#: What the writers below write before the WAL is judged: many times the 2 MB threshold, so that a
#: PASSIVE-only checkpointer would let the WAL grow to most of it.
ENOUGH = 64 * 1024 * 1024


def _steady_writer(
    db: str,
    stop: threading.Event,
    sizes: list[int],
    asked: threading.Event | None = None,
    locked: list[str] | None = None,
) -> None:
    # Commits back to back, as the engine's writer does under load; a reader reads between
    # them, as a score worker does. Records the WAL's size after every commit. With ``asked``,
    # it starts the WAL over itself when asked, between two commits (as the engine's writer does
    # between rounds), and never waits for a lock: a BEGIN that finds the write lock taken fails
    # at once and is recorded in ``locked``.
    conn = sqlite3.connect(db, isolation_level=None, timeout=0 if asked is not None else 5.0)
    conn.execute("PRAGMA wal_autocheckpoint=0")  # as the engine: only the checkpointer checkpoints
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    row = "x" * 4000
    while not stop.is_set():
        if asked is not None and asked.is_set():
            asked.clear()
            conn.execute("PRAGMA busy_timeout=250")  # for the reader to leave the old frames
            conn.execute("PRAGMA wal_checkpoint(RESTART)")
            conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:  # "database is locked": someone held the writer
            assert locked is not None, exc
            locked.append(str(exc))
            continue
        conn.executemany("INSERT INTO filler (body) VALUES (?)", [(row,)] * 50)
        conn.execute("COMMIT")
        reader.execute("SELECT COUNT(*) FROM filler").fetchone()
        sizes.append(os.path.getsize(db + "-wal"))
    conn.close()
    reader.close()


def test_a_writer_that_never_pauses_still_gets_its_wal_started_over(tmp_path):
    db = str(tmp_path / "e.db")
    store = Store(db)  # the engine's own settings: WAL, synchronous=NORMAL
    store.conn.execute("CREATE TABLE filler (body TEXT)")
    store.close()
    stop, sizes = threading.Event(), []
    checkpointer = Checkpointer(db, interval=0.05, restart_bytes=2 * 1024 * 1024).start()
    writer = threading.Thread(target=_steady_writer, args=(db, stop, sizes))
    writer.start()
    try:
        wait_until(
            lambda: len(sizes) * COMMIT_BYTES > ENOUGH,
            timeout=120,
            what=lambda: f"{ENOUGH >> 20} MB written; {len(sizes) * COMMIT_BYTES >> 20} MB so far",
        )
    finally:
        stop.set()
        writer.join()
        checkpointer.stop()
    written = len(sizes) * COMMIT_BYTES
    # Started over again and again: never far past the threshold, and small at the end.
    assert max(sizes[len(sizes) // 2 :]) < 16 * 1024 * 1024, (max(sizes), written)
    # ... in place: the file is written over, never truncated while the writer runs (freeing
    # and allocating its blocks again at every restart cost the collector's kernel time).
    assert min(sizes[len(sizes) // 2 :]) >= 2 * 1024 * 1024, (min(sizes), written)
    # (The last connection to close removes the WAL altogether.)
    assert not os.path.exists(db + "-wal") or os.path.getsize(db + "-wal") < 1024 * 1024


def test_a_large_wal_file_holding_few_frames_is_left_alone(tmp_path, monkeypatch):
    # SQLite starts a WAL over in place once every frame is copied: the file keeps its size but
    # holds a handful of frames. Truncating it would hold the writer back for nothing (and, at
    # every round, for as long as readers take to leave), so the checkpointer judges the frames.
    db = str(tmp_path / "e.db")
    store = Store(db)
    store.conn.execute("CREATE TABLE filler (body TEXT)")
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO filler (body) VALUES (?)", [("x" * 4000,)] * 2000)  # ~8 MB of frames
    conn.execute("COMMIT")
    busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert (busy, frames) == (0, copied)  # every frame copied
    conn.execute("INSERT INTO filler (body) VALUES ('small')")  # starts the WAL over in place
    full_size = os.path.getsize(db + "-wal")
    assert full_size > 6 * 1024 * 1024
    rounds: list[int] = []  # the frames each of the checkpointer's PASSIVE checkpoints found
    passive = checkpointer_module._passive
    monkeypatch.setattr(checkpointer_module, "_passive", lambda c: rounds.append(passive(c)) or rounds[-1])
    checkpointer = Checkpointer(db, interval=0.05, restart_bytes=2 * 1024 * 1024).start()
    sizes = []
    try:

        def ten_rounds() -> bool:
            sizes.append(os.path.getsize(db + "-wal"))
            return len(rounds) >= 10

        wait_until(ten_rounds, what=lambda: f"ten checkpoint rounds; {len(rounds)} so far")
        sizes.append(os.path.getsize(db + "-wal"))
    finally:
        checkpointer.stop()  # (leaves the WAL small: a TRUNCATE when it stops)
    assert min(sizes) == full_size
    assert conn.execute("SELECT COUNT(*) FROM filler").fetchone()[0] == 2001
    conn.close()
    store.close()


def test_given_a_restart_callback_the_checkpointer_never_holds_the_writer_back(tmp_path):
    # The engine's checkpointer hands the RESTART to the writer (RestartWal): this thread only
    # runs PASSIVE checkpoints, which never take the write lock. A writer that does not wait for
    # locks at all (busy_timeout 0) would fail a BEGIN IMMEDIATE the moment this thread held
    # it; it starts the WAL over itself when asked, and the WAL stays bounded.
    db = str(tmp_path / "e.db")
    store = Store(db)
    store.conn.execute("CREATE TABLE filler (body TEXT)")
    store.close()
    asked = threading.Event()
    asks: list[None] = []

    def restart() -> None:
        asks.append(None)
        asked.set()

    stop, sizes, locked = threading.Event(), [], []
    checkpointer = Checkpointer(db, interval=0.05, restart_bytes=2 * 1024 * 1024, restart=restart).start()
    thread = threading.Thread(target=_steady_writer, args=(db, stop, sizes, asked, locked))
    thread.start()
    try:
        wait_until(
            lambda: len(sizes) * COMMIT_BYTES > ENOUGH and len(asks) >= 2,
            timeout=120,
            what=lambda: (
                f"{ENOUGH >> 20} MB written and two restarts asked for; "
                f"{len(sizes) * COMMIT_BYTES >> 20} MB and {len(asks)} so far"
            ),
        )
    finally:
        stop.set()
        thread.join()
        checkpointer.stop()
    assert locked == []
    assert len(asks) >= 2
    assert max(sizes[len(sizes) // 2 :]) < 16 * 1024 * 1024, max(sizes)
