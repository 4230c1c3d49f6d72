from __future__ import annotations

import json

from otel_eval.metrics.sql import contains_sql, extract_tables, find_sql, table_matches


def test_sql_in_code_fences():
    text = "Here you go:\n```sql\nselect name, sum(revenue) from user_revenue_table group by name limit 10;\n```\nDone."
    assert find_sql([text]) == ["select name, sum(revenue) from user_revenue_table group by name limit 10"]
    assert find_sql(["```\nSELECT 1 FROM dual\n```"]) == ["SELECT 1 FROM dual"]
    assert find_sql(["```python\nprint('select a from b')\n```"]) == []


def test_sql_in_json_values_under_sql_keys():
    result = json.dumps({"sql": "select * from `proj.ds.orders`", "query": "top customers",
                         "nested": {"sql_query": "WITH t AS (SELECT 1 FROM x) SELECT * FROM t"}})
    assert find_sql([result]) == ["select * from `proj.ds.orders`", "WITH t AS (SELECT 1 FROM x) SELECT * FROM t"]
    assert find_sql(['{"query": "What is the weather in Paris?"}']) == []


def test_bare_statements_need_a_statement_shape_and_trustworthy_keyword():
    assert find_sql(["I ran SELECT id, total FROM orders WHERE total > 10; and got 3 rows."]) == [
        "SELECT id, total FROM orders WHERE total > 10"]
    assert find_sql(["select id from orders;"]) == ["select id from orders"]
    assert not contains_sql("Please select a date from the list below.")
    assert not contains_sql("We will update you with the results.")
    assert not contains_sql("SELECT the best option")
    assert find_sql(["INSERT INTO log VALUES (1)", "DELETE FROM log WHERE id = 1"]) == [
        "INSERT INTO log VALUES (1)", "DELETE FROM log WHERE id = 1"]


def test_duplicates_across_texts_are_reported_once():
    assert find_sql(["SELECT a FROM b", "```sql\nSELECT  a\nFROM b;\n```"]) == ["SELECT a FROM b"]


def test_extract_tables_keeps_qualified_names_and_drops_ctes():
    sql = ("WITH recent AS (SELECT * FROM sales.orders WHERE day > '2024-01-01') "
           "SELECT c.name FROM recent r JOIN `proj.crm.customers` c ON r.cid = c.id")
    assert extract_tables(sql) == ["sales.orders", "proj.crm.customers"]
    assert extract_tables("select * from Orders o join LineItems l on o.id = l.oid", lower=True) == ["orders", "lineitems"]
    assert extract_tables("INSERT INTO audit SELECT * FROM events") == ["audit", "events"]


def test_regex_fallback_for_fragments_the_parser_rejects():
    assert extract_tables("SELECT * FROM orders o JOIN customers c ON o.cid = c.id WHERE (((") == ["orders", "customers"]
    assert extract_tables("FROM `proj.ds.tbl` WHERE x = ") == ["proj.ds.tbl"]


def test_table_matches_compares_case_insensitively_by_trailing_parts():
    assert table_matches("orders", "proj.shop.Orders")
    assert table_matches("shop.orders", "proj.shop.orders")
    assert not table_matches("other.orders", "proj.shop.orders")
    assert not table_matches("proj.shop.orders", "orders")
    assert table_matches("`proj.ds.tbl`", "proj.ds.tbl")
