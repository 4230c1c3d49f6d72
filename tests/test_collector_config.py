"""Collector configuration: flags > environment > TOML file > defaults, and clear errors."""

from __future__ import annotations

import pytest

from collector.config import Endpoint, collect_parser, load_config, parse_endpoint
from otel_eval.errors import InputError
from otel_eval.models.evalset import MatchType


def test_defaults_listen_on_loopback():
    config = load_config([], environ={})
    assert config.db == "otel-eval.db"
    assert config.grpc == Endpoint("127.0.0.1", 4317)
    assert config.http == Endpoint("127.0.0.1", 4318)
    assert (config.trace_quiet, config.session_idle) == (5.0, 60.0)
    assert config.golden == []
    assert config.auth_token is None and not config.tls
    assert config.max_request_bytes == 16 * 1024 * 1024
    assert config.queue_spans == 100_000
    assert config.eval_config is None


def test_flags_beat_environment_which_beats_the_file(tmp_path):
    golden_a, golden_b = tmp_path / "a.evalset.json", tmp_path / "b.evalset.json"
    golden_a.write_text("{}")
    golden_b.write_text("{}")
    config_file = tmp_path / "collector.toml"
    config_file.write_text(
        'db = "from-file.db"\n'
        "trace_quiet = 1.5\n"
        "session-idle = 30\n"
        'grpc = "0.0.0.0:5317"\n'
        'golden = ["a.evalset.json"]\n'
        'log_level = "debug"\n'
    )
    environ = {"OTEL_EVAL_SESSION_IDLE": "20", "OTEL_EVAL_DB": "from-env.db", "OTEL_EVAL_HTTP": "off"}
    config = load_config(
        ["--config", str(config_file), "--db", "from-flag.db", "--golden", str(golden_b)], environ=environ
    )
    assert config.db == "from-flag.db"  # flag over env over file
    assert config.session_idle == 20.0  # env over file
    assert config.trace_quiet == 1.5  # file over default
    assert config.grpc == Endpoint("0.0.0.0", 5317)
    assert config.http is None
    assert config.golden == [str(golden_b)]
    assert config.log_level == "debug"
    assert config.config_file == str(config_file)


def test_relative_paths_in_the_file_are_relative_to_the_file(tmp_path):
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "x.evalset.json").write_text("{}")
    config_file = tmp_path / "collector.toml"
    config_file.write_text('db = "data/eval.db"\ngolden = "cases/x.evalset.json"\n')
    config = load_config([], environ={"OTEL_EVAL_CONFIG": str(config_file)})
    assert config.db == str(tmp_path / "data" / "eval.db")
    assert config.golden == [str(tmp_path / "cases" / "x.evalset.json")]


def test_criteria_tables_override_only_what_they_set(tmp_path):
    config_file = tmp_path / "collector.toml"
    config_file.write_text(
        "[criteria.trajectory_match]\nthreshold = 0.9\nmatch_type = \"IN_ORDER\"\n\n"
        "[criteria.llm_judge]\nenabled = false\n"
    )
    criteria = load_config(["--config", str(config_file)], environ={}).eval_config.criteria
    assert criteria["trajectory_match"].threshold == 0.9
    assert criteria["trajectory_match"].match_type is MatchType.IN_ORDER
    assert criteria["llm_judge"].enabled is False
    assert criteria["response_match"].threshold == 0.7  # default kept


def test_bad_criterion_value_names_the_file_and_key(tmp_path):
    config_file = tmp_path / "collector.toml"
    config_file.write_text('[criteria.trajectory_match]\nmatch_type = "SOMETIMES"\n')
    with pytest.raises(InputError) as caught:
        load_config(["--config", str(config_file)], environ={})
    assert caught.value.source == str(config_file)
    assert caught.value.location == "$.criteria.trajectory_match.match_type"


def test_unknown_key_in_file_is_an_error_naming_it(tmp_path):
    config_file = tmp_path / "collector.toml"
    config_file.write_text("trace_quite = 3\n")
    with pytest.raises(InputError) as caught:
        load_config(["--config", str(config_file)], environ={})
    assert (caught.value.source, caught.value.location) == (str(config_file), "$.trace_quite")
    assert caught.value.reason.startswith("unknown setting 'trace_quite'")


def test_invalid_toml_and_missing_file(tmp_path):
    config_file = tmp_path / "collector.toml"
    config_file.write_text("db = \n")
    with pytest.raises(InputError, match="invalid TOML"):
        load_config(["--config", str(config_file)], environ={})
    with pytest.raises(InputError, match="config file not found"):
        load_config(["--config", str(tmp_path / "missing.toml")], environ={})


