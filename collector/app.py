"""Wiring of the sidecar: config → engine → receivers, the startup banner, and shutdown on signals.

Shutdown order matters for "ack only after commit": first the receivers stop accepting and let
in-flight exports finish (each of those waits for its own commit), then the engine drains and
commits whatever is left and closes the database with open sessions left open, so the next start
on the same file resumes them.
"""

from __future__ import annotations

import logging
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from otel_eval.engine import Engine, EngineSettings, EvaluationStored
from otel_eval.engine.own_process import FullCollections, freeze_long_lived, widen_young_generation
from otel_eval.errors import InputError, OtelEvalError
from otel_eval.models.evalset import EvalConfig

from . import memory, preflight
from .budget import ByteBudget
from .config import CollectorConfig, load_config
from .grpc_server import GrpcServer
from .hosts import HostPolicy
from .http_server import HttpServer, OtlpHttpApp
from .prometheus import CollectorCounters
from .receiver import Receiver

log = logging.getLogger("otel_eval.collector")


def embedding_model_of(config: CollectorConfig) -> Any:
    """``--embedding-url``: a real model for the embedding match step; None keeps the n-grams."""
    if not config.embedding_url:
        return None
    from otel_eval.golden.embedding import OpenAIEmbeddings

    return OpenAIEmbeddings(
        config.embedding_url,
        config.embedding_model or "",
        api_key=config.embedding_api_key,
        timeout=config.embedding_timeout,
    )


