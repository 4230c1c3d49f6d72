"""One SELECT over one table, recognised from sqlglot's tokens: the SQL finder's fast path.

Most SQL an agent writes and runs is a single-table query such as ``SELECT user_id, SUM(amount)
AS revenue FROM t WHERE region = 'EMEA' GROUP BY user_id ORDER BY revenue DESC LIMIT 10``. Of
such a text the finder (:mod:`otel_eval.metrics.sql`) needs only what sqlglot's parser says: that
it parses, and the table it reads. The parser builds a whole tree to say that (about four times
the cost of tokenizing, and cyclic garbage afterwards); this recognizer walks the tokens instead.

It accepts a deliberately small grammar, every sentence of which sqlglot's default dialect parses
to one ``exp.Select`` whose only table is the one after FROM, with no CTE. Anything else (joins,
subqueries, CASE, IN, keywords used as names, functions other than the five aggregates, ...) is
not recognised and goes to the parser. ``tests/test_sql_simple_select.py`` holds the recognizer
to the parser on generated statements and on every statement in the fixtures.

Names are ``VAR`` tokens: identifiers sqlglot does not know as keywords (so ``date``, ``left``
or a quoted name are not recognised), and not a word it reads as a function without parentheses. The grammar::

    statement  = SELECT [DISTINCT] item {"," item} FROM table [[AS] name]
                 [WHERE condition] [GROUP BY expression {"," expression}] [HAVING condition]
                 [ORDER BY expression [ASC | DESC] {"," expression [ASC | DESC]}] [LIMIT number] [";"]
    item       = "*" | expression [[AS] name]
    table      = name ["." name ["." name]]
    condition  = comparison {(AND | OR) comparison}
    comparison = expression ("=" | "<>" | "!=" | "<" | ">" | "<=" | ">=") expression
    expression = operand {("+" | "-" | "*" | "/") operand}
    operand    = ["-"] number | string | column | aggregate "(" (["DISTINCT"] column | "*") ")"
    column     = name ["." name]
    aggregate  = COUNT | SUM | AVG | MIN | MAX   (any case; "*" only in COUNT)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import TokenType
from sqlglot.parser import Parser

_AGGREGATES = frozenset({"COUNT", "SUM", "AVG", "MIN", "MAX"})
_ARITHMETIC = frozenset({TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH})
_COMPARISONS = frozenset({TokenType.EQ, TokenType.NEQ, TokenType.LT, TokenType.GT, TokenType.LTE, TokenType.GTE})
_NAME = TokenType.VAR
_READ_AS_FUNCTIONS = frozenset(Parser.NO_PAREN_FUNCTION_PARSERS)
"""Words the parser reads as a function even without parentheses (``CONNECT_BY_ROOT x``, ``IF``):
not names here, though they are ``VAR`` tokens."""


def simple_select_table(tokens: Sequence[Any]) -> tuple[str, ...] | None:
    """The name parts (one to three: ``[[catalog.]db.]table``) of the table a single-table
    SELECT reads, when the tokens are one sentence of the grammar above; None otherwise."""
    reader = _Reader(tokens)
    table = reader.statement()
    return table if table is not None and reader.at_end() else None


class _Reader:
    """A recursive-descent recognizer over one token list; each method consumes one grammar
    rule and says whether it was there (a failed rule leaves the reader anywhere: the whole
    text is then not recognised)."""

    __slots__ = ("tokens", "kinds", "at")

    def __init__(self, tokens: Sequence[Any]) -> None:
        self.tokens = tokens
        self.kinds: list[Any] = [t.token_type for t in tokens]
        self.kinds.append(None)  # the end: no rule accepts it, so no rule reads past it
        self.at = 0

    def at_end(self) -> bool:
        return self.kinds[self.at] is None

    def take(self, kind: Any) -> bool:
        if self.kinds[self.at] is kind:
            self.at += 1
            return True
        return False

    def name(self) -> str | None:
        if self.kinds[self.at] is _NAME:
            text = self.tokens[self.at].text
            if text.upper() not in _READ_AS_FUNCTIONS:
                self.at += 1
                return text
        return None

    def statement(self) -> tuple[str, ...] | None:
        if not (self.take(TokenType.SELECT) and self.items() and self.take(TokenType.FROM)):
            return None
        table = self.table()
        if table is None or not self.alias():
            return None
        if self.take(TokenType.WHERE) and not self.condition():
            return None
        if self.take(TokenType.GROUP_BY) and not self.expressions():
            return None
        if self.take(TokenType.HAVING) and not self.condition():
            return None
        if self.take(TokenType.ORDER_BY) and not self.order_keys():
            return None
        if self.take(TokenType.LIMIT) and not self.take(TokenType.NUMBER):
            return None
        self.take(TokenType.SEMICOLON)
        return table

    def items(self) -> bool:
        self.take(TokenType.DISTINCT)
        while True:
            if not self.take(TokenType.STAR) and not (self.expression() and self.alias()):
                return False
            if not self.take(TokenType.COMMA):
                return True

    def alias(self) -> bool:
        """An optional ``[AS] name``; false only for an AS without a name."""
        if self.take(TokenType.ALIAS):
            return self.name() is not None
        self.name()
        return True

    def table(self) -> tuple[str, ...] | None:
        first = self.name()
        if first is None:
            return None
        parts = [first]
        while len(parts) < 3 and self.take(TokenType.DOT):
            part = self.name()
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def condition(self) -> bool:
        while True:
            if not (self.expression() and self.kinds[self.at] in _COMPARISONS):
                return False
            self.at += 1
            if not self.expression():
                return False
            if not (self.take(TokenType.AND) or self.take(TokenType.OR)):
                return True

    def expressions(self) -> bool:
        while True:
            if not self.expression():
                return False
            if not self.take(TokenType.COMMA):
                return True

    def order_keys(self) -> bool:
        while True:
            if not self.expression():
                return False
            if not self.take(TokenType.ASC):
                self.take(TokenType.DESC)
            if not self.take(TokenType.COMMA):
                return True

    def expression(self) -> bool:
        if not self.operand():
            return False
        while self.kinds[self.at] in _ARITHMETIC:
            self.at += 1
            if not self.operand():
                return False
        return True

    def operand(self) -> bool:
        kind = self.kinds[self.at]
        if kind is TokenType.DASH:
            self.at += 1
            return self.take(TokenType.NUMBER)
        if kind is TokenType.NUMBER or kind is TokenType.STRING:
            self.at += 1
            return True
        if kind is not _NAME:
            return False
        if self.kinds[self.at + 1] is not TokenType.L_PAREN:
            return self.column()
        function = self.tokens[self.at].text.upper()
        if function not in _AGGREGATES:
            return False
        self.at += 2
        if not (function == "COUNT" and self.take(TokenType.STAR)):
            self.take(TokenType.DISTINCT)
            if not self.column():
                return False
        return self.take(TokenType.R_PAREN)

    def column(self) -> bool:
        if self.name() is None:
            return False
        if self.take(TokenType.DOT):
            return self.name() is not None
        return True
