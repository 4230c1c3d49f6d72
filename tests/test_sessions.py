"""Session end detection (DESIGN §5), driven by an explicit receive clock."""

from otel_eval.sessions import (
    KEYED_BY_ATTRIBUTE,
    KEYED_BY_TRACE,
    REASON_EXPLICIT,
    REASON_IDLE,
    REASON_TRACE_COMPLETE,
    SessionTracker,
    Timing,
)

S = 1_000_000_000  # one second in ns


def tracker(quiet=5.0, idle=60.0):
    return SessionTracker(Timing(trace_quiet=quiet, session_idle=idle))


def test_trace_keyed_session_ends_when_trace_is_quiet_after_its_root():
    t = tracker()
    t.observe("t1", KEYED_BY_TRACE, "t1", root_seen=False, now_ns=0)
    t.observe("t1", KEYED_BY_TRACE, "t1", root_seen=True, now_ns=1 * S)
    assert t.due(5 * S) == []  # 4 s since the last span: still inside trace_quiet
    assert t.due(6 * S) == [("t1", REASON_TRACE_COMPLETE)]
    assert t.due(100 * S) == []  # ended once, never twice
    assert len(t) == 0


def test_named_session_waits_for_session_idle_not_trace_completion():
    t = tracker()
    t.observe("conv-1", KEYED_BY_ATTRIBUTE, "trace-a", True, 0)
    assert t.due(10 * S) == []
    t.observe("conv-1", KEYED_BY_ATTRIBUTE, "trace-b", True, 30 * S)  # a second turn keeps it open
    assert t.due(89 * S) == []
    assert t.due(90 * S) == [("conv-1", REASON_IDLE)]


def test_explicit_end_waits_only_for_the_trace_to_be_quiet():
    t = tracker()
    t.observe("conv-1", KEYED_BY_ATTRIBUTE, "trace-a", True, 0, end_requested=True)
    assert t.due(4 * S) == []
    assert t.due(5 * S) == [("conv-1", REASON_EXPLICIT)]


def test_child_before_root_keeps_trace_open_until_root_arrives():
    t = tracker(idle=60)
    t.observe("t1", KEYED_BY_TRACE, "t1", root_seen=False, now_ns=0)
    assert t.due(10 * S) == []  # no root yet: not complete
    t.observe("t1", KEYED_BY_TRACE, "t1", root_seen=True, now_ns=11 * S)
    assert t.due(16 * S) == [("t1", REASON_TRACE_COMPLETE)]


def test_trace_whose_root_never_arrives_ends_after_session_idle():
    t = tracker(quiet=1, idle=20)
    t.observe("t1", KEYED_BY_TRACE, "t1", root_seen=False, now_ns=0)
    assert t.due(19 * S) == []
    assert t.due(20 * S) == [("t1", REASON_IDLE)]


def test_request_end_and_resume():
    t = tracker()
    t.resume("conv-9", KEYED_BY_ATTRIBUTE, False, [("trace-a", "root-span", 0), ("trace-b", None, 2 * S)])
    assert t.session_of_trace("trace-b") == "conv-9"
    assert t.request_end("conv-9")
    assert t.due(6 * S) == []  # trace-b has no root yet
    assert t.due(62 * S) == [("conv-9", REASON_IDLE)]
    assert not t.request_end("unknown")


def test_move_trace_from_trace_key_to_named_session():
    t = tracker()
    t.observe("trace-a", KEYED_BY_TRACE, "trace-a", True, 0)
    t.move_trace("trace-a", "trace-a", "conv-1", KEYED_BY_ATTRIBUTE)
    assert "trace-a" not in t and "conv-1" in t
    assert t.due(10 * S) == []  # named sessions do not end on trace completion
    assert t.due(60 * S) == [("conv-1", REASON_IDLE)]


# --- the timer heap against the rule itself ---------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("span"), st.integers(0, 4), st.integers(0, 2), st.booleans(), st.booleans(), st.integers(0, 30)
        ),
        st.tuples(st.just("end"), st.integers(0, 4), st.integers(0, 30)),
        st.tuples(st.just("tick"), st.integers(0, 90)),
    ),
    max_size=60,
)


@given(_steps, st.sampled_from([(5.0, 60.0), (2.0, 10.0), (10.0, 3.0), (0.0, 0.0)]))
@settings(max_examples=300, deadline=None)
def test_due_ends_exactly_the_sessions_the_rule_ends_and_at_the_first_tick_it_allows(steps, timing):
    """``due`` looks only at sessions whose earliest end has come; every tick it must report the
    same sessions, reasons and order as checking the end rule on every open session would."""
    quiet, idle = timing
    t = tracker(quiet, idle)
    now = 0
    for step in steps:
        if step[0] == "span":
            _, session, trace, root, by_trace, advance = step
            now += advance * S // 2
            sid = f"s{session}"
            keyed = KEYED_BY_TRACE if by_trace else KEYED_BY_ATTRIBUTE
            t.observe(sid, t._sessions[sid].keyed_by if sid in t else keyed, f"{sid}-t{trace}", root, now)
        elif step[0] == "end":
            _, session, advance = step
            now += advance * S // 2
            t.request_end(f"s{session}")
        else:
            now += step[1] * S // 2
        expected = [
            (sid, reason)
            for sid, session in t._sessions.items()
            if (reason := SessionTracker._end_reason(session, now, t.timing.quiet_ns, t.timing.idle_ns))
        ]
        assert t.due(now) == expected
