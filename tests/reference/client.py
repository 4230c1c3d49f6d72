"""The test side of the reference oracle: one long-lived ``oracle.py`` process per test session.

The oracle runs in ``.venv-reference`` (google-adk and rouge-score at pinned versions, built by
``make reference``, which ``make test`` runs first), or in the interpreter named by
``OTEL_EVAL_REFERENCE_PYTHON``. A missing environment fails the tests that need it: a
differential test that quietly skips proves nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.paths import REPO

ORACLE = Path(__file__).with_name("oracle.py")


def reference_python() -> Path:
    named = os.environ.get("OTEL_EVAL_REFERENCE_PYTHON")
    return Path(named) if named else REPO / ".venv-reference" / "bin" / "python"


class _LineProcess:
    """A reference process asked one JSON line at a time, answering one JSON line each."""

    name = "reference oracle"

    def __init__(self, argv: list[str]) -> None:
        self._process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, text=True, bufsize=1
        )

    def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin and self._process.stdout
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} exited with {self._process.wait()}")
        return json.loads(line)

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        self._process.wait(timeout=10)


class Oracle(_LineProcess):
    """Ask the reference tools a question (a dict, see ``oracle.py``); get their answer."""

    def __init__(self) -> None:
        python = reference_python()
        if not python.exists():
            raise RuntimeError(
                f"reference environment missing: {python} does not exist; run `make reference` "
                "(make test does it) or set OTEL_EVAL_REFERENCE_PYTHON"
            )
        super().__init__([str(python), str(ORACLE)])

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        answer = self._exchange(request)
        if "error" in answer:
            raise RuntimeError(f"reference tool refused {request['op']}: {answer['error']}")
        return answer


BIGSKY_ORACLE = Path(__file__).with_name("bigsky_oracle.mjs")


def bigsky_evaluators() -> Path:
    """Big Sky Agents' ``dist/evaluators`` (``make reference`` extracts the pinned package there)."""
    named = os.environ.get("OTEL_EVAL_BIGSKY_EVALUATORS")
    return Path(named) if named else REPO / ".venv-reference" / "bigsky" / "package" / "dist" / "evaluators"


class BigSkyOracle(_LineProcess):
    """Ask Big Sky's own ``chat.js`` evaluators (under node) what they score."""

    name = "Big Sky oracle"

    def __init__(self) -> None:
        evaluators = bigsky_evaluators()
        if not (evaluators / "chat.js").exists():
            raise RuntimeError(
                f"Big Sky's evaluators missing: {evaluators / 'chat.js'} does not exist; run `make reference` "
                "(make test does it; it needs node and npm) or set OTEL_EVAL_BIGSKY_EVALUATORS"
            )
        super().__init__(["node", str(BIGSKY_ORACLE), str(evaluators)])

    def score(
        self, function: str, example: dict[str, Any], run: dict[str, Any], arguments: dict[str, Any] | None = None
    ) -> bool:
        answer = self._exchange({"function": function, "arguments": arguments or {}, "example": example, "run": run})
        if "error" in answer:
            raise RuntimeError(f"Big Sky's {function} refused the example: {answer['error']}")
        return bool(answer["score"])
