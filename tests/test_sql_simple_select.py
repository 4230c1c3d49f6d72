"""The single-table SELECT recognizer (metrics/simple_select.py) against sqlglot's parser.

The SQL finder reads a statement the recognizer accepts without parsing it, so every statement it
accepts must read exactly as the parser reads it: same statements, same tables (catalog, db,
name, bare word), no CTE. Checked on statements generated from its grammar with names drawn from
sqlglot's own keyword and function tables, on token soup, and on every text in the fixtures.
"""

from __future__ import annotations

import json
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot.parser import Parser
from sqlglot.tokens import Tokenizer

from otel_eval.metrics import sql, sql_parse
from otel_eval.metrics.sql_parse import _statement_by_recognizer, _statements_by_parser, _tools

from .paths import FIXTURES


def _reads_as_the_parser(text: str) -> bool:
    """Whether the recognizer accepted the text; fails when it accepted it and the parser's
    reading differs (a text sqlglot cannot tokenize is no case here: neither path sees it)."""
    try:
        tokens = _tools(None)[0].tokenize(text)
    except Exception:
        return False
    recognised = _statement_by_recognizer(tokens)
    if recognised is None:
        return False
    assert _statements_by_parser(tokens, text, None) == (recognised,), text
    return True


# Names sqlglot may treat specially: its keywords, function names and function parsers.
_WORDS = sorted(
    {
        w.lower()
        for w in [*Tokenizer.KEYWORDS, *Parser.FUNCTIONS, *Parser.FUNCTION_PARSERS, *Parser.NO_PAREN_FUNCTION_PARSERS]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w)
    }
)


def _mostly(usual, unusual):
    """``usual`` 49 times in 50: a statement makes some 30 such choices, and about half of the
    statements should be sentences of the grammar (where the two paths must agree); the rest
    probe its edges."""
    return st.integers(0, 49).flatmap(lambda k: usual if k else unusual)


_PLAIN = st.text(string.ascii_lowercase + "_", min_size=1, max_size=6).filter(lambda w: w != "_") | st.sampled_from(
    ["user_id", "amount", "revenue", "orders", "sales", "region", "the", "items", "x1", "a_b"]
)
_CASED = st.tuples(_mostly(_PLAIN, st.sampled_from(_WORDS)), st.randoms(use_true_random=False)).map(
    lambda p: "".join(c.upper() if p[1].random() < 0.3 else c for c in p[0])
)
_SPACE = _mostly(st.sampled_from([" ", "  ", "\n", "\t"]), st.sampled_from([" /* note */ ", " -- note\n", "\n  "]))
_LITERAL = _mostly(
    st.sampled_from(["1", "10", "2.5", "1e3", ".5", "'EMEA'", "'it''s'", "''", "-1", "- 2", "'a;b'"]),
    st.sampled_from(["N'x'", "X'1F'", "TRUE", "NULL", "'a' 'b'", "?", "@p", ":p", "$1"]),
)
_FUNCTION = _mostly(
    st.sampled_from(["COUNT", "count", "Sum", "AVG", "min", "MAX"]), st.sampled_from(_WORDS).map(str.upper)
)


@st.composite
def _operand(draw):
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(_LITERAL)
    if kind == 1:
        return draw(_CASED)
    if kind == 2:
        return f"{draw(_CASED)}.{draw(_CASED)}"
    function = draw(_FUNCTION)
    argument = draw(st.sampled_from(["", "DISTINCT "])) + draw(_CASED)
    if function.upper() == "COUNT" or not draw(_mostly(st.just(True), st.just(False))):
        argument = draw(st.just("*") | st.just(argument))
    return f"{function}{draw(st.sampled_from(['', ' ']))}({argument})"


@st.composite
def _expression(draw):
    parts = [draw(_operand())]
    for _ in range(draw(st.integers(0, 2))):
        parts += [
            draw(_mostly(st.sampled_from(["+", "-", "*", "/"]), st.sampled_from(["||", "%", "::"]))),
            draw(_operand()),
        ]
    return draw(_SPACE).join(parts)


_COMPARISON = _mostly(st.sampled_from(["=", "<>", "!=", "<", ">", "<=", ">="]), st.sampled_from(["LIKE", "IS", "=="]))


@st.composite
def _condition(draw):
    comparisons = [
        f"{draw(_expression())} {draw(_COMPARISON)} {draw(_expression())}" for _ in range(draw(st.integers(1, 3)))
    ]
    return "".join(
        c + (f" {draw(st.sampled_from(['AND', 'or', 'And']))} " if i < len(comparisons) - 1 else "")
        for i, c in enumerate(comparisons)
    )


