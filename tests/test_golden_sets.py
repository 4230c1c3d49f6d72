"""Golden sets as one service: loaded, given distinct ids, stored and read back the same way by the
engine and rescore; a set's own criteria as a typed field; the golden tables' migration."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from examples.weather_agent import run_session
from otel_eval import EvalSpanProcessor
from otel_eval.golden import GoldenIndex, GoldenSets, load_golden
from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalSet, Invocation, MessageContent
from otel_eval.read.evaluations import current_evaluations
from otel_eval.rescore import rescore
from otel_eval.store import SCHEMA_VERSION, Store
from tests.old_schema import database_at_version


def trajectory_file(folder: Path, query: str, tool: str, city: str) -> Path:
    """A trajectory-golden ``cases.json`` with one case, ``weather``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cases.json"
    path.write_text(
        json.dumps(
            [
                {
                    "id": "weather",
                    "query": query,
                    "expected_tool_use": [{"tool_name": tool, "tool_input": {"city": city}}],
                }
            ]
        ),
        encoding="utf-8",
    )
    return path


def run_agent(db: Path, golden: list, sessions: dict[str, str]) -> list:
    results: list = []
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(
        EvalSpanProcessor(db=db, golden=golden, trace_quiet=60, session_idle=60, on_result=results.append)
    )
    for session_id, query in sessions.items():
        run_session(provider, session_id, [query])
    provider.shutdown()
    return results


def test_two_files_with_one_stem_keep_their_cases_apart_live_and_in_the_database(tmp_path):
    tokyo = trajectory_file(tmp_path / "golden" / "tokyo", "What's the weather in Tokyo?", "get_weather", "Tokyo")
    paris = trajectory_file(tmp_path / "golden" / "paris", "What's the weather in Paris?", "get_weather", "Paris")
    assert load_golden(tokyo).eval_set_id == load_golden(paris).eval_set_id == "cases"
    assert [c.eval_id for c in load_golden(tokyo).eval_cases] == [c.eval_id for c in load_golden(paris).eval_cases]

    db = tmp_path / "eval.db"
    results = run_agent(
        db, [tokyo, paris], {"s-tokyo": "What's the weather in Tokyo?", "s-paris": "What's the weather in Paris?"}
    )

    by_session = {r.session_id: r for r in results}
    assert (by_session["s-tokyo"].passed, by_session["s-paris"].passed) == (True, True)
    rows = {r.session_id: (r.eval_set_id, r.case_id) for r in current_evaluations([db])}
    case_id = load_golden(tokyo).eval_cases[0].eval_id
    assert rows == {"s-tokyo": ("tokyo/cases", case_id), "s-paris": ("paris/cases", case_id)}
    conn = sqlite3.connect(db)
    assert sorted(conn.execute("SELECT eval_set_id, source, query FROM golden_cases")) == [
        ("paris/cases", str(paris), "What's the weather in Paris?"),
        ("tokyo/cases", str(tokyo), "What's the weather in Tokyo?"),
    ]

    # Rescored from the stored golden: the same two sets, the same cases, the same verdicts.
    changes = {c.session_id: (c.after_case, c.after_verdict) for c in rescore(db)}
    assert changes == {"s-tokyo": (case_id, "pass"), "s-paris": (case_id, "pass")}


def test_runs_with_same_named_files_do_not_overwrite_each_others_golden_rows(tmp_path):
    db = tmp_path / "eval.db"
    tokyo = trajectory_file(tmp_path / "tokyo", "What's the weather in Tokyo?", "get_weather", "Tokyo")
    paris = trajectory_file(tmp_path / "paris", "What's the weather in Paris?", "get_weather", "Paris")
    run_agent(db, [tokyo], {"s-tokyo": "What's the weather in Tokyo?"})
    run_agent(db, [paris], {"s-paris": "What's the weather in Paris?"})

    conn = sqlite3.connect(db)
    assert sorted(conn.execute("SELECT eval_set_id, source, query FROM golden_cases")) == [
        ("cases", str(paris), "What's the weather in Paris?"),
        ("cases", str(tokyo), "What's the weather in Tokyo?"),
    ]
    # Both stored sets come back, named apart (they share a case id), and both sessions still match.
    stored = GoldenSets.stored(Store(db))
    assert sorted(s.eval_set_id for s in stored) == ["paris/cases", "tokyo/cases"]
    assert {c.session_id: c.after_verdict for c in rescore(db)} == {"s-tokyo": "pass", "s-paris": "pass"}


def case(eval_id: str, query: str) -> EvalCase:
    return EvalCase(
        eval_id=eval_id, conversation=[Invocation(invocation_id="1", user_content=MessageContent.user(query))]
    )


