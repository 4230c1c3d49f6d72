"""The collector's outgoing side: evaluation results as OTLP log records (``--forward-results``;
skipped criteria only with ``--forward-skipped``) and received spans passed on unchanged
(``--forward-spans``).

With an LLM judge, a session's criteria are forwarded as they are decided, each once: the
deterministic ones when the session's evaluation is first stored (its judge pending), the judge's
when its outcome is (:class:`JudgeAwareResults`).

Spans are forwarded only once the local commit succeeded: a request the exporter must retry
(queue full, shutting down) is not forwarded twice, and what the other endpoint gets is what
this collector acknowledged.

With ``--forward-when`` (e.g. ``failed,unmatched``) spans are forwarded after scoring instead, and
only a session whose outcome is listed (:class:`VerdictSpanForwarder`): tail sampling by verdict.
A session whose judge is pending waits for the judge's outcome; its spans are read back from the
database, so what is forwarded is what was stored.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("otel_eval.collector.forward")


class ForwardingReceiver:
    """Wraps the collector's :class:`collector.Receiver`: commit locally, then queue the request
    for the span forwarder (never waiting for it)."""

    def __init__(self, inner: Any, forwarder: Any):
        self.inner = inner
        self.forwarder = forwarder

    def export_traces(self, request: Any) -> Any:
        """Commit the spans locally (the exporter's answer), then queue the request for forwarding."""
        response = self.inner.export_traces(request)
        self.forwarder.submit(request)
        return response

    def export_logs(self, request: Any) -> Any:
        """Log records are stored, not forwarded: only spans are sent on."""
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


OUTCOMES = ("passed", "failed", "not_evaluated", "unmatched")
"""What ``--forward-when`` may list: a matched session's verdict, or unmatched (no golden case)."""


class VerdictSpanForwarder:
    """An ``EvaluationStored`` listener: the spans of each session whose outcome is in ``when``,
    read back from the database and handed to the span forwarder, off the engine's thread."""

    def __init__(self, spans: Any, db_path: str, when: frozenset[str], max_queue: int = 10_000):
        self.spans = spans
        self.db_path = db_path
        self.when = when
        self.forwarded = 0
        self.filtered = 0
        self.dropped = 0
        self.spans_left_out = 0
        self._lock = threading.Lock()
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=max_queue)
        self._thread = threading.Thread(target=self._run, name="otel-eval-verdict-forwarder", daemon=True)
        self._thread.start()

    def __call__(self, event: Any) -> None:
        if event.judge_pending:  # the final verdict comes with the judge's outcome
            return
        outcome = event.verdict if event.matched else "unmatched"
        if outcome not in self.when:
            with self._lock:
                self.filtered += 1
            return
        try:
            self._queue.put_nowait(event.session_id)
        except queue.Full:
            with self._lock:
                self.dropped += 1

    def _run(self) -> None:
        from otel_eval.export.otlp_spans import trace_request
        from otel_eval.read.database import open_database
        from otel_eval.spans import from_json
        from otel_eval.store.session_rows import session_span_rows

        conn = None
        while True:
            session_id = self._queue.get()
            if session_id is None:
                break
            try:
                conn = conn or open_database(self.db_path)
                records = [from_json(raw) for raw, _, _ in session_span_rows(conn, session_id)]
                request, left_out = trace_request(records)
                if request.resource_spans:
                    self.spans.submit(request)
                with self._lock:
                    self.forwarded += 1
                    self.spans_left_out += left_out
            except Exception:  # one unreadable session must not stop forwarding the others
                log.exception("could not forward the spans of session %s", session_id)
                with self._lock:
                    self.dropped += 1
        if conn is not None:
            conn.close()

    def close(self, timeout: float = 5.0) -> None:
        """Stop after the sessions already queued are handed to the span forwarder, waiting ``timeout``
        seconds at most."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)


@dataclass
class Forwarding:
    """What the collector forwards, set up by :func:`install_forwarding`: evaluation results, received
    spans, and the per-verdict span listener (each None when off)."""

    results: Any = None
    spans: Any = None
    by_verdict: VerdictSpanForwarder | None = None

    def banner(self) -> list[str]:
        """The startup banner's lines about forwarding: where results and spans go, and which sessions'."""
        lines = []
        if self.results is not None:
            lines.append(
                f"evaluation results: sent as OTLP gen_ai.evaluation.result log records to "
                f"{self.results.endpoint}" + ("" if self.results.forward_skipped else " (skipped criteria left out)")
            )
        if self.spans is not None and self.by_verdict is not None:
            lines.append(
                f"received spans: forwarded to {self.spans.endpoint} after scoring, for sessions "
                f"{' or '.join(sorted(self.by_verdict.when))}"
            )
        elif self.spans is not None:
            lines.append(f"received spans: forwarded unchanged to {self.spans.endpoint}")
        return lines

    def stats(self) -> dict[str, int]:
        """Forwarding's counters for ``/metrics`` (sent, dropped, failed), only those of what is on."""
        out: dict[str, int] = {}
        if self.spans is not None:
            s = self.spans.stats
            out.update(
                forward_requests=s.requests_forwarded,
                forward_spans=s.spans_forwarded,
                forward_spans_dropped=s.spans_dropped,
                forward_spans_failed=s.spans_failed,
            )
        if self.by_verdict is not None:
            v = self.by_verdict
            out.update(
                forward_sessions=v.forwarded, forward_sessions_filtered=v.filtered, forward_sessions_dropped=v.dropped
            )
        if self.results is not None:
            out["forward_evaluation_records"] = self.results.emitted
            out["forward_evaluation_skipped"] = self.results.skipped
        return out

    def close(self, timeout: float = 5.0) -> None:
        """After the engine closed: send what is queued, then stop."""
        if self.by_verdict is not None:
            self.by_verdict.close(timeout)
        if self.spans is not None:
            self.spans.close(timeout)
            s = self.spans.stats
            if s.spans_dropped or s.spans_failed:
                log.warning(
                    "span forwarding to %s: %d span(s) dropped (queue full), %d failed",
                    self.spans.endpoint,
                    s.spans_dropped,
                    s.spans_failed,
                )
        if self.results is not None:
            self.results.force_flush(int(timeout * 1000))
            self.results.shutdown()


def install_forwarding(collector: Any) -> Forwarding:
    """Set up what ``collector.config`` asks for: a result listener on the engine, a forwarding
    wrapper around the receiver. Call before the servers start."""
    from otel_eval.export.otel import ResultForwarder, SpanForwarder

    config = collector.config
    forwarding = Forwarding()
    results_url: str | None = getattr(config, "forward_results", None)
    spans_url: str | None = getattr(config, "forward_spans", None)
    if results_url:
        forwarding.results = ResultForwarder(
            results_url,
            db=getattr(collector.engine, "db_path", config.db),
            forward_skipped=bool(getattr(config, "forward_skipped", False)),
        )
        collector.engine.on_evaluation(JudgeAwareResults(forwarding.results))
    if spans_url:
        forwarding.spans = SpanForwarder(spans_url)
        when = frozenset(getattr(config, "forward_when", None) or ())
        if when:
            forwarding.by_verdict = VerdictSpanForwarder(
                forwarding.spans, str(getattr(collector.engine, "db_path", config.db)), when
            )
            collector.engine.on_evaluation(forwarding.by_verdict, with_result=False)
        else:
            collector.receiver = ForwardingReceiver(collector.receiver, forwarding.spans)
    return forwarding
