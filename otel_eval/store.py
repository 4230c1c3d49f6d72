"""SQLite storage: schema, migrations, idempotent writes and the queries the rest needs.

sqlite-utils creates and migrates the schema and serves the engine's reads (the views read through
:mod:`otel_eval.read`, on :func:`connect_read_only`); the ingest path writes
spans, traces and sessions with multi-row ``INSERT`` statements (:class:`RowsInsert`: faster than
``insert_all``, and unlike ``executemany`` they do not hand the GIL back once a row).
Every statement takes its values as parameters. The file is plain SQLite in WAL mode, so
Datasette, ``sqlite3`` or any BI tool can read it while the collector writes.
"""

from __future__ import annotations

import hashlib
import json
import operator
import sqlite3
import threading
import time
from contextlib import contextmanager
from itertools import chain, groupby
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

import sqlite_utils
from pydantic import TypeAdapter

from . import json_text
from .errors import InputError
from .models.agent_data import AgentData
from .models.evalset import EvalCase, EvalSet
from .models.results import CriterionResult, EvalCaseResult, verdict_of
from .span_rows import TRACE_ID, SpanRow
from .spans import LogEvent, SpanRecord, from_json

SCHEMA_VERSION = 6
AGENT_DATA_FIELDS = list(AgentData.model_fields)
_JSON_FIELDS = {"expected_tool_call", "tools_available", "tool_calls", "parameters_passed", "tool_call_results",
                "retrieval_query", "retrieved_context"}

# Session states: open (receiving), ended (waiting to be scored), scored.
OPEN, ENDED, SCORED = "open", "ended", "scored"


def _json(value: Any) -> Optional[str]:
    if value is None:
        return None
    if not value and type(value) in (list, dict):  # most AgentData list fields are empty
        return "[]" if type(value) is list else "{}"
    return json_text.dumps(value)


class RowsInsert:
    """One ``INSERT`` for many rows: ``head VALUES row, row, … tail``.

    ``executemany`` steps once a row, and Python's sqlite3 hands the GIL back around every step.
    When another thread runs Python on the other core (the agent's loop, in-process; gRPC
    threads decoding, in the collector) it takes the GIL at each hand-back, and the writer waits
    up to a switch interval (5 ms) to get it back: beside such a thread the writer's ingest took
    4.5 ms of wall time a span (``benchmarks.writer --busy``), against 0.22 ms this way. Here the
    rows go in batches whose sizes are powers of two (at most :data:`ROWS_PER_STATEMENT`), so a
    handful of statement texts, kept prepared by sqlite3's statement cache, serve any count.
    Rows are inserted in order, so duplicates and upserts resolve as one by one."""

    def __init__(self, head: str, row: str, tail: str = ""):
        self.head, self.row, self.tail = head, row, tail
        self.width = row.count("?")
        self._texts: dict[int, str] = {}

    def text(self, rows: int) -> str:
        text = self._texts.get(rows)
        if text is None:
            text = self._texts[rows] = f"{self.head} VALUES {','.join([self.row] * rows)}{self.tail}"
        return text

    def run(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> int:
        """Insert ``rows``; returns how many rows the statements changed (``rowcount``)."""
        most = _rows_per_statement(conn, self.width)
        changed = 0
        at, count = 0, len(rows)
        while at < count:
            size = min(most, 1 << ((count - at).bit_length() - 1))  # the largest power of two left
            changed += conn.execute(self.text(size), list(chain.from_iterable(rows[at:at + size]))).rowcount
            at += size
        return changed


#: Rows one :class:`RowsInsert` statement takes at most (a power of two): enough that a writer
#: round of spans is a few statements, few enough that binding one stays a short GIL hold.
ROWS_PER_STATEMENT = 2048


def _max_parameters(conn: sqlite3.Connection) -> int:
    try:
        return conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)  # Python 3.11+
    except AttributeError:  # SQLite's compiled-in default: 32,766 since 3.32, 999 before
        return 32766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999


