"""The LLM judge against a real HTTP server on 127.0.0.1 that answers like /chat/completions."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from otel_eval.metrics.judge import Judge, LRUCache
from otel_eval.models.evalset import CriterionConfig, Rubric

RUBRICS = [
    Rubric(name="helpfulness", description="How helpful?", weight=2.0),
    Rubric(name="accuracy", description="Accurate?", weight=1.0),
]


def completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        }
    ).encode()


SCORES = json.dumps(
    {"scores": {"helpfulness": {"score": 5, "reason": "good"}, "accuracy": {"score": 2, "reason": "meh"}}}
)


class FakeLLM:
    """Plays a script of answers: (status, body) or ("sleep", seconds) — one per request."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                step = outer.script.pop(0) if outer.script else (200, completion(SCORES))
                if step[0] == "sleep":
                    time.sleep(step[1])
                    step = (200, completion(SCORES))
                status, payload = step
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def make_judge(url, **kw):
    delays: list[float] = []
    judge = Judge(base_url=url, model="judge-1", api_key="sk-test", cache=LRUCache(), sleep=delays.append, **kw)
    return judge, delays


def test_weighted_rubric_scores_normalised_to_0_1():
    with FakeLLM([]) as llm:
        judge, _ = make_judge(llm.url)
        result = judge.evaluate("What's the weather?", "Sunny", "Sunny, 22°C", RUBRICS, threshold=0.7)
    # helpfulness 5 → 1.0 (weight 2), accuracy 2 → 0.25 (weight 1): (2*1 + 0.25) / 3 = 0.75
    assert result.score == 0.75 and result.passed and result.error is None
    assert result.details["rubrics"]["accuracy"] == {"score": 2.0, "reason": "meh", "weight": 1.0}
    request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "judge-1"
    assert "Reference answer:\nSunny, 22°C" in request["body"]["messages"][1]["content"]


def test_retries_a_500_then_succeeds_with_backoff():
    with FakeLLM([(500, b'{"error": "overloaded"}'), (429, b"{}")]) as llm:
        judge, delays = make_judge(llm.url, backoff=0.25)
        result = judge.evaluate("q", "a", None, RUBRICS)
    assert result.score == 0.75 and result.error is None
    assert len(llm.requests) == 3
    assert delays == [0.25, 0.5]


def test_gives_up_after_max_retries_with_a_reason():
    with FakeLLM([(503, b"busy")] * 3) as llm:
        judge, delays = make_judge(llm.url, max_retries=2)
        result = judge.evaluate("q", "a", None, RUBRICS)
    assert not result.passed and result.score == 0.0
    assert result.error == f"HTTP 503 from {llm.url}/chat/completions: busy (gave up after 3 attempts)"
    assert len(delays) == 2


def test_client_error_is_not_retried():
    with FakeLLM([(401, b'{"error": "bad key"}')]) as llm:
        judge, _ = make_judge(llm.url)
        result = judge.evaluate("q", "a", None, RUBRICS)
    assert result.error.startswith("HTTP 401 from ")
    assert len(llm.requests) == 1


def test_malformed_answers_are_errors_not_exceptions():
    with FakeLLM(
        [
            (200, completion("I think it's great!")),
            (200, b"<html>oops</html>"),
            (200, completion('{"scores": {"helpfulness": 7, "accuracy": 3}}')),
        ]
    ) as llm:
        judge, _ = make_judge(llm.url)
        not_json = judge.evaluate("q1", "a", None, RUBRICS)
        not_completion = judge.evaluate("q2", "a", None, RUBRICS)
        out_of_range = judge.evaluate("q3", "a", None, RUBRICS)
    assert not_json.error == "judge answer is not JSON: \"I think it's great!\""
    assert not_completion.error.startswith(f"response from {llm.url}/chat/completions is not a chat completion")
    assert out_of_range.error == "judge answer has no score from 1 to 5 for rubric 'helpfulness' (got 7)"
    assert not any(r.passed for r in (not_json, not_completion, out_of_range))


def test_fenced_json_answer_is_accepted():
    with FakeLLM([(200, completion("```json\n" + SCORES + "\n```"))]) as llm:
        judge, _ = make_judge(llm.url)
        assert judge.evaluate("q", "a", None, RUBRICS).score == 0.75


def test_timeout_is_retried_then_reported():
    with FakeLLM([("sleep", 1.0), ("sleep", 1.0)]) as llm:
        judge, delays = make_judge(llm.url, timeout=0.2, max_retries=1)
        result = judge.evaluate("q", "a", None, RUBRICS)
    assert result.error == f"timed out after 0.2s calling {llm.url}/chat/completions (gave up after 2 attempts)"
    assert len(delays) == 1


def test_cache_by_input_hash_avoids_a_second_call():
    with FakeLLM([]) as llm:
        judge, _ = make_judge(llm.url)
        first = judge.evaluate("q", "a", None, RUBRICS)
        second = judge.evaluate("q", "a", None, RUBRICS)
        different = judge.evaluate("q", "another answer", None, RUBRICS)
    assert len(llm.requests) == 2
    assert (first.details["cached"], second.details["cached"], different.details["cached"]) == (False, True, False)
    assert second.score == first.score == 0.75


def test_no_endpoint_means_skipped_with_reason():
    judge = Judge.from_config(CriterionConfig(), env={})
    result = judge.evaluate("q", "a")
    assert result.skipped and not judge.configured
    assert result.details["reason"] == "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"


def test_settings_from_options_then_environment():
    env = {
        "OTEL_EVAL_JUDGE_BASE_URL": "http://env:1/v1/",
        "OTEL_EVAL_JUDGE_API_KEY": "k-env",
        "OTEL_EVAL_JUDGE_MODEL": "m-env",
        "MY_KEY": "k-mine",
    }
    from_env = Judge.from_config(CriterionConfig(judge_model="gpt-4o-mini"), env=env)
    assert (from_env.base_url, from_env.api_key, from_env.model) == ("http://env:1/v1", "k-env", "m-env")
    opts = CriterionConfig(
        options={
            "base_url": "http://opt:2/v1",
            "model": "m-opt",
            "api_key_env": "MY_KEY",
            "timeout": 5,
            "max_retries": 1,
        }
    )
    from_opts = Judge.from_config(opts, env=env)
    assert (from_opts.base_url, from_opts.api_key, from_opts.model, from_opts.timeout, from_opts.max_retries) == (
        "http://opt:2/v1",
        "k-mine",
        "m-opt",
        5.0,
        1,
    )
    assert Judge.from_config(CriterionConfig(judge_model="gpt-x"), env={}).model == "gpt-x"


def test_unreachable_endpoint_is_an_error_result():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge, _ = make_judge(f"http://127.0.0.1:{port}/v1", max_retries=1)
    result = judge.evaluate("q", "a", None, RUBRICS)
    assert result.error.startswith(f"cannot reach http://127.0.0.1:{port}/v1/chat/completions:")
    assert result.error.endswith("(gave up after 2 attempts)")


@pytest.mark.parametrize("weights,expected", [((1.0, 1.0), 0.625), ((0.0, 1.0), 0.25)])
def test_weights_change_the_score(weights, expected):
    rubrics = [
        Rubric(name="helpfulness", description="h", weight=weights[0]),
        Rubric(name="accuracy", description="a", weight=weights[1]),
    ]
    with FakeLLM([]) as llm:
        judge, _ = make_judge(llm.url)
        assert judge.evaluate("q", "a", None, rubrics).score == expected
