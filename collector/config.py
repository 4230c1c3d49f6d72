"""Collector settings from flags, ``OTEL_EVAL_*`` environment variables and a TOML file.

Precedence is flags > environment > file > defaults, decided per setting, so a deployment can
keep a shared file and override one value per host. Every bad value raises
:class:`~otel_eval.errors.InputError` naming where it came from (the flag, the variable or the
file and key) so the operator can fix it without reading a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from otel_eval.adk_config.resolve import is_test_config, resolve_config
from otel_eval.errors import InputError
from otel_eval.listen_address import Endpoint, host_problem, parse_endpoint
from otel_eval.models.evalset import EvalConfig, json_path
from otel_eval.models.suggest import unknown_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_GRPC = "127.0.0.1:4317"
DEFAULT_HTTP = "127.0.0.1:4318"
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
DEFAULT_QUEUE_SPANS = 100_000
DEFAULT_MAX_INFLIGHT_BYTES = 128 * 1024 * 1024
DEFAULT_SQLITE_CACHE_MIB = 0
LOG_LEVELS = ("debug", "info", "warning", "error")
ENV_PREFIX = "OTEL_EVAL_"


@dataclass
class CollectorConfig:
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
        return bool(self.tls_cert)


def _positive_float(text: Any, source: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(source, f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise InputError(source, f"must be greater than 0, got {text!r}")
    return value


def _positive_int(text: Any, source: str) -> int:
    if isinstance(text, bool):
        raise InputError(source, f"expected a whole number, got {text!r}")
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise InputError(source, f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise InputError(source, f"must be greater than 0, got {text!r}")
    return value


def _non_negative_int(text: Any, source: str) -> int:
    if text in (0, "0"):
        return 0
    return _positive_int(text, source)


def _log_level(text: Any, source: str) -> str:
    value = str(text).lower()
    if value not in LOG_LEVELS:
        raise InputError(source, f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return value


def _text(text: Any, source: str) -> str:
    if not isinstance(text, str) or not text:
        raise InputError(source, f"expected a non-empty string, got {text!r}")
    return text


def _bool(value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise InputError(source, f"expected true or false, got {value!r}")


def _host_list(value: Any, source: str) -> list[str]:
    """Host names for the Host check: a list (TOML, repeated flag) or comma-separated text (env)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise InputError(source, f"expected a host name or a list of them, got {value!r}")
    names = []
    for item in (v.strip() for v in items):
        if not item:
            continue
        if item != "*":
            host = (
                item[1 : item.index("]")]
                if item.startswith("[") and "]" in item
                else item.rsplit(":", 1)[0]
                if item.count(":") == 1
                else item
            )
            problem = host_problem(host)
            if problem:
                raise InputError(source, problem)
        names.append(item)
    return names


def _otlp_url(value: Any, source: str) -> str:
    text = _text(value, source)
    if not text.startswith(("http://", "https://", "grpc://")):
        raise InputError(source, f"expected an OTLP endpoint URL (http://, https:// or grpc://HOST:PORT), got {text!r}")
    return text


def _http_url(value: Any, source: str) -> str:
    text = _text(value, source)
    if not text.startswith(("http://", "https://")):
        raise InputError(source, f"expected an http:// or https:// URL, got {text!r}")
    return text


