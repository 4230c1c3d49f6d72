"""The OpenAI-compatible embedding backend against a real local HTTP server that answers like
``POST /v1/embeddings`` (OpenAI, Ollama, vLLM, text-embeddings-inference): a paraphrase the
n-grams miss is matched; vectors are cached by text; a transient 500 is retried; a persistent
500, a timeout, malformed JSON, a wrong answer or a refused key leave the session unmatched with
the reason in the match evidence — never an exception. Wired through the engine (in a score
worker process), the collector's settings and ``otel-eval evaluate``."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from otel_eval.engine import Engine
from otel_eval.errors import InputError
from otel_eval.golden import GoldenIndex
from otel_eval.golden.embedding import OpenAIEmbeddings
from otel_eval.models.evalset import EvalCase, EvalSet, Invocation, MessageContent
from otel_eval.spans import SpanRecord

#: A toy "model" that knows synonyms: each word counts toward a concept; words it does not know
#: count a little toward "other". Paraphrases land on the same concepts, unlike character n-grams.
CONCEPTS = {
    "weather": 0,
    "hot": 0,
    "temperature": 0,
    "warm": 0,
    "tokyo": 1,
    "refund": 2,
    "money": 2,
    "back": 2,
    "policy": 2,
    "users": 3,
    "customers": 3,
    "revenue": 4,
    "sales": 4,
}
DIM = 6

GOLDEN = EvalSet(
    eval_set_id="toy",
    eval_cases=[
        EvalCase(
            eval_id=eval_id,
            conversation=[Invocation(invocation_id=f"{eval_id}-1", user_content=MessageContent.user(q))],
        )
        for eval_id, q in (
            ("weather_tokyo", "What's the weather in Tokyo?"),
            ("refund", "What is your refund policy?"),
            ("top_users", "Show me the top users by revenue"),
        )
    ],
)
PARAPHRASE = "How hot is it in Tokyo right now"


def concept_vector(text: str) -> list[float]:
    vector = [0.0] * DIM
    for word in re.findall(r"[a-z']+", text.lower()):
        index = CONCEPTS.get(word)
        if index is None:
            vector[DIM - 1] += 0.1
        else:
            vector[index] += 1.0
    return vector


class EmbeddingServer:
    """``mode`` decides the next answers: "ok", "500", "slow", "garbage", "short", "401"; a list is
    consumed one answer per request, then "ok"."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.plan: list[str] = []
        self.default = "ok"
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, **body})
                server.headers.append(dict(self.headers))
                mode = server.plan.pop(0) if server.plan else server.default
                if mode == "slow":
                    server.release.wait(10)  # longer than the client's timeout
                    mode = "ok"
                if mode in ("500", "401"):
                    self.reply(int(mode), b'{"error": {"message": "model not loaded"}}')
                elif mode == "garbage":
                    self.reply(200, b"<html>proxy error</html>")
                elif mode == "short":
                    self.reply(200, json.dumps({"object": "list", "data": []}).encode())
                else:
                    data = [
                        {"object": "embedding", "index": i, "embedding": concept_vector(t)}
                        for i, t in enumerate(body["input"])
                    ]
                    self.reply(200, json.dumps({"object": "list", "data": data, "model": body["model"]}).encode())

            def reply(self, status, payload):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def texts_sent(self) -> list[str]:
        return [t for r in self.requests for t in r["input"]]

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = EmbeddingServer()
    yield s
    s.close()


def backend(server, **kwargs) -> OpenAIEmbeddings:
    kwargs.setdefault("retries", 1)
    kwargs.setdefault("backoff", 0.01)
    return OpenAIEmbeddings(server.url, "toy-embed", api_key="sk-test", **kwargs)


def test_a_real_model_matches_a_paraphrase_the_ngrams_miss(server):
    offline = GoldenIndex([GOLDEN], embedding_threshold=80).match(PARAPHRASE)
    assert offline.method == "unmatched"
    match = GoldenIndex([GOLDEN], embedding_threshold=80, embed=backend(server)).match(PARAPHRASE)
    assert (match.method, match.eval_id) == ("embedding", "weather_tokyo")
    assert "toy-embed" in match.evidence["embedding"]["model"]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["model"] for r in server.requests} == {"toy-embed"}
    assert {h["Authorization"] for h in server.headers} == {"Bearer sk-test"}


