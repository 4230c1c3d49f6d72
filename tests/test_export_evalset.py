"""Promoting production sessions to golden cases: sessions → EvalSet file → EvalSet.load →
evaluate_session against it → every session passes, multi-turn sessions as multi-turn cases.
Also the session filters of every export (passed / failed / unmatched, version, since, ids)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from examples.weather_agent import agent_resource, run_session
from otel_eval.errors import InputError
from otel_eval.export import SessionSelection, export_sessions, select_sessions
from otel_eval.golden import GoldenIndex
from otel_eval.models.evalset import EvalConfig, EvalSet
from otel_eval.processor import EvalSpanProcessor
from otel_eval.read.spans import stored_spans
from otel_eval.session_evaluation import evaluate_session
from otel_eval.store import Store

GOLDEN = Path(__file__).resolve().parent.parent / "examples" / "golden" / "weather.evalset.json"

#: (session id, user turns, agent version). 2.0.0 regresses (wrong tool), "hello" matches no case.
SESSIONS = [
    ("s-tokyo", ["What's the weather in Tokyo?"], "1.0.0"),
    ("s-follow", ["What's the weather in Paris?", "What about tomorrow?"], "1.0.0"),
    ("s-berlin", ["What's the weather in Berln?"], "1.0.0"),
    ("s-compare", ["Compare the weather in Paris and London"], "1.0.0"),
    ("s-refund", ["What is your refund policy?"], "1.0.0"),
    ("s-follow-v2", ["What's the weather in Paris?", "What about tomorrow?"], "2.0.0"),
    ("s-hello", ["Hello there, how are you today?"], "1.0.0"),
]


def record_sessions(db: Path, sessions=SESSIONS, golden=GOLDEN) -> None:
    """Run the example agent through a real EvalSpanProcessor into ``db``; every session scored."""
    processor = EvalSpanProcessor(db=db, golden=golden, trace_quiet=3600, session_idle=3600)
    providers = []
    for session_id, turns, version in sessions:
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(processor)
        run_session(provider, session_id, turns, version=version)
        providers.append(provider)
    processor.shutdown()


@pytest.fixture(scope="module")
def weather_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("export") / "weather.db"
    record_sessions(db)
    return db


def outcomes(db: Path) -> dict[str, tuple]:
    store = Store(db)
    try:
        return {
            r[0]: (r[1], bool(r[2]))
            for r in store.conn.execute("SELECT session_id, case_id, passed FROM evaluations WHERE superseded = 0")
        }
    finally:
        store.close()


def test_the_recorded_sessions_are_what_the_filters_are_tested_on(weather_db):
    got = outcomes(weather_db)
    assert got["s-tokyo"] == ("weather_tokyo", True)
    assert got["s-follow"] == ("paris_followup", True)
    assert got["s-follow-v2"] == ("paris_followup", False)
    assert got["s-hello"] == (None, False)


def test_filters_choose_passed_failed_unmatched_version_and_ids(weather_db):
    assert select_sessions(weather_db, SessionSelection(results=["failed"])) == ["s-follow-v2"]
    assert select_sessions(weather_db, SessionSelection(results=["unmatched"])) == ["s-hello"]
    assert select_sessions(weather_db, SessionSelection(results=["passed"])) == [
        "s-tokyo",
        "s-follow",
        "s-berlin",
        "s-compare",
        "s-refund",
    ]
    assert select_sessions(weather_db, SessionSelection(versions=["2.0.0"])) == ["s-follow-v2"]
    assert select_sessions(weather_db, SessionSelection(session_ids=["s-refund", "s-tokyo"])) == ["s-tokyo", "s-refund"]
    assert select_sessions(weather_db, SessionSelection(since_ns=4_000_000_000 * 10**9)) == []


def test_an_unknown_session_id_is_an_error_naming_it(weather_db):
    with pytest.raises(InputError) as err:
        select_sessions(weather_db, SessionSelection(session_ids=["s-nope"]))
    assert err.value.source == str(weather_db)
    assert "s-nope" in err.value.reason


def test_promoted_sessions_round_trip_and_all_pass(weather_db, tmp_path):
    out = io.StringIO()
    result = export_sessions(
        "evalset", [weather_db], SessionSelection(results=["passed", "unmatched"]), out, eval_set_id="prod"
    )
    path = tmp_path / "promoted.evalset.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    eval_set = EvalSet.load(path)

    assert eval_set.eval_set_id == "prod"
    assert [c.eval_id for c in eval_set.eval_cases] == [
        "s-tokyo",
        "s-follow",
        "s-berlin",
        "s-compare",
        "s-refund",
        "s-hello",
    ]
    assert result.skipped == []
    follow = next(c for c in eval_set.eval_cases if c.eval_id == "s-follow")
    assert [inv.user_content.get_text() for inv in follow.conversation] == [
        "What's the weather in Paris?",
        "What about tomorrow?",
    ]
    assert [[(t.name, t.args) for t in inv.expected_tool_trajectory] for inv in follow.conversation] == [
        [("get_weather", {"city": "Paris"})],
        [("get_forecast", {"city": "Paris", "days": 1})],
    ]
    # The typo'd city failed first and was retried: only the effective call is expected.
    berlin = next(c for c in eval_set.eval_cases if c.eval_id == "s-berlin")
    assert [(t.name, t.args) for t in berlin.conversation[0].expected_tool_trajectory] == [
        ("get_weather", {"city": "Berlin"})
    ]

    index = GoldenIndex([eval_set])
    store = Store(weather_db)
    try:
        for case in eval_set.eval_cases:
            session_id = case.metadata["session_id"]
            outcome = evaluate_session(
                session_id, *stored_spans(store.conn, store.path, session_id), index, EvalConfig.default()
            )
            assert outcome.match.case is not None and outcome.match.case.eval_id == case.eval_id, session_id
            failing = [c.criterion for c in outcome.result.criterion_results if not c.skipped and not c.passed]
            assert outcome.result.passed, (session_id, failing)
            ran = {c.criterion for c in outcome.result.criterion_results if not c.skipped}
            # A promoted turn without calls says "no tool" ([]), which is checked too.
            states_calls = any(inv.expected_tool_trajectory is not None for inv in case.conversation)
            assert ran == {"response_match", "health"} | ({"trajectory_match"} if states_calls else set())
    finally:
        store.close()


def test_a_regressed_session_fails_against_the_promoted_good_one(weather_db):
    out = io.StringIO()
    export_sessions("evalset", [weather_db], SessionSelection(session_ids=["s-follow"]), out)
    eval_set = EvalSet.from_dict(json.loads(out.getvalue()))
    store = Store(weather_db)
    try:
        outcome = evaluate_session(
            "s-follow-v2",
            stored_spans(store.conn, store.path, "s-follow-v2")[0],
            [],
            GoldenIndex([eval_set]),
            EvalConfig.default(),
        )
    finally:
        store.close()
    assert outcome.result.eval_id == "s-follow"
    assert not outcome.result.passed
    trajectory = next(c for c in outcome.result.criterion_results if c.criterion == "trajectory_match")
    assert not trajectory.passed


def test_sessions_with_the_same_first_message_keep_the_earliest(weather_db):
    out = io.StringIO()
    result = export_sessions("evalset", [weather_db], SessionSelection(session_ids=["s-follow", "s-follow-v2"]), out)
    assert [c["eval_id"] for c in json.loads(out.getvalue())["eval_cases"]] == ["s-follow"]
    assert result.sessions == ["s-follow"]
    assert result.skipped == [
        {
            "session_id": "s-follow-v2",
            "reason": "same first user message as case 's-follow'; a second case would be ambiguous",
        }
    ]
