"""The read side (otel_eval.read) over a real database: the engine writes it from captured spans of
real clients, the read side answers, and each answer is checked against what the engine reported
or against the spans themselves, not against the store's own SQL."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

from otel_eval.errors import InputError
from otel_eval.offline import evaluate
from otel_eval.pipeline import load_session
from otel_eval.read import backlog, evaluations, sessions, spans
from otel_eval.read.database import open_database, open_store
from otel_eval.read.feed import EvaluationFeed
from otel_eval.read.times import parse_since
from otel_eval.readers import read_spans
from otel_eval.rescore import rescore
from otel_eval.sessions import Timing
from otel_eval.store import SCHEMA_VERSION
from otel_eval.trajectory import build_trajectory
from tests.paths import FIXTURES, REPO
from tests.test_cli import GOLDEN

CAPTURES = [
    FIXTURES / "realclients" / "openai_otel_genai.otlp.json",
    FIXTURES / "realclients" / "langgraph_openinference.otlp.json",
]
#: The weather set alone: the SQL sessions of the captures match none of its cases.
WEATHER = GOLDEN[:1]
V1_DUMP = REPO / "tests" / "data" / "schema-v1.sql"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A database the engine wrote, in a folder whose name has the characters a SQLite URI gives
    meaning to ('?', '#', '%'), and the engine's own results by session id."""
    folder = tmp_path_factory.mktemp("read") / "odd ?name #1 %41"
    folder.mkdir()
    db = folder / "eval.db"
    results = evaluate(CAPTURES, golden=WEATHER, db=db)
    assert len(results) >= 6
    return db, {r.session_id: r for r in results}


@pytest.fixture
def db_copy(scored, tmp_path):
    """A copy to change (rescore) without touching the module's database."""
    db, results = scored
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    return copy, results


def test_current_evaluations_are_what_the_engine_scored(scored):
    db, results = scored
    rows = {r.session_id: r for r in evaluations.current_evaluations([db])}
    assert rows.keys() == results.keys()
    for session_id, result in results.items():
        row = rows[session_id]
        assert (row.case_id, row.verdict, row.passed) == (
            result.eval_id or None,
            result.verdict,
            result.passed,
        )
        assert row.score == (pytest.approx(result.score) if result.evaluated else None)
        assert [(c.criterion, c.passed, c.skipped) for c in row.criteria] == [
            (c.criterion, c.passed, c.skipped) for c in result.criterion_results
        ]
        assert evaluations.failing_criteria(row.criteria) == [
            c.criterion for c in result.criterion_results if not c.skipped and not c.passed and c.criterion != "health"
        ]


def test_outcomes_name_each_session_as_export_filters_it(scored):
    db, results = scored
    with closing(open_database(db)) as conn:
        chosen = {s.session_id: s for s in sessions.session_outcomes(conn)}
        single = {sid: evaluations.current_outcome(conn, sid) for sid in results}
    expected = {sid: (r.verdict if r.eval_id else "unmatched") for sid, r in results.items()}
    assert {sid: s.outcome for sid, s in chosen.items()} == expected == single
    assert "unmatched" in expected.values() and "passed" in expected.values() and "failed" in expected.values()
    starts = [s.started_ns for s in chosen.values()]
    assert starts == sorted(starts)  # oldest first


def test_session_turns_are_the_turns_the_scorer_built(scored):
    db, results = scored
    with closing(open_database(db)) as conn, closing(open_store(db)) as store:
        for session_id in results:
            expected = build_trajectory(session_id, load_session(store, session_id).mapped).turns
            turns = spans.session_turns(conn, session_id)
            assert [(t.turn, t.trace_id, t.user_input) for t in turns] == [
                (t.index, t.trace_id, t.user_input) for t in expected
            ]
        assert any(t.user_input for sid in results for t in spans.session_turns(conn, sid))


def test_stored_spans_trees_and_first_trace_come_from_the_captured_spans(scored):
    db, results = scored
    captured = [s for path in CAPTURES for s in read_spans(path)]
    with closing(open_database(db)) as conn:
        for session_id in results:
            stored, _ = spans.stored_spans(conn, db, session_id)
            traces = {s.trace_id for s in stored}
            assert {(s.trace_id, s.span_id) for s in stored} == {
                (s.trace_id, s.span_id) for s in captured if s.trace_id in traces
            }
            trees = spans.session_traces(conn, session_id)
            assert sorted(r.span.span_id for t in trees for r in t.rows) == sorted(s.span_id for s in stored)
            trace_id, root_id = spans.first_trace(conn, session_id)
            first = min(trees, key=lambda t: t.start_ns)
            assert (trace_id, root_id) == (first.trace_id, first.rows[0].span.span_id)
            assert first.rows[0].depth == 0
            with_id = [s for s in stored if s.attributes.get("gen_ai.response.id")]
            latest = max(with_id, key=lambda s: (s.end_ns, s.start_ns)) if with_id else None
            assert spans.last_response_id(conn, session_id) == (
                latest.attributes["gen_ai.response.id"] if latest else None
            )
        assert any(spans.last_response_id(conn, sid) for sid in results)
        assert spans.first_trace(conn, "no-such-session") == (None, None)


def test_a_reader_cannot_write(scored):
    db, _ = scored
    with closing(open_database(db)) as conn:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM evaluations")
    assert evaluations.current_evaluations([db])  # still there