@pytest.mark.parametrize(
    ("argv", "environ", "source", "reason"),
    [
        (["--grpc", "localhost"], {}, "--grpc", "expected HOST:PORT or 'off', got 'localhost'"),
        (["--http", "127.0.0.1:http"], {}, "--http", "port must be a number, got 'http' in '127.0.0.1:http'"),
        ([], {"OTEL_EVAL_TRACE_QUIET": "soon"}, "OTEL_EVAL_TRACE_QUIET", "expected a number of seconds, got 'soon'"),
        (["--session-idle", "0"], {}, "--session-idle", "must be greater than 0, got '0'"),
        (["--queue-spans", "-5"], {}, "--queue-spans", "must be greater than 0, got '-5'"),
        (["--log-level", "loud"], {}, "--log-level", "expected one of debug, info, warning, error, got 'loud'"),
        (
            ["--grpc", "off", "--http", "off"],
            {},
            "--grpc",
            "both receivers are off (--grpc off and --http off): nothing to listen on",
        ),
        (["--tls-cert", "cert.pem"], {}, "--tls-key", "--tls-cert and --tls-key must be given together"),
        (["--golden", "no-such.evalset.json"], {}, "--golden", "golden set not found: no-such.evalset.json"),
    ],
)
def test_bad_values_name_where_they_came_from(argv, environ, source, reason):
    with pytest.raises(InputError) as caught:
        load_config(argv, environ=environ)
    assert (caught.value.source, caught.value.reason) == (source, reason)


def test_auth_token_from_environment():
    assert load_config([], environ={"OTEL_EVAL_AUTH_TOKEN": "t0k"}).auth_token == "t0k"


def test_golden_paths_from_environment_are_split_like_path(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    import os

    config = load_config([], environ={"OTEL_EVAL_GOLDEN": f"{a}{os.pathsep}{b}"})
    assert config.golden == [str(a), str(b)]


def test_ipv6_endpoint():
    assert parse_endpoint("[::1]:4317", "--grpc") == Endpoint("::1", 4317)
    assert str(Endpoint("::1", 4317)) == "[::1]:4317"
    assert parse_endpoint("OFF", "--grpc") is None


def test_help_explains_every_flag_and_its_variable():
    text = collect_parser().format_help()
    for flag, env in [
        ("--db", "OTEL_EVAL_DB"),
        ("--golden", "OTEL_EVAL_GOLDEN"),
        ("--grpc", "OTEL_EVAL_GRPC"),
        ("--http", "OTEL_EVAL_HTTP"),
        ("--trace-quiet", "OTEL_EVAL_TRACE_QUIET"),
        ("--session-idle", "OTEL_EVAL_SESSION_IDLE"),
        ("--auth-token", "OTEL_EVAL_AUTH_TOKEN"),
        ("--tls-cert", "OTEL_EVAL_TLS_CERT"),
        ("--tls-key", "OTEL_EVAL_TLS_KEY"),
        ("--config", "OTEL_EVAL_CONFIG"),
        ("--max-request-bytes", "OTEL_EVAL_MAX_REQUEST_BYTES"),
        ("--queue-spans", "OTEL_EVAL_QUEUE_SPANS"),
        ("--log-level", "OTEL_EVAL_LOG_LEVEL"),
    ]:
        assert flag in text
        assert env in text


def test_the_writers_sqlite_page_cache_comes_from_the_config(tmp_path):
    """SQLite's own 2 MB by default (0); a size in MiB goes to the engine's writer connection
    (random trace ids put every span on a random index page)."""
    from collector.app import engine_settings
    from otel_eval.engine import Engine

    def writer_cache(config):
        engine = Engine(tmp_path / f"{config.sqlite_cache_mib}.db", [], settings=engine_settings(config))
        engine.start()
        try:
            return engine._writer.store.conn.execute("PRAGMA cache_size").fetchone()[0]
        finally:
            engine.close()

    assert writer_cache(load_config([], environ={})) == -2000
    assert writer_cache(load_config(["--sqlite-cache-mib", "64"], environ={})) == -64 * 1024
    assert load_config([], environ={"OTEL_EVAL_SQLITE_CACHE_MIB": "16"}).sqlite_cache_mib == 16
    assert writer_cache(load_config([], environ={"OTEL_EVAL_SQLITE_CACHE_MIB": "16"})) == -16 * 1024
    with pytest.raises(Exception, match="sqlite"):
        load_config(["--sqlite-cache-mib", "-1"], environ={})


def test_the_collector_scores_a_backlog_itself_while_idle_unless_told_not_to(tmp_path):
    from collector.app import engine_settings

    assert engine_settings(load_config([], environ={})).score_when_idle is True
    assert engine_settings(load_config(["--no-idle-scoring"], environ={})).score_when_idle is False
    assert engine_settings(load_config([], environ={"OTEL_EVAL_NO_IDLE_SCORING": "1"})).score_when_idle is False
    config_file = tmp_path / "c.toml"
    config_file.write_text("no_idle_scoring = true\n")
    assert engine_settings(load_config(["--config", str(config_file)], environ={})).score_when_idle is False
    assert "--no-idle-scoring" in collect_parser().format_help()
