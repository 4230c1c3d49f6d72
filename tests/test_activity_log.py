"""The collector says at INFO when a session opens (and when it will be scored) and when it is
scored, and under load one summary line stands for the sessions it did not log one by one."""

from __future__ import annotations

import logging

from otel_eval.engine import Engine
from otel_eval.engine.activity import ActivityLog
from otel_eval.sessions import KEYED_BY_ATTRIBUTE, KEYED_BY_TRACE, Timing
from otel_eval.spans import from_sdk_span

from .conftest import sdk_spans


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "otel_eval.engine"]


def test_open_says_when_the_session_will_be_scored(caplog):
    caplog.set_level(logging.INFO, logger="otel_eval.engine")
    activity = ActivityLog(Timing(trace_quiet=5, session_idle=60))
    activity.opened("s-1", KEYED_BY_ATTRIBUTE)
    activity.opened("t-1", KEYED_BY_TRACE)
    assert messages(caplog) == [
        "session s-1 opened; it will be scored 60 s after its last trace completes, or as soon as it ends explicitly",
        "session t-1 opened; it will be scored 5 s after its trace completes",
    ]


def test_past_the_window_limit_sessions_are_counted_and_summarized(caplog):
    caplog.set_level(logging.INFO, logger="otel_eval.engine")
    clock = Clock()
    activity = ActivityLog(Timing(), per_window=3, window=10, clock=clock)
    for i in range(5):
        activity.opened(f"s{i}", KEYED_BY_ATTRIBUTE)
    for i in range(4):
        activity.scored(f"s{i}", 1, "passed", "case", 1.0)
    assert len(messages(caplog)) == 3  # the rest held back in this window
    clock.now = 10.5
    activity.scored("s4", 1, "failed", "case", 0.0)  # a new window: the summary first, then the line
    assert messages(caplog)[3:] == [
        "... and 2 more session(s) opened, 4 more scored (one line a session up to 3 lines per 10 s)",
        "session s4 scored (revision 1): failed, case case, score 0.00",
    ]
    activity.flush()
    assert len(messages(caplog)) == 5  # nothing more was held back


def test_the_engine_logs_a_session_opening_and_being_scored(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="otel_eval.engine")
    engine = Engine(tmp_path / "e.db", trace_quiet=0.05, session_idle=0.1).start()
    try:
        engine.ingest([from_sdk_span(s) for s in sdk_spans(traces=1, session_id="visible")])
    finally:
        engine.close(score_open=True)  # ends and scores the session if its timer has not yet
    said = messages(caplog)
    opened = [m for m in said if m.startswith("session visible opened")]
    scored = [m for m in said if m.startswith("session visible scored")]
    assert len(opened) == 1 and "60" not in opened[0] and "0.1 s after its last trace" in opened[0]
    assert len(scored) == 1
