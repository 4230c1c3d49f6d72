"""Collector settings from flags, ``OTEL_EVAL_*`` environment variables and a TOML file.

Precedence is flags > environment > file > defaults, decided per setting, so a deployment can
keep a shared file and override one value per host. Every bad value raises
:class:`~otel_eval.errors.InputError` naming where it came from (the flag, the variable or the
file and key) so the operator can fix it without reading a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval.adk_config.resolve import is_test_config, resolve_config
from otel_eval.errors import InputError
from otel_eval.listen_address import Endpoint, parse_endpoint
from otel_eval.models.evalset import EvalConfig

from .config_file import read_settings_file
from .setting_values import LOG_LEVELS
from .settings import (
    DEFAULT_GRPC,
    DEFAULT_HTTP,
    DEFAULT_MAX_INFLIGHT_BYTES,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_QUEUE_SPANS,
    DEFAULT_SQLITE_CACHE_MIB,
    ENV_PREFIX,
    SETTINGS,
    collect_parser,
)

#: What importers of ``collector.config`` find here: the settings, how they load, and the names
#: the settings are built from (kept here since callers import them from this module).
__all__ = [
    "DEFAULT_GRPC",
    "DEFAULT_HTTP",
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_QUEUE_SPANS",
    "DEFAULT_SQLITE_CACHE_MIB",
    "ENV_PREFIX",
    "LOG_LEVELS",
    "CollectorConfig",
    "Endpoint",
    "collect_parser",
    "load_config",
    "parse_endpoint",
]


@dataclass
class CollectorConfig:
    """Every collector setting, converted and checked: what :func:`load_config` hands the app."""

    db: str = "otel-eval.db"
    golden: list[str] = field(default_factory=list)
    grpc: Endpoint | None = field(default_factory=lambda: parse_endpoint(DEFAULT_GRPC, "default"))
    http: Endpoint | None = field(default_factory=lambda: parse_endpoint(DEFAULT_HTTP, "default"))
    trace_quiet: float = 5.0
    session_idle: float = 60.0
    auth_token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    queue_spans: int = DEFAULT_QUEUE_SPANS
    log_level: str = "info"
    max_value_chars: int = 65536
    fuzzy_threshold: float = 90.0
    embedding_threshold: float | None = None
    embedding_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: str | None = None
    embedding_timeout: float = 10.0
    score_workers: int = field(default_factory=lambda: 1 if (os.cpu_count() or 1) > 1 else 0)
    """Processes that score ended sessions; 0 scores in a thread of the collector itself."""
    no_idle_scoring: bool = False
    """Score only in the worker processes, never in the collector's own process (see --help)."""
    ui: bool = False
    forward_results: str | None = None
    forward_spans: str | None = None
    forward_skipped: bool = False
    alerts: list[dict[str, Any]] = field(default_factory=list)
    """``[[alerts]]`` tables from the TOML file, validated by ``otel_eval.alerts``."""
    eval_config: EvalConfig | None = None
    """Criteria from the TOML file's ``[criteria.*]`` tables or a test_config.json (``--config x.json``,
    ``criteria_file``, or found beside a golden ``.evalset.json``); None lets the engine use its defaults."""
    criteria_message: str | None = None
    """One line for the startup banner: which criteria apply and where they came from."""
    criteria_warnings: list[str] = field(default_factory=list)
    """What a test_config.json said that otel-eval ignores (logged at startup)."""
    config_file: str | None = None
    session_attribute: list[str] = field(default_factory=list)
    """Attribute keys that name a session, ahead of the built-in ones."""
    user_attribute: list[str] = field(default_factory=list)
    """Attribute keys that name a user, ahead of the built-in ones."""
    allowed_host: list[str] = field(default_factory=list)
    """Host names the HTTP receiver answers besides loopback and its listen address ('*': any)."""
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES
    """Request-body bytes held at once by both receivers together; past it, exporters are told to retry."""
    sqlite_cache_mib: int = DEFAULT_SQLITE_CACHE_MIB
    """SQLite's page cache for the writer's connection, MiB; 0 keeps SQLite's default (2 MB)."""
    judge_concurrency: int = 16
    """LLM judge calls in flight at most (the judge pool)."""
    judge_queue: int = 10_000
    """Judge jobs queued or running at most."""
    judge_deadline: float = 45.0
    """Seconds from a session's evaluation to its judge outcome, at most."""
    judge_models: dict[str, str] = field(default_factory=dict)
    """google-adk judge model names (``gemini-2.5-flash``) → the judge endpoint's models."""
    forward_when: list[str] = field(default_factory=list)
    """Outcomes whose sessions' spans are forwarded after scoring; empty: every span on receipt."""
    gate_baseline: str | None = None
    """Agent version the release gate's gauges compare the others against; None: no gauges."""
    gate_margin: float = 0.10
    gate_confidence: float = 0.95
    gate_min_sessions: int = 30

    @property
    def tls(self) -> bool:
        """Whether both receivers serve TLS (a certificate was given; the key is checked with it)."""
        return bool(self.tls_cert)