def _rows_per_statement(conn: sqlite3.Connection, width: int) -> int:
    fits = max(1, min(ROWS_PER_STATEMENT, _max_parameters(conn) // max(1, width)))
    return 1 << (fits.bit_length() - 1)


@dataclass
class EvaluationRows:
    """One evaluation as the SQL parameters the writer executes, built where the session is
    scored. Only plain values (dicts, tuples, strings, numbers): a score worker process pickles
    these for the collector's one writer, which then unpickles few objects and only executes.

    ``evaluation`` maps :data:`EVALUATION_COLUMNS` to values; ``criteria`` holds one
    :data:`CRITERION_COLUMNS` tuple per criterion, in the result's order."""

    evaluation: dict[str, Any]
    criteria: list[tuple]
    session_fields: dict[str, Any] = field(default_factory=dict)
    """``sessions`` columns the evaluation fills in (turns, tokens, ...)."""
    agent_params: AgentDataParams = field(default_factory=lambda: AgentDataParams())
    """The session's ``agent_data`` rows (:func:`agent_data_params`)."""
    span_types: list[tuple[str, str, str]] = field(default_factory=list)
    """``(trace_id, span_id, span_type)`` of spans whose stored type changed."""
    expected_status: str = ENDED
    """The status flips to scored only if the session is still this one when committed."""
    judge_job: Optional[dict[str, Any]] = None
    """The judge work this evaluation waits for (:mod:`otel_eval.judging.jobs`), stored with it in
    ``judge_jobs``; None when no judge criterion is pending."""

    @classmethod
    def build(cls, result: EvalCaseResult, *, eval_set_id: Optional[str], matched_by: str, match_score: float,
              config_hash: str, agent_version: Optional[str], query: Optional[str], columns: dict[str, Any],
              details: dict[str, Any], session_fields: Optional[dict[str, Any]] = None,
              expected_status: str = ENDED, agent_params: Optional["AgentDataParams"] = None,
              span_types: Sequence[tuple[str, str, str]] = (),
              judge_job: Optional[dict[str, Any]] = None) -> "EvaluationRows":
        pending = [c.criterion for c in result.criterion_results if c.skipped and c.details.get("judge") == "pending"]
        if pending:
            details = {**details, "judge": {"pending": pending}}
        evaluation = {
            "case_id": result.eval_id or None, "eval_set_id": eval_set_id, "matched_by": matched_by,
            "match_score": match_score, "passed": int(result.passed), "verdict": result.verdict,
            # A not_evaluated result has no score: NULL, never a 0.0 that reads as a failure.
            "score": result.score if result.evaluated else None,
            "config_hash": config_hash, "agent_version": agent_version, "query": query,
            **{name: columns.get(name) for name in _EVALUATION_COLUMN_FIELDS},
            "error": result.error, "details": _json(details), "judge_pending": len(pending),
        }
        # Likewise a skipped criterion's score is NULL.
        criteria = [(c.criterion, None if c.skipped else c.score, int(c.passed), c.threshold, int(c.skipped),
                     c.error, _json(c.details)) for c in result.criterion_results]
        return cls(evaluation, criteria, dict(session_fields or {}), agent_params or AgentDataParams(),
                   list(span_types), expected_status, judge_job if pending else None)


#: Columns of ``evaluations`` filled from the evaluation's ``columns`` (the flat, queryable facts).
_EVALUATION_COLUMN_FIELDS = ("expected_tool", "actual_tool", "expected_table", "actual_table", "sql_generated")
EVALUATION_COLUMNS = ("case_id", "eval_set_id", "matched_by", "match_score", "passed", "verdict", "score",
                      "config_hash", "agent_version", "query", *_EVALUATION_COLUMN_FIELDS, "error", "details",
                      "judge_pending")
CRITERION_COLUMNS = ("criterion", "score", "passed", "threshold", "skipped", "error", "details")
#: Positional parameters: ``session_id, revision, created_at, *EVALUATION_COLUMNS values`` (named
#: ones cost the sqlite3 module a string built and looked up per parameter).
_INSERT_EVALUATION = (
    f"INSERT INTO evaluations (session_id, revision, created_at, superseded, {', '.join(EVALUATION_COLUMNS)})"
    f" VALUES (?, ?, ?, 0, {', '.join('?' * len(EVALUATION_COLUMNS))})")
_evaluation_values = operator.itemgetter(*EVALUATION_COLUMNS)
_INSERT_CRITERION = (
    f"INSERT INTO criterion_results (evaluation_id, {', '.join(CRITERION_COLUMNS)})"
    f" VALUES (?, {', '.join('?' * len(CRITERION_COLUMNS))})")


@dataclass
class SessionRow:
    session_id: str
    status: str
    keyed_by: str
    first_received_ns: int
    last_received_ns: int
    end_requested: bool
    revision: int


#: AgentData text fields that repeat on row after row (every LLM span of an agent carries the same
#: system prompt and tool schemas): ``agent_data_rows`` holds a digest, ``agent_texts`` the text once.
SHARED_TEXT_FIELDS = ("system_prompt", "tools_available")
_AGENT_DATA_COLUMNS = ["trace_id", "span_id", "session_id", "level", *AGENT_DATA_FIELDS]
_AGENT_ROW_COLUMNS = [f"{n}_digest" if n in SHARED_TEXT_FIELDS else n for n in _AGENT_DATA_COLUMNS]


def text_digest(text: str) -> bytes:
    """The key of a shared text in ``agent_texts`` (128-bit BLAKE2b of its UTF-8)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass
class AgentDataParams:
    """AgentData rows as SQL parameters, and the shared texts their digests stand for."""

    rows: list[tuple] = field(default_factory=list)
    """One tuple per row: the ``agent_data_rows`` columns but the ``null_columns``."""
    texts: list[tuple[bytes, str]] = field(default_factory=list)
    """``(digest, text)``, each distinct text once."""
    null_columns: tuple[int, ...] = ()
    """Positions (in the table's columns) that every row leaves NULL, left out of ``rows``: the
    statement writes them as NULL literals (:func:`_agent_data_upsert`). Python's sqlite3 binds
    None through an adapter lookup, about 0.3 µs, six times an int, and most sessions leave the
    same few AgentData fields (ground_truth, retrieval_query, ...) empty on every row: about 50
    of a session's 70 None parameters."""

    def full_rows(self) -> list[tuple]:
        """``rows`` with their NULL columns put back: every column, in the table's order."""
        if not self.null_columns:
            return list(self.rows)
        kept = [at for at in range(len(_AGENT_ROW_COLUMNS)) if at not in self.null_columns]
        full = []
        for row in self.rows:
            values: list[Any] = [None] * len(_AGENT_ROW_COLUMNS)
            for at, value in zip(kept, row):
                values[at] = value
            full.append(tuple(values))
        return full

    def __add__(self, other: "AgentDataParams") -> "AgentDataParams":
        return _without_null_columns(self.full_rows() + other.full_rows(), list(dict(self.texts + other.texts).items()))


def _without_null_columns(rows: Sequence[Sequence[Any]], texts: list[tuple[bytes, str]]) -> AgentDataParams:
    """Full ``agent_data_rows`` parameter rows as :class:`AgentDataParams`, the columns that no
    row sets left out (see ``null_columns``)."""
    if not rows:
        return AgentDataParams([], texts)
    # A column is looked at down to its first value that is set: most are set on the first row.
    # (Transposing the rows to count each column's Nones cost four times as much.)
    null_columns = tuple(at for at in range(len(_AGENT_ROW_COLUMNS)) if _all_none(rows, at))
    return AgentDataParams(list(map(_kept_values(null_columns), rows)), texts, null_columns)


_agent_data_upserts: dict[tuple[int, ...], RowsInsert] = {}


def _agent_data_upsert(null_columns: tuple[int, ...]) -> RowsInsert:
    """The ``agent_data_rows`` upsert whose VALUES hold NULL at ``null_columns`` and a parameter
    everywhere else, for one row (``.text(1)``) or many. On conflict every column is set from the
    new row, NULLs too, so a field that a re-scoring no longer finds is cleared."""
    statement = _agent_data_upserts.get(null_columns)
    if statement is None:
        values = ", ".join("NULL" if at in null_columns else "?" for at in range(len(_AGENT_ROW_COLUMNS)))
        statement = RowsInsert(f"INSERT INTO agent_data_rows ({', '.join(_AGENT_ROW_COLUMNS)})", f"({values})",
                               " ON CONFLICT(trace_id, span_id, level) DO UPDATE SET "
                               + ", ".join(f"{n} = excluded.{n}" for n in _AGENT_ROW_COLUMNS[2:]))
        if len(_agent_data_upserts) >= 256:  # a few shapes in practice; never an unbounded cache
            _agent_data_upserts.clear()
        _agent_data_upserts[null_columns] = statement
    return statement


def agent_data_params(rows: Iterable[tuple[str, str, Optional[str], str, AgentData]]) -> AgentDataParams:
    """``(trace_id, span_id, session_id, level, data)`` rows as ``agent_data_rows`` parameters: list
    and dict fields as JSON text, shared texts as digests. Pure, so a worker process can do it and
    the writer only executes."""
    full: list[list[Any]] = []
    texts: dict[bytes, str] = {}
    blobs: dict[bytes, bytearray] = {}
    for trace_id, span_id, session_id, level, data in rows:
        # Text fields go in as they are; each non-empty structured field is dumped by pydantic's
        # serializer for its type (JSON mode, straight to text; ``to_json`` is what
        # ``TypeAdapter.dump_json`` calls, less its wrapper).
        values: list[Any] = [trace_id, span_id, session_id, level, *_field_values(data.__dict__)]
        for at, to_json in _DUMPED_AT:
            value = values[at]
            if value:
                values[at] = to_json(value).decode()
            elif value is not None:  # an empty list or dict (None stays None)
                values[at] = _json(value)
        # The row holds each digest as a bytearray: the one blob type Python's sqlite3 binds
        # without an adapter lookup (0.1 µs; bytes take 0.4). ``texts`` keeps bytes (hashable);
        # rows share one bytearray per digest, so the pickle to the writer holds it once.
        tools, digest = _tools_json(values[_TOOLS_AT])
        texts[digest] = tools
        values[_TOOLS_AT] = blobs.get(digest) or blobs.setdefault(digest, bytearray(digest))
        prompt = values[_PROMPT_AT]
        if prompt is not None:
            digest = _prompt_digest(prompt)
            texts[digest] = prompt
            values[_PROMPT_AT] = blobs.get(digest) or blobs.setdefault(digest, bytearray(digest))
        values[_EXIT_AT] = int(bool(values[_EXIT_AT]))
        full.append(values)
    return _without_null_columns(full, list(texts.items()))


def _all_none(rows: Sequence[Sequence[Any]], at: int) -> bool:
    for row in rows:
        if row[at] is not None:
            return False
    return True


_prompt_digests: dict[str, bytes] = {}
_CACHED_PROMPT = 16 * 1024
_REMEMBERED_PROMPTS = 256
"""Prompts up to :data:`_CACHED_PROMPT` characters have their digests remembered, 256 of them at
most (~4 MiB; an agent fleet has a few prompts, and prompts that differ per session only make
the dict start over)."""


def _prompt_digest(prompt: str) -> bytes:
    """:func:`text_digest` of a system prompt. Every LLM span of an agent and its trace's row carry
    the same prompt, each span its own copy of the text: a dict lookup (hashing the text) costs a
    fifth of the BLAKE2b digest."""
    digest = _prompt_digests.get(prompt)
    if digest is None:
        digest = text_digest(prompt)
        if len(prompt) <= _CACHED_PROMPT:
            if len(_prompt_digests) >= _REMEMBERED_PROMPTS:
                _prompt_digests.clear()
            _prompt_digests[prompt] = digest
    return digest


_kept_getters: dict[tuple[int, ...], Callable[[Sequence[Any]], tuple]] = {}


def _kept_values(null_columns: tuple[int, ...]) -> Callable[[Sequence[Any]], tuple]:
    """A row's values but those at ``null_columns``, as a tuple (an ``itemgetter``, one per shape)."""
    getter = _kept_getters.get(null_columns)
    if getter is None:
        kept = [at for at in range(len(_AGENT_ROW_COLUMNS)) if at not in null_columns]
        # (The tools digest and the exit flag are never None: two positions at least are kept,
        # so the getter returns a tuple, never a bare value.)
        getter = operator.itemgetter(*kept)
        if len(_kept_getters) >= 256:  # a few shapes in practice, as for the statements
            _kept_getters.clear()
        _kept_getters[null_columns] = getter
    return getter


_DUMPED_FIELDS = _JSON_FIELDS - {"tools_available"}
_field_values = operator.itemgetter(*AGENT_DATA_FIELDS)
_DUMPED_AT = [(_AGENT_DATA_COLUMNS.index(name), TypeAdapter(AgentData.model_fields[name].annotation).serializer.to_json)
              for name in AGENT_DATA_FIELDS if name in _DUMPED_FIELDS]
_TOOLS_AT = _AGENT_DATA_COLUMNS.index("tools_available")
_PROMPT_AT = _AGENT_DATA_COLUMNS.index("system_prompt")
_EXIT_AT = _AGENT_DATA_COLUMNS.index("agent_exit")
_tools_encoded: dict[tuple[int, ...], tuple[list[Any], str, bytes]] = {}
_NO_TOOLS = ("[]", text_digest("[]"))


def _tools_json(tools: list[Any]) -> tuple[str, bytes]:
    """``tools_available`` as JSON text and its digest. Every LLM span of an agent lists the same
    few schemas (the conventions parse each definition once and hand out the same objects), so
    both are kept per list of schema objects; the cache holds the objects, so their ids stay theirs."""
    if not tools:
        return _NO_TOOLS
    key = tuple(map(id, tools))
    found = _tools_encoded.get(key)
    if found is None:
        if len(_tools_encoded) >= 1024:
            _tools_encoded.clear()
        text = _json([tool.model_dump(mode="json") for tool in tools]) or "[]"
        found = _tools_encoded[key] = (list(tools), text, text_digest(text))
    return found[1], found[2]


#: Page size of new database files. Every page a commit changes is one WAL frame (two write
#: calls) and, later, one page the checkpoint copies back: a span's row (~3 KiB of raw JSON) and
#: its index entries, or a session's AgentData rows, cost fewer frames in 16 KiB pages than in
#: SQLite's default 4 KiB. Measured with benchmarks/writer.py: the writer's CPU per ingested span
#: -10%, the checkpointer's -40%, per committed evaluation -4%.
PAGE_SIZE = 16384

#: Digests a Store remembers as stored: far more distinct prompts and tool lists than an agent
#: fleet has, in a few MiB at most (then it starts over).
_STORED_TEXTS_LIMIT = 65536


class Store:
    """One SQLite file. Not shared across threads: open one Store per thread."""

    def __init__(self, path: Union[str, Path], timeout: float = 30.0, read_only: bool = False,
                 cache_mib: Optional[int] = None):
        """``cache_mib``: SQLite's page cache for this connection, in MiB (None: SQLite's default, 2 MB)."""
        self.path = str(path)
        self.timeout = timeout
        """Seconds a statement waits for a lock another connection holds (``busy_timeout``)."""
        self.read_only = read_only
        if read_only:
            # A score worker's connection: SQLite itself refuses any write through it, so a worker
            # (even one whose engine died) can never store an evaluation behind the writer's back.
            self.conn = connect_read_only(self.path, timeout)
        else:
            self.conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            # Takes effect only on a file that has no pages yet (a new database); an existing one
            # keeps its page size. See PAGE_SIZE.
            self.conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        if cache_mib:
            self.conn.execute(f"PRAGMA cache_size={-int(cache_mib) * 1024}")  # negative: KiB, not pages
        self.conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.db = sqlite_utils.Database(self.conn)
        self._lock = threading.RLock()
        self._stored_texts: set[bytes] = set()
        """Digests of ``agent_texts`` rows this connection inserted. Any rollback empties it, so
        it only holds texts that are committed or about to be: they need not be sent again."""
        if not read_only:
            self._migrate()

    @classmethod
    def open_read_only(cls, path: Union[str, Path], timeout: float = 30.0) -> "Store":
        """A connection that can only read (``mode=ro``); the database must already exist."""
        return cls(path, timeout=timeout, read_only=True)

    def close(self) -> None:
        self.conn.close()

    # --- schema ----------------------------------------------------------------------------

    def _migrate(self) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path}: database schema version {version} is newer than this otel-eval ({SCHEMA_VERSION})"
            )
        if version == SCHEMA_VERSION:
            return
        with self.transaction():
            if version < 1:
                self._create_v1()
            if version < 2:
                self._migrate_v2()
            if version < 3:
                self._migrate_v3_golden()
            if version < 4:
                self._migrate_v4_shared_texts()
            if version < 5:
                self._migrate_v5_rows_by_trace()
            if version < 6:
                self._migrate_v6_judge()
            self._create_views()
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _create_v1(self) -> None:
        db = self.db
        db["spans"].create(
            {
                "trace_id": str, "span_id": str, "parent_span_id": str, "session_id": str, "name": str,
                "kind": str, "status": str, "start_ns": int, "end_ns": int, "received_ns": int,
                "convention": str, "span_type": str, "raw": str,
            },
            pk=("trace_id", "span_id"), if_not_exists=True,
        )
        db["spans"].create_index(["session_id"], if_not_exists=True)
        columns: dict[str, Any] = {"id": int, "trace_id": str, "span_id": str, "session_id": str, "level": str}
        for name in AGENT_DATA_FIELDS:
            columns[name] = int if name == "agent_exit" else str
        db["agent_data"].create(columns, pk="id", if_not_exists=True)
        db["agent_data"].create_index(["trace_id", "span_id", "level"], unique=True, if_not_exists=True)
        db["agent_data"].create_index(["session_id"], if_not_exists=True)
        db["log_events"].create(
            {"trace_id": str, "span_id": str, "time_ns": int, "event_name": str, "body": str, "attributes": str,
             "received_ns": int},
            pk=("trace_id", "span_id", "time_ns", "event_name"), if_not_exists=True,
        )
        db["traces"].create(
            {"trace_id": str, "session_id": str, "root_span_id": str, "start_ns": int, "end_ns": int,
             "span_count": int, "first_received_ns": int, "last_received_ns": int},
            pk="trace_id", if_not_exists=True,
        )
        db["traces"].create_index(["session_id"], if_not_exists=True)
        db["sessions"].create(
            {"session_id": str, "status": str, "keyed_by": str, "first_received_ns": int,
             "last_received_ns": int, "end_requested": int, "ended_ns": int, "end_reason": str,
             "revision": int, "span_count": int, "trace_count": int, "user_id": str, "agent_version": str,
             "service_name": str, "query": str},
            pk="session_id", if_not_exists=True,
            defaults={"status": OPEN, "end_requested": 0, "revision": 0, "span_count": 0, "trace_count": 0},
        )
        db["sessions"].create_index(["status"], if_not_exists=True)
        db["golden_cases"].create(
            {"eval_set_id": str, "eval_id": str, "name": str, "query": str, "source": str, "file_hash": str,
             "case_json": str, "loaded_at": str},
            pk=("eval_set_id", "eval_id"), if_not_exists=True,
        )
        db["evaluations"].create(
            {"id": int, "session_id": str, "revision": int, "case_id": str, "eval_set_id": str,
             "matched_by": str, "match_score": float, "passed": int, "score": float, "created_at": str,
             "superseded": int, "config_hash": str, "agent_version": str, "query": str,
             "expected_tool": str, "actual_tool": str, "expected_table": str, "actual_table": str,
             "sql_generated": int, "error": str, "details": str},
            pk="id", if_not_exists=True, defaults={"superseded": 0},
        )
        db["evaluations"].create_index(["session_id", "revision"], unique=True, if_not_exists=True)
        db["evaluations"].create_index(["case_id"], if_not_exists=True)
        db["criterion_results"].create(
            {"id": int, "evaluation_id": int, "criterion": str, "score": float, "passed": int,
             "threshold": float, "skipped": int, "error": str, "details": str},
            pk="id", foreign_keys=[("evaluation_id", "evaluations", "id")], if_not_exists=True,
        )
        db["criterion_results"].create_index(["evaluation_id"], if_not_exists=True)

    def _migrate_v2(self) -> None:
        """The verdict column (passed | failed | not_evaluated). Stored evaluations get the verdict
        their stored criteria give under the current rule, so a session whose every criterion was
        skipped, once stored as passed, becomes not_evaluated; ``passed`` follows the verdict.
        Skipped criteria and not-evaluated sessions lose their placeholder 0.0 score (NULL)."""
        self.conn.execute("ALTER TABLE evaluations ADD COLUMN verdict TEXT")
        rows = self.conn.execute(
            "SELECT e.id, e.error, c.passed, c.skipped, c.error, c.details FROM evaluations e"
            " LEFT JOIN criterion_results c ON c.evaluation_id = e.id ORDER BY e.id, c.id")
        updates = []
        for evaluation_id, group in groupby(rows, key=lambda r: r[0]):
            members = list(group)
            criteria = [CriterionResult(criterion="", score=0.0, threshold=0.0, passed=bool(passed),
                                        skipped=bool(skipped), error=error, details=_health_details(details))
                        for _, _, passed, skipped, error, details in members if skipped is not None]
            verdict = "failed" if members[0][1] else verdict_of(criteria)
            updates.append((verdict, int(verdict == "passed"), evaluation_id))
        self.conn.executemany("UPDATE evaluations SET verdict = ?, passed = ? WHERE id = ?", updates)
        self.conn.execute("UPDATE evaluations SET score = NULL WHERE verdict = 'not_evaluated'")
        self.conn.execute("UPDATE criterion_results SET score = NULL WHERE skipped = 1")
        self.db["evaluations"].create_index(["verdict"], if_not_exists=True)

    def _migrate_v3_golden(self) -> None:
        """Golden cases are keyed by (eval_set_id, source, eval_id), as golden sets are by
        (eval_set_id, source): two files whose sets share an id (two ``cases.json`` in different
        folders, loaded in different runs) no longer overwrite each other's rows. ``golden_sets``
        (until now created on first use) exists from here on, with the set's own ``criteria``."""
        self.conn.execute("ALTER TABLE golden_cases RENAME TO golden_cases_v2")
        self.db["golden_cases"].create(
            {"eval_set_id": str, "source": str, "eval_id": str, "name": str, "query": str, "file_hash": str,
             "case_json": str, "loaded_at": str},
            pk=("eval_set_id", "source", "eval_id"))
        self.conn.execute(
            "INSERT INTO golden_cases (eval_set_id, source, eval_id, name, query, file_hash, case_json, loaded_at)"
            " SELECT eval_set_id, COALESCE(source, ''), eval_id, name, query, file_hash, case_json, loaded_at"
            " FROM golden_cases_v2 ORDER BY rowid")
        self.conn.execute("DROP TABLE golden_cases_v2")
        if self.db["golden_sets"].exists():
            self.conn.execute("ALTER TABLE golden_sets ADD COLUMN criteria TEXT")
        else:
            self.db["golden_sets"].create(
                {"eval_set_id": str, "source": str, "name": str, "description": str, "criteria": str,
                 "metadata": str, "saved_at": str},
                pk=("eval_set_id", "source"))

    def _migrate_v4_shared_texts(self) -> None:
        """AgentData rows keep a digest of their system prompt and tool schemas, and
        ``agent_texts`` each distinct text once: stored on every LLM span's row they were about
        two thirds of the bytes a scored session writes. ``agent_data`` becomes a view with the
        columns it had, so every query of it (Datasette's too) reads the same."""
        conn = self.conn
        conn.create_function("otel_eval_digest", 1, lambda text: None if text is None else text_digest(text),
                             deterministic=True)
        conn.execute("CREATE TABLE agent_texts (digest BLOB PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID")
        columns = ", ".join(f"[{c}_digest] BLOB" if c in SHARED_TEXT_FIELDS else f"[{c}] {_column_type(c)}"
                            for c in _AGENT_DATA_COLUMNS)
        conn.execute(f"CREATE TABLE agent_data_rows ([id] INTEGER PRIMARY KEY, {columns})")
        for name in SHARED_TEXT_FIELDS:
            conn.execute(f"INSERT OR IGNORE INTO agent_texts (digest, text) SELECT otel_eval_digest({name}), {name}"
                         f" FROM agent_data WHERE {name} IS NOT NULL")
        sources = ", ".join(f"otel_eval_digest({c})" if c in SHARED_TEXT_FIELDS else c for c in _AGENT_DATA_COLUMNS)
        conn.execute(f"INSERT INTO agent_data_rows (id, {', '.join(_AGENT_ROW_COLUMNS)})"
                     f" SELECT id, {sources} FROM agent_data ORDER BY id")
        conn.execute("DROP TABLE agent_data")
        conn.execute("CREATE UNIQUE INDEX idx_agent_data_rows_trace_id_span_id_level"
                     " ON agent_data_rows (trace_id, span_id, level)")
        conn.execute("CREATE INDEX idx_agent_data_rows_session_id ON agent_data_rows (session_id)")

    def _migrate_v5_rows_by_trace(self) -> None:
        """``spans`` and ``agent_data_rows`` lose their ``session_id`` indexes: a session's rows
        are found through ``traces`` (``session_id`` → ``trace_id``, the leading column of the
        key each of them needs anyway). Session ids are as random as trace ids, so each index
        cost every session one more random leaf page per batch: on a database of a few thousand
        sessions a fifth of the writer's time per evaluation, and with random ids a tenth of its
        time per span (benchmarks/README.md, issue 11, ninth pass)."""
        self.conn.execute("DROP INDEX IF EXISTS idx_agent_data_rows_session_id")
        self.conn.execute("DROP INDEX IF EXISTS idx_spans_session_id")

    def _migrate_v6_judge(self) -> None:
        """The judge pool's state (issue 30). ``evaluations.judge_pending``: judge criteria this
        revision waits for (0: complete; stored evaluations are complete). ``judge_jobs``: the
        judge work of each pending revision (keyed by its evaluation id), kept until answered so a
        restart resumes it; ``outcome_evaluation_id`` is the revision that recorded the outcome.
        ``judge_usage``: calls and tokens spent, for the spend caps across restarts."""
        self.conn.execute("ALTER TABLE evaluations ADD COLUMN judge_pending INTEGER NOT NULL DEFAULT 0")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS judge_jobs (evaluation_id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,"
            " status TEXT NOT NULL, request TEXT NOT NULL, created_at REAL NOT NULL, finished_at REAL,"
            " outcome_evaluation_id INTEGER, backfilled INTEGER NOT NULL DEFAULT 0)")
        self.conn.execute("CREATE INDEX IF NOT EXISTS idx_judge_jobs_status ON judge_jobs (status)")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS judge_usage (id INTEGER PRIMARY KEY, at REAL NOT NULL, criterion TEXT NOT NULL,"
            " calls INTEGER NOT NULL, tokens INTEGER NOT NULL)")
        self.conn.execute("CREATE INDEX IF NOT EXISTS idx_judge_usage_at ON judge_usage (at)")

    def _create_views(self) -> None:
        """The views at this schema version, replacing older definitions."""
        db = self.db
        for view in ("trajectory_evaluations", "daily_pass_rate", "agent_data"):
            self.conn.execute(f"DROP VIEW IF EXISTS {view}")
        selected = ", ".join(f"{c}_text.text AS {c}" if c in SHARED_TEXT_FIELDS else f"r.{c}"
                             for c in _AGENT_DATA_COLUMNS)
        joins = " ".join(f"LEFT JOIN agent_texts {c}_text ON {c}_text.digest = r.{c}_digest"
                         for c in SHARED_TEXT_FIELDS)
        self.conn.execute(f"CREATE VIEW agent_data AS SELECT r.id, {selected} FROM agent_data_rows r {joins}")
        # Deleting through the view (a user pruning rows) deletes the row; its shared texts stay.
        self.conn.execute("CREATE TRIGGER agent_data_delete INSTEAD OF DELETE ON agent_data"
                          " BEGIN DELETE FROM agent_data_rows WHERE id = OLD.id; END")
        db.create_view(
            "trajectory_evaluations",
            """
            SELECT e.id AS evaluation_id, e.session_id, e.query AS test_query,
                   e.expected_tool, e.actual_tool, e.expected_table, e.actual_table, e.sql_generated,
                   (SELECT c.passed FROM criterion_results c
                     WHERE c.evaluation_id = e.id AND c.criterion = 'tool_selection' AND c.skipped = 0)
                     AS tool_selection_correct,
                   (SELECT c.passed FROM criterion_results c
                     WHERE c.evaluation_id = e.id AND c.criterion = 'table_usage' AND c.skipped = 0)
                     AS table_usage_correct,
                   (SELECT c.passed FROM criterion_results c
                     WHERE c.evaluation_id = e.id AND c.criterion = 'sql_generation' AND c.skipped = 0)
                     AS sql_generation_correct,
                   e.created_at AS evaluation_timestamp, e.config_hash AS evaluator_config, e.verdict
              FROM evaluations e
             WHERE e.superseded = 0 AND e.case_id IS NOT NULL
            """,
        )
        # not_evaluated sessions are counted apart, outside the pass rate and the mean score.
        db.create_view(
            "daily_pass_rate",
            """
            SELECT substr(created_at, 1, 10) AS day, case_id, agent_version,
                   COUNT(*) AS evaluations, SUM(verdict = 'passed') AS passed, SUM(verdict = 'failed') AS failed,
                   SUM(verdict = 'not_evaluated') AS not_evaluated,
                   ROUND(1.0 * SUM(verdict = 'passed') / NULLIF(SUM(verdict != 'not_evaluated'), 0), 4) AS pass_rate,
                   ROUND(AVG(score), 4) AS avg_score
              FROM evaluations
             WHERE superseded = 0 AND case_id IS NOT NULL
             GROUP BY day, case_id, agent_version
            """,
        )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; inside another one it is a savepoint, so a failing part (one
        client's batch, one evaluation) rolls back alone and the rest of the group still commits."""
        with self._lock:
            if self.conn.in_transaction:
                self.conn.execute("SAVEPOINT part")
                try:
                    yield self.conn
                except BaseException:
                    # SQLite ends the whole transaction itself on some errors (disk full, I/O):
                    # then there is no savepoint to return to, and the caller must see that.
                    self._stored_texts.clear()  # which of them were rolled back is not tracked
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK TO part")
                        self.conn.execute("RELEASE part")
                    raise
                else:
                    self.conn.execute("RELEASE part")
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                self._stored_texts.clear()
                if self.conn.in_transaction:  # a failed COMMIT (disk full) leaves it open
                    self.conn.execute("ROLLBACK")
                raise

    # --- ingest (called inside a transaction) ----------------------------------------------

    def insert_spans(self, rows: Sequence[tuple[SpanRow, str]], received_ns: int) -> list[bool]:
        """Insert spans, ignoring ones already stored; returns, per row, whether it was new.

        ``rows`` are ``(span_row, session_id)`` (:func:`otel_eval.span_rows.span_row`).
        Idempotence on (trace_id, span_id) is what makes a retried export harmless.
        """
        # One query for what is already stored, multi-row INSERTs for the rest (RowsInsert).
        stored = self._stored_span_keys({row[TRACE_ID] for row, _ in rows})
        fresh: list[bool] = []
        params = []
        for row, session_id in rows:
            key = row[:2]  # (trace_id, span_id)
            if key in stored:
                fresh.append(False)
                continue
            stored.add(key)  # the same span twice in one batch is stored once
            fresh.append(True)
            # The row's values in the order of _INSERT_SPANS, with the two the writer decides.
            params.append((*row[:3], session_id, *row[3:8], received_ns, *row[8:11]))
        _INSERT_SPANS.run(self.conn, params)
        return fresh

    def _stored_span_keys(self, trace_ids: Iterable[str]) -> set[tuple[str, str]]:
        return set(map(tuple, _pairs(self.conn, "trace_id, span_id", "spans", "trace_id", trace_ids)))

    def trace_sessions(self, trace_ids: Iterable[str]) -> dict[str, str]:
        """trace id → session id of the given traces that are stored."""
        return dict(_pairs(self.conn, "trace_id, session_id", "traces", "trace_id", trace_ids))

    def touch_traces(self, rows: Sequence[tuple[str, str, Optional[str], int, int, int]], received_ns: int) -> None:
        """:meth:`touch_trace` for many ``(trace_id, session_id, root_span_id, start_ns, end_ns, spans)``."""
        _TOUCH_TRACES.run(self.conn, [(*row, received_ns, received_ns) for row in rows])

    def touch_sessions(self, rows: Sequence[tuple[str, str, int, bool]], received_ns: int) -> dict[str, str]:
        """:meth:`touch_session` for many ``(session_id, keyed_by, spans, end_requested)``; returns
        the previous status of the sessions that existed."""
        previous = dict(_pairs(self.conn, "session_id, status", "sessions", "session_id", [row[0] for row in rows]))
        # New and known sessions alike in one upsert: a known one keeps its keyed_by and first time.
        _TOUCH_SESSIONS.run(self.conn, [(sid, OPEN, keyed_by, received_ns, received_ns, int(end), spans)
                                        for sid, keyed_by, spans, end in rows])
        return previous

    def upsert_agent_data(self, rows: Iterable[tuple[str, str, Optional[str], str, AgentData]]) -> None:
        """Rows ``(trace_id, span_id, session_id, level, data)``; a trace-level row is replaced on re-aggregation."""
        self.upsert_agent_data_params(agent_data_params(rows))

    def upsert_agent_data_params(self, params: AgentDataParams) -> None:
        """Rows already turned into SQL parameters by :func:`agent_data_params` (in a score worker)."""
        self._store_new_texts(params.texts)
        self.conn.executemany(_agent_data_upsert(params.null_columns).text(1), params.rows)

    def _store_new_texts(self, texts: Iterable[tuple[bytes, str]]) -> None:
        """The shared texts ``(digest, text)`` this connection has not stored before.

        Every session of an agent carries the same system prompt and tool schemas, and binding
        them again (a few KiB, for an index probe that writes nothing) was a twentieth of an
        evaluation's commit. ``agent_texts`` rows are never deleted (the ``agent_data`` view's
        delete trigger keeps them), so a digest once committed stays valid; a rollback makes the
        connection forget them all (:meth:`transaction`)."""
        fresh = [text for text in texts if text[0] not in self._stored_texts]
        if not fresh:
            return
        _INSERT_TEXTS.run(self.conn, fresh)
        if len(self._stored_texts) >= _STORED_TEXTS_LIMIT:
            self._stored_texts.clear()
        self._stored_texts.update(digest for digest, _ in fresh)

    def set_span_types(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """``(trace_id, span_id, span_type)``: known once the span has been read at scoring time."""
        self.conn.executemany("UPDATE spans SET span_type = ? WHERE trace_id = ? AND span_id = ?",
                              [(span_type, trace_id, span_id) for trace_id, span_id, span_type in rows])

    def insert_log_events(self, events: Sequence[LogEvent], received_ns: int) -> int:
        cur = self.conn.executemany(
            "INSERT OR IGNORE INTO log_events (trace_id, span_id, time_ns, event_name, body, attributes, received_ns)"
            " VALUES (?,?,?,?,?,?,?)",
            [(e.trace_id, e.span_id, e.time_ns, e.event_name, _json(e.body), _json(dict(e.attributes)), received_ns)
             for e in events],
        )
        return cur.rowcount

    def touch_trace(self, trace_id: str, session_id: str, root_span_id: Optional[str], start_ns: int, end_ns: int,
                    spans: int, received_ns: int) -> None:
        self.conn.execute(_TOUCH_TRACE, (trace_id, session_id, root_span_id, start_ns, end_ns, spans, received_ns,
                                         received_ns))

    def touch_session(self, session_id: str, keyed_by: str, spans: int, received_ns: int, end_requested: bool) -> str:
        """Record activity on a session; a scored or ended session is re-opened. Returns its previous status."""
        row = self.conn.execute("SELECT status FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            self.conn.execute(
                "INSERT INTO sessions (session_id, status, keyed_by, first_received_ns, last_received_ns,"
                " end_requested, span_count) VALUES (?,?,?,?,?,?,?)",
                (session_id, OPEN, keyed_by, received_ns, received_ns, int(end_requested), spans),
            )
            return ""
        self.conn.execute(
            "UPDATE sessions SET status = ?, last_received_ns = ?, span_count = span_count + ?,"
            " end_requested = MAX(end_requested, ?) WHERE session_id = ?",
            (OPEN, received_ns, spans, int(end_requested), session_id),
        )
        return row[0]

    def move_trace(self, trace_id: str, old_session: str, new_session: str) -> None:
        """A trace first keyed by its own id turned out to belong to a named session."""
        for table in ("spans", "agent_data_rows", "traces"):
            self.conn.execute(f"UPDATE {table} SET session_id = ? WHERE trace_id = ?", (new_session, trace_id))
        left = self.conn.execute("SELECT COUNT(*) FROM traces WHERE session_id = ?", (old_session,)).fetchone()[0]
        if left == 0:
            scored = self.conn.execute("SELECT COUNT(*) FROM evaluations WHERE session_id = ?", (old_session,)).fetchone()[0]
            if scored:
                self.conn.execute("UPDATE evaluations SET superseded = 1 WHERE session_id = ?", (old_session,))
            self.conn.execute("DELETE FROM sessions WHERE session_id = ?", (old_session,))

    def set_session_status(self, session_id: str, status: str, reason: str = "", now_ns: int = 0) -> None:
        self.conn.execute(
            "UPDATE sessions SET status = ?, end_reason = ?, ended_ns = ? WHERE session_id = ?",
            (status, reason, now_ns, session_id),
        )

    def request_end(self, session_id: str) -> bool:
        cur = self.conn.execute("UPDATE sessions SET end_requested = 1 WHERE session_id = ?", (session_id,))
        return cur.rowcount == 1

    # --- reads -----------------------------------------------------------------------------

    def sessions_with_status(self, *statuses: str) -> list[SessionRow]:
        marks = ",".join("?" * len(statuses))
        rows = self.conn.execute(
            "SELECT session_id, status, keyed_by, first_received_ns, last_received_ns, end_requested, revision"
            f" FROM sessions WHERE status IN ({marks})",
            statuses,
        ).fetchall()
        return [SessionRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]

    def traces_of(self, session_id: str) -> list[tuple[str, Optional[str], int]]:
        """``(trace_id, root_span_id, last_received_ns)`` of a session's traces."""
        return self.conn.execute(
            "SELECT trace_id, root_span_id, last_received_ns FROM traces WHERE session_id = ?", (session_id,)
        ).fetchall()

    def session_span_rows(self, session_id: str) -> list[tuple[str, Optional[str], Optional[str]]]:
        """``(raw JSON, convention, span type)`` of a session's spans, in start order, as stored."""
        return session_span_rows(self.conn, session_id)

    def session_spans(self, session_id: str) -> list[SpanRecord]:
        return [from_json(raw) for raw, _, _ in session_span_rows(self.conn, session_id)]

    def trace_spans(self, trace_id: str) -> list[SpanRecord]:
        rows = self.conn.execute("SELECT raw FROM spans WHERE trace_id = ? ORDER BY start_ns", (trace_id,)).fetchall()
        return [from_json(r[0]) for r in rows]

    def session_log_events(self, session_id: str) -> list[LogEvent]:
        return session_log_events(self.conn, session_id)

    def trace_session(self, trace_id: str) -> Optional[str]:
        row = self.conn.execute("SELECT session_id FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        return row[0] if row else None

    # --- evaluations -----------------------------------------------------------------------

    def record_evaluation(self, session_id: str, result: EvalCaseResult, *,
                          agent_rows: Sequence[tuple[str, str, Optional[str], str, AgentData]] = (),
                          **record: Any) -> tuple[int, int]:
        """Store one evaluation as the session's next revision (``record``: the keyword arguments
        of :meth:`EvaluationRows.build`; ``agent_rows``: the session's AgentData rows
        ``(trace_id, span_id, session_id, level, data)``). See :meth:`store_evaluation`."""
        if agent_rows:
            record["agent_params"] = (record.get("agent_params") or AgentDataParams()) + agent_data_params(agent_rows)
        return self.store_evaluation(session_id, EvaluationRows.build(result, **record))

    def store_evaluation(self, session_id: str, rows: EvaluationRows) -> tuple[int, int]:
        """Store one evaluation as the session's next revision and mark the session scored.

        The session's ``agent_data`` rows and changed span types are written in the same
        transaction: one commit per session. Returns ``(evaluation_id, revision)``. Earlier
        revisions are kept, marked superseded. The status flips to scored only if the session is
        still ``rows.expected_status`` — a span that re-opened it meanwhile gets it scored again later.
        """
        with self.transaction() as conn:
            if rows.agent_params.rows:
                self.upsert_agent_data_params(rows.agent_params)
            if rows.span_types:
                self.set_span_types(rows.span_types)
            revision = conn.execute("SELECT COALESCE(MAX(revision), 0) FROM evaluations WHERE session_id = ?",
                                    (session_id,)).fetchone()[0] + 1
            evaluation_id = conn.execute(
                _INSERT_EVALUATION, (session_id, revision, _now_iso(), *_evaluation_values(rows.evaluation))).lastrowid
            if revision > 1:  # a session's first evaluation (the usual case) has nothing to supersede
                conn.execute("UPDATE evaluations SET superseded = 1 WHERE session_id = ? AND revision < ?",
                             (session_id, revision))
            conn.executemany(_INSERT_CRITERION, [(evaluation_id, *row) for row in rows.criteria])
            if rows.judge_job is not None:
                conn.execute(_INSERT_JOB, (evaluation_id, session_id, _json(rows.judge_job), time.time()))
            # One statement: the status flips to scored only if it is still the expected one.
            fields = rows.session_fields
            sets = "".join(f", {k} = ?" for k in fields)
            conn.execute(
                f"UPDATE sessions SET revision = ?{sets}, status = CASE WHEN status = ? THEN ? ELSE status END"
                " WHERE session_id = ?",
                (revision, *fields.values(), rows.expected_status, SCORED, session_id),
            )
        return evaluation_id, revision

    def store_evaluations(self, group: Sequence[tuple[str, EvaluationRows]]) -> list[tuple[int, int]]:
        """:meth:`store_evaluation` for a writer round's evaluations, ``(session_id, rows)`` each,
        with one statement a table for the whole group; returns ``(evaluation_id, revision)`` each.

        All or nothing, in a savepoint: if any part fails, none of the group is stored and the
        error is raised, and the caller stores them one by one to find the one that fails. Why
        together: the sqlite3 module hands the GIL back at every step, ``executemany`` steps once a
        row and an evaluation is ~60 rows in eight statements; beside a busy Python thread (an
        agent's loop, in-process) each hand-back waits up to 5 ms for the GIL, which made an
        evaluation's commit ~94 ms of wall time (see :class:`RowsInsert`). Ids and revisions
        are assigned here, which only the one writer may do.

        Falls back to one by one (same result) where grouping would change it: see
        :func:`_groupable`."""
        if len(group) < 2 or not _groupable(group):
            return [self.store_evaluation(session_id, rows) for session_id, rows in group]
        with self.transaction() as conn:
            self._store_agent_rows(conn, [rows for _, rows in group])
            return _store_evaluation_rows(conn, group)

    def _store_agent_rows(self, conn: sqlite3.Connection, group: Sequence[EvaluationRows]) -> None:
        """The group's shared texts (those this connection has not stored), agent rows and
        changed span types."""
        texts: dict[bytes, str] = {}
        # Consecutive evaluations whose rows leave the same columns NULL share a statement; the
        # rows keep the group's order, so ids and upserts come out as one by one.
        runs: list[tuple[tuple[int, ...], list[tuple]]] = []
        span_types: list[tuple[str, str, str]] = []
        for rows in group:
            params = rows.agent_params
            texts.update(params.texts)
            if params.rows:
                if runs and runs[-1][0] == params.null_columns:
                    runs[-1][1].extend(params.rows)
                else:
                    runs.append((params.null_columns, list(params.rows)))
            span_types.extend(rows.span_types)
        self._store_new_texts(texts.items())
        for null_columns, agent_rows in runs:
            _agent_data_upsert(null_columns).run(conn, agent_rows)
        if span_types:  # rare (a type the ingest could not tell): one by one is fine
            self.set_span_types(span_types)

    # --- judge jobs (otel_eval.judging) -----------------------------------------------------

    def complete_judgment(self, job_id: int, results: Sequence[CriterionResult],
                          usage: Sequence[tuple[str, int, int]], retry: bool, backfill: bool,
                          now: Optional[float] = None) -> Optional[dict[str, Any]]:
        """Record a judge job's outcome as the session's next revision: the revision it completes
        with its judge criteria replaced by ``results``, the verdict and score computed again, no
        judge pending. The job is done (or kept for one backfill: ``retry``), its spend recorded.
        Returns the new evaluation (id, revision, verdict, ...), or None when the revision it
        completes is no longer the session's latest (late spans scored it again: that revision
        has its own judge job), or the job is unknown or already done."""
        now = time.time() if now is None else now
        with self.transaction() as conn:
            if usage:
                conn.executemany("INSERT INTO judge_usage (at, criterion, calls, tokens) VALUES (?, ?, ?, ?)",
                                 [(now, name, calls, tokens) for name, calls, tokens in usage if calls])
            job = conn.execute("SELECT session_id, status, outcome_evaluation_id FROM judge_jobs WHERE evaluation_id = ?",
                               (job_id,)).fetchone()
            if job is None:
                return None
            session_id, status, outcome_id = job
            source_id = outcome_id if backfill else job_id
            if status == "done" or (backfill and status != "retry") or source_id is None:
                return None
            names = ", ".join(EVALUATION_COLUMNS)
            row = conn.execute(f"SELECT revision, superseded, {names} FROM evaluations WHERE id = ?",
                               (source_id,)).fetchone()
            if row is None or row[1]:
                conn.execute("UPDATE judge_jobs SET status = 'stale', finished_at = ?, request = '{}'"
                             " WHERE evaluation_id = ?", (now, job_id))
                return None
            revision = row[0] + 1
            evaluation = dict(zip(EVALUATION_COLUMNS, row[2:]))
            by_name = {r.criterion: r for r in results}
            criteria = []
            for criterion, score, passed, threshold, skipped, error, details in conn.execute(
                    f"SELECT {', '.join(CRITERION_COLUMNS)} FROM criterion_results WHERE evaluation_id = ? ORDER BY id",
                    (source_id,)):
                new = by_name.get(criterion)
                if new is not None:
                    criteria.append((new.criterion, None if new.skipped else new.score, int(new.passed), new.threshold,
                                     int(new.skipped), new.error, _json(new.details)))
                else:
                    criteria.append((criterion, score, passed, threshold, skipped, error, details))
            present = {c[0] for c in criteria}
            criteria.extend((r.criterion, None if r.skipped else r.score, int(r.passed), r.threshold, int(r.skipped),
                             r.error, _json(r.details)) for r in results if r.criterion not in present)
            verdict, score = _verdict_and_score(criteria, evaluation["error"])
            details = json.loads(evaluation["details"]) if evaluation["details"] else {}
            details["judge"] = {"completes_revision": row[0], **({"backfill": True} if backfill else {})}
            evaluation.update(verdict=verdict, passed=int(verdict == "passed"), score=score, judge_pending=0,
                              details=_json(details))
            evaluation_id = conn.execute(
                _INSERT_EVALUATION, (session_id, revision, _now_iso(), *_evaluation_values(evaluation))).lastrowid
            conn.execute("UPDATE evaluations SET superseded = 1 WHERE session_id = ? AND revision < ?",
                         (session_id, revision))
            conn.executemany(_INSERT_CRITERION, [(evaluation_id, *c) for c in criteria])
            conn.execute("UPDATE sessions SET revision = ? WHERE session_id = ?", (revision, session_id))
            # A finished job's messages (a copy of what the spans hold) are dropped: the table stays
            # the size of the work in progress. A job kept for its backfill keeps them.
            conn.execute("UPDATE judge_jobs SET status = ?, finished_at = ?, outcome_evaluation_id = ?,"
                         " backfilled = MAX(backfilled, ?), request = CASE WHEN ? THEN request ELSE '{}' END"
                         " WHERE evaluation_id = ?",
                         ("retry" if retry else "done", now, evaluation_id, int(backfill), int(retry), job_id))
            traces = conn.execute("SELECT trace_id, root_span_id FROM traces WHERE session_id = ? ORDER BY start_ns",
                                  (session_id,)).fetchall()
        return {"trace_ids": tuple(t for t, _ in traces), "root_span_ids": tuple(r for _, r in traces if r),"evaluation_id": evaluation_id, "revision": revision, "session_id": session_id,
                "verdict": verdict, "score": score, "case_id": evaluation["case_id"],
                "agent_version": evaluation["agent_version"], "matched_by": evaluation["matched_by"],
                "completes": row[0], "error": evaluation["error"], "criteria": criteria}

    def add_judge_job(self, evaluation_id: int, session_id: str, request: dict[str, Any]) -> None:
        """Judge work for a stored evaluation (``rescore --judge-only``), kept until answered."""
        with self.transaction() as conn:
            conn.execute(_INSERT_JOB, (evaluation_id, session_id, _json(request), time.time()))

    def judge_job(self, evaluation_id: int) -> Optional[tuple[str, str]]:
        """``(status, request JSON)`` of the judge job of this evaluation, or None."""
        return self.conn.execute("SELECT status, request FROM judge_jobs WHERE evaluation_id = ?",
                                 (evaluation_id,)).fetchone()

    def record_judge_usage(self, usage: Sequence[tuple[str, int, int]], now: Optional[float] = None) -> None:
        """Judge spend ``(criterion, calls, tokens)`` with no outcome recorded (calls that failed)."""
        now = time.time() if now is None else now
        with self.transaction() as conn:
            conn.executemany("INSERT INTO judge_usage (at, criterion, calls, tokens) VALUES (?, ?, ?, ?)",
                             [(now, name, calls, tokens) for name, calls, tokens in usage if calls])

    def judge_jobs_to_resume(self) -> list[tuple[int, str, str, float, bool]]:
        """``(job id, session id, request JSON, created_at, backfill)`` of judge work to do at start:
        jobs not answered yet, and jobs waiting for their one backfill."""
        return [(r[0], r[1], r[2], r[3], r[4] == "retry") for r in self.conn.execute(
            "SELECT evaluation_id, session_id, request, created_at, status FROM judge_jobs"
            " WHERE status = 'queued' OR (status = 'retry' AND backfilled = 0) ORDER BY evaluation_id")]

    def forget_judge_usage(self, before: float) -> None:
        """Drop the spend recorded before ``before`` (epoch seconds): kept a while as a record,
        only the last day counts against the caps."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM judge_usage WHERE at < ?", (before,))

    def judge_usage_since(self, since: float) -> list[tuple[str, float, int, int]]:
        """``(criterion, at, calls, tokens)`` of the judge spend since ``since`` (epoch seconds)."""
        return self.conn.execute("SELECT criterion, at, calls, tokens FROM judge_usage WHERE at >= ? ORDER BY at",
                                 (since,)).fetchall()

    def save_golden(self, sets: list[dict[str, Any]], cases: list[dict[str, Any]]) -> None:
        """Golden set rows (``golden_sets``) and case rows (``golden_cases``), in one transaction;
        :mod:`otel_eval.golden.sets` builds them. A row with the same key is replaced."""
        with self.transaction():
            if sets:
                self.db["golden_sets"].upsert_all(sets, pk=("eval_set_id", "source"))
            if cases:
                self.db["golden_cases"].upsert_all(cases, pk=("eval_set_id", "source", "eval_id"))

    def stored_eval_sets(self) -> list[EvalSet]:
        """The golden sets stored in this file (``golden_cases`` + ``golden_sets``) as EvalSets,
        one per (eval_set_id, source file), in that order; cases in the order they were stored.
        Sets stored before ``criteria`` had a column keep them in ``metadata`` (EvalSet reads both)."""
        sets: dict[tuple[str, str], dict[str, Any]] = {}
        for set_id, source, name, description, criteria, metadata in self.conn.execute(
                "SELECT eval_set_id, source, name, description, criteria, metadata FROM golden_sets"):
            sets[(set_id, source or "")] = {
                "eval_set_id": set_id, "name": name or "", "description": description or "",
                **({"criteria": json.loads(criteria)} if criteria else {}),
                "metadata": json.loads(metadata) if metadata else {}, "eval_cases": []}
        for set_id, eval_id, case_json, source in self.conn.execute(
                "SELECT eval_set_id, eval_id, case_json, source FROM golden_cases ORDER BY rowid"):
            entry = sets.setdefault((set_id, source or ""), {"eval_set_id": set_id,
                                                             "metadata": {"source": source or ""}, "eval_cases": []})
            try:
                entry["eval_cases"].append(EvalCase.model_validate_json(case_json))
            except ValueError as exc:
                raise InputError(self.path, f"stored golden case is not a valid EvalCase: {exc}",
                                 f"golden_cases[eval_set_id={set_id!r}, eval_id={eval_id!r}].case_json") from None
        return [EvalSet(**sets[k]) for k in sorted(sets) if sets[k]["eval_cases"]]

    def counts(self) -> dict[str, int]:
        out = {}
        for table in ("spans", "agent_data", "sessions", "evaluations"):
            out[table] = self.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for status in (OPEN, ENDED, SCORED):
            out[f"sessions_{status}"] = self.conn.execute(
                "SELECT COUNT(*) FROM sessions WHERE status = ?", (status,)).fetchone()[0]
        return out


def connect_read_only(path: Union[str, Path], timeout: float = 30.0) -> sqlite3.Connection:
    """The one read-only connection (``mode=ro``: SQLite itself refuses any write through it) that
    score workers and every reader (:mod:`otel_eval.read`) use. The file must exist. Autocommit,
    so a reader holds a snapshot only inside a ``BEGIN`` of its own and never blocks the writer's
    checkpoints longer; usable from any thread (callers keep to one at a time)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"  # as_uri escapes '?', '#' and '%' in the path
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    return conn


#: ``WHERE`` condition for a session's rows of ``spans`` or ``agent_data``, bound to the session id
#: twice. Through its traces: those tables are keyed by trace and have no session index (schema 5).
IN_SESSION_TRACES = "trace_id IN (SELECT trace_id FROM traces WHERE session_id = ?) AND session_id = ?"


def session_span_rows(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, Optional[str], Optional[str]]]:
    """``(raw JSON, convention, span type)`` of a session's spans, in start order, as stored."""
    return conn.execute(
        f"SELECT raw, convention, span_type FROM spans WHERE {IN_SESSION_TRACES} ORDER BY start_ns, end_ns",
        (session_id, session_id),
    ).fetchall()


def session_log_events(conn: sqlite3.Connection, session_id: str) -> list[LogEvent]:
    """The span-linked log records of a session's traces, in time order."""
    rows = conn.execute(
        "SELECT l.trace_id, l.span_id, l.time_ns, l.event_name, l.body, l.attributes FROM log_events l"
        " JOIN traces t ON t.trace_id = l.trace_id WHERE t.session_id = ? ORDER BY l.time_ns",
        (session_id,),
    ).fetchall()
    return [
        LogEvent(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None, json.loads(r[5]) if r[5] else {})
        for r in rows
    ]


def upgrade_if_older(conn: sqlite3.Connection, path: Union[str, Path]) -> None:
    """Readers open the file read-only; a file an older otel-eval wrote (schema version below
    :data:`SCHEMA_VERSION`) is migrated first, with one writable open. Version 0 (no schema yet:
    the collector has not started) is left for the collector to create."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if not 0 < version < SCHEMA_VERSION:
        return
    try:
        Store(path).close()
    except sqlite3.Error as exc:
        raise InputError(str(path), f"database schema version {version} is older than this otel-eval's "
                                    f"({SCHEMA_VERSION}) and migrating it failed: {exc}") from None


def _health_details(details: Optional[str]) -> dict[str, Any]:
    """What :func:`verdict_of` needs of a stored criterion's details: only a health report's
    shape matters, so other details are not parsed."""
    if not details or '"violations"' not in details:
        return {}
    parsed = json.loads(details)
    return parsed if isinstance(parsed, dict) else {}


_TOUCH_TRACES = RowsInsert(
    "INSERT INTO traces (trace_id, session_id, root_span_id, start_ns, end_ns, span_count, first_received_ns,"
    " last_received_ns)", "(?,?,?,?,?,?,?,?)",
    " ON CONFLICT(trace_id) DO UPDATE SET"
    " session_id = excluded.session_id,"
    " root_span_id = COALESCE(traces.root_span_id, excluded.root_span_id),"
    " start_ns = MIN(traces.start_ns, excluded.start_ns), end_ns = MAX(traces.end_ns, excluded.end_ns),"
    " span_count = traces.span_count + excluded.span_count, last_received_ns = excluded.last_received_ns"
)
_TOUCH_TRACE = _TOUCH_TRACES.text(1)
_INSERT_SPANS = RowsInsert(
    "INSERT OR IGNORE INTO spans (trace_id, span_id, parent_span_id, session_id, name, kind, status, start_ns,"
    " end_ns, received_ns, convention, span_type, raw)", "(?,?,?,?,?,?,?,?,?,?,?,?,?)")
_TOUCH_SESSIONS = RowsInsert(
    "INSERT INTO sessions (session_id, status, keyed_by, first_received_ns, last_received_ns, end_requested,"
    " span_count)", "(?,?,?,?,?,?,?)",
    " ON CONFLICT(session_id) DO UPDATE SET status = excluded.status,"
    " last_received_ns = excluded.last_received_ns, span_count = sessions.span_count + excluded.span_count,"
    " end_requested = MAX(sessions.end_requested, excluded.end_requested)")


_INSERT_JOB = ("INSERT OR REPLACE INTO judge_jobs (evaluation_id, session_id, status, request, created_at)"
               " VALUES (?, ?, 'queued', ?, ?)")


def _verdict_and_score(criteria: Sequence[tuple], error: Optional[str]) -> tuple[str, Optional[float]]:
    """A stored evaluation's verdict and score from its criterion rows (:data:`CRITERION_COLUMNS`),
    as scoring computes them: the mean score of the criteria that ran, health aside."""
    results = [CriterionResult(criterion=c[0], score=c[1] or 0.0, passed=bool(c[2]), threshold=c[3] or 0.0,
                               skipped=bool(c[4]), error=c[5], details=_health_details(c[6])) for c in criteria]
    verdict = "failed" if error else verdict_of(results)
    scored = [r.score for r in results if not r.skipped and not r.details]
    if verdict == "not_evaluated":
        return verdict, None
    return verdict, round(sum(scored) / len(scored), 6) if scored else 0.0


_INSERT_TEXTS = RowsInsert("INSERT OR IGNORE INTO agent_texts (digest, text)", "(?,?)")
_INSERT_EVALUATIONS = RowsInsert(
    f"INSERT INTO evaluations (id, session_id, revision, created_at, superseded, {', '.join(EVALUATION_COLUMNS)})",
    f"(?,?,?,?,0,{','.join('?' * len(EVALUATION_COLUMNS))})")
_INSERT_CRITERIA = RowsInsert(
    f"INSERT INTO criterion_results (evaluation_id, {', '.join(CRITERION_COLUMNS)})",
    f"(?,{','.join('?' * len(CRITERION_COLUMNS))})")
# Rows (session_id, revision) as a common table: each session's earlier evaluations superseded.
_SUPERSEDE = RowsInsert(
    "WITH scored(session_id, revision) AS (", "(?,?)",
    ") UPDATE evaluations SET superseded = 1 FROM scored"
    " WHERE evaluations.session_id = scored.session_id AND evaluations.revision < scored.revision")


def _store_evaluation_rows(conn: sqlite3.Connection,
                           group: Sequence[tuple[str, EvaluationRows]]) -> list[tuple[int, int]]:
    """The group's evaluations (each its session's next revision, earlier ones superseded),
    criteria and session updates; returns ``(evaluation_id, revision)`` each."""
    revisions = dict(_latest_revisions(conn, [session_id for session_id, _ in group]))
    first_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM evaluations").fetchone()[0]
    created_at = _now_iso()
    evaluations, criteria, superseding = [], [], []
    by_fields: dict[tuple[str, ...], list[tuple]] = {}
    stored: list[tuple[int, int]] = []
    for evaluation_id, (session_id, rows) in enumerate(group, start=first_id):
        revision = revisions.get(session_id, 0) + 1
        evaluations.append((evaluation_id, session_id, revision, created_at, *_evaluation_values(rows.evaluation)))
        criteria.extend((evaluation_id, *row) for row in rows.criteria)
        if revision > 1:
            superseding.append((session_id, revision))
        fields = rows.session_fields
        by_fields.setdefault(tuple(fields), []).append((session_id, revision, rows.expected_status, *fields.values()))
        stored.append((evaluation_id, revision))
    _INSERT_EVALUATIONS.run(conn, evaluations)
    if superseding:
        _SUPERSEDE.run(conn, superseding)
    _INSERT_CRITERIA.run(conn, criteria)
    jobs = [(evaluation_id, session_id, _json(rows.judge_job), time.time())
            for (evaluation_id, _), (session_id, rows) in zip(stored, group) if rows.judge_job is not None]
    if jobs:
        conn.executemany(_INSERT_JOB, jobs)
    for names, values in by_fields.items():
        _sessions_scored(names).run(conn, values)
    return stored


def _groupable(group: Sequence[tuple[str, EvaluationRows]]) -> bool:
    """Can :meth:`Store.store_evaluations` write these together with the same result as one by
    one? Not two evaluations of one session (the second supersedes the first, and one
    ``UPDATE`` cannot set a session's row twice), nor before SQLite 3.33 (no ``UPDATE ... FROM``)."""
    return sqlite3.sqlite_version_info >= (3, 33, 0) and len({session_id for session_id, _ in group}) == len(group)


def _latest_revisions(conn: sqlite3.Connection, session_ids: Sequence[str]) -> list[list[Any]]:
    """``[session_id, revision]`` of the latest evaluation of each of these sessions that has one,
    in one step (see :func:`_pairs`)."""
    (found,), = conn.execute(
        "SELECT json_group_array(json_array(session_id, revision)) FROM"
        " (SELECT session_id, MAX(revision) AS revision FROM evaluations"
        "   WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id)",
        (json_text.dumps(list(session_ids)),)).fetchall()
    return json_text.loads(found)


_sessions_updates: dict[tuple[str, ...], RowsInsert] = {}


def _sessions_scored(fields: tuple[str, ...]) -> RowsInsert:
    """Rows ``(session_id, revision, expected_status, *values of fields)`` as a common table,
    written to ``sessions`` in one ``UPDATE``: the statement :meth:`Store.store_evaluation` runs
    once a session, for many. ``fields`` are column names the code chose, never input."""
    found = _sessions_updates.get(fields)
    if found is None:
        names = ("session_id", "revision", "expected", *(f"f{at}" for at in range(len(fields))))
        sets = "".join(f", {name} = scored.f{at}" for at, name in enumerate(fields))
        found = RowsInsert(
            f"WITH scored({', '.join(names)}) AS (", f"({','.join('?' * len(names))})",
            f") UPDATE sessions SET revision = scored.revision{sets},"
            f" status = CASE WHEN sessions.status = scored.expected THEN '{SCORED}' ELSE sessions.status END"
            " FROM scored WHERE sessions.session_id = scored.session_id")
        if len(_sessions_updates) >= 64:
            _sessions_updates.clear()
        _sessions_updates[fields] = found
    return found


def _column_type(name: str) -> str:
    return "INTEGER" if name == "agent_exit" else "TEXT"


def _pairs(conn: sqlite3.Connection, columns: str, table: str, key: str, keys: Iterable[str]) -> list[list[Any]]:
    """``columns`` (two) of the rows of ``table`` whose ``key`` is one of ``keys``, in one step.

    The keys go in as one JSON array and the rows come back as one: the sqlite3 module hands
    the GIL back around every step (one per row fetched) and every statement it prepares (one
    per distinct number of ``?``), and the writer, which asks this every round, must not wait
    for a busy thread at each (see :class:`RowsInsert`). One text per lookup: prepared once."""
    keys = list(keys)
    if not keys:
        return []
    statement = (f"SELECT json_group_array(json_array({columns})) FROM {table}"
                 f" WHERE {key} IN (SELECT value FROM json_each(?))")
    (found,), = conn.execute(statement, (json_text.dumps(keys),)).fetchall()
    return json_text.loads(found)


def _now_iso() -> str:
    now = time.time()  # one clock read, so the milliseconds belong to the same second
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"

