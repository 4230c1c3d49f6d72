"""AgentData rows: one per span and one per trace, as ``agent_data_rows`` parameters built where
the session is scored (:func:`agent_data_params`, pure), and their upsert by the writer.

The texts that repeat on row after row (an agent's system prompt and tool schemas) are stored
once in ``agent_texts``, keyed by digest; the ``agent_data`` view joins them back. Digests are
remembered per prompt and per list of schema objects, and per connection once stored, so the
writer neither hashes nor binds them again."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from ..models.agent_data import AgentData
from .connection import StoreConnection
from .statements import RowsInsert, stored_json

AGENT_DATA_FIELDS = list(AgentData.model_fields)
#: AgentData fields stored as JSON text.
JSON_FIELDS = {
    "expected_tool_call",
    "tools_available",
    "tool_calls",
    "parameters_passed",
    "tool_call_results",
    "retrieval_query",
    "retrieved_context",
}
#: AgentData text fields that repeat on row after row (every LLM span of an agent carries the same
#: system prompt and tool schemas): ``agent_data_rows`` holds a digest, ``agent_texts`` the text once.
SHARED_TEXT_FIELDS = ("system_prompt", "tools_available")
AGENT_DATA_COLUMNS = ["trace_id", "span_id", "session_id", "level", *AGENT_DATA_FIELDS]
AGENT_ROW_COLUMNS = [f"{n}_digest" if n in SHARED_TEXT_FIELDS else n for n in AGENT_DATA_COLUMNS]


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
    statement writes them as NULL literals (:func:`agent_data_upsert`). Python's sqlite3 binds
    None through an adapter lookup, about 0.3 µs, six times an int, and most sessions leave the
    same few AgentData fields (ground_truth, retrieval_query, ...) empty on every row: about 50
    of a session's 70 None parameters."""

    def full_rows(self) -> list[tuple]:
        """``rows`` with their NULL columns put back: every column, in the table's order."""
        if not self.null_columns:
            return list(self.rows)
        kept = [at for at in range(len(AGENT_ROW_COLUMNS)) if at not in self.null_columns]
        full = []
        for row in self.rows:
            values: list[Any] = [None] * len(AGENT_ROW_COLUMNS)
            for at, value in zip(kept, row):
                values[at] = value
            full.append(tuple(values))
        return full

    def __add__(self, other: AgentDataParams) -> AgentDataParams:
        return _without_null_columns(self.full_rows() + other.full_rows(), list(dict(self.texts + other.texts).items()))


def _without_null_columns(rows: Sequence[Sequence[Any]], texts: list[tuple[bytes, str]]) -> AgentDataParams:
    """Full ``agent_data_rows`` parameter rows as :class:`AgentDataParams`, the columns that no
    row sets left out (see ``null_columns``)."""
    if not rows:
        return AgentDataParams([], texts)
    # A column is looked at down to its first value that is set: most are set on the first row.
    # (Transposing the rows to count each column's Nones cost four times as much.)
    null_columns = tuple(at for at in range(len(AGENT_ROW_COLUMNS)) if _all_none(rows, at))
    return AgentDataParams(list(map(_kept_values(null_columns), rows)), texts, null_columns)


_agent_data_upserts: dict[tuple[int, ...], RowsInsert] = {}


def agent_data_upsert(null_columns: tuple[int, ...]) -> RowsInsert:
    """The ``agent_data_rows`` upsert whose VALUES hold NULL at ``null_columns`` and a parameter
    everywhere else, for one row (``.text(1)``) or many. On conflict every column is set from the
    new row, NULLs too, so a field that a re-scoring no longer finds is cleared."""
    statement = _agent_data_upserts.get(null_columns)
    if statement is None:
        values = ", ".join("NULL" if at in null_columns else "?" for at in range(len(AGENT_ROW_COLUMNS)))
        statement = RowsInsert(
            f"INSERT INTO agent_data_rows ({', '.join(AGENT_ROW_COLUMNS)})",
            f"({values})",
            " ON CONFLICT(trace_id, span_id, level) DO UPDATE SET "
            + ", ".join(f"{n} = excluded.{n}" for n in AGENT_ROW_COLUMNS[2:]),
        )
        if len(_agent_data_upserts) >= 256:  # a few shapes in practice; never an unbounded cache
            _agent_data_upserts.clear()
        _agent_data_upserts[null_columns] = statement
    return statement


