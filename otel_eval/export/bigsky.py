"""Sessions as a Big Sky Agents eval dataset (seed ``bigsky-eval-dataset.md``).

A Big Sky example is one prediction: given ``inputs.messages`` the agent's next message should be
``outputs.message``. So every turn of a session is one example: the messages are the earlier
turns in OpenAI chat format (user, assistant with ``tool_calls``, one ``tool`` message per result,
the assistant's answer) followed by this turn's user message; the expected message carries this
turn's tool calls (OpenAI ``{"type": "function", "function": {name, arguments}}``, arguments as an
object as in the seed) and its final answer as ``content``. Example ids are
``<session id>-<turn number>``. :func:`otel_eval.golden.load_golden` reads the file back.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from ..conventions.base import as_text
from ..trajectory import Trajectory, Turn
from .evalset import Skipped, expected_calls
from .vertex import title_of

#: Per-example evaluator written into the dataset. ``chat:matchOutput`` (every tool call with its
#: arguments, and the content) is the one that says "do what this session did"; on load it becomes
#: trajectory_match (EXACT, with arguments) and response_match.
DEFAULT_EVALUATORS = [
    {"key": "match_output", "description": "Same tool calls (with arguments) and the same answer as recorded",
     "function": "chat:matchOutput"},
]

def _tool_calls(turn: Turn, session_id: str) -> list[dict[str, Any]]:
    out = []
    for k, call in enumerate(expected_calls(turn)):
        out.append({
            "id": call.call_id or f"{session_id}-{turn.index + 1}-{k + 1}",
            "type": "function",
            "function": {"name": call.name, "arguments": dict(call.args)},
        })
    return out


def _history(turn: Turn, session_id: str) -> list[dict[str, Any]]:
    """A finished turn as OpenAI chat messages."""
    messages: list[dict[str, Any]] = []
    if turn.user_input:
        messages.append({"role": "user", "content": turn.user_input})
    calls = _tool_calls(turn, session_id)
    if calls:
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for raw, call in zip(calls, expected_calls(turn)):
            result = f"error: {call.error}" if call.error is not None else (as_text(call.result) or "")
            messages.append({"role": "tool", "tool_call_id": raw["id"], "content": result})
    if turn.final_response:
        messages.append({"role": "assistant", "content": turn.final_response})
    return messages


def bigsky_dataset(trajectories: Sequence[Trajectory], name: str = "otel-eval sessions",
                   description: str = "", evaluators: Optional[list[dict[str, Any]]] = None
                   ) -> tuple[dict[str, Any], list[Skipped]]:
    """(dataset, skipped sessions). A turn without a user message cannot be an example (the
    query is the last user message), so it is skipped; the session's other turns are kept."""
    data: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    for trajectory in trajectories:
        history: list[dict[str, Any]] = []
        kept = 0
        for turn in trajectory.turns:
            if turn.user_input:
                data.append({
                    "id": f"{trajectory.session_id}-{turn.index + 1}",
                    "description": f"{title_of(trajectory)} (turn {turn.index + 1} of {len(trajectory.turns)})",
                    "inputs": {
                        "context": {},
                        "messages": [*json.loads(json.dumps(history, default=str)),
                                     {"role": "user", "content": turn.user_input}],
                    },
                    "outputs": {
                        "message": {
                            "role": "assistant",
                            "content": turn.final_response or "",
                            "tool_calls": _tool_calls(turn, trajectory.session_id),
                        }
                    },
                })
                kept += 1
            history.extend(_history(turn, trajectory.session_id))
        if not kept:
            skipped.append(Skipped(trajectory.session_id, "no turn has a user message"))
    dataset = {
        "name": name,
        "description": description or f"{len(data)} example(s) from production sessions, exported by otel-eval",
        "data": data,
        "evaluators": list(DEFAULT_EVALUATORS if evaluators is None else evaluators),
        "comparativeEvaluators": [],
        "summaryEvaluators": [],
    }
    return dataset, skipped
