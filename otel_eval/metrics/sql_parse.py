"""sqlglot's reading of a text, down to what the SQL finder and the table lister use.

Both ask the same questions of the same texts (a statement the finder found is read again at once
for its tables), so both read through :func:`read_sql`: one tokenizer and parser per thread, a
single-table SELECT recognised without building its tree, the last few readings kept as plain
values (never sqlglot's trees, which only the garbage collector frees).
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

DIALECTS: tuple[str | None, ...] = (None, "bigquery", "postgres", "mysql", "tsql", "snowflake")
"""The dialects a text is tried in, in order: the default first (the recognizer's), BigQuery's
back-quoted ``project.dataset.table`` next."""


_dialects: dict[str | None, Any] = {}


def _dialect(name: str | None) -> Any:
    """The sqlglot dialect object of that name, made once (it only holds settings; tokenizing and
    parsing make their own tokenizer and parser objects)."""
    found = _dialects.get(name)
    if found is None:
        import sqlglot

        found = _dialects[name] = sqlglot.Dialect.get_or_raise(name)
    return found


_per_thread = threading.local()


def _tools(name: str | None) -> tuple[Any, Any]:
    """This thread's sqlglot tokenizer and parser for the dialect. ``Dialect.tokenize`` makes a new
    tokenizer per text, which costs a quarter as much as tokenizing one; both reset their state at
    the start of every text, so one of each is kept per thread (they are not thread-safe)."""
    tools = getattr(_per_thread, "tools", None)
    if tools is None:
        tools = _per_thread.tools = {}
    found = tools.get(name)
    if found is None:
        dialect = _dialect(name)
        found = tools[name] = (dialect.tokenizer(), dialect.parser())
    return found


class _Table(NamedTuple):
    """One ``exp.Table`` of a parsed statement, as plain strings."""

    catalog: str
    db: str
    name: str
    bare: bool
    """Unqualified and unquoted: a single word, which may be English rather than a table."""


class _Statement(NamedTuple):
    """What the finder needs of one parsed statement: its tables in ``find_all`` order (breadth
    first) and the lower-cased names of its CTEs."""

    tables: tuple[_Table, ...]
    ctes: frozenset[str]


class _Reading(NamedTuple):
    """One text parsed in one dialect, as plain values: the offsets of its ``;`` tokens and its
    statements (sqlglot's empty statements and lone comments left out)."""

    cuts: tuple[int, ...]
    statements: tuple[_Statement, ...]


def _statement_of(tree: Any) -> _Statement:
    from sqlglot import exp

    tables: list[_Table] = []
    ctes: set[str] = set()
    for node in tree.bfs():
        if isinstance(node, exp.Table):
            identifier = node.this
            bare = not node.db and isinstance(identifier, exp.Identifier) and not identifier.quoted
            tables.append(_Table(node.catalog, node.db, node.name, bare))
        elif isinstance(node, exp.CTE):
            ctes.add(node.alias_or_name.lower())
    return _Statement(tuple(tables), frozenset(ctes))


_recent_parses: dict[tuple[str, str | None], _Reading | None] = {}
_NOT_READ: Any = object()
"""Not in ``_recent_parses`` (where None means "sqlglot cannot read it")."""


def read_sql(text: str, dialect: str | None) -> _Reading | None:
    """``sqlglot.parse(text, read=dialect)`` read down to what the finder uses; None when sqlglot
    cannot read the text. Parsing is most of the cost of scoring a session with SQL, and a
    statement found by :func:`~otel_eval.metrics.sql.whole_sql` is read again at once for its
    tables with the same text and dialect: the last few readings are kept. Only plain values are
    kept, never sqlglot's trees: their parent pointers make them cycles that only the garbage
    collector frees, and a cache would carry them into its oldest generation (the engine runs in
    agents' processes)."""
    key = (text, dialect)
    # One lookup: another thread may empty the cache between a membership test and a read.
    found = _recent_parses.get(key, _NOT_READ)
    if found is not _NOT_READ:
        return found
    from sqlglot import TokenType

    try:
        tokens = _tools(dialect)[0].tokenize(text)
    except Exception:  # sqlglot raises several error types for text it cannot read
        reading = None
    else:
        statements = _statements(tokens, text, dialect)
        cuts = tuple(t.start for t in tokens if t.token_type == TokenType.SEMICOLON) if ";" in text else ()
        reading = None if statements is None else _Reading(cuts, statements)
    if len(_recent_parses) >= 32:
        _recent_parses.clear()
    _recent_parses[key] = reading
    return reading


def _statements(tokens: list[Any], text: str, dialect: str | None) -> tuple[_Statement, ...] | None:
    """The statements sqlglot parses ``tokens`` into; None when it cannot. A single-table SELECT
    in the default dialect (the first one tried) is recognised without building its tree."""
    if dialect is None:
        recognised = _statement_by_recognizer(tokens)
        if recognised is not None:
            return (recognised,)
    return _statements_by_parser(tokens, text, dialect)


def _statement_by_recognizer(tokens: list[Any]) -> _Statement | None:
    """What the default dialect's parser makes of a single-table SELECT, or None for any other
    text (:mod:`otel_eval.metrics.simple_select`; its tests hold it to the parser)."""
    from .simple_select import simple_select_table

    parts = simple_select_table(tokens)
    if parts is None:
        return None
    catalog, db, name = ("", "", *parts)[-3:]
    return _Statement((_Table(catalog, db, name, bare=len(parts) == 1),), frozenset())


def _statements_by_parser(tokens: list[Any], text: str, dialect: str | None) -> tuple[_Statement, ...] | None:
    from sqlglot import exp

    try:
        trees = _tools(dialect)[1].parse(tokens, text)
    except Exception:  # sqlglot raises several error types for text it cannot read
        return None
    # A comment after a ";" parses as a statement of its own (exp.Semicolon): not a statement.
    return tuple(_statement_of(tree) for tree in trees if tree is not None and not isinstance(tree, exp.Semicolon))
