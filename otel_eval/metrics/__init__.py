"""Pure metric functions. Nothing here reads files, stores results or knows about spans; the only
I/O is the optional LLM judge's HTTP call (judge.py), which is kept out of the other modules."""

from ..models.arguments import COMPARATORS, ArgumentPolicy, argument_diff, arguments_equal, values_equal
from .alignment import Alignment, align, split_retries
from .health import health, health_metrics
from .response import contains, exact_match, regex_match, rouge1, rouge1_f
from .sql import contains_sql, extract_tables, find_sql, table_matches

__all__ = [
    "COMPARATORS",
    "ArgumentPolicy",
    "argument_diff",
    "arguments_equal",
    "values_equal",
    "health",
    "health_metrics",
    "contains",
    "exact_match",
    "regex_match",
    "rouge1",
    "rouge1_f",
    "contains_sql",
    "extract_tables",
    "find_sql",
    "table_matches",
    "Alignment",
    "align",
    "split_retries",
]
