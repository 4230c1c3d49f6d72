from __future__ import annotations

import pytest

from otel_eval.metrics.health import health
from otel_eval.trajectory import ActualToolCall, Trajectory, Turn

MS = 1_000_000


def session() -> Trajectory:
    return Trajectory(
        session_id="s1",
        turns=[
            Turn(
                index=0,
                trace_id="t0",
                user_input="hi",
                final_response="Hello",
                start_ns=1000 * MS,
                end_ns=1250 * MS,
                llm_calls=2,
                input_tokens=100,
                output_tokens=20,
                calls=[
                    ActualToolCall(name="search", args={"q": "x"}),
                    ActualToolCall(name="search", args={"q": "x"}),
                    ActualToolCall(name="search", args={"q": "x"}, error="timeout"),
                    ActualToolCall(name="lookup", args={"id": 1}),
                ],
            ),
            Turn(
                index=1,
                trace_id="t1",
                user_input="more",
                final_response=None,
                start_ns=2000 * MS,
                end_ns=2400 * MS,
                llm_calls=1,
                input_tokens=50,
                output_tokens=0,
                calls=[ActualToolCall(name="search", args={"q": "x"})],
            ),
        ],
    )


def test_health_numbers():
    h = health(session())
    assert {
        k: h[k]
        for k in (
            "turns",
            "tool_calls",
            "tool_errors",
            "tool_error_rate",
            "repeated_calls",
            "llm_calls",
            "steps",
            "missing_final_answer",
            "turns_without_answer",
            "turn_latency_ms",
            "max_turn_latency_ms",
            "session_latency_ms",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "passed",
            "violations",
        )
    } == {
        "turns": 2,
        "tool_calls": 5,
        "tool_errors": 1,
        "tool_error_rate": 0.2,
        "repeated_calls": 2,  # the same search twice more in turn 0; turn 1's search is a new turn
        "llm_calls": 3,
        "steps": 8,
        "missing_final_answer": True,
        "turns_without_answer": [1],
        "turn_latency_ms": [250.0, 400.0],
        "max_turn_latency_ms": 400.0,
        "session_latency_ms": 1400.0,
        "input_tokens": 150,
        "output_tokens": 20,
        "total_tokens": 170,
        "passed": True,
        "violations": [],
    }
    assert h["loops"] == [{"turn": 0, "name": "search", "args": {"q": "x"}, "count": 3}]


def test_limits_decide_pass_or_fail():
    h = health(
        session(),
        {"max_tool_error_rate": 0.1, "max_steps": 8, "require_final_answer": True, "max_session_latency_ms": 1000},
    )
    assert not h["passed"]
    assert [v["limit"] for v in h["violations"]] == [
        "max_tool_error_rate",
        "require_final_answer",
        "max_session_latency_ms",
    ]
    assert h["violations"][0]["reason"] == "tool_error_rate = 0.2 exceeds 0.1"
    assert health(session(), {"max_repeated_calls": 2, "max_total_tokens": 170})["passed"]


def test_unknown_or_bad_limits_are_errors():
    with pytest.raises(ValueError, match="unknown health limit 'max_stepz'"):
        health(session(), {"max_stepz": 3})
    with pytest.raises(ValueError, match="health limit 'max_steps' must be a number, got 'ten'"):
        health(session(), {"max_steps": "ten"})


def test_empty_session():
    h = health(Trajectory(session_id="empty"))
    assert (h["tool_calls"], h["tool_error_rate"], h["missing_final_answer"], h["session_latency_ms"]) == (
        0,
        0.0,
        True,
        None,
    )
