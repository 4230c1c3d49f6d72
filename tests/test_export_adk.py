"""``export --format adk`` and ``golden convert --to adk``: google-adk's own ``EvalSet`` model and
both of ``adk eval``'s loaders (run by the reference oracle, in google-adk's environment) accept
the file with zero errors, and read back the tool calls, their arguments and the final answers the
sessions had; otel-eval's own loader reads it back and the sessions pass against it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from otel_eval.cli import main as cli_main
from otel_eval.errors import InputError
from otel_eval.export import SessionSelection, collect, export_sessions
from otel_eval.export.evalset import expected_calls
from otel_eval.golden import GoldenIndex, load_golden
from otel_eval.models.evalset import EvalConfig
from otel_eval.offline import evaluate
from otel_eval.read.spans import stored_spans
from otel_eval.session_evaluation import evaluate_session
from otel_eval.store import Store
from tests.paths import FIXTURES, REPO
from tests.test_export_evalset import record_sessions

REALCLIENTS = FIXTURES / "realclients"


def adk_says(oracle, text: str) -> dict:
    return oracle.ask({"op": "adk_eval_set", "text": text})


def what_the_sessions_did(db: Path, session_ids: list[str]) -> list[dict]:
    """The oracle's view of each case, computed from our own trajectories instead."""
    sessions = {s.session_id: s for s in collect([db], SessionSelection(session_ids=session_ids))}
    out = []
    for sid in session_ids:
        turns = sessions[sid].trajectory.turns
        out.append(
            {
                "eval_id": sid,
                "invocations": [
                    {
                        "user": t.user_input,
                        "final_response": t.final_response,
                        "tool_calls": [{"name": c.name, "args": dict(c.args), "id": None} for c in expected_calls(t)],
                    }
                    for t in turns
                ],
            }
        )
    return out


FRAMEWORKS = ["openai_otel_genai", "google_adk_legacy", "langgraph_openinference"]


@pytest.fixture(scope="module")
def realclient_dbs(tmp_path_factory) -> dict[str, Path]:
    """Spans captured from real instrumentation (the OpenAI SDK with OTel GenAI, google-adk's own
    telemetry, LangGraph with OpenInference), scored by the real pipeline, one database each."""
    out = {}
    for framework in FRAMEWORKS:
        out[framework] = tmp_path_factory.mktemp("adk") / f"{framework}.db"
        evaluate([REALCLIENTS / f"{framework}.otlp.json"], db=out[framework])
    return out


