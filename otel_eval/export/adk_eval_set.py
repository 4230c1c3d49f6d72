"""Golden sets in google-adk's own EvalSet schema, for ``adk eval`` (``export --format adk`` and
``golden convert --to adk``).

ADK's models (``google.adk.evaluation.eval_set`` / ``eval_case``) differ from the seed's EvalSet
that ``--format evalset`` writes: messages are genai ``Content`` (``{"parts": [{"text"}],
"role"}``, the agent's role is ``"model"``), the expected tool calls are
``intermediate_data.tool_uses`` as genai ``FunctionCall`` (``{"id"?, "name", "args"}``) and the
expected answer is ``final_response``. ADK's ``Invocation`` and ``IntermediateData`` forbid keys
they do not declare, so this writes only ADK's own fields; what ADK has no field for (expected
SQL and tables, first-call-only, tags, metadata) is left out and named by
:func:`fields_adk_cannot_hold`, for the caller to warn about.

Pure functions: :mod:`otel_eval.export` loads the sessions, the CLI writes the file.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..models.evalset import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent

#: ADK's ``LocalEvalSetsManager`` accepts only these ids (its ``_validate_id``), and ``adk eval
#: AGENT EVAL_SET_ID`` finds the set as ``<agent>/<eval_set_id>.evalset.json``.
ADK_ID = re.compile(r"^[a-zA-Z0-9_]+$")


def check_eval_set_id(eval_set_id: str, source: str = "--eval-set-id") -> str:
    """``eval_set_id`` if google-adk would accept it (letters, digits, ``_``), else an InputError naming
    ``source``: a set ADK cannot find by its id is refused before any file is written."""
    if not ADK_ID.fullmatch(eval_set_id or ""):
        raise InputError(
            source,
            f"ADK eval set ids may only contain letters, digits and '_' "
            f"(google-adk's {ADK_ID.pattern}), got {eval_set_id!r}",
            source,
        )
    return eval_set_id


def _content(message: MessageContent, role: str) -> dict[str, Any]:
    return {"parts": [{"text": message.get_text()}], "role": role}


def _function_call(call: ExpectedToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"name": call.name, "args": dict(call.args)}
    if call.call_id:
        out["id"] = call.call_id
    return out


def _function_response(call: ExpectedToolCall) -> dict[str, Any]:
    # genai's FunctionResponse.response must be an object; ADK itself wraps other tool results
    # as {"result": value} (google/adk/flows/llm_flows/functions.py).
    response = call.result if isinstance(call.result, dict) else {"result": call.result}
    out: dict[str, Any] = {"name": call.name, "response": response}
    if call.call_id:
        out["id"] = call.call_id
    return out


def adk_invocation(invocation: Invocation, creation_timestamp: float = 0.0) -> dict[str, Any]:
    """One invocation in ADK's ``Invocation`` shape: genai ``Content`` messages, the expected calls as
    ``intermediate_data.tool_uses`` and their results as ``tool_responses``."""
    out: dict[str, Any] = {
        "invocation_id": invocation.invocation_id,
        "user_content": _content(invocation.user_content, "user"),
    }
    if invocation.expected_final_response is not None:
        out["final_response"] = _content(invocation.expected_final_response, "model")
    intermediate: dict[str, Any] = {}
    calls = invocation.expected_tool_trajectory
    if calls is not None:
        intermediate["tool_uses"] = [_function_call(c) for c in calls]
        responses = [_function_response(c) for c in calls if c.result is not None]
        if responses:
            intermediate["tool_responses"] = responses
    if invocation.expected_intermediate_responses:
        intermediate["intermediate_responses"] = [
            [str(m.metadata.get("author") or "agent"), [{"text": m.get_text()}]]
            for m in invocation.expected_intermediate_responses
        ]
    if intermediate:
        out["intermediate_data"] = intermediate
    out["creation_timestamp"] = creation_timestamp
    return out


def adk_case(case: EvalCase, creation_timestamp: float = 0.0) -> dict[str, Any]:
    """One case in ADK's ``EvalCase`` shape: its conversation, and a ``session_input`` when the case's
    config names the app and user ADK requires."""
    out: dict[str, Any] = {
        "eval_id": case.eval_id,
        "conversation": [adk_invocation(inv, creation_timestamp) for inv in case.conversation],
    }
    session = case.session_input
    if session is not None and session.config.get("app_name") and session.config.get("user_id"):
        # ADK's SessionInput requires both; without them the case starts a fresh session anyway.
        session_input: dict[str, Any] = {
            "app_name": str(session.config["app_name"]),
            "user_id": str(session.config["user_id"]),
            "state": dict(session.initial_state),
        }
        if session.thread_id:
            session_input["session_id"] = session.thread_id
        out["session_input"] = session_input
    out["creation_timestamp"] = creation_timestamp
    return out


def adk_eval_set(
    eval_set: EvalSet, case_times: Mapping[str, float] | None = None, creation_timestamp: float | None = None
) -> dict[str, Any]:
    """``eval_set`` as a JSON-ready google-adk EvalSet. ``case_times``: eval_id → Unix seconds
    (when the promoted session started), ADK's ``creation_timestamp`` of the case."""
    times = case_times or {}
    return {
        "eval_set_id": eval_set.eval_set_id,
        "name": eval_set.name or eval_set.eval_set_id,
        "description": eval_set.description,
        "eval_cases": [adk_case(c, float(times.get(c.eval_id, 0.0))) for c in eval_set.eval_cases],
        "creation_timestamp": time.time() if creation_timestamp is None else creation_timestamp,
    }


def fields_adk_cannot_hold(eval_set: EvalSet) -> list[str]:
    """The otel-eval expectations in ``eval_set`` that an ADK file drops, one line each (empty
    when the conversion loses nothing ADK scores with)."""
    lost: list[str] = []
    for case in eval_set.eval_cases:
        for inv in case.conversation:
            where = f"{case.eval_id}/{inv.invocation_id}"
            if inv.expected_sql is not None or inv.expected_tables:
                lost.append(f"{where}: expected_sql/expected_tables (ADK has no SQL expectation)")
            if inv.first_call_only:
                lost.append(f"{where}: first_call_only (ADK compares every tool call)")
            if inv.expected_tool_selection is not None:
                lost.append(f"{where}: expected_tool_selection")
            if inv.expected_tool_trajectory is None:
                lost.append(f"{where}: 'tool calls not checked' (ADK reads a missing tool list as 'no calls')")
    return lost


def write_adk_file(source: str, output: str) -> list[str]:
    """``golden convert --to adk``: any golden format → an ADK eval set file. Returns what ADK
    cannot hold (see :func:`fields_adk_cannot_hold`)."""
    import json
    from pathlib import Path

    from ..golden import load_golden

    eval_set = load_golden(source)
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(adk_eval_set(eval_set), ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8"
    )
    return fields_adk_cannot_hold(eval_set)
