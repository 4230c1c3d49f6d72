"""Checks before the collector starts anything: can it write its database, use its TLS files and
bind its ports? Each failure is one :class:`StartupError` line naming the file or address and
the problem (``otel-eval collect`` exits 2 on it), instead of a collector that starts, answers
``/healthz`` and then fails every export, or a traceback, or a C-core log line from grpc.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import ssl
from pathlib import Path

from otel_eval.errors import OtelEvalError

from .config import CollectorConfig, Endpoint

log = logging.getLogger("otel_eval.collector")

#: ``PRAGMA quick_check`` reads every page; above this size the start would take too long for it.
QUICK_CHECK_MAX_BYTES = 2 * 1024**3
#: How long the write probe waits for another process's write lock.
LOCK_WAIT_SECONDS = 5.0


class StartupError(OtelEvalError):
    """The collector cannot start; the message is the whole story (one line, no traceback)."""


def check(config: CollectorConfig) -> None:
    """Every start-up check, cheapest first. Raises :class:`StartupError`."""
    for endpoint, what in ((config.grpc, "gRPC"), (config.http, "HTTP")):
        if endpoint is not None:
            check_port(endpoint, what)
    if config.tls_cert and config.tls_key:
        check_tls(config.tls_cert, config.tls_key)
    check_database(config.db)


def check_port(endpoint: Endpoint, what: str) -> None:
    """Can the collector listen on ``endpoint``? (:func:`collector.grpc_server.check_bindable`,
    its failure as a :class:`StartupError`.)"""
    from .grpc_server import check_bindable

    try:
        check_bindable(endpoint, what)
    except OSError as exc:
        raise StartupError(str(exc)) from None


def check_tls(cert: str, key: str) -> None:
    """The certificate and key can be read and belong together (what both receivers will load)."""
    for path, what, marker in ((cert, "certificate", "CERTIFICATE-----"), (key, "private key", "PRIVATE KEY-----")):
        try:
            text = Path(path).read_bytes()
        except OSError as exc:
            raise StartupError(f"cannot read TLS {what} {path}: {exc.strerror or exc}") from None
        if marker.encode() not in text:
            raise StartupError(f"TLS {what} {path} is not a PEM {what} (no '-----BEGIN ...{marker}' block)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        if reason == "KEY_VALUES_MISMATCH":
            reason = "the key does not belong to the certificate"
        raise StartupError(f"cannot use TLS certificate {cert} with key {key}: {reason}") from None


def check_database(path: str) -> None:
    """The database file can be written by this otel-eval: it is a SQLite file (or does not exist
    yet), its schema is not newer than ours and not someone else's, its pages are sound, and a
    write transaction on it works."""
    problem = database_problem(path)
    if problem:
        raise StartupError(f"database {path}: {problem}")


def database_problem(path: str) -> str | None:
    """What keeps this otel-eval from writing ``path`` (its directory, permissions, schema, a write
    transaction), as one line; None when it can."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        return "is a directory, not a SQLite file"
    if not folder.is_dir():
        return f"directory {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"cannot write in directory {folder} (SQLite creates {target.name}-wal and "
            f"{target.name}-shm next to the database)"
        )
    if not target.exists() or target.stat().st_size == 0:
        return None  # a new database: the engine creates the schema
    if not os.access(target, os.R_OK | os.W_OK):
        return "is read-only for this user (no write permission)"
    try:
        conn = sqlite3.connect(f"file:{target}?mode=rw", uri=True, timeout=LOCK_WAIT_SECONDS, isolation_level=None)
    except sqlite3.Error as exc:
        return f"cannot open: {exc}"
    try:
        return _schema_problem(conn) or _pages_problem(conn, target) or _write_problem(conn)
    except sqlite3.DatabaseError as exc:
        return _explain(exc)
    finally:
        conn.close()


def _schema_problem(conn: sqlite3.Connection) -> str | None:
    from otel_eval.store import SCHEMA_VERSION

    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        return (
            f"schema version {version} is newer than this otel-eval supports ({SCHEMA_VERSION}); "
            "upgrade otel-eval or use another --db"
        )
    if version not in (0, SCHEMA_VERSION):
        return None  # an older otel-eval schema: the store migrates it
    expected = _expected_columns()
    for table, columns in expected.items():
        have = {row[1] for row in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))}
        if have and not columns <= have:
            missing = ", ".join(sorted(columns - have))
            return (
                f"has a {table!r} table otel-eval did not create (missing columns: {missing}); "
                "use another --db for otel-eval"
            )
    return None


def _expected_columns() -> dict[str, set[str]]:
    """Columns of every table, from the store's own schema built in memory (not a copy of it)."""
    from otel_eval.store import Store

    store = Store(":memory:")
    try:
        tables = [r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: {row[1] for row in store.conn.execute("SELECT * FROM pragma_table_info(?)", (t,))} for t in tables}
    finally:
        store.close()


def _pages_problem(conn: sqlite3.Connection, target: Path) -> str | None:
    size = target.stat().st_size
    if size > QUICK_CHECK_MAX_BYTES:
        log.info("database %s is %d MiB: skipping the page check at start", target, size // 2**20)
        return None
    rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    if rows and rows[0][0] != "ok":
        found = [
            line.strip() for r in rows for line in str(r[0]).splitlines() if line.strip() and not line.startswith("***")
        ]
        return f"is corrupted ({'; '.join(found)}); restore it from a backup or use another --db"
    return None


def _write_problem(conn: sqlite3.Connection) -> str | None:
    """A real write, rolled back: what the first export would do."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE otel_eval_preflight (probe TEXT)")
            conn.execute("INSERT INTO otel_eval_preflight VALUES ('probe')")
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'spans'").fetchone():
                conn.execute(
                    "INSERT OR IGNORE INTO spans (trace_id, span_id) VALUES (?, ?)", ("otel-eval-preflight", "probe")
                )
        finally:
            conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        return _explain(exc)
    return None


def _explain(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"is locked by another process for more than {LOCK_WAIT_SECONDS:g} s ({text})"
    if "readonly" in text or "read-only" in text:
        return f"cannot be written ({text})"
    if "not a database" in text:
        return "is not a SQLite database"
    # otel-eval writes only UTF-8 text, so text SQLite cannot decode is damage, not data.
    if "malformed" in text or "corrupt" in text or "decode to UTF-8" in text:
        return f"is corrupted ({text}); restore it from a backup or use another --db"
    return text
