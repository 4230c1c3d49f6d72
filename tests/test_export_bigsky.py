"""Big Sky export: one example per turn, history in OpenAI chat format, only evaluators Big Sky
Agents registers, one example per query (merged or left out, never ambiguous), and it loads back
with otel_eval.golden.load_golden (and scores the sessions it came from as passing)."""

from __future__ import annotations

import io
import json

import pytest

from otel_eval.export import SessionSelection, export_sessions
from otel_eval.golden import GoldenIndex, load_golden
from otel_eval.models.evalset import EvalConfig
from otel_eval.read.spans import stored_spans
from otel_eval.session_evaluation import evaluate_session
from otel_eval.store import Store
from tests.test_export_evalset import record_sessions

#: What Big Sky Agents' runner can resolve: Evaluators.register(...) in
#: Automattic/big-sky-agents src/eval/langsmith.js, with the argument names its evaluators
#: destructure (src/eval/evaluators/chat.js). Anything else stops it with "Evaluator … not found".
BIGSKY_REGISTERED = {
    "chat:matchToolCall": set(),
    "chat:compareContent": set(),
    "chat:includeContext": {"contextName"},
    "chat:includeString": {"string"},
    "chat:matchRegex": {"pattern"},
}


def export(db, **kwargs):
    out = io.StringIO()
    result = export_sessions("bigsky", [db], SessionSelection(**kwargs), out, name="prod weather")
    return result, json.loads(out.getvalue()), out.getvalue()


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("bigsky") / "b.db"
    record_sessions(
        path,
        [
            ("s-follow", ["What's the weather in Paris?", "What about tomorrow?"], "1.0.0"),
            ("s-compare", ["Compare the weather in Paris and London"], "1.0.0"),
            ("s-follow-again", ["What's the weather in Paris?", "What about tomorrow?"], "1.0.0"),
            ("s-follow-v2", ["What's the weather in Paris?", "What about tomorrow?"], "2.0.0"),
            ("s-tokyo", ["What's the weather in Tokyo?"], "1.0.0"),
        ],
    )
    return path


def test_bigsky_export_loads_back_and_passes(db, tmp_path):
    result, dataset, text = export(db, session_ids=["s-follow", "s-compare"])
    assert result.records == 3 and result.sessions == ["s-follow", "s-compare"]
    assert [e["id"] for e in dataset["data"]] == ["s-follow-1", "s-follow-2", "s-compare-1"]

    second = dataset["data"][1]
    history = second["inputs"]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "user"]
    assert history[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert history[2]["tool_call_id"] == history[1]["tool_calls"][0]["id"]
    assert json.loads(history[2]["content"]) == {"city": "Paris", "temperature_c": 18, "condition": "cloudy"}
    assert history[-1] == {"role": "user", "content": "What about tomorrow?"}
    assert second["outputs"]["message"]["content"] == "Tomorrow in Paris: 20°C and sunny."
    assert [c["function"] for c in second["outputs"]["message"]["tool_calls"]] == [
        {"name": "get_forecast", "arguments": {"city": "Paris", "days": 1}}
    ]

    path = tmp_path / "prod.bigsky.json"
    path.write_text(text, encoding="utf-8")
    eval_set = load_golden(path)
    assert eval_set.name == "prod weather"
    cases = {c.eval_id: c for c in eval_set.eval_cases}
    assert list(cases) == ["s-follow-1", "s-follow-2", "s-compare-1"]
    assert cases["s-follow-2"].query == "What about tomorrow?"
    assert len(cases["s-follow-2"].conversation[0].metadata["history"]) == 4
    compare = cases["s-compare-1"].conversation[0]
    assert [(t.name, t.args) for t in compare.expected_tool_trajectory] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "London"}),
    ]
    assert compare.first_call_only is True  # chat:matchToolCall looks at the first call
    assert set(eval_set.criteria) == {"trajectory_match", "response_match"}

    store = Store(db)
    try:
        outcome = evaluate_session(
            "s-compare",
            stored_spans(store.conn, store.path, "s-compare")[0],
            [],
            GoldenIndex([eval_set]),
            EvalConfig.default(),
        )
    finally:
        store.close()
    assert outcome.result.eval_id == "s-compare-1"
    assert outcome.result.passed, [c for c in outcome.result.criterion_results if not c.passed]


def test_only_evaluators_big_sky_registers_with_their_own_argument_names(db):
    _, dataset, _ = export(db)
    assert dataset["evaluators"]
    for evaluator in dataset["evaluators"]:
        assert evaluator["function"] in BIGSKY_REGISTERED, evaluator
        assert set(evaluator.get("arguments") or {}) <= BIGSKY_REGISTERED[evaluator["function"]]
        assert evaluator["key"] and evaluator["description"]
    for kind in ("comparativeEvaluators", "summaryEvaluators"):
        assert dataset[kind] == []


def test_the_same_query_from_several_sessions_is_one_example_and_every_session_matches_it(db, tmp_path):
    result, dataset, text = export(db)
    ids = [e["id"] for e in dataset["data"]]
    assert ids == ["s-follow-1", "s-follow-2", "s-compare-1", "s-tokyo-1"]
    queries = [e["inputs"]["messages"][-1]["content"] for e in dataset["data"]]
    assert len(set(queries)) == len(queries)
    # The repeat is merged (same expectation); the regressed v2's first turn (get_forecast for
    # "weather") is left out, as the EvalSet export leaves out a second session with the same
    # first message; its second turn did what s-follow did and is merged.
    reasons = {(s["session_id"], s["reason"].split(":")[0]): s["reason"] for s in result.skipped}
    assert "merged into example 's-follow-1'" in reasons[("s-follow-again", "turn 1")]
    assert "merged into example 's-follow-2'" in reasons[("s-follow-again", "turn 2")]
    assert (
        "same user message as example 's-follow-1' but a different expected message"
        in reasons[("s-follow-v2", "turn 1")]
    )
    assert "merged into example 's-follow-2'" in reasons[("s-follow-v2", "turn 2")]
    assert result.sessions == ["s-follow", "s-compare", "s-follow-again", "s-follow-v2", "s-tokyo"]

    path = tmp_path / "all.bigsky.json"
    path.write_text(text, encoding="utf-8")
    index = GoldenIndex([load_golden(path)])
    store = Store(db)
    try:
        for sid in ("s-follow", "s-follow-again", "s-tokyo"):
            outcome = evaluate_session(
                sid, stored_spans(store.conn, store.path, sid)[0], [], index, EvalConfig.default()
            )
            assert outcome.match.method != "ambiguous", (sid, outcome.match.evidence)
            assert outcome.result.eval_id == f"{'s-follow' if 'follow' in sid else sid}-1"
    finally:
        store.close()


def test_each_example_is_described_by_its_own_turn(db):
    _, dataset, _ = export(db, session_ids=["s-follow"])
    assert [e["description"] for e in dataset["data"]] == [
        "What's the weather in Paris? (turn 1 of 2)",
        "What about tomorrow? (turn 2 of 2)",
    ]
