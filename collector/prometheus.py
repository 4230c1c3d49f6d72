"""The collector's own counters and the Prometheus text rendering of them plus the engine's stats.

The receivers run on several threads (gRPC's pool, uvicorn's loop, the executor that waits for
commits), so every update takes one lock; the numbers are few and the lock is held for nanoseconds.

Sessions matched to a golden case are counted by verdict: ``*_evaluations_total`` counts those
with a verdict of passed or failed (the pass-rate denominator), ``*_not_evaluated_total`` those
where every criterion was skipped (nothing checked: neither passed nor failed).

Per golden case and per agent version results (:class:`EvaluationCounters`) are counted as the
engine reports each evaluation it stored (``EvaluationStored``, which carries the agent version),
so a scrape never reads the database. Label cardinality is bounded: the first
``max_label_values`` distinct cases (and versions) get their own label value, later ones are
summed under ``"other"`` and counted in ``otel_eval_label_values_capped_total``.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Mapping

from otel_eval.models.results import NOT_EVALUATED

#: Ingest latency buckets (seconds): a commit normally takes milliseconds; the tail shows a busy disk.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: Score histogram buckets: scores are 0..1, a tenth is as fine as a dashboard can show.
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: Distinct case (and version) label values before the rest are aggregated under ``OTHER``.
DEFAULT_MAX_LABEL_VALUES = 200
OTHER = "other"
UNKNOWN_VERSION = "unknown"

# Engine stats → (metric name, type, help).  Names follow Prometheus conventions (_total on counters).
_ENGINE_METRICS = (
    ("spans_received", "otel_eval_spans_received_total", "counter", "Spans handed to the engine."),
    ("spans_stored", "otel_eval_spans_stored_total", "counter", "Spans committed to the database."),
    (
        "spans_duplicate",
        "otel_eval_spans_duplicate_total",
        "counter",
        "Spans received again (a retried export) and not stored twice.",
    ),
    ("spans_dropped", "otel_eval_spans_dropped_total", "counter", "Spans the engine dropped."),
    ("queue_depth", "otel_eval_queue_depth", "gauge", "Spans waiting to be committed."),
    ("sessions_open", "otel_eval_sessions_open", "gauge", "Sessions receiving spans, not yet ended."),
    ("golden_cases", "otel_eval_golden_cases", "gauge", "Golden cases loaded (see otel_eval_golden_cases_exercised)."),
    ("forward_spans", "otel_eval_forward_spans_total", "counter", "Spans forwarded to --forward-spans."),
    (
        "forward_spans_dropped",
        "otel_eval_forward_spans_dropped_total",
        "counter",
        "Spans not forwarded: the forwarding queue was full (the other endpoint is slower than the agents).",
    ),
    (
        "forward_spans_failed",
        "otel_eval_forward_spans_failed_total",
        "counter",
        "Spans the other endpoint refused or could not be reached for, after retries.",
    ),
    (
        "forward_sessions",
        "otel_eval_forward_sessions_total",
        "counter",
        "Sessions whose spans were forwarded after scoring because their outcome is in --forward-when.",
    ),
    (
        "forward_sessions_filtered",
        "otel_eval_forward_sessions_filtered_total",
        "counter",
        "Sessions scored whose outcome is not in --forward-when: their spans were not forwarded.",
    ),
    (
        "forward_sessions_dropped",
        "otel_eval_forward_sessions_dropped_total",
        "counter",
        "Sessions to forward that could not be (queue full, unreadable spans).",
    ),
    (
        "forward_evaluation_records",
        "otel_eval_forward_evaluation_records_total",
        "counter",
        "gen_ai.evaluation.result log records sent to --forward-results.",
    ),
    ("sessions_scored", "otel_eval_sessions_scored_total", "counter", "Sessions ended and scored."),
    (
        "sessions_scored_idle",
        "otel_eval_sessions_scored_idle_total",
        "counter",
        "Sessions the collector's own process scored beside its score workers, while sessions waited for "
        "them and no spans arrived (a backlog draining on every core).",
    ),
    (
        "evaluations_total",
        "otel_eval_evaluations_total",
        "counter",
        "Scorings of sessions that matched a golden case and got a verdict of passed or failed, since the "
        "collector started (a session re-scored after late spans counts again); the pass-rate denominator. "
        "Unmatched and not_evaluated sessions are not counted.",
    ),
    (
        "evaluations_passed",
        "otel_eval_evaluations_passed_total",
        "counter",
        "Of otel_eval_evaluations_total, those with the verdict passed.",
    ),
    (
        "evaluations_not_evaluated",
        "otel_eval_evaluations_not_evaluated_total",
        "counter",
        "Evaluations of matched sessions where nothing was checked (verdict not_evaluated; not in the pass rate).",
    ),
    (
        "evaluations_judge_pending",
        "otel_eval_evaluations_judge_pending_total",
        "counter",
        "Evaluations stored with a judge criterion pending (their deterministic verdict first); each is completed "
        "by a later revision and counted in otel_eval_evaluations_total once, then.",
    ),
    (
        "evaluations_judge_completed",
        "otel_eval_evaluations_judge_completed_total",
        "counter",
        "Judge outcomes recorded (an answer, or why there is none) for evaluations stored pending.",
    ),
)


class Histogram:
    """A Prometheus histogram of observed values in fixed buckets (not thread-safe: its owner locks)."""

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)  # last slot: above the largest bucket
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        """Count ``value`` in the smallest bucket that holds it and in the sum."""
        self.counts[bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as Prometheus wants them: each bucket counts everything at or below it."""
        out = []
        running = 0
        for bound, n in zip(self.buckets, self.counts):
            running += n
            out.append((_number(bound), running))
        out.append(("+Inf", self.count))
        return out


