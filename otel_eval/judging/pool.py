"""JudgePool: judge jobs answered by an OpenAI-compatible endpoint, off the score workers.

One thread runs an asyncio loop. Jobs wait in a bounded queue (full: the job is refused and its
criteria recorded *not evaluated*, "judge queue full"); at most ``concurrency`` HTTP calls are in
flight, over keep-alive connections. Every job has a deadline (``deadline`` seconds after it was
queued): its calls, their retries (429 with ``Retry-After`` honoured, 5xx, refused, timed out)
and its wait for a free slot all fit in it, so every judged session's outcome (an answer, or the
reason there is none) is known by then, whatever the judge does. A circuit breaker stops calling
a judge that failed ``breaker_threshold`` times in a row, for ``breaker_cooldown`` seconds.
A job whose judge was unavailable is tried once more (backfill) after the judge answers again.

``on_outcome(job, results, usage, retry)`` is called on the pool's thread once per job: ``results``
the job's criteria as CriterionResults, ``usage`` criterion → [calls, tokens] spent, ``retry``
whether the job should be kept for one backfill.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from ..metrics.judge import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, JudgeError, parse_scores, weighted_score
from ..models.evalset import Rubric
from ..models.results import CriterionResult
from . import jobs as J
from .adk import protocol as adk
from .breaker import CLOSED, OPEN, STATE_NUMBERS, Breaker
from .budget import Budget, Limits
from .client import Client, HttpError

log = logging.getLogger("otel_eval.judge")

LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
DEFAULT_CONCURRENCY = 16
BACKFILL_TICK = 1.0
MIN_ATTEMPT = 1.0
"""Seconds a call needs before its job's deadline to be worth making: a job that waited for a
free slot until then gives up without calling (not the judge's failure: the breaker is not told)."""
DEADLINE_MARGIN = 0.25
"""Seconds before a job's deadline its last attempt times out (see :meth:`JudgePool._with_retries`)."""
"""Seconds between looks at the jobs waiting for backfill (:meth:`JudgePool._tick`)."""
DEFAULT_QUEUE = 10_000
DEFAULT_DEADLINE = 45.0
"""Seconds from queueing to the judge's outcome; with scoring's own latency, well within a minute
of the session's end."""

ENV_JUDGE_MODELS = "OTEL_EVAL_JUDGE_MODELS"
"""``gemini-2.5-flash=gpt-4o-mini,gemini-2.5-pro=gpt-4o``: ADK judge model names → endpoint models."""

Outcome = Callable[[J.JudgeJob, list[CriterionResult], dict[str, list[int]], bool], None]


class _Fault(Exception):
    """The judge is unavailable for this call (after retries): ``kind`` is the outcome counted."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


class _Garbage(Exception):
    """The judge answered, but not with the JSON asked for."""


class JudgePool:
    """Judges jobs on a thread of its own, so scoring never waits for a judge: bounded queue, bounded
    concurrency, a deadline per job, spend caps and a circuit breaker (see the module docstring)."""

    def __init__(
        self,
        on_outcome: Outcome,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_queue: int = DEFAULT_QUEUE,
        deadline: float = DEFAULT_DEADLINE,
        breaker_threshold: int = 5,
        breaker_cooldown: float = 30.0,
        secrets: Callable[[str], str | None] | None = None,
        limits: Callable[[str], Limits] | None = None,
        env: Mapping[str, str] | None = None,
        judge_models: Mapping[str, str] | None = None,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.on_outcome = on_outcome
        self.concurrency = max(1, int(concurrency))
        self.max_queue = max(1, int(max_queue))
        self.deadline = float(deadline)
        self.breaker = Breaker(threshold=breaker_threshold, cooldown=breaker_cooldown)
        self._secrets = secrets or (lambda name: None)
        self._limits = limits
        """Criterion name → its spend caps, from the config of this run (else a job's own options)."""
        self._env = os.environ if env is None else env
        self._judge_models = {**adk.parse_model_map(self._env.get(ENV_JUDGE_MODELS, "")), **(judge_models or {})}
        """google-adk judge model names (``gemini-2.5-flash``) → the endpoint's models: the
        ``OTEL_EVAL_JUDGE_MODELS`` variable, then the run's ``judge_models`` setting."""
        self._wall = wall
        self._clock = clock
        self._lock = threading.Lock()
        self._jobs = 0
        """Jobs queued or running."""
        self._in_flight = 0
        self._budgets: dict[str, Budget] = {}
        self._backfill: deque[J.JudgeJob] = deque()
        self._probe: asyncio.Task | None = None
        self._counts: Counter = Counter()
        self._latency = [0] * (len(LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0
        self._tokens = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task] = set()
        self._ready = threading.Event()
        self._closing = False

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> JudgePool:
        """Starts the pool's thread and its event loop (waiting up to 10 s for it); returns the pool."""
        self._thread = threading.Thread(target=self._run_loop, name="otel-eval-judge", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def _run_loop(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._client = Client(max_idle=self.concurrency * 2)
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._ready.set()
        loop.call_later(BACKFILL_TICK, self._tick)
        try:
            loop.run_forever()
        finally:
            self._client.close()
            loop.close()

    def close(self, timeout: float | None = None) -> None:
        """Stop: jobs not finished are cancelled, with no outcome; their owner keeps them (the
        engine's stay queued in the database for the next start)."""
        self._closing = True
        loop = self._loop
        if loop is None:
            return

        async def stop() -> None:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            loop.stop()

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop)
        except RuntimeError:  # the loop is gone already
            pass
        if self._thread is not None:
            self._thread.join(timeout)

    # --- submitting -----------------------------------------------------------------------------

    def charge(self, criterion: str, at: float, calls: int, tokens: int) -> None:
        """A judgment made before this start (its spend counts against the caps)."""
        with self._lock:
            self._budget(criterion).charge(at, calls, tokens)

    @property
    def closing(self) -> bool:
        """Whether the pool is shutting down: new jobs stay queued in the database for the next start."""
        return self._closing

    def submit(self, job: J.JudgeJob) -> bool:
        """Queue a job; False when the queue is full (the caller records "judge queue full")."""
        with self._lock:
            if self._closing:
                return False
            if self._jobs >= self.max_queue:
                self._counts["queue_full"] += 1
                return False
            self._jobs += 1
        if not job.created:
            job.created = self._wall()
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._start_job, job)
        return True

    def keep_for_backfill(self, job: J.JudgeJob) -> None:
        """A job whose judge was unavailable (now, or before a restart): tried once more when the
        judge answers again. At most ``max_queue`` wait in memory; the others wait in the database
        (``judge_jobs`` status retry) for the next start."""
        with self._lock:
            if len(self._backfill) < self.max_queue:
                self._backfill.append(job)

    def _start_job(self, job: J.JudgeJob) -> None:
        task = asyncio.get_running_loop().create_task(self._job(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _job(self, job: J.JudgeJob) -> None:
        remaining = job.created + self.deadline - self._wall()
        usage: dict[str, list[int]] = {}
        try:
            try:
                results, retry = await asyncio.wait_for(self._judge_job(job, usage), max(0.0, remaining))
            except asyncio.TimeoutError:
                reason = f"the judge gave no answer within {self.deadline:g} s"
                self._count("deadline")
                results = [J.not_evaluated(c, J.UNAVAILABLE, reason, error=True) for c in job.criteria]
                retry = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug here must not leave the session pending forever
                log.exception("judging session %s failed", job.session_id)
                reason = f"judging failed: {type(exc).__name__}: {exc}"
                results = [J.not_evaluated(c, J.UNAVAILABLE, reason, error=True) for c in job.criteria]
                retry = False
            try:
                self.on_outcome(job, results, usage, retry and not job.backfill)
            except Exception:
                log.exception("recording the judge outcome of session %s failed", job.session_id)
        finally:
            with self._lock:
                self._jobs -= 1

    async def _judge_job(self, job: J.JudgeJob, usage: dict[str, list[int]]) -> tuple[list[CriterionResult], bool]:
        results, retry = [], False
        for criterion in job.criteria:
            result, unavailable = await self._judge_criterion(job, criterion, usage)
            results.append(result)
            retry = retry or unavailable
        return results, retry

    async def _judge_criterion(
        self, job: J.JudgeJob, criterion: dict[str, Any], usage: dict[str, list[int]]
    ) -> tuple[CriterionResult, bool]:
        options = criterion.get("options") or {}
        name = criterion["criterion"]
        base_url = (options.get("base_url") or self._env.get(ENV_BASE_URL) or "").rstrip("/")
        if not base_url:
            return J.not_evaluated(criterion, J.UNAVAILABLE, "no judge endpoint configured"), False
        protocol = criterion.get("protocol")
        if protocol:
            return await self._judge_protocol(job, criterion, usage, base_url)
        model = options.get("model") or self._env.get(ENV_MODEL) or criterion.get("judge_model") or "gpt-4o-mini"
        rubrics = [Rubric(**r) for r in criterion["rubrics"]]
        samples = int(options.get("num_samples", 1) or 1)
        temperature = 0 if samples == 1 else options.get("temperature", 1.0)
        deadline = job.created + self.deadline

        async def sample(messages: list[dict[str, str]]) -> J.Sample:
            content = await self._call(
                name, base_url, model, options, messages, usage, deadline, {"temperature": temperature}
            )
            scores = parse_scores(content, rubrics)
            return J.Sample(weighted_score(scores), scores)

        # Every turn and sample at once (the semaphore bounds the calls in flight), so a long
        # conversation waits for one answer's time, not one per turn.
        turns = criterion["turns"]
        outcomes = await asyncio.gather(
            *(sample(t["messages"]) for t in turns for _ in range(samples)), return_exceptions=True
        )
        faults = [o for o in outcomes if isinstance(o, _Fault)]
        if faults:
            state = J.BUDGET if faults[0].kind == "budget" else J.UNAVAILABLE
            return J.not_evaluated(criterion, state, str(faults[0]), error=state != J.BUDGET), state == J.UNAVAILABLE
        invalid = [o for o in outcomes if isinstance(o, JudgeError)]
        if invalid:
            self._count("garbage")
            return J.not_evaluated(criterion, J.INVALID, str(invalid[0]), error=True), False
        answered: list[J.Sample] = []
        for o in outcomes:
            if isinstance(o, BaseException):
                raise o
            answered.append(o)
        answers = [
            J.TurnAnswer(t["turn"], t.get("invocation"), answered[i * samples : (i + 1) * samples])
            for i, t in enumerate(turns)
        ]
        return J.aggregate(criterion, answers, model), False

    async def _judge_protocol(
        self, job: J.JudgeJob, criterion: dict[str, Any], usage: dict[str, list[int]], base_url: str
    ) -> tuple[CriterionResult, bool]:
        """A google-adk judge metric: its calls (one per sample, or a segmenter then a validator
        call per response for hallucinations_v1) each through the budget, the breaker and the
        job's deadline, like any judge call; its parsing and aggregation are ADK's
        (:mod:`otel_eval.judging.adk.protocol`)."""
        options = criterion.get("options") or {}
        name = criterion["criterion"]
        if criterion["protocol"] not in adk.METRICS:
            return J.not_evaluated(
                criterion, J.INVALID, f"unknown judge protocol {criterion['protocol']!r}", error=True
            ), False
        model = adk.endpoint_model(
            criterion.get("judge_model") or adk.DEFAULT_JUDGE_MODEL,
            options,
            self._judge_models,
            options.get("model") or self._env.get(ENV_MODEL),
        )
        params = adk.generation(options.get("judge_model_config"))
        deadline = job.created + self.deadline

        async def ask(messages: list[dict[str, str]]) -> str:
            return await self._call(name, base_url, model, options, messages, usage, deadline, params)

        try:
            evaluation, unreadable = await adk.run(criterion, ask)
        except _Fault as fault:
            state = J.BUDGET if fault.kind == "budget" else J.UNAVAILABLE
            return J.not_evaluated(criterion, state, str(fault), error=state != J.BUDGET), state == J.UNAVAILABLE
        result = adk.result(criterion, evaluation, unreadable, model)
        if result.skipped:
            self._count("garbage")
        return result, False

    # --- one call ---------------------------------------------------------------------------------

    async def _call(
        self,
        name: str,
        base_url: str,
        model: str,
        options: dict[str, Any],
        messages: list[dict[str, str]],
        usage: dict[str, list[int]],
        deadline: float,
        params: dict[str, Any] | None = None,
    ) -> str:
        """One judge call (``params``: sampling parameters of the request body, e.g. temperature)."""
        with self._lock:
            budget = self._budget(name, options)
            reason = budget.try_reserve(self._wall())
        if reason is not None:
            self._count("budget")
            raise _Fault("budget", reason)
        called, tokens = False, 0
        assert self._semaphore is not None
        try:
            async with self._semaphore:
                if deadline - self._wall() < MIN_ATTEMPT + DEADLINE_MARGIN:
                    self._count("no_slot")
                    raise _Fault(
                        "no_slot", f"no free judge slot before the judge deadline ({self.concurrency} calls in flight)"
                    )
                allowed, self.breaker = self.breaker.allows(self._clock())
                if not allowed:
                    self._count("circuit_open")
                    raise _Fault("circuit_open", self.breaker.reason())
                called = True
                with self._lock:
                    self._in_flight += 1
                try:
                    content, tokens = await self._with_retries(
                        name, base_url, model, options, messages, params or {}, deadline
                    )
                finally:
                    with self._lock:
                        self._in_flight -= 1
        finally:
            with self._lock:
                budget.settle(self._wall(), tokens, called=called)
            if called:  # a call cancelled by the deadline was made all the same: it is charged
                spent = usage.setdefault(name, [0, 0])
                spent[0] += 1
                spent[1] += tokens
        return content

    async def _with_retries(
        self,
        name: str,
        base_url: str,
        model: str,
        options: dict[str, Any],
        messages: list[dict[str, str]],
        params: dict[str, Any],
        deadline: float,
    ) -> tuple[str, int]:
        """One call with its retries, all before ``deadline`` (``time.time()`` clock): each
        attempt's timeout is cut to what is left, and a wait (backoff, ``Retry-After``) that would
        end past it is not waited: the call gives up with the last reason at once."""
        url = f"{base_url}/chat/completions"
        body: dict[str, Any] = {"model": model, "messages": messages, **params}
        if options.get("json_mode"):
            body["response_format"] = {"type": "json_object"}
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        api_key = self._api_key(name, options)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        timeout = float(options.get("timeout", 30.0))
        backoff = float(options.get("backoff", 0.5))
        max_retries = int(options.get("max_retries", 3))
        last = ""
        for attempt in range(max_retries + 1):
            started = self._clock()
            # The attempt ends a moment before the job's deadline, so a judge that does not answer
            # is seen as one (a timeout, counted by the breaker), not only as a job out of time.
            attempt_timeout = round(max(0.05, min(timeout, deadline - self._wall() - DEADLINE_MARGIN)), 3)
            try:
                assert self._client is not None
                response = await asyncio.wait_for(self._client.post(url, data, headers), attempt_timeout)
            except asyncio.TimeoutError:
                kind, last, retry_after = "timeout", f"timed out after {attempt_timeout:g}s calling {url}", None
            except HttpError as exc:
                kind, last, retry_after = "refused", f"{exc} ({url})", None
            else:
                if response.status == 200:
                    try:
                        content, tokens = _content(response.body, url)
                    except _Garbage as exc:
                        self._failed("garbage")
                        raise _Fault("garbage", str(exc)) from None
                    self._observe(self._clock() - started, tokens)
                    self._succeeded()
                    return content, tokens
                detail = response.body[:200].decode("utf-8", "replace")
                last = f"HTTP {response.status} from {url}: {detail}"
                if response.status != 429 and response.status < 500:
                    self._failed(f"http_{response.status // 100}xx")
                    raise _Fault("http_4xx", last)
                kind = "http_429" if response.status == 429 else "http_5xx"
                retry_after = response.headers.get("retry-after")
            self._failed(kind)
            if self.breaker.state == OPEN or attempt == max_retries:
                break
            delay = backoff * (2**attempt)
            if retry_after:
                try:
                    delay = max(delay, min(float(retry_after), 60.0))
                except ValueError:
                    pass
            if self._wall() + delay >= deadline:
                last += f"; the next try ({delay:g} s later) would be past the judge deadline"
                break
            await asyncio.sleep(delay)
        raise _Fault("unavailable", f"{last} (gave up after {attempt + 1} attempt(s))")

    def _api_key(self, name: str, options: dict[str, Any]) -> str | None:
        key = self._secrets(name)
        if not key and options.get("api_key_env"):
            key = self._env.get(str(options["api_key_env"]))
        return key or self._env.get(ENV_API_KEY)

    # --- breaker, budget and counters ---------------------------------------------------------------

    def _failed(self, kind: str) -> None:
        self._count(kind)
        was = self.breaker.state
        self.breaker = self.breaker.failed(self._clock())
        if self.breaker.state == OPEN and was != OPEN:
            self._count("circuit_opened")
            log.warning("%s", self.breaker.reason())

    def _succeeded(self) -> None:
        if self.breaker.state != CLOSED:
            log.info("the judge answers again; judge circuit closed")
        self.breaker = self.breaker.succeeded()
        self._maybe_backfill()

    def _tick(self) -> None:
        """Every second: with jobs waiting for backfill and no call proving the judge back, one of
        them goes as the probe once the breaker allows a call (closed, or its cooldown over)."""
        if self._closing or self._loop is None:
            return
        self._loop.call_later(BACKFILL_TICK, self._tick)
        if not self._backfill or self._probe is not None:
            return
        if self.breaker.state != CLOSED and self._clock() < self.breaker.until:
            return
        with self._lock:
            if not self._backfill or self._jobs >= self.max_queue:
                return
            job = self._backfill.popleft()
            self._jobs += 1
        self._probe = self._start_backfill(job)
        self._probe.add_done_callback(lambda _: setattr(self, "_probe", None))

    def _start_backfill(self, job: J.JudgeJob) -> asyncio.Task:
        job.backfill = True
        job.created = self._wall()
        self._count("backfill")
        task = asyncio.get_running_loop().create_task(self._job(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _maybe_backfill(self) -> None:
        """The judge answered: the jobs waiting for backfill go now (as the queue allows)."""
        while True:
            with self._lock:
                if not self._backfill or self._jobs >= self.max_queue // 2:
                    return
                job = self._backfill.popleft()
                self._jobs += 1
            self._start_backfill(job)

    def _budget(self, name: str, options: dict[str, Any] | None = None) -> Budget:
        budget = self._budgets.get(name)
        if budget is None:
            limits = self._limits(name) if self._limits is not None else Limits.from_options(options or {})
            budget = self._budgets[name] = Budget(limits)
        return budget

    def _count(self, kind: str) -> None:
        with self._lock:
            self._counts[kind] += 1

    def _observe(self, seconds: float, tokens: int) -> None:
        with self._lock:
            self._counts["ok"] += 1
            self._latency[bisect_left(LATENCY_BUCKETS, seconds)] += 1
            self._latency_sum += seconds
            self._tokens += tokens

    def stats(self) -> JudgePoolStats:
        """The pool's counters (calls by outcome, latency histogram, tokens, queue, circuit state,
        budget left), for the engine's stats and /metrics."""
        now = self._wall()
        with self._lock:
            running = self._jobs
            cumulative, total = [], 0
            for bound, n in zip(LATENCY_BUCKETS + (float("inf"),), self._latency):
                total += n
                cumulative.append((bound, total))
            return {
                "calls": dict(self._counts),
                "latency_buckets": cumulative,
                "latency_sum": self._latency_sum,
                "latency_count": total,
                "tokens": self._tokens,
                "in_flight": self._in_flight,
                "jobs": running,
                "queue_capacity": self.max_queue,
                "concurrency": self.concurrency,
                "backfill_waiting": len(self._backfill),
                "connections_opened": self._client.connections_opened if self._client is not None else 0,
                "circuit_state": self.breaker.state,
                "circuit_state_number": STATE_NUMBERS[self.breaker.state],
                "budget_left": {name: b.left(now) for name, b in self._budgets.items() if not b.limits.unlimited},
            }


class JudgePoolStats(TypedDict, total=False):
    """The judge pool's figures (:meth:`JudgePool.stats`), as ``Engine.stats()["judge"]`` and
    /metrics report them; the engine adds ``pending_jobs``. Empty but for that one when no
    criterion uses the judge."""

    calls: dict[str, int]
    """Calls and judgments by outcome (``ok``, ``timeout``, ``budget``, ``circuit_open``, ...)
    and the pool's events (``circuit_opened``, ``backfill``)."""
    latency_buckets: list[tuple[float, int]]
    """(upper bound in seconds, answered calls within it), cumulative; the last bound is inf."""
    latency_sum: float
    latency_count: int
    tokens: int
    in_flight: int
    jobs: int
    """Judge jobs queued or running."""
    queue_capacity: int
    concurrency: int
    backfill_waiting: int
    connections_opened: int
    circuit_state: str
    circuit_state_number: int
    budget_left: dict[str, dict[str, int]]
    """Criterion → what each of its configured caps has left."""
    pending_jobs: int
    """Evaluations whose judge outcome is not committed yet (added by the engine)."""


def _content(raw: bytes, url: str) -> tuple[str, int]:
    try:
        payload = json.loads(raw)
        content = payload["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise _Garbage(f"response from {url} is not a chat completion: {raw[:200]!r}") from None
    if not isinstance(content, str):
        raise _Garbage(f"chat completion from {url} has no text content")
    usage = payload.get("usage") if isinstance(payload, dict) else None
    tokens = 0
    if isinstance(usage, dict):
        total = usage.get("total_tokens")
        if not isinstance(total, int):
            total = sum(
                v for k, v in usage.items() if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)
            )
        tokens = int(total)
    return content, tokens
