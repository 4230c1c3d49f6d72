"""Golden data sets in every supported format, loaded into one EvalSet model; the golden sets of a
run as one service (load, distinct ids, store, index: :class:`GoldenSets`); and the matcher that
finds the golden case of a session. Formats and rules: docs/golden-formats.md."""

from __future__ import annotations

from ..models.problems import GoldenFileError, Problem, ProblemLog
from .bigsky import criteria_from_bigsky
from .load import (
    FORMATS,
    UnknownFormat,
    convert,
    detect_format,
    expects_nothing,
    load_golden,
    load_golden_data,
    load_golden_files,
    read_golden_file,
    save_evalset,
    validate_golden,
    validate_golden_data,
)
from .matcher import GoldenIndex, Match, normalize_query
from .sets import GoldenSets, GoldenSource, distinct_ids

__all__ = [
    "FORMATS",
    "GoldenFileError",
    "GoldenIndex",
    "GoldenSets",
    "GoldenSource",
    "Match",
    "Problem",
    "ProblemLog",
    "UnknownFormat",
    "convert",
    "criteria_from_bigsky",
    "detect_format",
    "distinct_ids",
    "expects_nothing",
    "load_golden",
    "load_golden_data",
    "load_golden_files",
    "normalize_query",
    "read_golden_file",
    "save_evalset",
    "validate_golden",
    "validate_golden_data",
]
