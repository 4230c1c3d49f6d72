"""``otel-eval watch`` shows golden coverage in its window (issue 33.1): one line, from the
window's evaluations and the stored golden cases, on the database tests/test_watch.py builds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rich.console import Console

from otel_eval.read.coverage import coverage
from otel_eval.read.times import iso_utc
from otel_eval.report import coverage_line
from otel_eval.watch import render, snapshot

from .test_watch import T0, weather_db  # noqa: F401  (the module's database fixture)


def golden_cases(db: Path) -> int:
    conn = sqlite3.connect(db)
    count = conn.execute("SELECT COUNT(*) FROM golden_cases").fetchone()[0]
    conn.close()
    return count


def test_the_frame_has_one_coverage_line_for_its_window(weather_db: Path):  # noqa: F811
    golden = golden_cases(weather_db)
    # The last hour holds s2..s6: weather_tokyo, top_users_by_revenue (twice), berlin_typo_retry, one joke.
    snap = snapshot([weather_db], window_s=3600, now=T0)
    since = iso_utc(T0 - 3600)
    assert snap["coverage"] == {
        "golden_cases": golden,
        "exercised": 3,
        "never_exercised": golden - 3,
        "sessions": 5,
        "unmatched": 1,
        "unmatched_share": 0.2,
        "line": f"golden coverage since {since}: 3 of {golden} cases exercised, {golden - 3} never; "
        "unmatched 20% (1 of 5 sessions)",
    }
    # The same as report's coverage over the same evaluations (report reads them all with one query).
    assert snap["coverage"]["line"] == coverage_line(coverage([weather_db], since))
    console = Console(record=True, width=250)
    console.print(render(snap))
    assert snap["coverage"]["line"] in console.export_text()
    # A window of 200 s holds s4..s6: two cases, the joke unmatched.
    narrow = snapshot([weather_db], window_s=200, now=T0)["coverage"]
    assert (narrow["exercised"], narrow["sessions"], narrow["unmatched"]) == (2, 3, 1)
