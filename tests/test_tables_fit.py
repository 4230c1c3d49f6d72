"""README's promise, for every command that prints a table: at 80 columns (a CI log, a pipe)
every line fits, and no word is split over two lines — a word is shown whole, or shortened with
an ellipsis (a session id by its middle, a list by its last items).

One real database, written by a real ``EvalSpanProcessor`` from the example weather agent: two
agent versions with long names, session ids of 60 characters that share all but their last
digits, golden cases named like a regression suite's scenarios, queries of a long sentence, ten
sessions of one case per version (so that compare tests its tool paths), and human labels. Each
command runs as ``otel-eval`` runs it, once at 80 columns and once at 1,000, where nothing needs
shortening: the words of the wide output are the words the narrow one may show.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from rich.cells import cell_len
from rich.console import Console

from examples.weather_agent import run_session
from examples.weather_agent.agent import agent_resource
from otel_eval.cli import main
from otel_eval.processor import EvalSpanProcessor
from otel_eval.tablefit import Column, fit_table, fit_widths, wrap_words

ROOT = Path(__file__).resolve().parent.parent
WEATHER = ROOT / "examples/golden/weather.evalset.json"
NARROW, WIDE = 80, 1000
V1, V2 = "1.0.0-langgraph-openinference-build-2027-01-15", "2.0.0-langgraph-openinference-build-2027-02-01"
COMMUTE_CASE = "langgraph_openinference-s1-weather-in-tokyo-before-the-morning-commute"
COMMUTE_QUERY = (
    "For the langgraph openinference regression suite, first scenario, before my morning commute: "
    "what's the weather in Tokyo?"
)
REVENUE_CASE = "openinference-s2-top-ten-users-by-revenue-across-every-region-and-channel"
REVENUE_QUERY = (
    "Show me the top 10 users by revenue across every region and sales channel of the company for the last quarter"
)
#: Sixty characters in common, then the version's digit and a number: only their ends tell them apart.
COMMUTE_SESSION = "langgraph_openinference-s1-weather-conversation-2027-01-15-{major}{n:03d}"
REVENUE_SESSION = "openinference-s2-revenue-conversation-2027-01-15-{major}"
PER_VERSION = 10  # compare tests a case's tool paths from ten sessions per version


def long_golden_set(folder: Path) -> Path:
    path = folder / "regression-suite.evalset.json"
    path.write_text(
        json.dumps(
            {
                "eval_set_id": "langgraph_openinference_regression_suite",
                "eval_cases": [
                    {
                        "eval_id": COMMUTE_CASE,
                        "conversation": [
                            {
                                "invocation_id": f"{COMMUTE_CASE}-1",
                                "user_content": {"role": "user", "content": COMMUTE_QUERY},
                                "expected_tool_trajectory": [{"name": "get_weather", "args": {"city": "Tokyo"}}],
                            }
                        ],
                    },
                    {
                        "eval_id": REVENUE_CASE,
                        "conversation": [
                            {
                                "invocation_id": f"{REVENUE_CASE}-1",
                                "user_content": {"role": "user", "content": REVENUE_QUERY},
                                "expected_tool_trajectory": [
                                    {"name": "call_db_agent", "args": {"question": REVENUE_QUERY}}
                                ],
                            }
                        ],
                    },
                ],
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The database scored against the example golden set only (the long cases unknown yet),
    kept as ``before-rescore.db``; then rescored with the regression suite added, and labelled."""
    folder = tmp_path_factory.mktemp("tables")
    suite = long_golden_set(folder)
    db = folder / "otel-eval.db"
    for version in (V1, V2):
        major = version[0]
        processor = EvalSpanProcessor(db=db, golden=[WEATHER], trace_quiet=600, session_idle=600)
        provider = TracerProvider(resource=agent_resource(version))
        provider.add_span_processor(processor)
        for n in range(PER_VERSION):
            run_session(provider, COMMUTE_SESSION.format(major=major, n=n), [COMMUTE_QUERY], version=version)
        run_session(provider, REVENUE_SESSION.format(major=major), [REVENUE_QUERY], version=version)
        run_session(provider, f"tokyo-{major}", ["What's the weather in Tokyo?"], version=version)
        run_session(provider, f"joke-{major}", ["Tell me a joke"], version=version)
        provider.shutdown()  # ends and scores every session
    before = folder / "before-rescore.db"
    shutil.copy(db, before)
    with columns(WIDE):
        assert main(["rescore", "--db", str(db), "--golden", str(WEATHER), "--golden", str(suite)]) == 0
        for session, verdict in (
            (COMMUTE_SESSION.format(major=2, n=0), "agree"),
            (COMMUTE_SESSION.format(major=1, n=0), "disagree"),
            ("tokyo-2", "agree"),
        ):
            assert main(["label", session, verdict, "--db", str(db), "--by", "reviewer"]) == 0
    return {"db": db, "before": before, "suite": suite, "folder": folder}