class LabelCap:
    """Keeps the first ``limit`` distinct values of one label; every later value becomes ``other``."""

    def __init__(self, limit: int = DEFAULT_MAX_LABEL_VALUES):
        self.limit = limit
        self.kept: set[str] = set()
        self.capped = 0

    def __call__(self, value: str) -> str:
        if value in self.kept:
            return value
        if len(self.kept) < self.limit:
            self.kept.add(value)
            return value
        self.capped += 1
        return OTHER


class _Tally:
    __slots__ = ("evaluations", "passed", "score_sum", "unmatched", "not_evaluated")

    def __init__(self) -> None:
        self.evaluations = 0
        """Matched, with a verdict of passed or failed."""
        self.passed = 0
        self.score_sum = 0.0
        self.unmatched = 0
        self.not_evaluated = 0


class EvaluationCounters:
    """Evaluation results by golden case and by agent version, since the collector started.

    Counters count evaluations stored (a re-scored session counts again); the gauges are the
    ratios of those counters. For a pass rate over a time window use the counters in PromQL:
    ``increase(otel_eval_case_passed_total[1h]) / increase(otel_eval_case_evaluations_total[1h])``.
    """

    def __init__(self, max_label_values: int = DEFAULT_MAX_LABEL_VALUES):
        self._lock = threading.Lock()
        self.case_label = LabelCap(max_label_values)
        self.version_label = LabelCap(max_label_values)
        self.cases: dict[str, _Tally] = {}
        self.versions: dict[str, _Tally] = {}
        self.scores: dict[str, Histogram] = {}
        self.exercised: set[str] = set()
        """Golden cases matched since the start (bounded by the golden sets, not by the traffic)."""
        self.observed = 0
        self.unmatched = 0

    def observe(
        self,
        case_id: str | None,
        agent_version: str | None,
        passed: bool,
        score: float,
        verdict: str | None = None,
    ) -> None:
        """One stored evaluation; ``case_id`` None = the session matched no golden case.
        ``verdict`` not_evaluated is counted apart (no pass, no fail, no score)."""
        with self._lock:
            version = self.version_label(agent_version or UNKNOWN_VERSION)
            by_version = self.versions.setdefault(version, _Tally())
            self.observed += 1
            if not case_id:
                by_version.unmatched += 1
                self.unmatched += 1
                return
            self.exercised.add(case_id)
            by_case = self.cases.setdefault(self.case_label(case_id), _Tally())
            if verdict == NOT_EVALUATED:
                by_case.not_evaluated += 1
                by_version.not_evaluated += 1
                return
            for tally in (by_case, by_version):
                tally.evaluations += 1
                tally.passed += int(passed)
                tally.score_sum += score
            self.scores.setdefault(version, Histogram(SCORE_BUCKETS)).observe(score)

    def render_lines(self) -> list[str]:
        """The evaluation families in the text exposition format, read under the lock."""
        with self._lock:
            return _render_evaluations(self)


