"""The collector's settings table: one entry per setting (converter and help text) drives its
``--flag``, its ``OTEL_EVAL_<NAME>`` variable and its TOML key, so the three spellings cannot
drift apart; :func:`collect_parser` builds the command line from it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from otel_eval.listen_address import parse_endpoint

from .setting_values import (
    boolean,
    fraction,
    golden_list,
    host_list,
    http_url,
    key_list,
    log_level,
    model_map,
    non_negative_int,
    nonempty_text,
    otlp_url,
    outcome_list,
    positive_float,
    positive_int,
)

DEFAULT_GRPC = "127.0.0.1:4317"
DEFAULT_HTTP = "127.0.0.1:4318"
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
DEFAULT_QUEUE_SPANS = 100_000
DEFAULT_MAX_INFLIGHT_BYTES = 128 * 1024 * 1024
DEFAULT_SQLITE_CACHE_MIB = 0
ENV_PREFIX = "OTEL_EVAL_"


# name → (converter, help).  One table drives the flags, the env vars and the TOML keys, so the
# three spellings cannot drift apart.
SETTINGS: dict[str, tuple[Callable[[Any, str], Any], str]] = {
    "db": (nonempty_text, "SQLite database file for spans, sessions and evaluations (default: otel-eval.db)."),
    "golden": (
        golden_list,
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
        positive_float,
        "Seconds without new spans, after a trace's root span ended, before the trace counts as complete (default: 5).",
    ),
    "session_idle": (
        positive_float,
        "Seconds without a new trace, once all of a session's traces are complete, "
        "before the session ends and is scored (default: 60).",
    ),
    "auth_token": (
        nonempty_text,
        "Require 'Authorization: Bearer TOKEN' on both protocols (/healthz stays open). "
        "Prefer the OTEL_EVAL_AUTH_TOKEN variable: flags show up in process lists.",
    ),
    "tls_cert": (nonempty_text, "PEM certificate file; with --tls-key turns on TLS for both receivers."),
    "tls_key": (nonempty_text, "PEM private key file for --tls-cert."),
    "max_request_bytes": (
        positive_int,
        "Largest request accepted, compressed and after decompression "
        f"(default: {DEFAULT_MAX_REQUEST_BYTES}). Larger: HTTP 413 / gRPC "
        "RESOURCE_EXHAUSTED.",
    ),
    "queue_spans": (
        positive_int,
        "Spans the engine may hold before committing; when full, exporters get "
        f"HTTP 503 / gRPC UNAVAILABLE and retry (default: {DEFAULT_QUEUE_SPANS}).",
    ),
    "log_level": (log_level, "Logging level: debug, info, warning or error (default: info)."),
    "max_value_chars": (
        positive_int,
        "Longest text kept per AgentData value (prompts, documents, tool results); "
        "longer values are cut with a marker that keeps the original length "
        "(default: 65536). The raw span is stored whole.",
    ),
    "fuzzy_threshold": (
        positive_float,
        "Lowest rapidfuzz score (0-100) at which a session's query fuzzily "
        "matches a golden case's query, after exact matching failed (default: 90).",
    ),
    "embedding_threshold": (
        positive_float,
        "Turn on the offline embedding matcher (character n-grams, no model) "
        "for queries that neither exact nor fuzzy matching place, at this "
        "similarity (0-100, e.g. 60). Off by default.",
    ),
    "embedding_url": (
        http_url,
        "Embed with a model behind an OpenAI-compatible /v1/embeddings endpoint instead of "
        "n-grams (base URL as for the OpenAI SDK, e.g. http://127.0.0.1:11434/v1 for Ollama); "
        "needs --embedding-model and --embedding-threshold.",
    ),
    "embedding_model": (nonempty_text, "Model name sent to --embedding-url (e.g. nomic-embed-text)."),
    "embedding_api_key": (
        nonempty_text,
        "Bearer key for --embedding-url. Prefer the OTEL_EVAL_EMBEDDING_API_KEY variable: "
        "flags show up in process lists.",
    ),
    "embedding_timeout": (
        positive_float,
        "Seconds to wait for one embeddings request (default: 10); a timeout "
        "or a 5xx is retried twice, then the match falls back to fuzzy.",
    ),
    "score_workers": (
        non_negative_int,
        "Worker processes that score ended sessions, so scoring uses another core "
        "instead of slowing ingestion; 0 scores in a thread of the collector "
        "(default: 1 on a multi-core machine, else 0).",
    ),
    "no_idle_scoring": (
        boolean,
        "Score only in the worker processes. By default, while ended sessions wait for "
        "them and no spans have arrived for 0.1 s (after a burst, at a restart that resumes "
        "a backlog), the collector's own process scores waiting sessions too, so the backlog "
        "drains on every core; it stops as soon as spans arrive.",
    ),
    "ui": (boolean, "Serve the web dashboard under /ui on the HTTP port (same auth as the receiver)."),
    "forward_results": (
        otlp_url,
        "Send every evaluation as an OTLP gen_ai.evaluation.result log record to this "
        "endpoint (http://HOST:4318 or grpc://HOST:4317).",
    ),
    "forward_skipped": (
        boolean,
        "With --forward-results, also send criteria that were skipped (did not apply to the "
        "session); left out by default.",
    ),
    "forward_spans": (
        otlp_url,
        "Also forward every received span, unchanged, to this OTLP endpoint (http://HOST:4318 or grpc://HOST:4317).",
    ),
}
PATH_SETTINGS = ("db", "golden", "tls_cert", "tls_key")
# The receivers' defences (issue 12): who may talk to the HTTP receiver, how much it holds at once.
SETTINGS.update(
    {
        "allowed_host": (
            host_list,
            "Also answer HTTP requests whose Host header is this name (repeat for several; "
            "'*' for any). By default only localhost, loopback IPs and the --http address "
            "are answered, against DNS rebinding; others get 403. In the environment, "
            "separate names with ','.",
        ),
        "max_inflight_bytes": (
            positive_int,
            "Request-body bytes both receivers hold at once, all requests together "
            f"(default: {DEFAULT_MAX_INFLIGHT_BYTES}). Past it, exporters get HTTP 503 "
            "/ gRPC UNAVAILABLE and retry: the bound on the collector's memory.",
        ),
    }
)
SETTINGS["sqlite_cache_mib"] = (
    non_negative_int,
    "MiB of SQLite page cache for the writer's connection (default: 0, SQLite's own 2 MB). "
    "Trace ids are random, so each span lands on a random page of the indexes keyed by them; "
    "a cache that holds those pages saves the writer reading them back (64 MiB: ~8%% more "
    "spans/s at full load with random ids), for memory on top of --max-inflight-bytes that "
    "rises and falls as the cache empties and refills.",
)
# Where a framework files its session and user ids under keys of its own (issue 29).
SETTINGS.update(
    {
        "session_attribute": (
            key_list,
            "Also take a span's session id from this attribute key, ahead of the built-in "
            "ones (session.id, gen_ai.conversation.id, ...); repeat for several. For a "
            "framework that files the id under its own metadata key. In the environment, "
            "separate keys with ','.",
        ),
        "user_attribute": (
            key_list,
            "Also take a span's user id from this attribute key, ahead of the built-in ones "
            "(user.id, enduser.id, ...); repeat for several. In the environment, separate "
            "keys with ','.",
        ),
    }
)
# The LLM judge pool (issue 30): judge criteria are answered off the score workers.
SETTINGS.update(
    {
        "judge_concurrency": (
            positive_int,
            "LLM judge calls in flight at most, over keep-alive connections "
            "(default: 16). Sessions' deterministic verdicts never wait for the judge.",
        ),
        "judge_queue": (
            positive_int,
            "Judge jobs queued or running at most (default: 10000); past it a session's "
            "judge criteria are recorded not evaluated, 'judge queue full'.",
        ),
        "judge_deadline": (
            positive_float,
            "Seconds from a session's evaluation to its judge outcome, at most "
            "(default: 45): retries, waiting for a free slot and a judge that never "
            "answers included; then the criterion is recorded not evaluated with the reason.",
        ),
        "judge_models": (
            model_map,
            "Map a google-adk judge_model name to a model of the judge endpoint, NAME=MODEL "
            "(e.g. gemini-2.5-flash=gpt-4o-mini; repeat for several; a [judge_models] table in "
            "TOML; NAME=MODEL,NAME=MODEL in the environment). Unmapped names ask the endpoint for "
            "OTEL_EVAL_JUDGE_MODEL (else the name itself), logged once.",
        ),
    }
)

SETTINGS["forward_when"] = (
    outcome_list,
    "With --forward-spans, forward a session's spans only after it is scored, and only when its "
    "outcome is listed: passed, failed, not_evaluated, unmatched (comma-separated, e.g. "
    "failed,unmatched): tail sampling by verdict. Without it every span is forwarded on receipt.",
)


# The release gate (issue 33): a gauge per candidate version and GET /gate, for Argo Rollouts / Flagger.
SETTINGS.update(
    {
        "gate_baseline": (
            nonempty_text,
            "Agent version the release gate compares every other version against: /metrics gets "
            "otel_eval_gate_decision{baseline,candidate} (1 promote, 0 not enough evidence, -1 roll "
            "back) and GET /gate answers without ?baseline= (docs/compare.md#release-gate).",
        ),
        "gate_margin": (fraction(False), "Largest pass-rate drop the gate still promotes (default: 0.10)."),
        "gate_confidence": (fraction(True), "Confidence of the gate's decisions, all together (default: 0.95)."),
        "gate_min_sessions": (
            positive_int,
            "Sessions per version a golden case needs before the gate judges it on its own (default: 30).",
        ),
    }
)
#: The placeholder each flag's help shows for its value (a switch has none).
_METAVARS = {
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
LIST_SETTINGS = ("golden", "allowed_host", "session_attribute", "user_attribute", "judge_models")


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
    for name, (_, help_text) in SETTINGS.items():
        flag = "--" + name.replace("_", "-")
        env = ENV_PREFIX + name.upper()
        kwargs: dict[str, Any] = {"dest": name, "help": f"{help_text} Env: {env}."}
        if SETTINGS[name][0] is boolean:
            kwargs["action"] = "store_const"
            kwargs["const"] = True
        else:
            kwargs["metavar"] = _METAVARS[name]
        if name in LIST_SETTINGS:
            kwargs["action"] = "append"
        parser.add_argument(flag, **kwargs)
    return parser
