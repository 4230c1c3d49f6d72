from __future__ import annotations

import json

from otel_eval.metrics.sql import contains_sql, extract_tables, find_sql, table_matches


def test_sql_in_code_fences():
    text = "Here you go:\n```sql\nselect name, sum(revenue) from user_revenue_table group by name limit 10;\n```\nDone."
    assert find_sql([text]) == ["select name, sum(revenue) from user_revenue_table group by name limit 10"]
    assert find_sql(["```\nSELECT 1 FROM dual\n```"]) == ["SELECT 1 FROM dual"]
    assert find_sql(["```python\nprint('select a from b')\n```"]) == []


def test_sql_in_json_values_under_sql_keys():
    result = json.dumps(
        {
            "sql": "select * from `proj.ds.orders`",
            "query": "top customers",
            "nested": {"sql_query": "WITH t AS (SELECT 1 FROM x) SELECT * FROM t"},
        }
    )
    assert find_sql([result]) == ["select * from `proj.ds.orders`", "WITH t AS (SELECT 1 FROM x) SELECT * FROM t"]
    assert find_sql(['{"query": "What is the weather in Paris?"}']) == []


def test_bare_statements_need_a_statement_shape_and_trustworthy_keyword():
    assert find_sql(["I ran SELECT id, total FROM orders WHERE total > 10; and got 3 rows."]) == [
        "SELECT id, total FROM orders WHERE total > 10"
    ]
    assert find_sql(["select id from orders;"]) == ["select id from orders"]
    assert not contains_sql("Please select a date from the list below.")
    assert not contains_sql("We will update you with the results.")
    assert not contains_sql("SELECT the best option")
    assert find_sql(["INSERT INTO log VALUES (1)", "DELETE FROM log WHERE id = 1"]) == [
        "INSERT INTO log VALUES (1)",
        "DELETE FROM log WHERE id = 1",
    ]


def test_duplicates_across_texts_are_reported_once():
    assert find_sql(["SELECT a FROM b", "```sql\nSELECT  a\nFROM b;\n```"]) == ["SELECT a FROM b"]


def test_extract_tables_keeps_qualified_names_and_drops_ctes():
    sql = (
        "WITH recent AS (SELECT * FROM sales.orders WHERE day > '2024-01-01') "
        "SELECT c.name FROM recent r JOIN `proj.crm.customers` c ON r.cid = c.id"
    )
    assert extract_tables(sql) == ["sales.orders", "proj.crm.customers"]
    assert extract_tables("select * from Orders o join LineItems l on o.id = l.oid", lower=True) == [
        "orders",
        "lineitems",
    ]
    assert extract_tables("INSERT INTO audit SELECT * FROM events") == ["audit", "events"]


def test_regex_fallback_for_fragments_the_parser_rejects():
    assert extract_tables("SELECT * FROM orders o JOIN customers c ON o.cid = c.id WHERE (((") == [
        "orders",
        "customers",
    ]
    assert extract_tables("FROM `proj.ds.tbl` WHERE x = ") == ["proj.ds.tbl"]


def test_table_matches_compares_case_insensitively_by_trailing_parts():
    assert table_matches("orders", "proj.shop.Orders")
    assert table_matches("shop.orders", "proj.shop.orders")
    assert not table_matches("other.orders", "proj.shop.orders")
    assert not table_matches("proj.shop.orders", "orders")
    assert table_matches("`proj.ds.tbl`", "proj.ds.tbl")


# --- issue 10 rule 6: a whole argument or result that sqlglot parses is SQL, whatever the case ----

import pytest  # noqa: E402

from otel_eval.metrics.sql import sql_and_tables, whole_sql  # noqa: E402


