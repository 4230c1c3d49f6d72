"""Finding SQL in agent output and the tables it reads.

Agents hand SQL over in four shapes: a whole tool argument or result that is SQL
(``execute_sql("select * from t limit 10")``), a fenced code block in a message, a JSON value
under a key such as ``"sql"`` or ``"query"``, or a statement inside prose. A whole text counts
when sqlglot parses all of it as statements of a known shape, whatever the keyword case. Inside
prose, words like "select" and "from" are common, so a statement there counts only when it looks
like one: an upper-case keyword, or a line-leading keyword with a terminating ``;``, plus a
statement shape (``SELECT … FROM``, ``WITH x AS (``, ``INSERT INTO``, ...).

Tables come from the same parser (trying several dialects so BigQuery's back-quoted
``project.dataset.table`` parses), with a regex fallback for fragments no dialect accepts.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..json_text import as_text
from .sql_parse import DIALECTS, read_sql
from .sql_parse import _recent_parses as _recent_parses  # emptied through this module by benchmarks/scoring.py

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
_SQL_FENCE_LANGS = {
    "sql",
    "bigquery",
    "googlesql",
    "postgres",
    "postgresql",
    "psql",
    "mysql",
    "sqlite",
    "tsql",
    "plsql",
    "snowflake",
    "duckdb",
    "spark",
    "sparksql",
    "hive",
    "presto",
    "trino",
}
#: The keywords a statement starts with; the patterns and quick checks below are all built from it.
_KEYWORDS = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "CREATE", "MERGE")
_STATEMENT_START = re.compile(rf"\b({'|'.join(_KEYWORDS)})\b", re.IGNORECASE)
_SHAPES = [
    r"(?s:SELECT\b.+?\bFROM\b\s*[`\"\[\w(])",  # (?s: "." crosses lines between SELECT and FROM
    r"WITH\b\s+(RECURSIVE\s+)?[`\"\w]+\s*(\([^)]*\)\s*)?AS\s*\(",
    r"INSERT\s+(OR\s+\w+\s+)?INTO\b",
    r"UPDATE\s+[`\"\[\w.]+\s+(AS\s+\w+\s+)?SET\b",
    r"DELETE\s+FROM\b",
    r"CREATE\s+(OR\s+REPLACE\s+)?(TEMP(ORARY)?\s+)?(TABLE|VIEW|INDEX)\b",
    r"MERGE\s+(INTO\s+)?[`\"\[\w.]+",
]
"""The statement shapes, each matched at the start of a text."""
_SHAPE = re.compile("|".join(f"(?:{shape})" for shape in _SHAPES), re.IGNORECASE)
"""Any of :data:`_SHAPES`, in one pattern: one match call instead of up to seven (an alternation
matches at a position exactly when one of its branches does)."""
_STATEMENT_END = re.compile(r";|\n[ \t]*\n")
_SQL_KEYS = {"sql", "query", "statement", "sql_query", "sqlquery", "sql_string", "generated_sql", "query_text"}
_MARKERS = (*(k.lower() for k in _KEYWORDS), "```", "\\u")
_MAY_HOLD_SQL = re.compile("|".join(map(re.escape, _MARKERS)), re.IGNORECASE)
"""Every statement found starts with one of these keywords, or sits in a code fence, or hides
behind a JSON ``\\u`` escape: a text with none of them holds no SQL, and most texts (answers,
weather results) are skipped by this one scan instead of being walked in Python."""


def _may_hold_sql(text: str) -> bool:
    """``_MAY_HOLD_SQL.search(text)``, faster for the usual ASCII text: there case-insensitive
    means ASCII case only, so lower-casing and substring tests give the same answer several times
    faster than the regex's alternation (which Unicode case folding needs for other text)."""
    if text.isascii():
        low = text.lower()  # _MARKERS, spelled out: 40% faster than any(map(...)) on this hot path
        return (
            "select" in low
            or "with" in low
            or "insert" in low
            or "update" in low
            or "delete" in low
            or "create" in low
            or "merge" in low
            or "```" in low
            or "\\u" in low
        )
    return _MAY_HOLD_SQL.search(text) is not None


_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)
"""Whitespace and SQL comments before a statement (generated SQL often opens with ``-- why``)."""


def looks_like_sql(text: str) -> bool:
    """Does the text start, after any comments, with a statement of a known shape (any case)?"""
    stripped = _LEADING_COMMENTS.sub("", text).lstrip("(").strip()
    return _SHAPE.match(stripped) is not None


