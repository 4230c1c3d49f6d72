"""Reference-free health of a session: what can be judged without a golden case.

Every session gets these numbers, matched or not. They fail only against limits the user set
(``options`` of the ``health`` criterion), because "too many steps" depends on the agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..trajectory import Trajectory

LIMITS: dict[str, str] = {
    "max_tool_error_rate": "tool_error_rate",
    "max_tool_errors": "tool_errors",
    "max_repeated_calls": "repeated_calls",
    "max_tool_calls": "tool_calls",
    "max_llm_calls": "llm_calls",
    "max_steps": "steps",
    "max_turn_latency_ms": "max_turn_latency_ms",
    "max_session_latency_ms": "session_latency_ms",
    "max_total_tokens": "total_tokens",
    "max_input_tokens": "input_tokens",
    "max_output_tokens": "output_tokens",
}
"""Limit option → the metric it bounds (metric must be <= limit)."""

FLAG_LIMITS = ("require_final_answer",)
"""Boolean limits: ``require_final_answer = true`` fails a session whose last turn gave no answer."""


def _call_key(name: str, args: Any) -> str:
    return name + "\x00" + json.dumps(args, sort_keys=True, default=str)


def health_metrics(trajectory: Trajectory) -> dict[str, Any]:
    """The numbers. Repeated calls = calls identical (name and arguments) to an earlier call of
    the same turn; ``loops`` lists each repeated call with how often it was made."""
    # One pass over the turns: this runs for every session, matched or not.
    turns = trajectory.turns
    n_calls = errors = repeated = llm_calls = input_tokens = output_tokens = 0
    loops: list[dict[str, Any]] = []
    turn_latencies: list[float] = []
    starts: list[int] = []
    ends: list[int] = []
    unanswered: list[int] = []
    for turn in turns:
        calls = turn.calls
        n_calls += len(calls)
        for call in calls:
            if call.error is not None:
                errors += 1
        if len(calls) > 1:
            repeated += _repeats(turn.index, calls, loops)
        llm_calls += turn.llm_calls
        input_tokens += turn.input_tokens
        output_tokens += turn.output_tokens
        start, end = turn.start_ns, turn.end_ns
        if end and start and end >= start:
            turn_latencies.append(round((end - start) / 1e6, 3))
        if start:
            starts.append(start)
        if end:
            ends.append(end)
        if not (turn.final_response or "").strip():
            unanswered.append(turn.index)
    session_latency = (
        round((max(ends) - min(starts)) / 1e6, 3) if starts and ends and max(ends) >= min(starts) else None
    )
    last = turns[-1] if turns else None
    return {
        "turns": len(turns),
        "tool_calls": n_calls,
        "tool_errors": errors,
        "tool_error_rate": round(errors / n_calls, 4) if n_calls else 0.0,
        "repeated_calls": repeated,
        "loops": loops,
        "llm_calls": llm_calls,
        "steps": n_calls + llm_calls,
        "missing_final_answer": last is None or not (last.final_response or "").strip(),
        "turns_without_answer": unanswered,
        "turn_latency_ms": turn_latencies,
        "max_turn_latency_ms": max(turn_latencies) if turn_latencies else None,
        "session_latency_ms": session_latency,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _repeats(turn_index: int, calls: list[Any], loops: list[dict[str, Any]]) -> int:
    """Calls of one turn identical to an earlier one; each repeated call is added to ``loops``."""
    # Only a call whose tool is called again in the turn can repeat: the others need no key
    # (serialising every call's arguments was most of the health criterion's time).
    seen: dict[str, int] = {}
    for call in calls:
        seen[call.name] = seen.get(call.name, 0) + 1
    again = {name for name, n in seen.items() if n > 1}
    if not again:
        return 0
    counts: dict[str, int] = {}
    first: dict[str, Any] = {}
    for call in calls:
        if call.name not in again:
            continue
        key = _call_key(call.name, call.args)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, call)
    repeated = 0
    for key, count in counts.items():
        if count > 1:
            repeated += count - 1
            loops.append({"turn": turn_index, "name": first[key].name, "args": first[key].args, "count": count})
    return repeated


def check_limits(metrics: Mapping[str, Any], limits: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Violations of the configured limits. Unknown limit names raise ValueError (a typo must not
    silently disable a check)."""
    violations: list[dict[str, Any]] = []
    for name, limit in (limits or {}).items():
        if name in FLAG_LIMITS:
            if limit and metrics["missing_final_answer"]:
                violations.append({"limit": name, "value": True, "reason": "the last turn has no final answer"})
            continue
        if name not in LIMITS:
            known = ", ".join(sorted([*LIMITS, *FLAG_LIMITS]))
            raise ValueError(f"unknown health limit {name!r}; known limits: {known}")
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            raise ValueError(f"health limit {name!r} must be a number, got {limit!r}")
        value = metrics[LIMITS[name]]
        if value is not None and value > limit:
            violations.append(
                {"limit": name, "max": limit, "value": value, "reason": f"{LIMITS[name]} = {value} exceeds {limit}"}
            )
    return violations


def health(trajectory: Trajectory, limits: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Metrics, the limits applied, violations and ``passed`` (no limit exceeded)."""
    metrics = health_metrics(trajectory)
    violations = check_limits(metrics, limits)
    return {**metrics, "limits": dict(limits or {}), "violations": violations, "passed": not violations}