@pytest.mark.parametrize(
    "text, statements",
    [
        ("select * from t limit 10", ["select * from t limit 10"]),
        ("Select Name From Users Where id = 1", ["Select Name From Users Where id = 1"]),
        ("sElEcT a fRoM b", ["sElEcT a fRoM b"]),
        ("  select id from orders;  ", ["select id from orders"]),
        ("select id from orders;;", ["select id from orders"]),
        (
            "with recent as (select * from sales.orders) select count(*) from recent",
            ["with recent as (select * from sales.orders) select count(*) from recent"],
        ),
        ("select 1 from a; select 2 from b;", ["select 1 from a", "select 2 from b"]),
        ("select ';' as s from a;\nselect 2 from b", ["select ';' as s from a", "select 2 from b"]),
        (
            "select * from `proj.ds.orders` where day > '2024-01-01'",
            ["select * from `proj.ds.orders` where day > '2024-01-01'"],
        ),
        ("insert into audit (id) values (1)", ["insert into audit (id) values (1)"]),
        ("update users set name = 'x' where id = 2", ["update users set name = 'x' where id = 2"]),
        ("delete from sessions where expired", ["delete from sessions where expired"]),
        ("select * from t -- the latest rows", ["select * from t -- the latest rows"]),
    ],
)
def test_a_whole_text_that_parses_as_sql_is_sql_in_any_case(text, statements):
    assert list(whole_sql(text)) == statements
    assert find_sql([text]) == statements
    assert find_sql([json.dumps({"input": text})]) == statements  # as one tool argument


@pytest.mark.parametrize(
    "text",
    [
        "Please select a date from the list below.",
        "select a date from the list",  # parses, but "the" is an article, not a table
        "Select one from each group",
        "select your seat from the options",
        "select the rows from the orders table",
        "I will select the top users from the revenue table and sum them",
        "Select the best flight from Paris to London.",
        "select 1 from a; and then we are done",  # not SQL as a whole
        "selection from the archive",
        "What did you select from the menu?",
        "",
    ],
)
def test_prose_mentioning_select_from_is_not_sql_as_a_whole(text):
    assert whole_sql(text) == ()
    assert find_sql([json.dumps({"note": text})]) == find_sql([text])


def test_prose_stays_prose_in_arguments_and_results():
    assert find_sql([json.dumps({"note": "select a date from the list"})]) == []
    assert not contains_sql("Select the best flight from Paris to London.")


def test_tables_of_a_lower_case_argument():
    statements, tables = sql_and_tables(
        [json.dumps({"q": "select o.id from sales.orders o join customers c on o.cid = c.id"})]
    )
    assert statements == ["select o.id from sales.orders o join customers c on o.cid = c.id"]
    assert tables == ["sales.orders", "customers"]


# --- on real spans: the OTel SDK makes GenAI tool spans whose arguments are lower-case SQL ----------


def _sdk_session(tool_spans: list[tuple[str, dict, object]]):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_eval.mapping import map_spans
    from otel_eval.spans import from_sdk_span
    from otel_eval.trajectory import build_trajectory

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.sql")
    session = {"session.id": "sql-session"}
    with tracer.start_as_current_span(
        "invoke_agent analyst",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "analyst", **session},
    ):
        for name, args, result in tool_spans:
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(args),
                **session,
            }
            if result is not None:
                attributes["gen_ai.tool.call.result"] = result if isinstance(result, str) else json.dumps(result)
            with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
                pass
    provider.shutdown()
    mapped = map_spans([from_sdk_span(s) for s in exporter.get_finished_spans()])
    return build_trajectory("sql-session", mapped)


def _score_sql(trajectory, expected_sql, expected_tables):
    from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalConfig, Invocation, MessageContent
    from otel_eval.scoring import score_session

    case = EvalCase(
        eval_id="top-users",
        conversation=[
            Invocation(
                invocation_id="t0",
                user_content=MessageContent.user("Show me the top 10 users by revenue"),
                expected_sql=expected_sql,
                expected_tables=expected_tables,
            )
        ],
    )
    config = EvalConfig(
        criteria={"sql_generation": CriterionConfig(threshold=1.0), "table_usage": CriterionConfig(threshold=1.0)}
    )
    return {c.criterion: c for c in score_session(trajectory, case, config).criterion_results}


def test_lower_case_sql_argument_and_result_on_real_sdk_spans():
    trajectory = _sdk_session(
        [
            (
                "run_query",
                {
                    "q": "select user_id, sum(amount) as revenue from user_revenue_table group by user_id "
                    "order by revenue desc limit 10"
                },
                [["u_042", 12400.0]],
            ),
            (
                "ask_db_agent",
                {"question": "Which customers ordered most?"},
                "with top as (select cid, count(*) as n from sales.orders group by cid) select * from top order by n desc",
            ),
        ]
    )
    assert [c.name for c in trajectory.turns[0].calls] == ["run_query", "ask_db_agent"]
    result = _score_sql(trajectory, expected_sql=True, expected_tables=["user_revenue_table", "orders"])
    assert result["sql_generation"].passed and result["sql_generation"].score == 1.0
    table_usage = result["table_usage"]
    assert table_usage.score == 1.0 and table_usage.passed, table_usage.details
    assert table_usage.details["per_turn"][0]["actual_tables"] == ["user_revenue_table", "sales.orders"]


