"""The collector's outgoing side: evaluation results as OTLP log records (``--forward-results``;
skipped criteria only with ``--forward-skipped``) and received spans passed on unchanged
(``--forward-spans``).

With an LLM judge, a session's criteria are forwarded as they are decided, each once: the
deterministic ones when the session's evaluation is first stored (its judge pending), the judge's
when its outcome is (:class:`JudgeAwareResults`).

Spans are forwarded only once the local commit succeeded: a request the exporter must retry
(queue full, shutting down) is not forwarded twice, and what the other endpoint gets is what
this collector acknowledged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

log = logging.getLogger("otel_eval.collector.forward")


class ForwardingReceiver:
    """Wraps the collector's :class:`collector.Receiver`: commit locally, then queue the request
    for the span forwarder (never waiting for it)."""

    def __init__(self, inner: Any, forwarder: Any):
        self.inner = inner
        self.forwarder = forwarder

    def export_traces(self, request: Any) -> Any:
        response = self.inner.export_traces(request)
        self.forwarder.submit(request)
        return response

    def export_logs(self, request: Any) -> Any:
        return self.inner.export_logs(request)

    def __getattr__(self, name: str) -> Any:  # engine, metrics, commit_timeout, ...
        return getattr(self.inner, name)


class JudgeAwareResults:
    """The result forwarder as an ``EvaluationStored`` listener. A revision stored with its judge
    pending sends its deterministic criteria (its verdict so far on each record); the revision
    with the judge's outcome sends the judge criteria only (with the final verdict). No criterion
    of a session's scoring is sent twice; a session without a judge is sent whole, as before."""

    def __init__(self, forwarder: Any):
        self.forwarder = forwarder

    def __call__(self, event: Any) -> None:
        try:
            result = event.result
            if event.judge_pending:
                keep = [c for c in result.criterion_results if c.details.get("judge") != "pending"]
            elif event.completes is not None:
                keep = [c for c in result.criterion_results if "judge" in c.details]
            else:
                self.forwarder.emit(result)
                return
            self.forwarder.emit(result.model_copy(update={"criterion_results": keep}))
        except Exception:  # a listener must never break scoring
            log.exception("could not emit evaluation records for session %s", event.session_id)


@dataclass
class Forwarding:
    results: Any = None
    spans: Any = None

    def banner(self) -> list[str]:
        lines = []
        if self.results is not None:
            lines.append(f"evaluation results: sent as OTLP gen_ai.evaluation.result log records to "
                         f"{self.results.endpoint}"
                         + ("" if self.results.forward_skipped else " (skipped criteria left out)"))
        if self.spans is not None:
            lines.append(f"received spans: forwarded unchanged to {self.spans.endpoint}")
        return lines

    def stats(self) -> dict[str, int]:
        out: dict[str, int] = {}
        if self.spans is not None:
            s = self.spans.stats
            out.update(forward_requests=s.requests_forwarded, forward_spans=s.spans_forwarded,
                       forward_spans_dropped=s.spans_dropped, forward_spans_failed=s.spans_failed)
        if self.results is not None:
            out["forward_evaluation_records"] = self.results.emitted
            out["forward_evaluation_skipped"] = self.results.skipped
        return out

    def close(self, timeout: float = 5.0) -> None:
        """After the engine closed: send what is queued, then stop."""
        if self.spans is not None:
            self.spans.close(timeout)
            s = self.spans.stats
            if s.spans_dropped or s.spans_failed:
                log.warning("span forwarding to %s: %d span(s) dropped (queue full), %d failed",
                            self.spans.endpoint, s.spans_dropped, s.spans_failed)
        if self.results is not None:
            self.results.force_flush(int(timeout * 1000))
            self.results.shutdown()


def install_forwarding(collector: Any) -> Forwarding:
    """Set up what ``collector.config`` asks for: a result listener on the engine, a forwarding
    wrapper around the receiver. Call before the servers start."""
    from otel_eval.export.otel import ResultForwarder, SpanForwarder

    config = collector.config
    forwarding = Forwarding()
    results_url: Optional[str] = getattr(config, "forward_results", None)
    spans_url: Optional[str] = getattr(config, "forward_spans", None)
    if results_url:
        forwarding.results = ResultForwarder(results_url, db=getattr(collector.engine, "db_path", config.db),
                                             forward_skipped=bool(getattr(config, "forward_skipped", False)))
        collector.engine.on_evaluation(JudgeAwareResults(forwarding.results))
    if spans_url:
        forwarding.spans = SpanForwarder(spans_url)
        collector.receiver = ForwardingReceiver(collector.receiver, forwarding.spans)
    return forwarding
