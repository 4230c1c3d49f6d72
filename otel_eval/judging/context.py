"""What a judge sees of one turn: the user's input and the agent's answer, the reference answer,
the tool trajectory (each call's name, arguments, result or error), and the system instructions
and tool definitions when the spans recorded them. Bounded: each part, and the whole, is cut at
a size, with a visible marker saying how much was left out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..models.evalset import Rubric

DEFAULT_MAX_CONTEXT_CHARS = 24_000
"""The whole user message, at most (about 6k tokens)."""

SYSTEM_PROMPT = (
    "You are a strict evaluator of an AI agent's answer. Score the answer on each rubric with an "
    "integer from 1 (worst) to 5 (best), following each rubric's scoring guide. Use the tool calls "
    "and their results as evidence of what the agent did. Reply with JSON only, exactly in this "
    'form: {"scores": {"<rubric name>": {"score": <1-5>, "reason": "<one sentence>"}}}'
)


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a marker naming what was left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    left_out = len(text) - limit
    return text[:limit] + f"\n[… truncated: {left_out} more characters not shown]"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def tool_lines(calls: Sequence[Any], per_value: int) -> list[str]:
    """One line per tool call: ``1. name(args) -> result`` or ``-> ERROR: message``."""
    lines = []
    for i, call in enumerate(calls, start=1):
        head = f"{i}. {call.name}({cut(_value(call.args or {}), per_value)})"
        if call.error:
            lines.append(f"{head} -> ERROR: {cut(str(call.error), per_value)}")
        elif call.result is not None:
            lines.append(f"{head} -> {cut(_value(call.result), per_value)}")
        else:
            lines.append(f"{head} -> (no result recorded)")
    return lines


def build_messages(
    question: str | None,
    response: str | None,
    reference: str | None,
    rubrics: Sequence[Rubric],
    *,
    calls: Sequence[Any] = (),
    system: str | None = None,
    tools: Sequence[Any] | None = None,
    max_chars: int = DEFAULT_MAX_CONTEXT_CHARS,
) -> list[dict[str, str]]:
    """The chat messages of one judge call. The rubrics and the answer are never cut away: the
    other parts share what is left of ``max_chars``."""
    part = max(500, max_chars // 6)
    lines = []
    if system:
        lines += [f"Agent's system instructions:\n{cut(system, part)}", ""]
    if tools:
        names = [
            _value(t) if not isinstance(t, dict) else _value({k: t[k] for k in ("name", "description") if k in t})
            for t in tools
        ]
        lines += ["Tools available to the agent:\n" + cut("\n".join(f"- {n}" for n in names), part), ""]
    lines += [f"User request:\n{cut(question or '(none)', part)}", ""]
    if reference:
        lines += [f"Reference answer:\n{cut(reference, part)}", ""]
    if calls:
        lines += ["Tool calls the agent made, in order:\n" + cut("\n".join(tool_lines(calls, part // 4)), part), ""]
    lines += [f"Agent's answer:\n{cut(response or '(no answer)', part)}", "", "Rubrics:"]
    for rubric in rubrics:
        lines.append(f"- {rubric.name}: {rubric.description} Scoring guide: {rubric.scoring_guide}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": cut("\n".join(lines), max_chars)}]
