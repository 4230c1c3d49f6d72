"""An optional LLM judge: weighted rubrics scored 1–5 through any OpenAI-compatible endpoint.

Never required and never fatal: with no endpoint the criterion is *skipped* with the reason, and
any failure (HTTP errors after retries, timeouts, an answer that is not the JSON we asked for)
becomes a CriterionResult with ``error`` set. Only the standard library talks HTTP, so the
judge adds no dependency.

Settings come from the criterion's options (``base_url``, ``model``, ``api_key``, ``api_key_env``,
``timeout``, ``max_retries``, ``backoff``, ``json_mode``) or the environment
(``OTEL_EVAL_JUDGE_BASE_URL``, ``OTEL_EVAL_JUDGE_API_KEY``, ``OTEL_EVAL_JUDGE_MODEL``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

from ..judging.context import (
    SYSTEM_PROMPT,  # noqa: F401  (re-exported: one prompt for both paths)
    build_messages,
)
from ..models.evalset import CriterionConfig, Rubric
from ..models.results import CriterionResult

ENV_BASE_URL = "OTEL_EVAL_JUDGE_BASE_URL"
ENV_API_KEY = "OTEL_EVAL_JUDGE_API_KEY"
ENV_MODEL = "OTEL_EVAL_JUDGE_MODEL"

DEFAULT_RUBRICS = [
    Rubric(
        name="correctness",
        description="Does the response answer the user's request correctly and completely, "
        "agreeing with the reference answer when one is given?",
        scoring_guide="5=correct and complete, 3=partly correct or incomplete, 1=wrong or no answer",
    )
]


class JudgeError(Exception):
    """The judge could not produce a score; the message is the reason shown to the user."""


class LRUCache(MutableMapping):
    """Bounded in-memory cache; any MutableMapping (a dict, a shelve, ...) can replace it."""

    def __init__(self, maxsize: int = 1024) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, Any] = OrderedDict()

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


_SHARED_CACHE = LRUCache()


def parse_scores(content: str, rubrics: Sequence[Rubric]) -> dict[str, dict[str, Any]]:
    """The rubric scores from the model's answer (JSON, possibly inside a code fence)."""
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise JudgeError(f"judge answer is not JSON: {content[:200]!r}")
    try:
        data = json.loads(text[start : end + 1])
    except ValueError as exc:
        raise JudgeError(f"judge answer is not valid JSON ({exc}): {content[:200]!r}") from None
    scores = data.get("scores", data) if isinstance(data, dict) else None
    if not isinstance(scores, dict):
        raise JudgeError("judge answer has no 'scores' object")
    out: dict[str, dict[str, Any]] = {}
    for rubric in rubrics:
        entry = scores.get(rubric.name)
        if isinstance(entry, dict):
            value, reason = entry.get("score"), entry.get("reason", "")
        else:
            value, reason = entry, ""
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 5:
            raise JudgeError(f"judge answer has no score from 1 to 5 for rubric {rubric.name!r} (got {value!r})")
        out[rubric.name] = {"score": float(value), "reason": str(reason), "weight": rubric.weight}
    return out


def weighted_score(scores: Mapping[str, Mapping[str, Any]]) -> float:
    """Weighted mean of the 1–5 scores mapped to 0–1: (score - 1) / 4."""
    total = sum(s["weight"] for s in scores.values())
    if total <= 0:
        raise JudgeError("rubric weights add up to 0")
    return sum((s["score"] - 1) / 4 * s["weight"] for s in scores.values()) / total