class CollectorCounters:
    """Counts what only the receivers see: requests by outcome, spans rejected for bad ids, latency.
    Also holds :class:`EvaluationCounters` (per case and version), rendered with the rest."""

    def __init__(self, max_label_values: int = DEFAULT_MAX_LABEL_VALUES) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = {}
        self.spans_rejected = 0
        self.log_records_received = 0
        self.log_records_ignored = 0
        self.ingest_latency = Histogram()
        self.evaluations = EvaluationCounters(max_label_values)

    def request(self, protocol: str, signal: str, outcome: str) -> None:
        """One export request finished; ``outcome`` is a short code such as ``ok``, ``invalid``,
        ``unauthenticated``, ``too_large``, ``queue_full`` or ``unsupported_media_type``."""
        key = (protocol, signal, outcome)
        with self._lock:
            self.requests[key] = self.requests.get(key, 0) + 1

    def rejected(self, spans: int) -> None:
        """Count spans left out for invalid ids (the exporter is told so in a partial success)."""
        with self._lock:
            self.spans_rejected += spans

    def logs(self, kept: int, ignored: int) -> None:
        """Count log records received: those stored, and those left out (no span ids, or invalid ones)."""
        with self._lock:
            self.log_records_received += kept
            self.log_records_ignored += ignored

    def ingest_seconds(self, seconds: float) -> None:
        """Observe how long one export request took to decode and commit."""
        with self._lock:
            self.ingest_latency.observe(seconds)

    def render(self, engine_stats: Mapping[str, float] | None = None) -> str:
        """The whole ``/metrics`` page: these counters, the evaluations, and the engine's ``engine_stats``."""
        with self._lock:
            return render_prometheus(self, engine_stats or {})