def test_vectors_are_cached_by_text(server):
    embed = backend(server)
    index = GoldenIndex([GOLDEN], embedding_threshold=80, embed=embed)
    for query in (PARAPHRASE, "Give me my money back", PARAPHRASE):
        index.match(query)
    assert sorted(server.texts_sent()) == sorted(
        [
            "what's the weather in tokyo",
            "what is your refund policy",
            "show me the top users by revenue",
            "how hot is it in tokyo right now",
            "give me my money back",
        ]
    )
    # A second index (a reloaded golden set) reuses the backend's cache: nothing is sent again.
    sent = len(server.requests)
    assert GoldenIndex([GOLDEN], embedding_threshold=80, embed=embed).match(PARAPHRASE).method == "embedding"
    assert len(server.requests) == sent


def test_a_transient_500_is_retried(server):
    server.plan = ["500"]
    embed = backend(server)
    match = GoldenIndex([GOLDEN], embedding_threshold=80, embed=embed).match(PARAPHRASE)
    assert match.method == "embedding"
    assert embed.requests == 3  # golden queries: 500, then ok; the query: ok


@pytest.mark.parametrize(
    "mode, says, tries",
    [
        ("500", "HTTP 500", 2),
        ("slow", "no answer within 0.2 s", 2),
        ("garbage", "invalid JSON", 1),
        ("short", "0 embedding(s) for 3 text(s)", 1),
        ("401", "HTTP 401", 1),  # a refused key is not retried
    ],
)
def test_a_failing_backend_leaves_the_session_unmatched_with_the_reason(server, mode, says, tries):
    server.default = mode
    embed = backend(server, timeout=0.2)
    match = GoldenIndex([GOLDEN], embedding_threshold=80, embed=embed).match(PARAPHRASE)
    assert match.method == "unmatched"
    error = match.evidence["embedding"]["error"]
    assert server.url + "/embeddings" in error and says in error
    assert "the embedding step failed" in match.evidence["reason"]
    assert embed.requests == tries
    # The next session tries again, and succeeds once the server does.
    server.default = "ok"
    server.release.set()
    index = GoldenIndex([GOLDEN], embedding_threshold=80, embed=embed)
    assert index.match(PARAPHRASE).method == "embedding"


def test_exact_and_fuzzy_matches_never_call_the_model(server):
    server.default = "500"
    match = GoldenIndex([GOLDEN], embedding_threshold=80, embed=backend(server)).match("What is your refund policy?")
    assert match.method == "exact" and server.requests == []


def paraphrase_span(session_id: str) -> SpanRecord:
    return SpanRecord(
        "8f" * 16,
        "00000000000000b1",
        None,
        "agent.invoke",
        1,
        2,
        attributes={"openinference.span.kind": "AGENT", "session.id": session_id, "input.value": PARAPHRASE},
    )


@pytest.mark.parametrize("score_workers", [0, 1])
def test_the_engine_matches_with_the_model_and_stores_why_when_it_cannot(server, tmp_path, score_workers):
    db = tmp_path / "e.db"
    engine = Engine(
        db,
        golden=[GOLDEN],
        trace_quiet=3600,
        session_idle=3600,
        embedding_threshold=80,
        embed=backend(server),
        score_workers=score_workers,
    ).start()
    engine.ingest([paraphrase_span("s-ok")])
    engine.close(score_open=True)
    server.default = "500"
    engine = Engine(
        db,
        golden=[GOLDEN],
        trace_quiet=3600,
        session_idle=3600,
        embedding_threshold=80,
        embed=backend(server),
        score_workers=score_workers,
    ).start()
    engine.ingest(
        [
            SpanRecord(
                "9f" * 16,
                "00000000000000b2",
                None,
                "agent.invoke",
                3,
                4,
                attributes={"openinference.span.kind": "AGENT", "session.id": "s-down", "input.value": PARAPHRASE},
            )
        ]
    )
    engine.close(score_open=True)
    conn = sqlite3.connect(db)
    rows = dict(conn.execute("SELECT session_id, matched_by FROM evaluations WHERE superseded = 0"))
    error = conn.execute(
        "SELECT json_extract(details, '$.match.evidence.embedding.error') FROM evaluations WHERE session_id = 's-down'"
    ).fetchone()[0]
    conn.close()
    assert rows == {"s-ok": "embedding", "s-down": "unmatched"}
    assert "HTTP 500" in error


