"""``otel-eval golden suggest`` (issue 33.2): clusters of unmatched sessions become draft cases
that google-adk loads and that match those sessions when rescored."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from examples.weather_agent import run_session
from otel_eval import EvalSpanProcessor
from otel_eval.cli import main
from otel_eval.golden import load_golden_files
from otel_eval.golden.clusters import cluster_queries
from otel_eval.read.evaluations import current_evaluations

from .test_compare import GOLDEN_FILES

REFERENCE_PYTHON = Path(__file__).resolve().parents[1] / ".venv-reference" / "bin" / "python"

TRAFFIC = (
    ["What's the weather in New York?"] * 4
    + ["What's the weather in New York"]
    + ["How many orders did we get last week?"] * 3
    + ["how many orders did we get last week"] * 2
    + ["Tell me a joke"] * 2
    + ["What's the weather in Tokyo?"] * 2
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suggest") / "live.db"
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent", "service.version": "1.0.0"}))
    provider.add_span_processor(EvalSpanProcessor(db=path, golden=GOLDEN_FILES, trace_quiet=60, session_idle=60))
    for i, query in enumerate(TRAFFIC):
        run_session(provider, f"s{i:02d}", [query])
    provider.shutdown()
    return path


def test_queries_cluster_by_meaning_most_sessions_first():
    # The IDF is fitted on the queries clustered: a frame many of them share ("weather in") counts
    # little, the words that tell them apart (the city) count most.
    clusters = cluster_queries(
        [
            "top 10 users by revenue",
            "show the top ten users ranked by revenue",
            "weather in paris",
            "weather in lima",
            "weather in tokyo",
            "weather in oslo",
        ],
        [3, 1, 2, 2, 1, 1],
    )
    assert [sorted(c.queries) for c in clusters] == [
        ["show the top ten users ranked by revenue", "top 10 users by revenue"],
        ["weather in lima"],
        ["weather in paris"],
        ["weather in oslo"],
        ["weather in tokyo"],
    ]
    assert clusters[0].sessions == 4 and clusters[0].representative == "top 10 users by revenue"


def test_suggest_writes_an_adk_eval_set_of_verified_clusters(db, tmp_path, capsys):
    draft = tmp_path / "draft.evalset.json"
    assert main(["golden", "suggest", "--db", str(db), "--min-sessions", "4", "-o", str(draft)]) == 0
    out = capsys.readouterr().out
    data = json.loads(draft.read_text())
    cases = {c["eval_id"]: c for c in data["eval_cases"]}
    assert sorted(cases) == ["how_many_orders_did_we_get_last_week", "what_s_the_weather_in_new_york"]
    assert "Tell me a joke" not in draft.read_text()  # two sessions: below --min-sessions
    orders = cases["how_many_orders_did_we_get_last_week"]
    assert orders["conversation"][0]["user_content"]["parts"][0]["text"] == "How many orders did we get last week?"
    # The agent passes the user's words through: they differ between sessions, so not pinned.
    assert orders["conversation"][0]["intermediate_data"]["tool_uses"] == [
        {"name": "call_db_agent", "args": {"question": "IGNORE"}}
    ]
    assert orders["metadata"]["sessions"] == 5 and len(orders["metadata"]["example_session_ids"]) == 5
    assert orders["metadata"]["unpinned_arguments"] == ["call_db_agent[0].question"]
    york = cases["what_s_the_weather_in_new_york"]
    assert york["conversation"][0]["intermediate_data"]["tool_uses"] == [
        {"name": "get_weather", "args": {"city": "New York"}}
    ]
    assert york["conversation"][0]["final_response"]["parts"][0]["text"]
    assert "call_db_agent[0].question" in out
    # google-adk itself loads the draft.
    if REFERENCE_PYTHON.exists():
        check = subprocess.run(
            [
                str(REFERENCE_PYTHON),
                "-c",
                "import sys; from google.adk.evaluation.eval_set import EvalSet; "
                "s = EvalSet.model_validate_json(open(sys.argv[1]).read()); print(len(s.eval_cases))",
                str(draft),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert check.returncode == 0, check.stderr
        assert check.stdout.strip() == "2"


def test_rescoring_with_the_draft_matches_and_passes_the_clustered_sessions(db, tmp_path, capsys):
    draft = tmp_path / "draft.evalset.json"
    assert main(["golden", "suggest", "--db", str(db), "--min-sessions", "4", "-o", str(draft)]) == 0
    [draft_set] = load_golden_files([str(draft)])
    clustered = {s for case in draft_set.eval_cases for s in case.metadata["example_session_ids"]}
    assert len(clustered) == 10
    golden = [a for p in GOLDEN_FILES for a in ("--golden", str(p))]
    assert main(["rescore", "--db", str(db), *golden, "--golden", str(draft)]) == 0
    capsys.readouterr()
    rows = {r.session_id: r for r in current_evaluations([db])}
    assert {rows[s].case_id for s in clustered} == {c.eval_id for c in draft_set.eval_cases}
    assert {rows[s].verdict for s in clustered} == {"passed"}
    assert rows["s11"].case_id is None  # the joke is still unmatched


def test_nothing_to_suggest_is_one_line_and_success(db, tmp_path, capsys):
    draft = tmp_path / "none.json"
    assert main(["golden", "suggest", "--db", str(db), "--min-sessions", "50", "-o", str(draft)]) == 0
    err = capsys.readouterr().err
    assert err.strip() == "nothing to suggest: no cluster of at least 50 unmatched sessions"
    assert not draft.exists()


def test_an_embedding_model_clusters_paraphrases_the_n_grams_keep_apart(tmp_path, capsys):
    from .test_embedding_openai import EmbeddingServer

    db = tmp_path / "live.db"
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent", "service.version": "1.0.0"}))
    provider.add_span_processor(EvalSpanProcessor(db=db, golden=GOLDEN_FILES, trace_quiet=60, session_idle=60))
    for i, query in enumerate(["What's the weather in New York?"] * 3 + ["How hot is it in New York right now"] * 3):
        run_session(provider, f"p{i}", [query])
    provider.shutdown()
    draft = tmp_path / "draft.evalset.json"
    # Offline n-grams: two phrasings of three sessions each, neither reaches --min-sessions 5.
    assert main(["golden", "suggest", "--db", str(db), "--min-sessions", "5", "-o", str(draft)]) == 0
    assert "nothing to suggest" in capsys.readouterr().err
    server = EmbeddingServer()
    try:
        model = ["--embedding-url", server.url, "--embedding-model", "toy-embed", "--embedding-threshold", "80"]
        assert (
            main(
                [
                    "golden",
                    "suggest",
                    "--db",
                    str(db),
                    "--min-sessions",
                    "5",
                    "--similarity",
                    "0.8",
                    "-o",
                    str(draft),
                    *model,
                ]
            )
            == 0
        )
        [case] = json.loads(draft.read_text())["eval_cases"]
        assert case["metadata"]["sessions"] == 6
        assert {p["query"] for p in case["metadata"]["phrasings"]} == {
            "What's the weather in New York?",
            "How hot is it in New York right now",
        }
        assert any(r["model"] == "toy-embed" for r in server.requests)
        # Rescored with the draft and the same model, every one of the six matches it.
        golden = [a for p in GOLDEN_FILES for a in ("--golden", str(p))]
        assert main(["rescore", "--db", str(db), *golden, "--golden", str(draft), *model]) == 0
        rows = current_evaluations([db])
        assert {r.case_id for r in rows} == {case["eval_id"]}
    finally:
        server.close()