def _bare_statements(text: str) -> list[str]:
    found: list[str] = []
    pos = 0
    while True:
        m = _STATEMENT_START.search(text, pos)
        if not m:
            return found
        end_m = _STATEMENT_END.search(text, m.start())
        end = end_m.start() if end_m else len(text)
        statement = text[m.start() : end].strip()
        terminated = bool(end_m and end_m.group() == ";")
        line_start = _at_line_start(text, m.start())
        trusted = m.group(1).isupper() or (line_start and terminated)
        if trusted and looks_like_sql(statement):
            found.append(statement)
            pos = end
        else:
            pos = m.end()


_LINE_START_KEYWORD = re.compile(rf"(?:\A\s*|\n[ \t]*)(?:{'|'.join(_KEYWORDS)})", re.IGNORECASE)


def _may_hold_trusted_statement(text: str) -> bool:
    """Can :func:`_bare_statements` find a statement in the text? It trusts only an upper-case
    keyword, or one that starts a line (see :func:`_at_line_start`) in a statement ending with
    ``;``: prose with neither (most answers and documents) is skipped without every "with" in it
    being looked at. For ASCII text only: there the case-insensitive keyword pattern matches
    nothing but the ASCII letters tested here."""
    if not text.isascii() or any(keyword in text for keyword in _KEYWORDS):
        return True
    return ";" in text and _LINE_START_KEYWORD.search(text) is not None


def _at_line_start(text: str, at: int) -> bool:
    """Is ``text[at]`` the first thing on its line (only spaces or tabs before it), or is
    everything before it whitespace? Looks back from ``at`` instead of copying the text before
    it, which made scanning long prose quadratic."""
    i = at - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i < 0 or text[i] == "\n":
        return True
    if not text[i].isspace():
        return False
    return not text[: i + 1].strip()  # other whitespace (a \r, a form feed): all of it, or not


_DETERMINERS = {
    "the",
    "an",
    "my",
    "your",
    "our",
    "their",
    "his",
    "her",
    "its",
    "this",
    "that",
    "these",
    "those",
    "each",
    "every",
    "some",
    "any",
    "which",
    "what",
}
"""An unquoted table named like this is English ("select a date from the list"), not SQL."""


def whole_sql(text: str) -> tuple[str, ...]:
    """The statements of a text that is, as a whole, SQL: sqlglot parses all of it (in one of
    the dialects tried) into statements of a known shape, whatever the keyword case. Empty when
    the text is anything else, such as prose that mentions "select … from"."""
    stripped = text.strip()
    if not looks_like_sql(stripped):  # cheap: most texts never reach the parser
        return ()
    return _whole_sql(stripped)


@functools.lru_cache(maxsize=1024)
def _whole_sql(stripped: str) -> tuple[str, ...]:
    # Agents repeat their queries and every criterion asks again: parse each text once.
    for dialect in DIALECTS:
        statements = _parsed_statements(stripped, dialect)
        if statements is not None:
            return statements
    return ()


def _parsed_statements(text: str, dialect: str | None) -> tuple[str, ...] | None:
    reading = read_sql(text, dialect)
    if reading is None:
        return None
    pieces, start = [], 0
    for cut in reading.cuts + (len(text),):
        piece = text[start:cut].strip()
        if piece:
            pieces.append(piece)
        start = cut + 1
    statements = reading.statements
    if not statements or len(pieces) != len(statements) or not all(looks_like_sql(p) for p in pieces):
        return None
    for statement in statements:
        for table in statement.tables:
            if table.bare and table.name.lower() in _DETERMINERS:
                return None
    return tuple(pieces)


class _NotJSON(Exception):
    """A value that is not what parsing JSON gives (a tuple, a key that is no string, an object)."""