def test_sets_named_alike_that_no_folder_tells_apart_are_numbered_and_disjoint_ones_keep_their_id():
    one, again = (
        EvalSet(eval_set_id="s", eval_cases=[case("a", "q one")]),
        EvalSet(eval_set_id="s", eval_cases=[case("a", "q two")]),
    )
    other = EvalSet(eval_set_id="t", name="other", eval_cases=[case("a", "q three")])
    disjoint = EvalSet(eval_set_id="t", name="disjoint", eval_cases=[case("b", "q four")])
    sets = GoldenSets([one, again, other, disjoint])
    assert [s.eval_set_id for s in sets] == ["s", "s#2", "t", "t"]
    index = sets.index()
    assert index.match("q two").eval_set_id == "s#2"
    assert index.match("anything", case_hint="s#2/a").eval_id == "a"
    assert (index.set_of("t", "b").name, index.set_of("t", "a").name) == ("disjoint", "other")
    assert one.eval_set_id == again.eval_set_id == "s"  # the caller's sets are not changed
    with pytest.raises(ValueError, match="two cases are known as 's/a'"):
        GoldenIndex([one, again])


def test_a_set_declares_its_criteria_in_a_typed_field_and_old_files_with_metadata_criteria_still_load(tmp_path):
    strict = {"trajectory_match": {"threshold": 1.0, "check_args": False}}
    old = tmp_path / "old.evalset.json"
    old.write_text(
        json.dumps(
            {
                "eval_set_id": "old",
                "metadata": {"criteria": strict, "owner": "qa"},
                "eval_cases": [case("a", "hello").model_dump(mode="json")],
            }
        ),
        encoding="utf-8",
    )
    loaded = load_golden(old)
    assert loaded.criteria == {"trajectory_match": CriterionConfig(threshold=1.0, check_args=False)}
    assert loaded.metadata == {"owner": "qa"}

    new = tmp_path / "new.evalset.json"
    loaded.save(new)
    assert json.loads(new.read_text())["criteria"]["trajectory_match"]["threshold"] == 1.0
    assert load_golden(new) == loaded
    plain = tmp_path / "plain.evalset.json"
    EvalSet(eval_set_id="plain", eval_cases=[case("a", "hello")]).save(plain)
    assert "criteria" not in json.loads(plain.read_text())  # nothing declared, nothing written

    bad = tmp_path / "bad.evalset.json"
    bad.write_text(
        json.dumps(
            {
                "eval_set_id": "bad",
                "criteria": {"trajectory_match": {"threshhold": 1.0}},
                "eval_cases": [case("a", "hello").model_dump(mode="json")],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(Exception, match=r"criteria\.trajectory_match.*threshhold"):
        load_golden(bad)


def test_a_version_2_database_is_migrated_and_its_stored_criteria_are_read(tmp_path):
    db = database_at_version(tmp_path / "old.db", 2)
    conn = sqlite3.connect(db)
    # The version-2 golden tables: cases keyed by (eval_set_id, eval_id), criteria in metadata
    # (golden_sets was created on first use then).
    conn.executescript("""
        CREATE TABLE golden_sets (eval_set_id TEXT, source TEXT, name TEXT, description TEXT, metadata TEXT,
            saved_at TEXT, PRIMARY KEY (eval_set_id, source));
    """)
    conn.execute(
        "INSERT INTO golden_sets VALUES ('w', 'w.bigsky.json', 'W', '', ?, '2025-01-01')",
        (json.dumps({"criteria": {"response_match": {"threshold": 1.0}}, "bigsky": {}}),),
    )
    conn.execute(
        "INSERT INTO golden_cases VALUES ('w', 'a', '', 'hello', 'w.bigsky.json', 'h', ?, '2025-01-01')",
        (case("a", "hello").model_dump_json(),),
    )
    conn.commit()
    conn.close()

    store = Store(db)
    try:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        [stored] = GoldenSets.stored(store).sets
        assert (stored.eval_set_id, stored.criteria, stored.metadata) == (
            "w",
            {"response_match": CriterionConfig(threshold=1.0)},
            {"bigsky": {}},
        )
        GoldenSets([stored.model_copy(update={"metadata": {"source": "elsewhere/w.bigsky.json"}})]).save(store)
        assert sorted(store.conn.execute("SELECT eval_set_id, source, eval_id FROM golden_cases")) == [
            ("w", "elsewhere/w.bigsky.json", "a"),
            ("w", "w.bigsky.json", "a"),
        ]
    finally:
        store.close()
