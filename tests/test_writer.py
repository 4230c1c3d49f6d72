"""The engine's one writer: how a round's evaluations are committed (together, one by one when
that fails, retried after a storage fault, held briefly for company)."""

import sqlite3
import time

from otel_eval.engine.queue_items import Barrier, RestartWal, Stop, StoreEvaluation
from otel_eval.engine.scheduler import SessionScheduler
from otel_eval.engine.stats import EngineStats
from otel_eval.engine.writer import Writer, tune_writer_connection
from otel_eval.models.results import EvalCaseResult
from otel_eval.pipeline import FinishedEvaluation
from otel_eval.sessions import Timing
from tests.polling import wait_until
from tests.test_store import _scored, _store_with_sessions


class Recorded:
    """A writer's callbacks, kept: what was stored (session, revision) and what was given up."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, int]] = []
        self.given_up: list[str] = []

    def writer(self, store, scheduler=None) -> Writer:
        return Writer(
            store,
            scheduler or SessionScheduler(Timing()),
            EngineStats(),
            ended=lambda ids: None,
            stored=lambda finished, evaluation_id, revision: self.stored.append((finished.session_id, revision)),
            given_up=lambda finished: self.given_up.append(finished.session_id),
            released=lambda n: None,
        )


def run_until_done(writer: Writer, *items) -> None:
    """Hand the writer ``items``, run it until it has taken them all, and stop it."""
    for item in items:
        writer.put(item)
    barrier = Barrier()
    writer.put(barrier)
    writer.start()
    assert barrier.done.wait(10)
    writer.put(Stop())
    writer.join(10)


def finished(n: int, rows=None) -> StoreEvaluation:
    return StoreEvaluation(
        FinishedEvaluation(
            f"s{n}",
            EvalCaseResult(eval_id=f"case-{n}", passed=True),
            rows or _scored(n),
            True,
            "exact",
            "1.0",
            (f"t{n}",),
            ("a",),
            0.0,
        )
    )


def test_an_evaluation_sqlite_refuses_fails_alone_in_a_writer_round(tmp_path):
    # One evaluation of a round holds text SQLite cannot take (a lone surrogate): the round's
    # statement for the group fails, the writer stores the evaluations one by one, and only that
    # one is given up; the others are stored and reported with their ids.
    store = _store_with_sessions(tmp_path / "e.db", 6)
    recorded = Recorded()
    evaluations = []
    for n in range(6):
        rows = _scored(n)
        if n == 4:
            rows.evaluation["query"] = "broken \ud800 text"
        evaluations.append(finished(n, rows))
    run_until_done(recorded.writer(store), *evaluations)
    assert sorted(recorded.stored) == [(f"s{n}", 1) for n in (0, 1, 2, 3, 5)]
    assert recorded.given_up == ["s4"]
    assert store.conn.execute("SELECT session_id FROM evaluations ORDER BY session_id").fetchall() == [
        ("s0",),
        ("s1",),
        ("s2",),
        ("s3",),
        ("s5",),
    ]
    assert store.conn.execute("SELECT COUNT(*) FROM agent_data WHERE session_id = 's4'").fetchone() == (0,)


def test_evaluations_a_full_disk_refuses_are_all_stored_once_there_is_room(tmp_path):
    # A full disk (a page limit on the writer's connection stands in) fails a whole round of
    # evaluations: none is given up, each is retried, and once there is room every one is
    # stored once, as revision 1.
    store = _store_with_sessions(tmp_path / "e.db", 6)
    recorded = Recorded()
    writer = recorded.writer(store)
    store.conn.execute(f"PRAGMA max_page_count={store.conn.execute('PRAGMA page_count').fetchone()[0]}")
    for n in range(6):
        rows = _scored(n)
        rows.evaluation["details"] = "x" * 100_000  # more than the pages left
        writer.put(finished(n, rows))
    writer.start()
    wait_until(lambda: not writer.health().ok, what="the writer reporting itself unhealthy")
    assert recorded.stored == [] and recorded.given_up == []
    store.conn.execute("PRAGMA max_page_count=1073741823")  # room again
    wait_until(lambda: len(recorded.stored) >= 6, what=lambda: f"six evaluations stored; {recorded.stored}")
    writer.put(Stop())
    writer.join(10)
    assert sorted(recorded.stored) == [(f"s{n}", 1) for n in range(6)] and recorded.given_up == []
    assert store.conn.execute("SELECT session_id, revision FROM evaluations ORDER BY session_id").fetchall() == [
        (f"s{n}", 1) for n in range(6)
    ]


def _commits(store) -> list[str]:
    """The writer connection's COMMITs, as SQLite runs them (the Store's own statements)."""
    seen: list[str] = []
    store.conn.set_trace_callback(lambda statement: seen.append(statement) if statement == "COMMIT" else None)
    return seen


class _Sleepy(SessionScheduler):
    """A scheduler whose timers never need the writer: only its queue and the evaluations it
    holds for company wake it (the default ticks every half second at most)."""

    @property
    def tick(self) -> float:
        return 3600.0


def test_evaluations_are_committed_at_once_after_a_quiet_spell_then_together(tmp_path, monkeypatch):
    # An idle writer commits the first evaluation at once; those that follow within
    # EVALUATION_WAIT (a score worker hands them over one at a time) wait for it to pass and
    # are committed together: two commits for eight. Nothing but the wait wakes this writer
    # (its timers tick hourly), so a writer that held them past the wait, until something else
    # woke it, would keep them an hour and fail the wait below.
    import otel_eval.engine.writer as writer_module

    monkeypatch.setattr(writer_module, "EVALUATION_WAIT", 0.5)  # a loaded test machine does not split the group
    store = _store_with_sessions(tmp_path / "e.db", 8)
    recorded = Recorded()
    writer = recorded.writer(store, _Sleepy(Timing()))
    commits = _commits(store)
    writer.start()
    try:
        writer.put(finished(0))
        wait_until(lambda: recorded.stored, what="the first evaluation stored")
        assert recorded.stored == [("s0", 1)] and len(commits) == 1
        for n in range(1, 8):
            writer.put(finished(n))
            time.sleep(0.001)  # one at a time, as a score worker hands them over: not a wait
        wait_until(lambda: len(recorded.stored) == 8, what=lambda: f"eight evaluations stored; {recorded.stored}")
    finally:
        writer.put(Stop())
        writer.join(10)
    assert sorted(recorded.stored) == [(f"s{n}", 1) for n in range(8)]
    assert len(commits) == 2, f"{len(commits)} commits for 8 evaluations"


def test_a_flush_commits_the_evaluations_held_for_company_at_once(tmp_path, monkeypatch):
    # What flush() and wait_idle() promise: everything handed over before them is stored when
    # they return, however long the writer meant to hold it.
    import otel_eval.engine.writer as writer_module

    monkeypatch.setattr(writer_module, "EVALUATION_WAIT", 3600.0)  # it would hold them an hour
    store = _store_with_sessions(tmp_path / "e.db", 3)
    recorded = Recorded()
    writer = recorded.writer(store)
    writer.start()
    try:
        for n in range(3):
            writer.put(finished(n))
        barrier = Barrier()
        writer.put(barrier)
        assert barrier.done.wait(10)
        assert sorted(recorded.stored) == [(f"s{n}", 1) for n in range(3)]
    finally:
        writer.put(Stop())
        writer.join(10)
    assert store.conn.execute("SELECT COUNT(*) FROM evaluations").fetchone() == (3,)


def test_the_writer_starts_the_wal_over_when_the_checkpointer_asks(tmp_path):
    # Frames no checkpoint has copied yet: only a RESTART (or FULL) checkpoint copies them and
    # lets the next commit write the WAL over from its first frame. The writer runs it when it
    # takes a RestartWal item, before its next round.
    store = _store_with_sessions(tmp_path / "e.db", 1)
    tune_writer_connection(store)
    store.conn.execute("CREATE TABLE filler (body TEXT)")
    store.conn.executemany("INSERT INTO filler (body) VALUES (?)", [("x" * 4000,)] * 2000)  # ~8 MB of frames
    run_until_done(Recorded().writer(store), RestartWal())
    store.conn.execute("INSERT INTO filler (body) VALUES ('small')")
    other = sqlite3.connect(store.path, isolation_level=None)
    busy, frames, _ = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    other.close()
    assert busy == 0 and frames < 10, frames  # without the RESTART the WAL goes on past its 2,000 frames
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == int(store.timeout * 1000)
    assert store.conn.execute("SELECT COUNT(*) FROM filler").fetchone() == (2001,)