def _from_json(value: Any, sql_key: bool, out: list[str]) -> None:
    """The statements in a parsed JSON value; ``sql_key``: it is (inside) a value under a key
    that names SQL (:func:`_is_sql_key`). Only strings can hold SQL, so numbers, booleans and
    nulls (most of a result's rows) are passed over without a call. Raises :class:`_NotJSON` at
    anything JSON does not give, which a value not parsed from JSON text may hold."""
    if isinstance(value, str):
        _from_json_string(value, sql_key, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise _NotJSON
            if isinstance(v, str):
                _from_json_string(v, _is_sql_key(k), out)
            elif isinstance(v, (dict, list)):
                _from_json(v, _is_sql_key(k), out)
            elif not (v is None or isinstance(v, (int, float))):
                raise _NotJSON
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                _from_json_string(item, sql_key, out)
            elif isinstance(item, (dict, list)):
                _from_json(item, sql_key, out)
            elif not (item is None or isinstance(item, (int, float))):
                raise _NotJSON
    elif not (value is None or isinstance(value, (int, float))):
        raise _NotJSON


def _is_sql_key(key: Any) -> bool:
    lowered = str(key).lower()
    return lowered in _SQL_KEYS or "sql" in lowered


def _from_json_string(value: str, sql_key: bool, out: list[str]) -> None:
    if sql_key and looks_like_sql(value):
        # looks_like_sql strips the text itself, so whole_sql's own check would repeat this one.
        whole = _whole_sql(value.strip())
        if whole:  # what _from_text would find: a text that looks like SQL is no JSON
            out.extend(whole)
        else:
            out.append(value.strip().rstrip(";").strip())  # a fragment no dialect parses, kept whole
    elif _may_hold_sql(value):  # most values of a JSON result (names, numbers) hold none
        # Through the cache: the trajectory's columns and the SQL criteria walk the same values,
        # and results repeat their texts (a policy document, a stock answer) from session to session.
        out.extend(_statements_of(value))


def _from_text(text: str) -> list[str]:
    if not _may_hold_sql(text):  # most values of a JSON result (names, numbers) hold none
        return []
    return _search_text(text)


def _search_text(text: str) -> list[str]:
    """:func:`_from_text` of a text that :func:`_may_hold_sql`."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            out: list[str] = []
            _from_json(parsed, False, out)
            return out
    whole = whole_sql(text)
    if whole:
        return list(whole)
    if "```" not in text and not _may_hold_trusted_statement(text):
        return []
    out = []
    for m in _FENCE.finditer(text):
        lang, body = m.group(1).lower(), m.group(2).strip()
        if lang in _SQL_FENCE_LANGS or (not lang and looks_like_sql(body)):
            out.append(body.rstrip(";").strip())
        elif lang == "json":
            out.extend(_from_text(body))
    rest = _FENCE.sub("\n\n", text)
    out.extend(s.rstrip(";").strip() for s in _bare_statements(rest))
    return out


_CACHED_TEXT = 16 * 1024
"""Texts up to this long are remembered (256 of them, at most ~4 MiB held)."""


def _statements_of(text: str) -> Sequence[str]:
    """The statements of a text that :func:`_may_hold_sql` (the callers have asked)."""
    # The trajectory's columns and the SQL criteria read the same turn texts, and agents repeat
    # their queries and results: find a short text's statements once.
    return _cached_statements(text) if len(text) <= _CACHED_TEXT else _search_text(text)


@functools.lru_cache(maxsize=256)
def _cached_statements(text: str) -> tuple[str, ...]:
    return tuple(_search_text(text))


def _statements_of_value(value: Any) -> Sequence[str]:
    """The statements in a tool's arguments or result as found in its JSON text
    (:func:`otel_eval.json_text.as_text`), without encoding a value that is what parsing
    JSON gives only to parse that text back: its strings are searched where they are."""
    if isinstance(value, (dict, list)):
        out: list[str] = []
        try:
            _from_json(value, False, out)
        except _NotJSON:
            pass
        else:
            # The JSON text would be searched only if it may hold SQL; every statement found in a
            # value holds a marker (a keyword) that its JSON text then holds too.
            return out
    text = as_text(value)
    return _statements_of(text) if text and _may_hold_sql(text) else ()


def find_sql(texts: Iterable[Any]) -> list[str]:
    """Every SQL statement in the texts, in order, each once (whitespace-insensitive). A text may
    also be a value that is not a string (a tool call's arguments or result): it is searched as
    its JSON text would be."""
    seen: set[str] = set()
    found: list[str] = []
    for text in texts:
        if isinstance(text, str):
            if not text or not _may_hold_sql(text):
                continue
            statements = _statements_of(text)
        elif text is None:
            continue
        else:
            statements = _statements_of_value(text)
        for sql in statements:
            # Whitespace runs as one space: split() and the regex \s agree on what whitespace
            # is (Py_UNICODE_ISSPACE), and splitting is four times faster than the substitution.
            key = " ".join(sql.split()).lower()
            if sql and key not in seen:
                seen.add(key)
                found.append(sql)
    return found


def contains_sql(text: str | None) -> bool:
    """Whether :func:`find_sql` finds any statement in the text (None has none)."""
    return bool(find_sql([text]))


# --- tables --------------------------------------------------------------------------------

_TABLE_REF = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+((?:`[^`]+`|\"[^\"]+\"|\[[^\]]+\]|[A-Za-z_][\w$-]*)"
    r"(?:\s*\.\s*(?:`[^`]+`|\"[^\"]+\"|\[[^\]]+\]|[A-Za-z_][\w$-]*))*)",
    re.IGNORECASE,
)
_CTE_NAME = re.compile(r"(?:\bWITH(?:\s+RECURSIVE)?|,)\s*([A-Za-z_]\w*)\s*(?:\([^)]*\)\s*)?AS\s*\(", re.IGNORECASE)
_NAME_PART = re.compile(r"`[^`]+`|\"[^\"]+\"|\[[^\]]+\]|[A-Za-z_][\w$-]*")
_NOT_TABLES = {"select", "where", "as", "on", "lateral", "unnest", "values", "set"}


def _strip_quotes(part: str) -> str:
    part = part.strip()
    if part[:1] in ("`", '"', "[") and part[-1:] in ("`", '"', "]"):
        return part[1:-1]
    return part


def _tables_by_parser(sql: str, dialect: str | None) -> list[str] | None:
    reading = read_sql(sql, dialect)
    if reading is None:
        return None
    names: list[str] = []
    for statement in reading.statements:
        for table in statement.tables:
            if not table.name:
                continue
            parts = [p for p in (table.catalog, table.db, table.name) if p]
            if len(parts) == 1 and parts[0].lower() in statement.ctes:
                continue
            name = ".".join(parts)
            if name not in names:
                names.append(name)
    return names


def _tables_by_regex(sql: str) -> list[str]:
    ctes = {m.group(1).lower() for m in _CTE_NAME.finditer(sql)}
    names: list[str] = []
    for m in _TABLE_REF.finditer(sql):
        parts = [_strip_quotes(p) for p in _NAME_PART.findall(m.group(1))]
        name = ".".join(p for p in parts if p)
        if not name or name.lower() in _NOT_TABLES or (len(parts) == 1 and name.lower() in ctes):
            continue
        if name not in names:
            names.append(name)
    return names


def extract_tables(sql: str, lower: bool = False, dialect: str | None = None) -> list[str]:
    """Tables the statement reads or writes, qualified names kept (``proj.ds.tbl``), CTE names
    excluded, in order of first appearance. ``lower`` folds names for case-insensitive compares."""
    return list(_extract_tables(sql, lower, dialect))


@functools.lru_cache(maxsize=4096)
def _extract_tables(sql: str, lower: bool, dialect: str | None) -> tuple[str, ...]:
    # Parsing is the costly part of scoring and agents repeat their queries: cache by text.
    names: list[str] | None = None
    for candidate in (dialect,) if dialect else DIALECTS:
        names = _tables_by_parser(sql, candidate)
        if names is not None:
            break
    if names is None:
        names = _tables_by_regex(sql)
    lowered_sql = sql.lower()

    def position(name: str) -> int:
        at = lowered_sql.find(name.split(".")[-1].lower())
        return at if at >= 0 else len(sql)

    names = sorted(names, key=position)
    if lower:
        out: list[str] = []
        for name in names:
            if name.lower() not in out:
                out.append(name.lower())
        return tuple(out)
    return tuple(names)


def sql_and_tables(texts: Iterable[Any]) -> tuple[list[str], list[str]]:
    """The SQL statements found in ``texts`` (see :func:`find_sql`) and the tables they use, each
    table once, in order."""
    statements = find_sql(list(texts))
    tables: list[str] = []
    for sql in statements:
        for table in extract_tables(sql):
            if table not in tables:
                tables.append(table)
    return statements, tables


def table_matches(expected: str, actual: str) -> bool:
    """Case-insensitive; an unqualified expected name matches a qualified actual one by its last parts
    (``orders`` matches ``shop.orders`` and ``proj.shop.orders``)."""
    e = [p for p in _strip_quotes(expected).lower().split(".") if p]
    a = [p for p in _strip_quotes(actual).lower().split(".") if p]
    return bool(e) and len(e) <= len(a) and a[-len(e) :] == e
