"""A real OpenAI-compatible judge on 127.0.0.1 whose behaviour a test switches while it runs:
answer (after ``delay`` seconds), 500, 429 with Retry-After, hang, garbage JSON, or ``script``:
answers picked by the prompt (:func:`scripted_answer`, which google-adk's scripted judge in
tests/reference/adk_judge_oracle.py uses too, so both sides answer alike). ``refusing_url()``
gives a URL where nothing listens (connection refused)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCORES = {"scores": {"correctness": {"score": 5, "reason": "right"}}}

Script = list  # [[needle or [needles], [answer, ...]], ...]


def scripted_answer(script: Script, counts: dict, prompt: str) -> str:
    """The answer to ``prompt``: the first rule whose needle (a string, or a list of strings that
    must all occur) is in the prompt gives its answers in turn, the n-th time it matches the n-th
    answer (cycling). No rule matching is an answer no parser reads, naming the prompt."""
    for i, (needle, answers) in enumerate(script):
        needles = [needle] if isinstance(needle, str) else list(needle)
        if all(n in prompt for n in needles):
            seen = counts.get(i, 0)
            counts[i] = seen + 1
            return answers[seen % len(answers)]
    return "NO SCRIPTED ANSWER for a prompt starting " + prompt[:80]


def completion(content: str, tokens: int = 30) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": tokens - 10, "completion_tokens": 10, "total_tokens": tokens},
        }
    ).encode()


class JudgeServer:
    def __init__(
        self, mode: str = "ok", delay: float = 0.0, score: int = 5, retry_after: str = "1", script: Script = ()
    ):
        self.mode = "script" if script and mode == "ok" else mode
        self.script = list(script)
        self.counts: dict = {}
        self.delay = delay
        self.score = score
        self.retry_after = retry_after
        self.requests: list[dict] = []
        self.times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive
            _body = None

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._body = body
                with outer._lock:
                    outer.requests.append(body)
                    outer.times.append(time.monotonic())
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    self._answer(outer.mode)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def _answer(self, mode):
                if mode == "hang":
                    outer._release.wait(120)
                    return
                if outer.delay:
                    time.sleep(outer.delay)
                headers = {}
                if mode == "ok":
                    status, payload = (
                        200,
                        completion(json.dumps({"scores": {"correctness": {"score": outer.score, "reason": "judged"}}})),
                    )
                elif mode == "500":
                    status, payload = 500, b'{"error": "overloaded"}'
                elif mode == "429":
                    status, payload = 429, b'{"error": "rate limited"}'
                    headers["Retry-After"] = outer.retry_after
                elif mode == "script":
                    with outer._lock:
                        content = scripted_answer(outer.script, outer.counts, self._body["messages"][-1]["content"])
                    status, payload = 200, completion(content)
                elif mode == "garbage":
                    status, payload = 200, completion("I think the answer is fine, really! " * 20)
                else:
                    raise AssertionError(mode)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in headers.items():
                        self.send_header(k, v)
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

    def prompts(self) -> list[str]:
        """The prompt (the last message) of every request received, in arrival order."""
        with self._lock:
            return [r["messages"][-1]["content"] for r in self.requests]

    def __enter__(self) -> JudgeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()


def refusing_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