def load_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None, prog: str = "otel-eval collect"
) -> CollectorConfig:
    """Settings from ``argv`` (flags), ``environ`` and the TOML file they name.

    Raises :class:`InputError` for bad values; argparse itself exits with status 2 on unknown flags.
    """
    environ = os.environ if environ is None else environ
    args = collect_parser(prog).parse_args(list(argv) if argv is not None else None)
    values: dict[str, tuple[Any, str]] = {}  # name -> (raw value, where it came from)

    config_file = args.config or environ.get(ENV_PREFIX + "CONFIG") or None
    eval_config = None
    criteria_file: str | None = None
    if config_file and is_test_config(config_file):
        criteria_file = config_file  # google-adk's test_config.json: criteria only
    elif config_file:
        file_values, eval_config = read_settings_file(config_file)
        criteria_file = file_values.pop("criteria_file", (None, ""))[0]
        values.update(file_values)
    for name in SETTINGS:
        env = ENV_PREFIX + name.upper()
        if environ.get(env):
            values[name] = (environ[env], env)
    for name in SETTINGS:
        flag_value = getattr(args, name)
        if flag_value is not None:
            values[name] = (flag_value, "--" + name.replace("_", "-"))

    config = CollectorConfig(eval_config=eval_config, config_file=config_file)
    for name, (raw, source) in values.items():
        if name == "alerts":
            config.alerts = list(raw)
            continue
        convert = SETTINGS[name][0]
        setattr(config, name, convert(raw, source))
    _check(config, values)
    _criteria_from_files(config, criteria_file)
    return config


def _criteria_from_files(config: CollectorConfig, criteria_file: str | None) -> None:
    """A test_config.json named by --config or ``criteria_file``, else the one beside a golden
    eval set (as adk eval finds it); TOML ``[criteria.*]`` tables, when given, stand as they are."""
    if config.eval_config is not None:
        config.criteria_message = f"criteria from {config.config_file}"
        return
    resolved = resolve_config(criteria_file, config.golden)
    config.eval_config = resolved.config
    config.criteria_message = resolved.message
    config.criteria_warnings = [f"{resolved.source}: {w}" for w in resolved.warnings]


def _check(config: CollectorConfig, values: Mapping[str, tuple[Any, str]]) -> None:
    def where(name: str) -> str:
        return values[name][1] if name in values else "--" + name.replace("_", "-")

    if config.grpc is None and config.http is None:
        raise InputError(where("grpc"), "both receivers are off (--grpc off and --http off): nothing to listen on")
    if bool(config.tls_cert) != bool(config.tls_key):
        missing = "tls_key" if config.tls_cert else "tls_cert"
        raise InputError(where(missing), "--tls-cert and --tls-key must be given together")
    for name in ("tls_cert", "tls_key"):
        value = getattr(config, name)
        if value and not os.path.isfile(value):
            raise InputError(where(name), f"file not found: {value}")
    if config.embedding_url and not (config.embedding_model and config.embedding_threshold):
        missing = "--embedding-model" if not config.embedding_model else "--embedding-threshold"
        raise InputError(where("embedding_url"), f"an embedding URL needs {missing} too")
    if config.forward_when and not config.forward_spans:
        raise InputError(
            where("forward_when"),
            "--forward-when chooses which sessions' spans --forward-spans sends: give --forward-spans URL too",
        )
    if config.embedding_model and not config.embedding_url:
        raise InputError(
            where("embedding_model"),
            "--embedding-model needs --embedding-url (the built-in n-gram embedding has no model to choose)",
        )
    for value in config.golden:
        if not os.path.exists(value):
            raise InputError(where("golden"), f"golden set not found: {value}")