def render_prometheus(metrics: CollectorCounters, engine_stats: Mapping[str, float]) -> str:
    """Prometheus text exposition format 0.0.4."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    for key, name, kind, help_text in _ENGINE_METRICS:
        family(name, kind, help_text)
        lines.append(f"{name} {_number(engine_stats.get(key, 0))}")

    total = engine_stats.get("evaluations_total", 0) or 0
    passed = engine_stats.get("evaluations_passed", 0) or 0
    family(
        "otel_eval_pass_rate",
        "gauge",
        "Share of evaluations that passed, not_evaluated ones left out (NaN before the first one).",
    )
    lines.append(f"otel_eval_pass_rate {_number(passed / total if total else math.nan)}")

    family(
        "otel_eval_spans_rejected_total",
        "counter",
        "Spans refused through OTLP partial_success (invalid trace or span id).",
    )
    lines.append(f"otel_eval_spans_rejected_total {metrics.spans_rejected}")

    family("otel_eval_log_records_received_total", "counter", "Log records tied to a span, handed to the engine.")
    lines.append(f"otel_eval_log_records_received_total {metrics.log_records_received}")
    family(
        "otel_eval_log_records_ignored_total",
        "counter",
        "Log records without a trace and span id (they cannot be attached to a span).",
    )
    lines.append(f"otel_eval_log_records_ignored_total {metrics.log_records_ignored}")

    family("otel_eval_export_requests_total", "counter", "OTLP export requests by protocol, signal and outcome.")
    for (protocol, signal, outcome), count in sorted(metrics.requests.items()):
        lines.append(
            f'otel_eval_export_requests_total{{protocol="{protocol}",signal="{signal}",outcome="{outcome}"}} {count}'
        )

    hist = metrics.ingest_latency
    family(
        "otel_eval_ingest_duration_seconds",
        "histogram",
        "Time from a decoded request to its commit (what an exporter waits for).",
    )
    for le, count in hist.cumulative():
        lines.append(f'otel_eval_ingest_duration_seconds_bucket{{le="{le}"}} {count}')
    lines.append(f"otel_eval_ingest_duration_seconds_sum {_number(hist.sum)}")
    lines.append(f"otel_eval_ingest_duration_seconds_count {hist.count}")

    if "ingest_seconds_count" in engine_stats:
        family("otel_eval_engine_ingest_seconds", "summary", "Engine-side commit time of span batches.")
        lines.append(f"otel_eval_engine_ingest_seconds_sum {_number(engine_stats.get('ingest_seconds_sum', 0))}")
        lines.append(f"otel_eval_engine_ingest_seconds_count {_number(engine_stats['ingest_seconds_count'])}")
    evaluations = getattr(metrics, "evaluations", None)
    if evaluations is not None:
        lines.extend(evaluations.render_lines())
    judge = engine_stats.get("judge")
    if isinstance(judge, Mapping):
        lines.extend(_render_judge(judge))
    return "\n".join(lines) + "\n"


#: Judge pool counters that are not call outcomes, with their own metric.
_JUDGE_EVENTS = {"circuit_opened": "otel_eval_judge_circuit_opened_total", "backfill": "otel_eval_judge_backfill_total"}


def _render_judge(judge: Mapping) -> list[str]:
    """The judge pool (``Engine.stats()['judge']``): calls by outcome, latency, tokens, in flight,
    queue, budget left, circuit state."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    counts = {"ok": 0, **dict(judge.get("calls") or {})}  # ok always has a sample, for dashboards
    family(
        "otel_eval_judge_calls_total",
        "counter",
        "Judge calls by outcome: ok, timeout, refused, http_5xx, http_429, http_4xx, garbage (HTTP attempts); "
        "budget, circuit_open, queue_full, no_slot, deadline (judgments not made or cut short).",
    )
    for outcome in sorted(k for k in counts if k not in _JUDGE_EVENTS):
        lines.append(f'otel_eval_judge_calls_total{{outcome={_label(outcome)}}} {counts[outcome]}')
    family("otel_eval_judge_circuit_opened_total", "counter", "Times the judge's circuit breaker opened.")
    lines.append(f"otel_eval_judge_circuit_opened_total {counts.get('circuit_opened', 0)}")
    family(
        "otel_eval_judge_backfill_total",
        "counter",
        "Judge jobs tried again after the judge was unavailable for them (once each).",
    )
    lines.append(f"otel_eval_judge_backfill_total {counts.get('backfill', 0)}")
    family("otel_eval_judge_call_duration_seconds", "histogram", "Time of judge calls that answered.")
    for bound, count in judge.get("latency_buckets") or []:
        lines.append(f'otel_eval_judge_call_duration_seconds_bucket{{le="{_number(bound)}"}} {count}')
    lines.append(f"otel_eval_judge_call_duration_seconds_sum {_number(judge.get('latency_sum', 0))}")
    lines.append(f"otel_eval_judge_call_duration_seconds_count {judge.get('latency_count', 0)}")
    family("otel_eval_judge_tokens_total", "counter", "Tokens the judge reported (usage.total_tokens).")
    lines.append(f"otel_eval_judge_tokens_total {judge.get('tokens', 0)}")
    family("otel_eval_judge_calls_in_flight", "gauge", "Judge calls waiting for an answer now.")
    lines.append(f"otel_eval_judge_calls_in_flight {judge.get('in_flight', 0)}")
    family("otel_eval_judge_queue", "gauge", "Judge jobs queued or running (at most otel_eval_judge_queue_capacity).")
    lines.append(f"otel_eval_judge_queue {judge.get('jobs', 0)}")
    family("otel_eval_judge_queue_capacity", "gauge", "Judge jobs that may wait at once; past it: judge queue full.")
    lines.append(f"otel_eval_judge_queue_capacity {judge.get('queue_capacity', 0)}")
    family(
        "otel_eval_judge_pending_evaluations",
        "gauge",
        "Evaluations stored with a judge criterion pending, whose outcome is not recorded yet.",
    )
    lines.append(f"otel_eval_judge_pending_evaluations {judge.get('pending_jobs', 0)}")
    family(
        "otel_eval_judge_backfill_waiting",
        "gauge",
        "Judge jobs skipped for an outage, waiting for the judge to answer again.",
    )
    lines.append(f"otel_eval_judge_backfill_waiting {judge.get('backfill_waiting', 0)}")
    family("otel_eval_judge_circuit_state", "gauge", "The judge's circuit breaker: 0 closed, 1 half open, 2 open.")
    lines.append(f"otel_eval_judge_circuit_state {judge.get('circuit_state_number', 0)}")
    budget = judge.get("budget_left") or {}
    if budget:
        family(
            "otel_eval_judge_budget_left",
            "gauge",
            "What is left of each configured judge spend cap (calls or tokens, per hour or per day).",
        )
        for criterion in sorted(budget):
            for window, left in sorted(budget[criterion].items()):
                lines.append(
                    f"otel_eval_judge_budget_left{{criterion={_label(criterion)},cap={_label(window)}}} {left}"
                )
    return lines