@st.composite
def _statement(draw):
    items = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(_mostly(st.booleans(), st.just(None))) is None:
            items.append("*")
            continue
        alias = draw(st.sampled_from(["", " AS ", " as ", " "]))
        items.append(draw(_expression()) + (alias + draw(_CASED) if alias else ""))
    table = ".".join(draw(st.lists(_CASED, min_size=1, max_size=draw(_mostly(st.just(3), st.just(4))))))
    clauses = [
        draw(st.sampled_from(["SELECT", "select", "Select", "SELECT DISTINCT"])),
        ", ".join(items),
        draw(st.sampled_from(["FROM", "from"])),
        table,
    ]
    if draw(st.booleans()):
        clauses += [draw(st.sampled_from(["", "AS", "as"])), draw(_CASED)]
    if draw(st.booleans()):
        clauses += ["WHERE", draw(_condition())]
    if draw(st.booleans()):
        clauses += [
            draw(_mostly(st.sampled_from(["GROUP BY", "group by"]), st.just("GROUP\nBY"))),
            ", ".join(draw(st.lists(_expression(), min_size=1, max_size=2))),
        ]
    if draw(st.booleans()):
        clauses += ["HAVING", draw(_condition())]
    if draw(st.booleans()):
        keys = [
            k + draw(_mostly(st.sampled_from(["", " ASC", " desc"]), st.just(" DESC NULLS LAST")))
            for k in draw(st.lists(_expression(), min_size=1, max_size=2))
        ]
        clauses += ["ORDER BY", ", ".join(keys)]
    if draw(st.booleans()):
        clauses += ["LIMIT", draw(_mostly(st.sampled_from(["10", "5"]), st.sampled_from(["all", "'3'", "1.5", "-1"])))]
    text = "".join(c + draw(_SPACE) for c in clauses).strip()
    return text + draw(_mostly(st.sampled_from(["", ";", " ;", "\n"]), st.sampled_from([";;", "; -- done", "; x"])))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_statement())
def test_property_a_recognised_statement_reads_as_the_parser_reads_it(text):
    _reads_as_the_parser(text)


_SOUP = st.sampled_from(
    [
        "SELECT",
        "FROM",
        "WHERE",
        "GROUP BY",
        "ORDER BY",
        "HAVING",
        "LIMIT",
        "AS",
        "DISTINCT",
        "AND",
        "OR",
        "ASC",
        "DESC",
        "JOIN",
        "ON",
        "WITH",
        "(",
        ")",
        ",",
        ".",
        "*",
        "=",
        "<",
        "-",
        "+",
        ";",
        "1",
        "'s'",
        "a",
        "b",
        "t",
        "COUNT(",
        "sum(",
        "the",
        "date",
        "x.y",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_SOUP, max_size=16).map(lambda words: "SELECT " + " ".join(words)))
def test_property_token_soup_the_recognizer_accepts_reads_as_the_parser_reads_it(text):
    _reads_as_the_parser(text)


def test_the_recognizer_accepts_what_agents_usually_run():
    """The grammar's own sentences are recognised (else the fast path would never be taken)."""
    for text in [
        "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10",
        "select count(*) from sales.orders where region = 'EMEA' and amount >= 2.5;",
        "SELECT DISTINCT o.customer, MAX(o.total) top FROM proj.shop.orders o HAVING MAX(o.total) > 10",
        "SELECT * FROM t",
    ]:
        assert _reads_as_the_parser(text), text
    for text in [
        "SELECT a FROM t JOIN u ON t.id = u.id",
        "SELECT a FROM (SELECT a FROM t)",
        "WITH x AS (SELECT 1 FROM y) SELECT * FROM x",
        "SELECT COALESCE(a, 0) FROM t",
        "SELECT a FROM p.q.r.s",
        "SELECT date FROM t",
        "SELECT a FROM t; SELECT b FROM u",
        "SELECT a FROM `proj.ds.t`",
    ]:
        assert not _reads_as_the_parser(text), text


def _fixture_texts() -> list[str]:
    texts: list[str] = []

    def walk(value):
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in sorted(FIXTURES.rglob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return texts


def test_fixture_sql_is_found_the_same_with_and_without_the_recognizer(monkeypatch):
    texts = _fixture_texts()
    assert texts, f"no fixture texts under {FIXTURES}"

    def found() -> list:
        sql._recent_parses.clear()
        sql._whole_sql.cache_clear()
        sql._extract_tables.cache_clear()
        sql._cached_statements.cache_clear()
        return [sql.sql_and_tables([text]) for text in texts]

    recognised = []
    real = sql_parse._statement_by_recognizer
    monkeypatch.setattr(sql_parse, "_statement_by_recognizer", lambda tokens: recognised.append(1) or real(tokens))
    with_recognizer = found()
    monkeypatch.setattr(sql_parse, "_statement_by_recognizer", lambda tokens: None)
    assert found() == with_recognizer
    assert any(statements for statements, _ in with_recognizer) and recognised
    for text in {s for statements, _ in with_recognizer for s in statements}:
        _reads_as_the_parser(text)


@pytest.mark.parametrize("text", ["SELECT a FROM the", "select a from the x", "SELECT a FROM This"])
def test_a_determiner_as_the_only_table_is_still_not_sql(text):
    """The recognizer reads the table; the finder's English check still applies to it."""
    assert _reads_as_the_parser(text)
    assert sql.whole_sql(text) == ()