def test_prose_argument_on_real_sdk_spans_is_no_sql():
    trajectory = _sdk_session(
        [
            ("ask_user", {"prompt": "select a date from the list"}, "select your seat from the options"),
        ]
    )
    result = _score_sql(trajectory, expected_sql=False, expected_tables=["list"])
    assert result["sql_generation"].passed and result["sql_generation"].details["per_turn"][0]["sql"] == []
    assert result["table_usage"].score == 0.0 and not result["table_usage"].passed


from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_STATEMENTS = [
    "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10",
    "WITH recent AS (SELECT * FROM sales.orders WHERE amount > 10) SELECT COUNT(*) FROM recent",
    "SELECT c.name FROM customers c JOIN orders o ON o.cid = c.id WHERE o.total > 5",
    "INSERT INTO audit SELECT * FROM events",
]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(_STATEMENTS), st.randoms(use_true_random=False), st.booleans())
def test_property_keyword_case_does_not_change_detection_or_tables(statement, rnd, semicolon):
    mixed = "".join(ch.upper() if rnd.random() < 0.5 else ch.lower() for ch in statement)
    text = mixed + (";" if semicolon else "")
    assert whole_sql(text) == (mixed,)
    assert extract_tables(mixed, lower=True) == extract_tables(statement, lower=True)


def test_a_script_under_an_sql_key_gives_each_statement_and_a_fragment_stays_whole():
    assert find_sql([json.dumps({"sql": "select 1 from a; select 2 from b;"})]) == [
        "select 1 from a",
        "select 2 from b",
    ]
    assert find_sql([json.dumps({"sql": "select * from orders where ((("})]) == ["select * from orders where ((("]


def test_lower_case_sql_with_a_leading_comment_on_real_sdk_spans():
    """Generated SQL often opens with a comment; the statement after it is still the whole text."""
    trajectory = _sdk_session(
        [
            (
                "run_query",
                {
                    "sql": "-- top users by revenue\nselect user_id, sum(amount) from user_revenue_table "
                    "group by user_id limit 10"
                },
                None,
            ),
            ("run_query", {"q": "/* weekly */ select count(*) from sales.orders"}, None),
        ]
    )
    result = _score_sql(trajectory, expected_sql=True, expected_tables=["user_revenue_table", "orders"])
    assert result["sql_generation"].passed
    assert result["table_usage"].score == 1.0, result["table_usage"].details
    # A script with comments between its statements gives each statement; prose stays prose.
    assert whole_sql("-- a\nselect 1 from x; -- b\nselect * from y") == (
        "-- a\nselect 1 from x",
        "-- b\nselect * from y",
    )
    assert whole_sql("-- note\nplease select a date from the list") == ()


_PROSE_PIECES = st.sampled_from(
    [
        "select a from t",
        "SELECT a FROM t",
        "Select a From t",
        "with x as (select 1 from y)",
        "insert into t",
        "update t set a = 1",
        "delete from t",
        "create table t",
        "merge into t",
        "within",
        "please select a date from the list",
        " ",
        "\t",
        "\r",
        "\n",
        "\n\n",
        ";",
        ",",
        "x",
        "-- c\n",
        "\u00e9",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PROSE_PIECES, max_size=14).map("".join))
def test_property_prose_skipped_by_the_quick_check_holds_no_statement(text):
    """The finder skips prose with no upper-case keyword and no line-leading keyword before a
    ";" without scanning it: such prose must be prose the full scan finds nothing in."""
    from otel_eval.metrics.sql import _bare_statements, _may_hold_trusted_statement

    if _bare_statements(text):
        assert _may_hold_trusted_statement(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_PROSE_PIECES | st.sampled_from(["```", "\\u00e9", "Merge", "DELETE", "up", "date"]), max_size=14).map(
        "".join
    )
)
def test_property_the_quick_may_hold_check_answers_as_its_pattern(text):
    """The ASCII fast path of the pre-scan spells the markers out: it must give the pattern's answer."""
    from otel_eval.metrics.sql import _MAY_HOLD_SQL, _may_hold_sql

    assert _may_hold_sql(text) == (_MAY_HOLD_SQL.search(text) is not None)