def _render_evaluations(m: EvaluationCounters) -> list[str]:
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    for label, tallies, what in (("case", m.cases, "golden case"), ("version", m.versions, "agent version")):
        ordered = sorted(tallies.items())
        matched = [(k, t) for k, t in ordered if t.evaluations or t.not_evaluated]
        evaluated = [(k, t) for k, t in matched if t.evaluations]
        family(
            f"otel_eval_{label}_evaluations_total",
            "counter",
            f"Scorings of sessions matched to a golden case with a verdict of passed or failed (re-scored "
            f"sessions count again; not_evaluated ones do not), by {what}.",
        )
        for key, t in matched:
            lines.append(f"otel_eval_{label}_evaluations_total{{{label}={_label(key)}}} {t.evaluations}")
        family(f"otel_eval_{label}_passed_total", "counter", f"Evaluations that passed, by {what}.")
        for key, t in matched:
            lines.append(f"otel_eval_{label}_passed_total{{{label}={_label(key)}}} {t.passed}")
        family(
            f"otel_eval_{label}_not_evaluated_total",
            "counter",
            f"Matched sessions where every criterion was skipped (verdict not_evaluated), by {what}.",
        )
        for key, t in matched:
            lines.append(f"otel_eval_{label}_not_evaluated_total{{{label}={_label(key)}}} {t.not_evaluated}")
        family(
            f"otel_eval_{label}_pass_rate",
            "gauge",
            f"Share of evaluations that passed since the collector started (not_evaluated ones left out), by {what}.",
        )
        for key, t in evaluated:
            lines.append(f"otel_eval_{label}_pass_rate{{{label}={_label(key)}}} {_number(t.passed / t.evaluations)}")
        family(
            f"otel_eval_{label}_score_mean",
            "gauge",
            f"Mean evaluation score (0..1) since the collector started, by {what}.",
        )
        for key, t in evaluated:
            lines.append(
                f"otel_eval_{label}_score_mean{{{label}={_label(key)}}} "
                f"{_number(round(t.score_sum / t.evaluations, 6))}"
            )
    family(
        "otel_eval_version_unmatched_total",
        "counter",
        "Sessions that matched no golden case (scored for health only), by agent version.",
    )
    for key, t in sorted(m.versions.items()):
        if t.unmatched:
            lines.append(f"otel_eval_version_unmatched_total{{version={_label(key)}}} {t.unmatched}")
    family("otel_eval_score", "histogram", "Scores of matched sessions (0..1), by agent version.")
    for version, hist in sorted(m.scores.items()):
        label = _label(version)
        for le, count in hist.cumulative():
            lines.append(f'otel_eval_score_bucket{{version={label},le="{le}"}} {count}')
        lines.append(f"otel_eval_score_sum{{version={label}}} {_number(round(hist.sum, 6))}")
        lines.append(f"otel_eval_score_count{{version={label}}} {hist.count}")
    family(
        "otel_eval_golden_cases_exercised",
        "gauge",
        "Golden cases at least one session matched since the collector started (otel_eval_golden_cases: "
        "how many are loaded; the difference were never exercised).",
    )
    lines.append(f"otel_eval_golden_cases_exercised {len(m.exercised)}")
    family(
        "otel_eval_unmatched_share",
        "gauge",
        "Share of the sessions scored since the collector started that matched no golden case: the traffic "
        "the golden set does not describe (otel-eval golden suggest drafts cases for it).",
    )
    lines.append(f"otel_eval_unmatched_share {_number(round(m.unmatched / m.observed, 6)) if m.observed else 'NaN'}")
    family(
        "otel_eval_label_values_capped_total",
        "counter",
        f"Observations whose case or version label was replaced by \"{OTHER}\" (label cardinality cap).",
    )
    lines.append(f'otel_eval_label_values_capped_total{{label="case"}} {m.case_label.capped}')
    lines.append(f'otel_eval_label_values_capped_total{{label="version"}} {m.version_label.capped}')
    return lines


def _label(value: str) -> str:
    """A quoted label value, escaped as the exposition format requires."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _number(value: float) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)