def _key_list(value: Any, source: str) -> list[str]:
    """Attribute keys: a list (TOML, repeated flag) or comma-separated text (env)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise InputError(source, f"expected an attribute key or a list of them, got {value!r}")
    keys = [item.strip() for item in items if item.strip()]
    for key in keys:
        if any(c.isspace() for c in key):
            raise InputError(source, f"an attribute key has no spaces: {key!r}")
    return keys


def _model_map(value: Any, source: str) -> dict[str, str]:
    """NAME=MODEL pairs: a TOML table, a repeated flag, or comma-separated text (env)."""
    if isinstance(value, dict):
        pairs = list(value.items())
    else:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise InputError(source, f"expected NAME=MODEL pairs, got {value!r}")
        pairs = []
        for item in (v.strip() for v in items if v.strip()):
            name, sep, model = item.partition("=")
            if not sep:
                raise InputError(source, f"expected NAME=MODEL (e.g. gemini-2.5-flash=gpt-4o-mini), got {item!r}")
            pairs.append((name.strip(), model.strip()))
    out = {}
    for name, model in pairs:
        if not isinstance(name, str) or not name or not isinstance(model, str) or not model:
            raise InputError(source, f"expected a judge model name and an endpoint model, got {name!r} = {model!r}")
        out[name] = model
    return out


def _golden_list(value: Any, source: str) -> list[str]:
    if isinstance(value, str):
        # One variable holds several paths the way PATH does.
        return [p for p in value.split(os.pathsep) if p]
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise InputError(source, f"expected a path or a list of paths, got {value!r}")


# name → (converter, help).  One table drives the flags, the env vars and the TOML keys, so the
# three spellings cannot drift apart.
_SETTINGS: dict[str, tuple[Callable[[Any, str], Any], str]] = {
    "db": (_text, "SQLite database file for spans, sessions and evaluations (default: otel-eval.db)."),
    "golden": (
        _golden_list,
        "Golden set file (.evalset.json, trajectory-golden, Big Sky, ADK); repeat for "
        "several. In the environment, separate paths with '{}'.".format(os.pathsep.replace("%", "%%")),
    ),
    "grpc": (parse_endpoint, f"OTLP/gRPC listen address HOST:PORT, or 'off' (default: {DEFAULT_GRPC})."),
    "http": (
        parse_endpoint,
        f"OTLP/HTTP listen address HOST:PORT for /v1/traces, /v1/logs, /metrics and "
        f"/healthz, or 'off' (default: {DEFAULT_HTTP}).",
    ),
    "trace_quiet": (
        _positive_float,
        "Seconds without new spans, after a trace's root span ended, before the trace counts as complete (default: 5).",
    ),
    "session_idle": (
        _positive_float,
        "Seconds without a new trace, once all of a session's traces are complete, "
        "before the session ends and is scored (default: 60).",
    ),
    "auth_token": (
        _text,
        "Require 'Authorization: Bearer TOKEN' on both protocols (/healthz stays open). "
        "Prefer the OTEL_EVAL_AUTH_TOKEN variable: flags show up in process lists.",
    ),
    "tls_cert": (_text, "PEM certificate file; with --tls-key turns on TLS for both receivers."),
    "tls_key": (_text, "PEM private key file for --tls-cert."),
    "max_request_bytes": (
        _positive_int,
        "Largest request accepted, compressed and after decompression "
        f"(default: {DEFAULT_MAX_REQUEST_BYTES}). Larger: HTTP 413 / gRPC "
        "RESOURCE_EXHAUSTED.",
    ),
    "queue_spans": (
        _positive_int,
        "Spans the engine may hold before committing; when full, exporters get "
        f"HTTP 503 / gRPC UNAVAILABLE and retry (default: {DEFAULT_QUEUE_SPANS}).",
    ),
    "log_level": (_log_level, "Logging level: debug, info, warning or error (default: info)."),
    "max_value_chars": (
        _positive_int,
        "Longest text kept per AgentData value (prompts, documents, tool results); "
        "longer values are cut with a marker that keeps the original length "
        "(default: 65536). The raw span is stored whole.",
    ),
    "fuzzy_threshold": (
        _positive_float,
        "Lowest rapidfuzz score (0-100) at which a session's query fuzzily "
        "matches a golden case's query, after exact matching failed (default: 90).",
    ),
    "embedding_threshold": (
        _positive_float,
        "Turn on the offline embedding matcher (character n-grams, no model) "
        "for queries that neither exact nor fuzzy matching place, at this "
        "similarity (0-100, e.g. 60). Off by default.",
    ),
    "embedding_url": (
        _http_url,
        "Embed with a model behind an OpenAI-compatible /v1/embeddings endpoint instead of "
        "n-grams (base URL as for the OpenAI SDK, e.g. http://127.0.0.1:11434/v1 for Ollama); "
        "needs --embedding-model and --embedding-threshold.",
    ),
    "embedding_model": (_text, "Model name sent to --embedding-url (e.g. nomic-embed-text)."),
    "embedding_api_key": (
        _text,
        "Bearer key for --embedding-url. Prefer the OTEL_EVAL_EMBEDDING_API_KEY variable: "
        "flags show up in process lists.",
    ),
    "embedding_timeout": (
        _positive_float,
        "Seconds to wait for one embeddings request (default: 10); a timeout "
        "or a 5xx is retried twice, then the match falls back to fuzzy.",
    ),
    "score_workers": (
        _non_negative_int,
        "Worker processes that score ended sessions, so scoring uses another core "
        "instead of slowing ingestion; 0 scores in a thread of the collector "
        "(default: 1 on a multi-core machine, else 0).",
    ),
    "no_idle_scoring": (
        _bool,
        "Score only in the worker processes. By default, while ended sessions wait for "
        "them and no spans have arrived for 0.1 s (after a burst, at a restart that resumes "
        "a backlog), the collector's own process scores waiting sessions too, so the backlog "
        "drains on every core; it stops as soon as spans arrive.",
    ),
    "ui": (_bool, "Serve the web dashboard under /ui on the HTTP port (same auth as the receiver)."),
    "forward_results": (
        _otlp_url,
        "Send every evaluation as an OTLP gen_ai.evaluation.result log record to this "
        "endpoint (http://HOST:4318 or grpc://HOST:4317).",
    ),
    "forward_skipped": (
        _bool,
        "With --forward-results, also send criteria that were skipped (did not apply to the "
        "session); left out by default.",
    ),
    "forward_spans": (
        _otlp_url,
        "Also forward every received span, unchanged, to this OTLP endpoint (http://HOST:4318 or grpc://HOST:4317).",
    ),
}
_PATH_SETTINGS = ("db", "golden", "tls_cert", "tls_key")
# The receivers' defences (issue 12): who may talk to the HTTP receiver, how much it holds at once.
_SETTINGS.update(
    {
        "allowed_host": (
            _host_list,
            "Also answer HTTP requests whose Host header is this name (repeat for several; "
            "'*' for any). By default only localhost, loopback IPs and the --http address "
            "are answered, against DNS rebinding; others get 403. In the environment, "
            "separate names with ','.",
        ),
        "max_inflight_bytes": (
            _positive_int,
            "Request-body bytes both receivers hold at once, all requests together "
            f"(default: {DEFAULT_MAX_INFLIGHT_BYTES}). Past it, exporters get HTTP 503 "
            "/ gRPC UNAVAILABLE and retry: the bound on the collector's memory.",
        ),
    }
)
_SETTINGS["sqlite_cache_mib"] = (
    _non_negative_int,
    "MiB of SQLite page cache for the writer's connection (default: 0, SQLite's own 2 MB). "
    "Trace ids are random, so each span lands on a random page of the indexes keyed by them; "
    "a cache that holds those pages saves the writer reading them back (64 MiB: ~8%% more "
    "spans/s at full load with random ids), for memory on top of --max-inflight-bytes that "
    "rises and falls as the cache empties and refills.",
)
# Where a framework files its session and user ids under keys of its own (issue 29).
_SETTINGS.update(
    {
        "session_attribute": (
            _key_list,
            "Also take a span's session id from this attribute key, ahead of the built-in "
            "ones (session.id, gen_ai.conversation.id, ...); repeat for several. For a "
            "framework that files the id under its own metadata key. In the environment, "
            "separate keys with ','.",
        ),
        "user_attribute": (
            _key_list,
            "Also take a span's user id from this attribute key, ahead of the built-in ones "
            "(user.id, enduser.id, ...); repeat for several. In the environment, separate "
            "keys with ','.",
        ),
    }
)
# The LLM judge pool (issue 30): judge criteria are answered off the score workers.
_SETTINGS.update(
    {
        "judge_concurrency": (
            _positive_int,
            "LLM judge calls in flight at most, over keep-alive connections "
            "(default: 16). Sessions' deterministic verdicts never wait for the judge.",
        ),
        "judge_queue": (
            _positive_int,
            "Judge jobs queued or running at most (default: 10000); past it a session's "
            "judge criteria are recorded not evaluated, 'judge queue full'.",
        ),
        "judge_deadline": (
            _positive_float,
            "Seconds from a session's evaluation to its judge outcome, at most "
            "(default: 45): retries, waiting for a free slot and a judge that never "
            "answers included; then the criterion is recorded not evaluated with the reason.",
        ),
        "judge_models": (
            _model_map,
            "Map a google-adk judge_model name to a model of the judge endpoint, NAME=MODEL "
            "(e.g. gemini-2.5-flash=gpt-4o-mini; repeat for several; a [judge_models] table in "
            "TOML; NAME=MODEL,NAME=MODEL in the environment). Unmapped names ask the endpoint for "
            "OTEL_EVAL_JUDGE_MODEL (else the name itself), logged once.",
        ),
    }
)


def _fraction(low_open: bool):
    """A number in [0, 1) (``low_open``: in (0, 1))."""

    def convert(text: Any, source: str) -> float:
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise InputError(source, f"expected a number between 0 and 1, got {text!r}") from None
        if not ((0.0 < value) if low_open else (0.0 <= value)) or not value < 1.0:
            raise InputError(source, f"expected a number {'above' if low_open else 'from'} 0 and below 1, got {text!r}")
        return value

    return convert


def _outcome_list(value: Any, source: str) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise InputError(source, f"expected outcomes separated by commas, got {value!r}")
    from .forward import OUTCOMES

    outcomes = [v.strip() for v in items if v.strip()]
    for outcome in outcomes:
        if outcome not in OUTCOMES:
            raise InputError(source, unknown_name("outcome", outcome, OUTCOMES))
    return outcomes


_SETTINGS["forward_when"] = (
    _outcome_list,
    "With --forward-spans, forward a session's spans only after it is scored, and only when its "
    "outcome is listed: passed, failed, not_evaluated, unmatched (comma-separated, e.g. "
    "failed,unmatched): tail sampling by verdict. Without it every span is forwarded on receipt.",
)


# The release gate (issue 33): a gauge per candidate version and GET /gate, for Argo Rollouts / Flagger.
_SETTINGS.update(
    {
        "gate_baseline": (
            _text,
            "Agent version the release gate compares every other version against: /metrics gets "
            "otel_eval_gate_decision{baseline,candidate} (1 promote, 0 not enough evidence, -1 roll "
            "back) and GET /gate answers without ?baseline= (docs/compare.md#release-gate).",
        ),
        "gate_margin": (_fraction(False), "Largest pass-rate drop the gate still promotes (default: 0.10)."),
        "gate_confidence": (_fraction(True), "Confidence of the gate's decisions, all together (default: 0.95)."),
        "gate_min_sessions": (
            _positive_int,
            "Sessions per version a golden case needs before the gate judges it on its own (default: 30).",
        ),
    }
)
_MORE_METAVARS = {
    "forward_when": "OUTCOMES",
    "gate_baseline": "VERSION",
    "gate_margin": "X",
    "gate_confidence": "C",
    "gate_min_sessions": "N",
    "allowed_host": "HOST",
    "max_inflight_bytes": "BYTES",
    "sqlite_cache_mib": "MIB",
    "judge_concurrency": "N",
    "judge_queue": "N",
    "judge_deadline": "SECONDS",
    "judge_models": "NAME=MODEL",
    "session_attribute": "KEY",
    "user_attribute": "KEY",
}
_LIST_SETTINGS = ("golden", "allowed_host", "session_attribute", "user_attribute", "judge_models")


def collect_parser(prog: str = "otel-eval collect") -> argparse.ArgumentParser:
    """The ``otel-eval collect`` command line (``otel-eval``'s own is :func:`otel_eval.cli.build_parser`)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Receive OpenTelemetry traces over OTLP (gRPC and HTTP) and evaluate agent sessions live. "
        "Every setting can also come from an OTEL_EVAL_<NAME> environment variable (e.g. "
        "OTEL_EVAL_DB) or the --config TOML file; flags win over the environment, which wins over "
        "the file.",
        argument_default=None,
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file with any of these settings (keys as the flag names with '_' for '-') "
        "and [criteria.NAME] tables (threshold, match_type, ...) or criteria_file = "
        "\"test_config.json\" (google-adk's criteria file); or a test_config.json itself (a "
        ".json file: criteria only, every other setting from flags and environment). Without "
        "criteria, a test_config.json beside a --golden .evalset.json / .test.json is used, as "
        "adk eval does. Env: OTEL_EVAL_CONFIG.",
    )
    metavars = {
        "db": "PATH",
        "golden": "PATH",
        "grpc": "HOST:PORT",
        "http": "HOST:PORT",
        "trace_quiet": "SECONDS",
        "session_idle": "SECONDS",
        "auth_token": "TOKEN",
        "tls_cert": "FILE",
        "tls_key": "FILE",
        "max_request_bytes": "BYTES",
        "queue_spans": "N",
        "log_level": "LEVEL",
        "max_value_chars": "N",
        "fuzzy_threshold": "SCORE",
        "embedding_threshold": "SCORE",
        "embedding_url": "URL",
        "embedding_model": "NAME",
        "embedding_api_key": "KEY",
        "embedding_timeout": "SECONDS",
        "score_workers": "N",
        "forward_results": "URL",
        "forward_spans": "URL",
    }
    for name, (_, help_text) in _SETTINGS.items():
        flag = "--" + name.replace("_", "-")
        env = ENV_PREFIX + name.upper()
        kwargs: dict[str, Any] = {"dest": name, "help": f"{help_text} Env: {env}."}
        if _SETTINGS[name][0] is _bool:
            kwargs["action"] = "store_const"
            kwargs["const"] = True
        else:
            kwargs["metavar"] = metavars.get(name) or _MORE_METAVARS[name]
        if name in _LIST_SETTINGS:
            kwargs["action"] = "append"
        parser.add_argument(flag, **kwargs)
    return parser


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
        file_values, eval_config = _read_toml(config_file)
        criteria_file = file_values.pop("criteria_file", (None, ""))[0]
        values.update(file_values)
    for name in _SETTINGS:
        env = ENV_PREFIX + name.upper()
        if environ.get(env):
            values[name] = (environ[env], env)
    for name in _SETTINGS:
        flag_value = getattr(args, name)
        if flag_value is not None:
            values[name] = (flag_value, "--" + name.replace("_", "-"))

    config = CollectorConfig(eval_config=eval_config, config_file=config_file)
    for name, (raw, source) in values.items():
        if name == "alerts":
            config.alerts = list(raw)
            continue
        convert = _SETTINGS[name][0]
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


