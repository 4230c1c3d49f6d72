"""The release gate over HTTP: ``GET /gate`` (JSON, for Argo Rollouts' web metric and Flagger's
webhooks) and ``otel_eval_gate_*`` gauges on ``/metrics`` (for their Prometheus providers).

Both read verdict counts from the database (one aggregate query, :mod:`otel_eval.read.verdicts`),
cached for ``ttl`` seconds so a scrape every few seconds costs one query, not one per scrape.
The decision itself is :func:`otel_eval.gate.gate`: the same as ``otel-eval compare --gate``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from otel_eval.gate import GAUGE_VALUES, gate
from otel_eval.read.verdicts import VerdictCounts, verdict_counts

from .prometheus import _label, _number

MAX_CANDIDATES = 20
"""Versions given a gauge, most sessions first: label cardinality stays bounded."""


class GateView:
    """The release gate over the collector's database, for ``GET /gate`` and the ``/metrics`` gauges,
    with the verdict counts cached for ``ttl`` seconds so frequent scrapes cost one query."""

    def __init__(
        self,
        db_path: str,
        *,
        baseline: str | None,
        margin: float,
        confidence: float,
        min_sessions: int,
        ttl: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.db_path = db_path
        self.baseline = baseline
        self.margin, self.confidence, self.min_sessions = margin, confidence, min_sessions
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, VerdictCounts] | None = None

    def counts(self) -> VerdictCounts:
        """Passed and decided sessions per version and golden case, read at most once every ``ttl`` seconds."""
        with self._lock:
            now = self.clock()
            if self._cached is None or now - self._cached[0] >= self.ttl:
                self._cached = (now, verdict_counts([self.db_path]))
            return self._cached[1]

    def answer(self, query_string: str) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) for ``GET /gate?candidate=V[&baseline=V][&margin=X]...``."""
        query = {k: v[-1] for k, v in parse_qs(query_string, keep_blank_values=True).items()}
        unknown = sorted(set(query) - {"baseline", "candidate", "margin", "confidence", "min_sessions"})
        if unknown:
            return 400, {
                "error": f"unknown parameter {unknown[0]!r}; use baseline, candidate, margin, confidence, min_sessions"
            }
        baseline = query.get("baseline") or self.baseline
        candidate = query.get("candidate")
        if not baseline or not candidate:
            return 400, {
                "error": "name the versions: /gate?baseline=A&candidate=B (baseline defaults to --gate-baseline)"
            }
        try:
            margin = float(query.get("margin", self.margin))
            confidence = float(query.get("confidence", self.confidence))
            min_sessions = int(query.get("min_sessions", self.min_sessions))
            if not (0 <= margin < 1 and 0 < confidence < 1 and min_sessions >= 1):
                raise ValueError
        except ValueError:
            return 400, {"error": "margin must be in [0, 1), confidence in (0, 1), min_sessions a whole number ≥ 1"}
        counts = self.counts()
        result = gate(counts, baseline, candidate, margin=margin, confidence=confidence, min_sessions=min_sessions)
        body = result.to_dict()
        body["versions_known"] = counts.sessions
        return 200, body

    def metrics_lines(self) -> list[str]:
        """The ``otel_eval_gate_*`` gauges, one per candidate version (the most sessions first, at most
        :data:`MAX_CANDIDATES`); none without a baseline version."""
        if not self.baseline:
            return []
        counts = self.counts()
        candidates = sorted((v for v in counts.sessions if v != self.baseline), key=lambda v: (-counts.sessions[v], v))[
            :MAX_CANDIDATES
        ]
        families: Mapping[str, tuple[str, list[str]]] = {
            "otel_eval_gate_decision": (
                "Release gate per candidate version: 1 promote, 0 not enough evidence yet, "
                "-1 roll back (otel-eval compare --gate).",
                [],
            ),
            "otel_eval_gate_difference_lower": (
                "Lower end of the candidate's pass rate minus the baseline's, at the "
                "gate's confidence (valid however often it is read).",
                [],
            ),
            "otel_eval_gate_difference_upper": ("Upper end of the same interval.", []),
        }
        for candidate in candidates:
            result = gate(
                counts,
                self.baseline,
                candidate,
                margin=self.margin,
                confidence=self.confidence,
                min_sessions=self.min_sessions,
            )
            labels = f"{{baseline={_label(self.baseline)},candidate={_label(candidate)}}}"
            families["otel_eval_gate_decision"][1].append(
                f"otel_eval_gate_decision{labels} {GAUGE_VALUES[result.decision]}"
            )
            if result.overall is not None:
                low, high = result.overall.interval
                families["otel_eval_gate_difference_lower"][1].append(
                    f"otel_eval_gate_difference_lower{labels} {_number(round(low, 6))}"
                )
                families["otel_eval_gate_difference_upper"][1].append(
                    f"otel_eval_gate_difference_upper{labels} {_number(round(high, 6))}"
                )
        lines: list[str] = []
        for name, (help_text, samples) in families.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples]
        return lines