_SQL_TEXTS = st.sampled_from(
    [
        "SELECT a FROM t",
        "select user_id, sum(amount) from sales.orders group by user_id",
        "-- why\nselect 1 from x; select 2 from y;",
        "WITH w AS (SELECT 1 FROM z) SELECT * FROM w",
        "I ran SELECT id FROM orders; and got 3 rows.",
        "```sql\nSELECT b FROM u\n```",
        "select a date from the list",
        "update me",
        "\\u00e9 SELECT c FROM v",
        "ſelect a from t",
        "",
        "Lisbon",
        "st-1234",
        "{\"sql\": \"select q from r\"}",
        "select * from orders where (((",
    ]
)
_KEYS = st.sampled_from(["sql", "query", "Generated_SQL", "q", "rows", "note", "input"])
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | _SQL_TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)
# What JSON text never gives: tuples, keys that are not strings (two may become one JSON key: 1 and "1"),
# other objects (encoded with str()).
_OTHER_VALUES = st.recursive(
    _JSON_VALUES | st.builds(lambda s: type("Obj", (), {"__str__": lambda self: s})(), _SQL_TEXTS),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(
            _KEYS | st.integers(0, 2) | st.none() | st.booleans() | st.sampled_from(["0", "1", "null", "true"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_JSON_VALUES | _OTHER_VALUES, max_size=4))
@example([{1: "select a from t", "1": "no sql"}])  # one JSON key, the last value kept
@example([("select a from t",), {"q": ["select b from u", ("select c from v",)]}])
def test_property_a_value_is_searched_as_its_json_text(values):
    """Tool arguments and results reach the finder as values (Turn.sql_values), not encoded: the
    statements and tables must be those of their JSON texts (Turn.sql_sources)."""
    from otel_eval.json_text import as_text

    texts = [v if isinstance(v, str) else as_text(v) for v in values]
    assert sql_and_tables(values) == sql_and_tables(texts)


def test_a_turn_s_values_give_what_its_texts_give():
    from otel_eval.trajectory import ActualToolCall, Turn

    turn = Turn(
        index=0,
        trace_id="t",
        final_response="Done: SELECT x FROM answers;",
        calls=[
            ActualToolCall(
                name="run", args={"sql": "select a from t1"}, result={"rows": [[1, "a"]], "sql": "select b from t2"}
            ),
            ActualToolCall(name="ask", args={}, result=""),
            ActualToolCall(name="ask", args={"q": "hi"}, result=("select c from t3",)),
            ActualToolCall(name="ask", args={"n": 1}, result=0),
        ],
    )
    assert sql_and_tables(turn.sql_values()) == sql_and_tables(turn.sql_sources())
    assert sql_and_tables(turn.sql_values())[1] == ["t1", "t2", "t3", "answers"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        _PROSE_PIECES
        | _SQL_TEXTS
        | st.sampled_from(["(", "Recursive x", "or replace temp view", "as (", "set", "into", "`t`", "\n"]),
        max_size=8,
    ).map("".join)
)
def test_property_the_one_shape_pattern_matches_as_any_of_the_shapes(text):
    import re

    from otel_eval.metrics.sql import _SHAPE, _SHAPES

    assert (_SHAPE.match(text) is not None) == any(re.match(shape, text, re.IGNORECASE) for shape in _SHAPES)


def test_statements_differing_in_whitespace_only_are_found_once():
    # find_sql's key folds whitespace by str.split(), which must agree with the regex \s it
    # replaced on every code point (both use Py_UNICODE_ISSPACE), and then by example.
    import re
    import sys

    assert all(chr(c).isspace() == bool(re.fullmatch(r"\s", chr(c))) for c in range(sys.maxunicode + 1))
    found = find_sql(["SELECT a FROM t", "SELECT\u00a0a\u2003FROM\tt ", "select a from t", "SELECT a FROM u"])
    assert found == ["SELECT a FROM t", "SELECT a FROM u"]