@contextlib.contextmanager
def columns(width: int) -> Iterator[None]:
    """rich takes a pipe's width from COLUMNS, as in a CI log."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def run(width: int, argv: Sequence[object]) -> str:
    """``otel-eval ARGV | cat`` at ``width`` columns: its standard output."""
    out = io.StringIO()
    with columns(width), contextlib.redirect_stdout(out):
        assert main([str(a) for a in argv]) in (0, 1, 3), out.getvalue()
    return out.getvalue()


BOX_DRAWING = re.compile("[\u2500-\u257f]")


def words(text: str) -> list[str]:
    return [w for line in text.splitlines() for w in BOX_DRAWING.sub(" ", line).split()]


def assert_keeps_the_promise(narrow: str, wide: str, width: int = NARROW) -> None:
    """Every line fits ``width``; every word of ``narrow`` is a word of ``wide``, a list's
    ``+N``, or a word shortened with an ellipsis whose pieces are pieces of one word of ``wide``."""
    assert narrow.strip(), "nothing printed"
    for line in narrow.splitlines():
        assert cell_len(line) <= width, f"{cell_len(line)} columns: {line!r}"
    whole = set(words(wide))
    for word in words(narrow):
        if word in whole or re.fullmatch(r"\+\d+,?", word):
            continue
        line = next(x for x in narrow.splitlines() if word in BOX_DRAWING.sub(" ", x).split())
        pieces = [p for p in word.rstrip(",;").split("…") if p]  # a list item keeps its separator
        assert "…" in word and any(all(p in w for p in pieces) for w in whole), (
            f"{word!r} is part of a word split over lines, in: {line!r}"
        )


def both(argv: Sequence[object]) -> tuple[str, str]:
    return run(NARROW, argv), run(WIDE, argv)


def rows(text: str) -> list[list[str]]:
    """Body rows of the bordered tables: cells between │, stripped."""
    return [
        [c.strip() for c in line.strip().strip("│").split("│")] for line in text.splitlines() if line.startswith("│")
    ]


# --- each command at 80 columns --------------------------------------------------------------------


def test_rescore_changed_sessions(world):
    """The table of issue 32: ids and case names were folded mid-word (``langgraph_`` / ``openinfere``)."""
    outputs = []
    for width in (NARROW, WIDE):
        db = world["folder"] / f"rescore-{width}.db"
        shutil.copy(world["before"], db)
        outputs.append(run(width, ["rescore", "--db", db, "--golden", WEATHER, "--golden", world["suite"]]))
    narrow, wide = outputs
    assert_keeps_the_promise(narrow, wide)
    table = rows(narrow)
    # Every changed session: one line, both ends of its id, and its new verdict whole.
    for major, verdict in ((1, "PASS"), (2, "FAIL")):
        sid = COMMUTE_SESSION.format(major=major, n=7)
        row = next(r for r in table if r[0].startswith(sid[:8]) and r[0].endswith(sid[-4:]))
        assert verdict in row and "unmatched" in row, row
    assert len(table) == 2 * PER_VERSION + 2


def test_report(world):
    narrow, wide = both(["report", "--db", world["db"]])
    assert_keeps_the_promise(narrow, wide)
    for title in ("Sessions", "Criteria", "Golden coverage", "Judge calibration"):
        assert title in narrow
    coverage = {r[0]: r for r in rows(narrow) if len(r) > 1 and r[1] in ("20", "2", "never")}
    assert any(k.startswith("langgraph_") and k.endswith("commute") and "…" in k for k in coverage), coverage


def test_report_session_keeps_each_call_whole_over_several_lines(world):
    sid = COMMUTE_SESSION.format(major=2, n=3)  # version 2 calls get_forecast where get_weather was expected
    narrow, wide = both(["report", "--db", world["db"], "--session", sid])
    assert_keeps_the_promise(narrow, wide)
    header = next(line for line in narrow.splitlines() if line.startswith("┃") and "expected" in line)
    assert "note" in header
    text = " ".join(" ".join(r) for r in rows(narrow))
    assert "get_weather(city='Tokyo')" in text and "get_forecast(city='Tokyo'," in text and "days=1)" in text
    revenue_narrow, revenue_wide = both(["report", "--db", world["db"], "--session", REVENUE_SESSION.format(major=2)])
    assert_keeps_the_promise(revenue_narrow, revenue_wide)
    # The question is 112 characters: both columns show all of it, line by line.
    expected = [r[1] for r in rows(revenue_narrow) if len(r) == 4]
    assert " ".join(x for x in expected if x).endswith("for the last quarter')")


def test_compare_keeps_each_cases_status_beside_a_long_case_name(world):
    narrow, wide = both(["compare", "--db", world["db"], "--baseline", V1, "--candidate", V2])
    assert_keeps_the_promise(narrow, wide)
    table = rows(narrow)
    commute = next(r for r in table if r[0].startswith("langgraph_openinfer") and r[0].endswith("commute"))
    assert "regressed" in commute and "-100%" in commute
    revenue = next(r for r in table if r[0].startswith("openinference-s2") and r[0].endswith("channel"))
    assert "unchanged" in revenue
    assert "Path changes" in narrow  # ten sessions a version: the tool paths were tested
    versions = next(line for line in narrow.splitlines() if line.startswith("┃") and "1.0.0" in line)
    assert "2027-01-15" in versions and "2027-02-01" in versions  # both ends of each version name


def test_compare_gate(world):
    narrow, wide = both(
        ["compare", "--db", world["db"], "--baseline", V1, "--candidate", V2, "--gate", "--min-sessions", "5"]
    )
    assert_keeps_the_promise(narrow, wide)
    decisions = {r[-1] for r in rows(narrow)}
    assert decisions and decisions <= {"promote", "roll back", "not enough evidence yet", "fewer than 5 sessions"}


def test_watch_once(world):
    from otel_eval.watch import render, snapshot

    snap = snapshot([world["db"]], window_s=3600)  # one snapshot: its clock and rates are the same at both widths

    def draw(width: int) -> str:
        console = Console(record=True, width=width, color_system=None)
        console.print(render(snap))
        return console.export_text()

    assert_keeps_the_promise(draw(NARROW), draw(WIDE))


def test_inspect_keeps_each_fields_source_on_the_arrows_line(world):
    narrow, wide = both(["inspect", "--db", world["db"], "--session", REVENUE_SESSION.format(major=2)])
    assert_keeps_the_promise(narrow, wide)
    arrows = [line for line in narrow.splitlines() if "←" in line and "Session" not in line]
    assert arrows and all(re.search(r"← \S", line) for line in arrows), arrows
    labels = [
        line.split()[0]
        for line in narrow.splitlines()[narrow.splitlines().index("Trajectory: 1 turn(s)") + 1 :]
        if line.startswith(("turn", "  user", "  call", "  final"))
    ]
    assert labels == ["turn", "user", "call", "final"]  # the trajectory's labels are never cut


# --- the helper's rules ----------------------------------------------------------------------------


def test_wrap_words_breaks_between_words_and_shortens_only_a_word_too_wide():
    assert wrap_words("get_weather(city='Tokyo', days=1)", 16) == ["get_weather(cit…", "days=1)"]
    assert wrap_words("a b c d", 3) == ["a b", "c d"]
    assert wrap_words("keep\u00a0together now", 14) == ["keep\u00a0together", "now"]
    assert wrap_words("first\n\nthird", 10) == ["first", "", "third"]


def test_wrapped_columns_share_the_room_and_never_push_each_other_out():
    expected, actual = "call_db_agent(question='" + "word " * 30 + "')", "get_weather(city='Tokyo')"
    columns = [Column("mark"), Column("expected", min_width=16, wrap=True), Column("actual", min_width=16, wrap=True)]
    widths = fit_widths(columns, [["✓", expected, actual]], 80, [0, 1, 2])
    assert sorted(widths) == [0, 1, 2]
    assert widths[2] == len(actual) and widths[0] + widths[1] + widths[2] + 3 * 3 + 1 == 80
    console = Console(record=True, width=80, color_system=None)
    console.print(fit_table(None, columns, [["✓", expected, actual]], 80))
    assert_keeps_the_promise(console.export_text(), expected + " " + actual + " mark expected actual ✓")