def test_a_missing_file_or_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.db"
    for read in (
        lambda: open_database(missing),
        lambda: evaluations.current_evaluations([missing]),
        lambda: backlog.backlog_of([missing], Timing()),
        lambda: sessions.session_state([missing], "x"),
    ):
        with pytest.raises(InputError) as err:
            read()
        assert (err.value.source, err.value.reason) == (str(missing), "database file not found")
    assert not missing.exists()  # a reader never creates the file
    text = tmp_path / "notes.db"
    text.write_text("just some text, not a database\n" * 200)
    with pytest.raises(InputError, match="not an otel-eval database"):
        open_database(text)
    folder = tmp_path / "folder.db"
    folder.mkdir()
    with pytest.raises(InputError, match="database file not found"):
        open_database(folder)


def test_a_database_an_older_otel_eval_wrote_is_migrated_before_it_is_read(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(V1_DUMP.read_text())
    conn.close()
    with closing(open_database(db)) as reader:
        assert reader.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert evaluations.current_outcome(reader, "joke-1") == "not_evaluated"  # the v2 rule, read at once


def test_scored_sessions_are_the_ones_rescore_may_take(scored):
    db, results = scored
    with closing(open_database(db)) as conn:
        everything = sessions.scored_sessions(conn, db)
        assert sorted(everything) == sorted(results)
        assert sessions.scored_sessions(conn, db, parse_since("2262-04-11")) == []
        some = list(results)[:2]
        assert sessions.scored_sessions(conn, db, wanted=[some[1], some[0], some[1]]) == [some[1], some[0]]
        with pytest.raises(InputError) as err:
            sessions.scored_sessions(conn, db, wanted=["nope"])
        assert err.value.location == "--session" and "no session 'nope'" in err.value.reason


def test_the_feed_reads_each_new_evaluation_once_and_sees_it_superseded(db_copy):
    db, results = db_copy
    feed = EvaluationFeed(db)
    try:
        feed.seek(None)  # only what is stored from now on
        assert feed.poll() == []
        session_id = next(iter(results))
        with closing(open_database(db)) as conn:
            before = evaluations.latest_evaluation(conn, session_id)
        rescore(db, golden=WEATHER, sessions=[session_id])
        new = feed.poll()
        assert [(r.session_id, r.revision, r.superseded) for r in new] == [(session_id, before.revision + 1, False)]
        assert feed.poll() == []
        old_ids = feed.superseded_since(0)
        assert len(old_ids) == 1 and new[0].id not in old_ids
        feed.seek(0.0)  # from the beginning: every current and superseded row, once
        everything = feed.poll()
        assert len(everything) == len(results) + 1
        assert {r.id for r in everything if r.superseded} == old_ids
    finally:
        feed.close()


def test_the_feed_waits_for_a_file_that_does_not_exist_yet(scored, tmp_path):
    db, results = scored
    later = tmp_path / "later.db"
    feed = EvaluationFeed(later)
    try:
        feed.seek(None)
        assert not feed.available and feed.poll() == []
        shutil.copy(db, later)  # the collector starts: everything in the file is new to the feed
        assert sorted(r.session_id for r in feed.poll()) == sorted(results)
    finally:
        feed.close()


# --- parse_since -------------------------------------------------------------------------------

UTC = timezone.utc


def ns(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


@pytest.mark.parametrize(
    "text, moment",
    [
        ("2025-01-31", datetime(2025, 1, 31, tzinfo=UTC)),
        ("2025-01-31T12:00", datetime(2025, 1, 31, 12, tzinfo=UTC)),
        ("2025-01-31 12:00", datetime(2025, 1, 31, 12, tzinfo=UTC)),
        ("2025-01-31T12:00:05", datetime(2025, 1, 31, 12, 0, 5, tzinfo=UTC)),
        ("2025-01-31T12:00:05.123456Z", datetime(2025, 1, 31, 12, 0, 5, 123456, tzinfo=UTC)),
        ("2025-01-31T12:00:05.25z", datetime(2025, 1, 31, 12, 0, 5, 250000, tzinfo=UTC)),
        ("2025-01-31T13:00+01:00", datetime(2025, 1, 31, 12, tzinfo=UTC)),
        ("  2025-01-31T07:30:00-04:30 ", datetime(2025, 1, 31, 12, tzinfo=UTC)),
    ],
)
def test_parse_since_accepts_dates_and_times_naive_ones_in_utc(text, moment):
    assert parse_since(text) == ns(moment)


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "1738324800",
        "1738324800.5",
        "20250131",
        "2025-W05-1",
        "2025-01-31T12",
        "2025-01-31T12:00+0100",
        "2025-1-31",
        "2025-01-31T12:00:00.1234567",
        "2025-01-31T12:00:00 UTC",
        "nan",
        "inf",
        "-",
    ],
)
def test_parse_since_refuses_every_other_form_naming_the_flag_and_the_value(text):
    with pytest.raises(InputError) as err:
        parse_since(text)
    assert (err.value.source, err.value.location) == ("--since", "--since")
    assert err.value.reason == f"not an ISO-8601 time: {text!r} (e.g. 2025-01-31 or 2025-01-31T12:00:00Z)"


def test_parse_since_says_why_a_well_formed_time_does_not_exist():
    with pytest.raises(InputError, match=r"not an ISO-8601 time: '2025-02-30' \(day is out of range for month\)"):
        parse_since("2025-02-30")
    with pytest.raises(InputError, match="not an ISO-8601 time: '2025-01-31T25:00'"):
        parse_since("2025-01-31T25:00")


def test_parse_since_clamps_to_what_sqlite_holds_and_takes_datetimes():
    assert parse_since("9999-12-31") == 2**63 - 1
    assert parse_since("0001-01-01") == -(2**63)
    assert parse_since(None) is None and parse_since("") is None
    assert parse_since(datetime(2025, 1, 31, 12)) == parse_since("2025-01-31T12:00Z")
    assert parse_since(datetime(2025, 1, 31, 13, tzinfo=timezone(timedelta(hours=1)))) == parse_since(
        "2025-01-31T12:00Z"
    )