class Collector:
    """The engine plus the configured receivers. ``start()`` binds everything or raises."""

    def __init__(self, config: CollectorConfig, engine: Engine | None = None):
        self.config = config
        if engine is None:
            engine = Engine(config.db, golden=list(config.golden), settings=engine_settings(config))
        self.engine = engine
        self.metrics = CollectorCounters()
        self.alerts = None
        if config.alerts:  # validated here, so a bad rule stops the start with file and key
            from otel_eval.alerts import AlertMonitor

            self.alerts = AlertMonitor.from_config(config.alerts, [config.db], source=config.config_file or "alerts")
        self.receiver = Receiver(engine, self.metrics)
        self.budget = ByteBudget(config.max_inflight_bytes)  # request bodies held at once, both receivers
        from .forward import install_forwarding

        self.forwarding = install_forwarding(self)  # --forward-results / --forward-spans
        self.grpc: GrpcServer | None = None
        self.http: HttpServer | None = None
        self._stopped = False

    def start(self) -> Collector:
        """Start the engine, the alert monitor and the receivers that are on; returns the collector.
        If a part fails to start, the parts already running are stopped before the error goes on."""
        config = self.config
        # Before the engine starts: sessions it resumes and scores at once are counted too. The
        # engine says what it stored, so /metrics never reads the database back.
        self.engine.on_evaluation(self._count_evaluation, with_result=False)
        self.engine.start()
        if self.alerts is not None:
            self.alerts.start()
            self.engine.on_evaluation(self.alerts.wake, with_result=False)  # only a nudge
        try:
            if config.grpc is not None:
                tls = None
                if config.tls_cert and config.tls_key:  # config.tls: load_config gives both or neither
                    with open(config.tls_cert, "rb") as cert, open(config.tls_key, "rb") as key:
                        tls = (cert.read(), key.read())
                self.grpc = GrpcServer(
                    self.receiver,
                    self.metrics,
                    config.grpc,
                    auth_token=config.auth_token,
                    tls=tls,
                    max_request_bytes=config.max_request_bytes,
                    budget=self.budget,
                )
                self.grpc.start()
            if config.http is not None:
                ui = None
                if config.ui:
                    from otel_eval.ui import DashboardApp

                    ui = DashboardApp(self.engine.db_path, auth_token=config.auth_token)
                from .gate_view import GateView

                gate = GateView(
                    str(self.engine.db_path),
                    baseline=config.gate_baseline,
                    margin=config.gate_margin,
                    confidence=config.gate_confidence,
                    min_sessions=config.gate_min_sessions,
                )
                app = OtlpHttpApp(
                    self.receiver,
                    self.metrics,
                    auth_token=config.auth_token,
                    max_request_bytes=config.max_request_bytes,
                    stats=self._stats,
                    ui=ui,
                    hosts=HostPolicy(config.http.host, config.allowed_host),
                    budget=self.budget,
                    gate=gate,
                )
                self.http = HttpServer(
                    app,
                    config.http,
                    tls_cert=config.tls_cert,
                    tls_key=config.tls_key,
                    log_level="debug" if config.log_level == "debug" else "warning",
                )
                self.http.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _stats(self) -> dict:
        """The engine's numbers for /metrics, with the golden cases loaded (coverage's denominator)."""
        return {
            **self.engine.stats(),
            **self.forwarding.stats(),
            "golden_cases": sum(cases for _, _, cases in self.engine.golden_summary),
        }

    def _count_evaluation(self, stored: EvaluationStored) -> None:
        if not stored.counted:  # a revision whose judge is pending, or a backfill: the session counts once
            return
        self.metrics.evaluations.observe(
            stored.case_id, stored.agent_version, stored.passed, stored.score, stored.verdict
        )

    @property
    def grpc_port(self) -> int | None:
        """The port the gRPC receiver listens on (the one the OS chose for port 0); None when it is off."""
        return self.grpc.port if self.grpc else None

    @property
    def http_port(self) -> int | None:
        """The port the HTTP receiver listens on (the one the OS chose for port 0); None when it is off."""
        return self.http.port if self.http else None

    def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, let in-flight exports commit, then commit the rest and close the database.
        Open sessions stay open in the database; a restart resumes them."""
        if self._stopped:
            return
        self._stopped = True
        # Both receivers drain at once: each in-flight export waits for its own commit.
        stoppers = [threading.Thread(target=r.stop, args=(grace,)) for r in (self.http, self.grpc) if r is not None]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        self.engine.close(score_open=False)
        self.forwarding.close()
        if self.alerts is not None:
            self.alerts.stop()

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def banner(self) -> list[str]:
        """What an operator needs to check at a glance: where it listens, what it writes, what it compares to."""
        config = self.config
        scheme_note = "TLS" if config.tls else "plaintext"
        auth_note = "bearer token required" if config.auth_token else "no auth"
        lines = []
        if self.grpc is not None:
            lines.append(
                f"OTLP/gRPC listening on {self.grpc.endpoint.host}:{self.grpc.port} ({scheme_note}, {auth_note})"
            )
        else:
            lines.append("OTLP/gRPC off")
        if self.http is not None:
            scheme = "https" if config.tls else "http"
            base = f"{scheme}://{_host_for_url(self.http.endpoint.host)}:{self.http.port}"
            lines.append(
                f"OTLP/HTTP listening on {base}/v1/traces and {base}/v1/logs ({scheme_note}, {auth_note}); "
                f"metrics at {base}/metrics, health at {base}/healthz"
            )
            if config.ui:
                lines.append(f"dashboard at {base}/ui/ ({auth_note})")
        else:
            lines.append("OTLP/HTTP off" + (" (so is the --ui dashboard, which it serves)" if config.ui else ""))
        for endpoint in (config.grpc, config.http):
            if endpoint is not None and not endpoint.is_loopback and not config.auth_token:
                lines.append(
                    f"WARNING: {endpoint.host} is not a loopback address and no --auth-token is set; "
                    "anyone who can reach it can write to the database"
                )
        lines.append(f"database: {config.db}")
        lines.extend(self.forwarding.banner())
        golden = self.engine.golden_summary
        if golden:
            for source, eval_set_id, cases in golden:
                lines.append(f"golden set: {source} ({eval_set_id}, {cases} cases)")
        else:
            lines.append("golden set: none (sessions get reference-free health metrics only)")
        lines.append(
            f"sessions: a trace is complete {config.trace_quiet:g} s after its root span ends with no new "
            f"spans; a session ends {config.session_idle:g} s after its last trace completes"
        )
        lines.append(f"limits: {config.max_request_bytes} bytes per request, {config.queue_spans} queued spans")
        lines.append(
            f"scoring: {config.score_workers} worker process(es)"
            if config.score_workers
            else "scoring: in a thread of this process"
        )
        if self.alerts is not None:
            rules = self.alerts.evaluator.rules
            hooks = sum(1 for r in rules if r.webhook)
            lines.append(
                f"alerts: {len(rules)} rule(s) ({', '.join(r.name for r in rules)}); "
                f"{hooks} with a webhook, the rest log a WARNING only"
            )
        if config.config_file:
            lines.append(f"config file: {config.config_file}")
        if config.criteria_message:
            lines.append(config.criteria_message)
        lines.extend(f"WARNING: {warning}" for warning in config.criteria_warnings)
        return lines


def engine_settings(config: CollectorConfig) -> EngineSettings:
    """The collector's configuration as the engine's settings."""
    return EngineSettings(
        config=config.eval_config or EvalConfig.default(),
        trace_quiet=config.trace_quiet,
        session_idle=config.session_idle,
        max_queue_spans=config.queue_spans,
        max_value_chars=config.max_value_chars,
        fuzzy_threshold=config.fuzzy_threshold,
        embedding_threshold=config.embedding_threshold,
        embed=embedding_model_of(config),
        score_workers=config.score_workers,
        write_cache_mib=config.sqlite_cache_mib or None,
        score_when_idle=not config.no_idle_scoring,
        judge_concurrency=config.judge_concurrency,
        judge_queue=config.judge_queue,
        judge_deadline=config.judge_deadline,
        judge_models=tuple(config.judge_models.items()),
        session_attributes=tuple(config.session_attribute),
        user_attributes=tuple(config.user_attribute),
    )


def _describe(exc: Exception) -> str:
    """An error for the operator: ``source: reason``, with the JSON path only when there is one."""
    if isinstance(exc, InputError):
        where = f" at {exc.location}" if exc.location not in ("", "$") else ""
        return f"{exc.source}{where}: {exc.reason}"
    return str(exc)


def describe_all(exc: Exception) -> list[str]:
    """One line per problem: a bad golden file (``GoldenFileError``) lists several."""
    problems = getattr(exc, "problems", None)
    if problems and isinstance(exc, InputError) and all(isinstance(p, tuple) for p in problems):
        return [_describe(InputError(exc.source, reason, location)) for location, reason in problems]  # ConfigError
    if problems:
        return [_describe(InputError(p.source, p.reason, p.location)) for p in problems]
    return [_describe(exc)]


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def serve(
    config: CollectorConfig,
    *,
    ready: Callable[[Collector], None] | None = None,
    stop_event: threading.Event | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop_event``), then drain, commit and return 0."""
    stop = stop_event or threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if received:
            # A second signal: the operator wants out now. Acknowledged spans are already committed.
            log.warning("second %s: exiting without draining", signal.Signals(signum).name)
            raise SystemExit(1)
        received.append(signum)
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        preflight.check(config)  # database writable, TLS files usable, ports free: else one line, exit 2
        memory.limit_arenas()  # before our threads start: their arenas are made from now on
        widen_young_generation()  # before the golden sets are loaded
        collector = Collector(config).start()
        # The golden sets (hundreds of thousands of objects for a large set) live as long as the
        # process: frozen, the cyclic GC stops walking them in every full collection, which
        # otherwise lands on whichever thread allocates (a gRPC thread decoding a batch).
        freeze_long_lived()
        for line in collector.banner():
            log.info("%s", line)
        if ready is not None:
            ready(collector)
        full_collections = FullCollections()
        while not stop.wait(0.5):
            full_collections.due()
            health = collector.engine.health()
            if health.fatal:  # e.g. the writer thread died: nothing more can be stored
                log.error(
                    "cannot go on: %s; exiting with status 1 so a supervisor restarts the collector", health.reason
                )
                collector.stop()
                return 1
        if received:
            log.info("%s received: stopping receivers, committing queued spans", signal.Signals(received[0]).name)
        collector.stop()
        stats = collector.engine.stats()
        log.info(
            "stopped: %d spans stored, %d duplicates ignored, %d sessions left open for the next start",
            stats.get("spans_stored", 0),
            stats.get("spans_duplicate", 0),
            stats.get("sessions_open", 0),
        )
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def main(argv: Sequence[str] | None = None, prog: str = "otel-eval collect") -> int:
    """``otel-eval collect`` / ``python -m collector``. Returns the exit status."""
    try:
        config = load_config(argv, prog=prog)
    except OtelEvalError as exc:
        for line in describe_all(exc):
            print(f"{prog}: error: {line}", file=sys.stderr)
        return 2
    _configure_logging(config.log_level)
    try:
        return serve(config)
    except OtelEvalError as exc:  # a bad golden file, found when the engine loads it
        for line in describe_all(exc):
            log.error("%s", line)
        return 2
    except OSError as exc:  # address in use, unreadable TLS files
        log.error("%s", exc)
        return 2
    except sqlite3.Error as exc:
        log.error("database %s: %s", config.db, exc)
        return 2