def _read_toml(path: str) -> tuple[dict[str, tuple[Any, str]], EvalConfig | None]:
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(path, "config file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read config file: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"invalid TOML: {exc}") from None
    base = Path(path).resolve().parent
    values: dict[str, tuple[Any, str]] = {}
    eval_config = None
    for key, raw in data.items():
        name = key.replace("-", "_")
        if name == "criteria":
            eval_config = _criteria(raw, path)
            continue
        if name == "criteria_file":  # google-adk's test_config.json, relative to this file
            if not isinstance(raw, str) or not raw:
                raise InputError(path, f"expected the path of a test_config.json, got {raw!r}", f"$.{key}")
            if not is_test_config(raw):
                raise InputError(
                    path,
                    f"criteria_file names google-adk's test_config.json (a .json file), got {raw!r}; "
                    "write otel-eval criteria as [criteria.NAME] tables in this file",
                    f"$.{key}",
                )
            values["criteria_file"] = (_relative_to(raw, base), f"{path}: at $.{key}")
            continue
        if name == "alerts":
            if not (isinstance(raw, list) and all(isinstance(r, dict) for r in raw)):
                raise InputError(path, "alerts must be an array of [[alerts]] tables", "$.alerts")
            values["alerts"] = (raw, f"{path}: at $.alerts")
            continue
        if name not in _SETTINGS:
            known = ", ".join(sorted(list(_SETTINGS) + ["criteria", "criteria_file", "alerts"]))
            raise InputError(path, f"unknown setting {key!r} (known: {known})", f"$.{key}")
        source = f"{path}: at $.{key}"
        if name in _PATH_SETTINGS:
            # Paths in a config file are relative to the file, so it works from any directory.
            raw = _relative_to(raw, base)
        values[name] = (raw, source)
    if eval_config is not None and "criteria_file" in values:
        raise InputError(
            path, "give the criteria either as [criteria.NAME] tables or as criteria_file, not both", "$.criteria_file"
        )
    return values, eval_config


def _relative_to(value: Any, base: Path) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str(base / value)
    if isinstance(value, list):
        return [_relative_to(v, base) for v in value]
    return value


def _criteria(raw: Any, path: str) -> EvalConfig:
    """``[criteria.NAME]`` tables on top of the default criteria: a file that only sets the trajectory
    threshold keeps every other default; ``enabled = false`` turns one off."""
    if not isinstance(raw, dict):
        raise InputError(path, "criteria must be a table of [criteria.NAME] tables", "$.criteria")
    merged = EvalConfig.default().model_dump(mode="json")
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise InputError(
                path, f"expected a [criteria.{name}] table, got {type(table).__name__}", f"$.criteria.{name}"
            )
        merged["criteria"].setdefault(name, {}).update(table)
    try:
        config = EvalConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(path, err["msg"], json_path(tuple(err["loc"]))) from None
    from otel_eval.scoring import config_problems  # an unknown criterion or option: refused at start, not per session

    problems = config_problems(config)
    if problems:
        location, reason = problems[0]
        raise InputError(path, reason, location)
    return config


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