@pytest.fixture
def realclient_db(realclient_dbs) -> Path:
    return realclient_dbs["openai_otel_genai"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_real_sessions_exported_as_adk_load_in_google_adk_with_every_call_and_answer(
    realclient_dbs, framework, reference_oracle
):
    db = realclient_dbs[framework]
    out = io.StringIO()
    result = export_sessions("adk", [db], SessionSelection(), out, eval_set_id="prod_sessions")
    assert len(result.sessions) == 6 and result.skipped == []  # the six scenarios
    answer = adk_says(reference_oracle, out.getvalue())
    assert answer["model_errors"] == []
    assert answer["loader_errors"] == []
    assert answer["cases"] == what_the_sessions_did(db, result.sessions)
    # Not vacuous: the sessions had parallel calls, arguments, several turns and answers.
    cases = {c["eval_id"]: c for c in answer["cases"]}
    multi = next(c for sid, c in cases.items() if sid.endswith("s2-multi-tool"))
    assert [(t["name"], t["args"]) for t in multi["invocations"][0]["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "London"}),
    ]
    followup = next(c for sid, c in cases.items() if sid.endswith("s3-followup"))
    assert [i["user"] for i in followup["invocations"]] == ["What's the weather in Paris?", "What about tomorrow?"]
    assert all(i["final_response"] for i in followup["invocations"])


def test_the_seed_evalset_export_is_not_what_adk_loads(realclient_db, reference_oracle):
    # Why --format adk exists: ADK's model rejects the seed's schema.
    out = io.StringIO()
    export_sessions("evalset", [realclient_db], SessionSelection(), out)
    assert adk_says(reference_oracle, out.getvalue())["model_errors"]


def test_adk_export_reads_back_and_every_session_passes_against_it(tmp_path):
    db = tmp_path / "w.db"
    record_sessions(
        db,
        [
            ("s-tokyo", ["What's the weather in Tokyo?"], "1.0.0"),
            ("s-follow", ["What's the weather in Paris?", "What about tomorrow?"], "1.0.0"),
            ("s-berlin", ["What's the weather in Berln?"], "1.0.0"),
            ("s-follow-v2", ["What's the weather in Paris?", "What about tomorrow?"], "2.0.0"),
        ],
    )
    path = tmp_path / "promoted.evalset.json"
    assert cli_main(["export", "--format", "adk", "--db", str(db), "-o", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["eval_set_id"] == "promoted"
    eval_set = load_golden(path)
    assert [c.eval_id for c in eval_set.eval_cases] == ["s-tokyo", "s-follow", "s-berlin"]  # v2: same query
    follow = next(c for c in eval_set.eval_cases if c.eval_id == "s-follow")
    assert [[(t.name, t.args) for t in inv.expected_tool_trajectory] for inv in follow.conversation] == [
        [("get_weather", {"city": "Paris"})],
        [("get_forecast", {"city": "Paris", "days": 1})],
    ]
    assert follow.conversation[1].expected_final_response.get_text() == "Tomorrow in Paris: 20°C and sunny."

    index = GoldenIndex([eval_set])
    store = Store(db)
    try:
        for sid, passes in (("s-tokyo", True), ("s-follow", True), ("s-berlin", True), ("s-follow-v2", False)):
            outcome = evaluate_session(sid, *stored_spans(store.conn, store.path, sid), index, EvalConfig.default())
            assert outcome.result.passed is passes, (sid, outcome.result.criterion_results)
    finally:
        store.close()


def test_an_eval_set_id_adk_cannot_use_is_refused_before_writing(tmp_path):
    db = tmp_path / "w.db"
    record_sessions(db, [("s-tokyo", ["What's the weather in Tokyo?"], "1.0.0")])
    with pytest.raises(InputError) as err:
        export_sessions("adk", [db], SessionSelection(), io.StringIO(), eval_set_id="prod-sessions")
    assert err.value.source == "--eval-set-id" and "[a-zA-Z0-9_]" in err.value.reason


@pytest.mark.parametrize("source", ["weather.evalset.json", "weather.trajectory.json"])
def test_golden_convert_writes_either_format(tmp_path, source, reference_oracle, capsys):
    golden = REPO / "examples" / "golden" / source
    as_adk, as_evalset = tmp_path / "out.adk.json", tmp_path / "out.evalset.json"
    assert cli_main(["golden", "convert", str(golden), str(as_adk), "--to", "adk"]) == 0
    assert cli_main(["golden", "convert", str(golden), str(as_evalset)]) == 0  # the default stays evalset
    original = load_golden(golden)

    answer = adk_says(reference_oracle, as_adk.read_text())
    assert (answer["model_errors"], answer["loader_errors"]) == ([], [])
    assert [c["eval_id"] for c in answer["cases"]] == [c.eval_id for c in original.eval_cases]
    for case, adk_case in zip(original.eval_cases, answer["cases"]):
        for inv, adk_inv in zip(case.conversation, adk_case["invocations"]):
            assert adk_inv["user"] == inv.user_content.get_text()
            assert [(t["name"], t["args"]) for t in adk_inv["tool_calls"]] == [
                (t.name, t.args) for t in inv.expected_tool_trajectory or []
            ]
            expected = inv.expected_final_response.get_text() if inv.expected_final_response else None
            assert adk_inv["final_response"] == expected

    assert json.loads(as_evalset.read_text())["eval_cases"][0]["conversation"][0]["user_content"]["role"] == "user"
    back = load_golden(as_adk)
    assert [c.query for c in back.eval_cases] == [c.query for c in original.eval_cases]
