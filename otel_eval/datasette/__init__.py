"""Datasette metadata for otel-eval databases: table descriptions and canned queries.

Datasette keys a database's metadata (and its canned queries) by the name it gives the file: the
file name without its extension (``otel-eval.db`` → ``otel-eval``), with ``_2``, ``_3``… added
when two files share a name. :func:`metadata_for` writes the metadata under those names, so the
queries appear whatever the files are called (``otel-eval datasette-metadata DB...``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

METADATA_FILE = Path(__file__).with_name("metadata.json")
TEMPLATE_KEY = "otel-eval"
"""The key of the database entry in :data:`METADATA_FILE`."""


def datasette_names(db_paths: Sequence[str | Path]) -> list[str]:
    """The names Datasette serves these files under, in order (``datasette a.db b.db``)."""
    names: list[str] = []
    for path in db_paths:
        name = Path(path).stem
        if name in names:
            suffix = 2
            while f"{name}_{suffix}" in names:
                suffix += 1
            name = f"{name}_{suffix}"
        names.append(name)
    return names


def metadata_for(db_paths: Sequence[str | Path]) -> dict[str, Any]:
    """The metadata with one database entry (descriptions and canned queries) per file."""
    template = json.loads(METADATA_FILE.read_text(encoding="utf-8"))
    entry = template["databases"][TEMPLATE_KEY]
    template["databases"] = {name: json.loads(json.dumps(entry)) for name in datasette_names(db_paths)}
    return template