def test_collector_settings_for_the_backend(tmp_path, server):
    from collector.app import embedding_model_of
    from collector.config import load_config

    env = {"OTEL_EVAL_EMBEDDING_API_KEY": "sk-env"}
    config = load_config(
        [
            "--embedding-url",
            server.url,
            "--embedding-model",
            "toy-embed",
            "--embedding-threshold",
            "80",
            "--embedding-timeout",
            "3",
        ],
        environ=env,
    )
    embed = embedding_model_of(config)
    assert (embed.url, embed.model, embed.api_key, embed.timeout) == (
        server.url + "/embeddings",
        "toy-embed",
        "sk-env",
        3.0,
    )
    toml = tmp_path / "c.toml"
    toml.write_text(f'embedding_url = "{server.url}"\nembedding_model = "toy-embed"\nembedding_threshold = 75\n')
    assert embedding_model_of(load_config(["--config", str(toml)], environ={})).model == "toy-embed"
    assert embedding_model_of(load_config([], environ={})) is None  # n-grams stay the default
    with pytest.raises(InputError, match="--embedding-model"):
        load_config(["--embedding-url", server.url, "--embedding-threshold", "80"], environ={})
    with pytest.raises(InputError, match="--embedding-threshold"):
        load_config(["--embedding-url", server.url, "--embedding-model", "m"], environ={})
    with pytest.raises(InputError, match="http"):
        load_config(["--embedding-url", "127.0.0.1:11434"], environ={})


def paraphrase_files(folder, session_id: str):
    """The toy golden set, and an OTLP JSON capture of one session asking the paraphrase."""
    golden = folder / "toy.evalset.json"
    GOLDEN.save(golden)
    spans = folder / "spans.otlp.json"
    spans.write_text(
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "resource": {"attributes": []},
                        "scopeSpans": [
                            {
                                "spans": [
                                    {
                                        "traceId": "8f" * 16,
                                        "spanId": "00000000000000b1",
                                        "name": "agent.invoke",
                                        "kind": 1,
                                        "startTimeUnixNano": "1",
                                        "endTimeUnixNano": "2",
                                        "attributes": [
                                            {"key": "openinference.span.kind", "value": {"stringValue": "AGENT"}},
                                            {"key": "session.id", "value": {"stringValue": session_id}},
                                            {"key": "input.value", "value": {"stringValue": PARAPHRASE}},
                                        ],
                                    }
                                ]
                            }
                        ],
                    }
                ]
            }
        )
    )
    return golden, spans


def test_evaluate_command_uses_the_model(server, tmp_path, monkeypatch):
    from otel_eval.cli import main

    golden, spans = paraphrase_files(tmp_path, "s-cli")
    monkeypatch.setenv("OTEL_EVAL_EMBEDDING_API_KEY", "sk-cli")
    db = tmp_path / "cli.db"
    assert (
        main(
            [
                "evaluate",
                str(spans),
                "--golden",
                str(golden),
                "--db",
                str(db),
                "--json",
                "--embedding-threshold",
                "80",
                "--embedding-url",
                server.url,
                "--embedding-model",
                "toy-embed",
            ]
        )
        == 0
    )
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT matched_by, case_id FROM evaluations").fetchone() == ("embedding", "weather_tokyo")
    conn.close()
    assert {h["Authorization"] for h in server.headers} == {"Bearer sk-cli"}


def test_rescore_command_uses_the_model(server, tmp_path, monkeypatch):
    """A session the first run could not match is matched when rescored with the model."""
    from otel_eval.cli import main

    golden, spans = paraphrase_files(tmp_path, "s-rescore")
    db = tmp_path / "rescore.db"
    assert main(["evaluate", str(spans), "--golden", str(golden), "--db", str(db), "--json"]) == 0
    monkeypatch.setenv("OTEL_EVAL_EMBEDDING_API_KEY", "sk-rescore")
    assert (
        main(
            [
                "rescore",
                "--db",
                str(db),
                "--json",
                "--embedding-threshold",
                "80",
                "--embedding-url",
                server.url,
                "--embedding-model",
                "toy-embed",
            ]
        )
        == 0
    )
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT revision, matched_by, case_id FROM evaluations ORDER BY revision").fetchall() == [
        (1, "unmatched", None),
        (2, "embedding", "weather_tokyo"),
    ]
    conn.close()
    assert {h["Authorization"] for h in server.headers} == {"Bearer sk-rescore"}