class Judge:
    """Calls the endpoint; one instance can be shared by threads (the cache is the only state)."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        json_mode: bool = False,
        cache: MutableMapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/") if base_url else None
        self.model = model or "gpt-4o-mini"
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.json_mode = json_mode
        self.cache = _SHARED_CACHE if cache is None else cache
        self.sleep = sleep
        self.calls = 0
        """HTTP requests made (retries included): lets callers see the cache at work."""

    @classmethod
    def from_config(
        cls,
        config: CriterionConfig | None = None,
        env: Mapping[str, str] | None = None,
        cache: MutableMapping[str, Any] | None = None,
    ) -> Judge:
        """Options first, then the environment; the model falls back to ``judge_model``."""
        env = os.environ if env is None else env
        options = dict(config.options) if config else {}
        api_key = options.get("api_key")
        if not api_key and options.get("api_key_env"):
            api_key = env.get(str(options["api_key_env"]))
        return cls(
            base_url=options.get("base_url") or env.get(ENV_BASE_URL),
            model=options.get("model") or env.get(ENV_MODEL) or (config.judge_model if config else None),
            api_key=api_key or env.get(ENV_API_KEY),
            timeout=float(options.get("timeout", 30.0)),
            max_retries=int(options.get("max_retries", 3)),
            backoff=float(options.get("backoff", 0.5)),
            json_mode=bool(options.get("json_mode", False)),
            cache=cache,
        )

    @property
    def configured(self) -> bool:
        """Whether an endpoint is set: without one the judge criteria are not evaluated, not failed."""
        return bool(self.base_url)

    def _cache_key(self, messages: list[dict[str, str]]) -> str:
        blob = json.dumps({"url": self.base_url, "model": self.model, "messages": messages}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion's text, retrying 429/5xx, connection errors and timeouts with backoff."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        last = ""
        retry_after: str | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, retry_after))
                retry_after = None
            self.calls += 1
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:200].decode("utf-8", "replace")
                last = f"HTTP {exc.code} from {url}: {detail}"
                if exc.code == 429 or exc.code >= 500:
                    retry_after = exc.headers.get("Retry-After") if exc.headers else None
                    continue
                raise JudgeError(last) from None
            except TimeoutError:
                last = f"timed out after {self.timeout}s calling {url}"
                continue
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last = f"timed out after {self.timeout}s calling {url}"
                else:
                    last = f"cannot reach {url}: {reason}"
                continue
            except (ConnectionError, OSError) as exc:
                last = f"connection to {url} failed: {exc}"
                continue
            return self._content(raw, url)
        raise JudgeError(f"{last} (gave up after {self.max_retries + 1} attempts)")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """Exponential backoff; a server's Retry-After (seconds, capped at 60) wins when longer."""
        delay = self.backoff * (2 ** (attempt - 1))
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), 60.0))
            except ValueError:
                pass
        return delay

    @staticmethod
    def _content(raw: bytes, url: str) -> str:
        try:
            payload = json.loads(raw)
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeError(f"response from {url} is not a chat completion: {raw[:200]!r}") from None
        if not isinstance(content, str):
            raise JudgeError(f"chat completion from {url} has no text content")
        return content

    def evaluate(
        self,
        question: str,
        response: str | None,
        reference: str | None = None,
        rubrics: Sequence[Rubric] = (),
        threshold: float = 0.7,
        criterion: str = "llm_judge",
        calls: Sequence[Any] = (),
    ) -> CriterionResult:
        """Score one answer. Never raises: failures come back as an error result."""
        rubrics = list(rubrics) or DEFAULT_RUBRICS
        base = {"model": self.model, "endpoint": self.base_url}
        if not self.configured:
            return CriterionResult(
                criterion=criterion,
                score=0.0,
                passed=False,
                threshold=threshold,
                skipped=True,
                details={"reason": f"no judge endpoint configured (set options.base_url or {ENV_BASE_URL})"},
            )
        # The same context the judge pool sends, the turn's tool calls included.
        messages = build_messages(question, response, reference, rubrics, calls=calls)
        key = self._cache_key(messages)
        try:
            cached = self.cache.get(key)
            if cached is None:
                scores = parse_scores(self.complete(messages), rubrics)
                self.cache[key] = scores
            else:
                scores = cached
            score = weighted_score(scores)
        except JudgeError as exc:
            return CriterionResult(
                criterion=criterion,
                score=0.0,
                passed=False,
                threshold=threshold,
                error=str(exc),
                details={**base, "reason": str(exc)},
            )
        except Exception as exc:  # the judge must never take the scorer down
            reason = f"{type(exc).__name__}: {exc}"
            return CriterionResult(
                criterion=criterion,
                score=0.0,
                passed=False,
                threshold=threshold,
                error=reason,
                details={**base, "reason": reason},
            )
        return CriterionResult(
            criterion=criterion,
            score=round(score, 4),
            passed=score >= threshold,
            threshold=threshold,
            details={**base, "rubrics": scores, "cached": cached is not None},
        )