def agent_data_params(rows: Iterable[tuple[str, str, str | None, str, AgentData]]) -> AgentDataParams:
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
                values[at] = stored_json(value)
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
        kept = [at for at in range(len(AGENT_ROW_COLUMNS)) if at not in null_columns]
        # (The tools digest and the exit flag are never None: two positions at least are kept,
        # so the getter returns a tuple, never a bare value.)
        getter = operator.itemgetter(*kept)
        if len(_kept_getters) >= 256:  # a few shapes in practice, as for the statements
            _kept_getters.clear()
        _kept_getters[null_columns] = getter
    return getter


_DUMPED_FIELDS = JSON_FIELDS - {"tools_available"}
_field_values = operator.itemgetter(*AGENT_DATA_FIELDS)


def _field_type(name: str) -> Any:
    """AgentData's annotation of a field (pydantic types it optional: a field made at run time may have none)."""
    annotation = AgentData.model_fields[name].annotation
    if annotation is None:  # every field of AgentData is declared with its type
        raise TypeError(f"AgentData.{name} has no type")
    return annotation


_DUMPED_AT = [
    (AGENT_DATA_COLUMNS.index(name), TypeAdapter(_field_type(name)).serializer.to_json)
    for name in AGENT_DATA_FIELDS
    if name in _DUMPED_FIELDS
]
_TOOLS_AT = AGENT_DATA_COLUMNS.index("tools_available")
_PROMPT_AT = AGENT_DATA_COLUMNS.index("system_prompt")
_EXIT_AT = AGENT_DATA_COLUMNS.index("agent_exit")
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
        text = stored_json([tool.model_dump(mode="json") for tool in tools]) or "[]"
        found = _tools_encoded[key] = (list(tools), text, text_digest(text))
    return found[1], found[2]


_INSERT_TEXTS = RowsInsert("INSERT OR IGNORE INTO agent_texts (digest, text)", "(?,?)")
#: Digests a Store remembers as stored: far more distinct prompts and tool lists than an agent
#: fleet has, in a few MiB at most (then it starts over).
_STORED_TEXTS_LIMIT = 65536


class AgentRows(StoreConnection):
    """The part of a Store that writes AgentData rows and their shared texts."""

    def upsert_agent_data(self, rows: Iterable[tuple[str, str, str | None, str, AgentData]]) -> None:
        """Rows ``(trace_id, span_id, session_id, level, data)``; a trace-level row is replaced on re-aggregation."""
        self.upsert_agent_data_params(agent_data_params(rows))

    def upsert_agent_data_params(self, params: AgentDataParams) -> None:
        """Rows already turned into SQL parameters by :func:`agent_data_params` (in a score worker),
        in multi-row statements (see :class:`~.statements.RowsInsert`: a big session's thousands of
        rows, one ``executemany`` step each, waited for the GIL at every step beside busy threads)."""
        self._store_new_texts(params.texts)
        agent_data_upsert(params.null_columns).run(self.conn, params.rows)

    def _store_new_texts(self, texts: Iterable[tuple[bytes, str]]) -> None:
        """The shared texts ``(digest, text)`` this connection has not stored before.

        Every session of an agent carries the same system prompt and tool schemas, and binding
        them again (a few KiB, for an index probe that writes nothing) was a twentieth of an
        evaluation's commit. ``agent_texts`` rows are never deleted (the ``agent_data`` view's
        delete trigger keeps them), so a digest once committed stays valid; a rollback makes the
        connection forget them all (:meth:`~.StoreConnection.transaction`)."""
        fresh = [text for text in texts if text[0] not in self._stored_texts]
        if not fresh:
            return
        _INSERT_TEXTS.run(self.conn, fresh)
        if len(self._stored_texts) >= _STORED_TEXTS_LIMIT:
            self._stored_texts.clear()
        self._stored_texts.update(digest for digest, _ in fresh)
