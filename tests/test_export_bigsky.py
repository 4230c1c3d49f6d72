"""Big Sky export: one example per turn, history in OpenAI chat format, and it loads back with
otel_eval.golden.load_golden (and scores the sessions it came from as passing)."""

from __future__ import annotations

import io
import json

from otel_eval.evaluate import evaluate_session
from otel_eval.export import SessionSelection, export_sessions
from otel_eval.golden import GoldenIndex, load_golden
from otel_eval.models.evalset import EvalConfig
from otel_eval.store import Store
from tests.test_export_evalset import record_sessions


def test_bigsky_export_loads_back_and_passes(tmp_path):
    db = tmp_path / "b.db"
    record_sessions(db, [
        ("s-follow", ["What's the weather in Paris?", "What about tomorrow?"], "1.0.0"),
        ("s-compare", ["Compare the weather in Paris and London"], "1.0.0"),
    ])
    out = io.StringIO()
    result = export_sessions("bigsky", [db], SessionSelection(), out, name="prod weather")
    dataset = json.loads(out.getvalue())
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
        {"name": "get_forecast", "arguments": {"city": "Paris", "days": 1}}]

    path = tmp_path / "prod.bigsky.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    eval_set = load_golden(path)
    assert eval_set.name == "prod weather"
    cases = {c.eval_id: c for c in eval_set.eval_cases}
    assert list(cases) == ["s-follow-1", "s-follow-2", "s-compare-1"]
    assert cases["s-follow-2"].query == "What about tomorrow?"
    assert len(cases["s-follow-2"].conversation[0].metadata["history"]) == 4
    compare = cases["s-compare-1"].conversation[0]
    assert [(t.name, t.args) for t in compare.expected_tool_trajectory] == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})]
    assert compare.first_call_only is False  # chat:matchOutput compares every call
    assert eval_set.metadata["criteria"]["trajectory_match"]["check_args"] is True

    store = Store(db)
    try:
        outcome = evaluate_session("s-compare", store.session_spans("s-compare"), [], GoldenIndex([eval_set]),
                                   EvalConfig.default())
    finally:
        store.close()
    assert outcome.result.eval_id == "s-compare-1"
    assert outcome.result.passed, [c for c in outcome.result.criterion_results if not c.passed]
