"""The hand-written Chat Completions tool loop the captures of client instrumentations share
(``openai_v2_events``, ``openai_v2_latest``, ``litellm_otel``): what is traced differs, the loop
does not. Standard library only, so that it runs inside every capture's own virtualenv."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .scenarios import TOOLS, run_tool

SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
TOOL_SPECS = [{"type": "function", "function": {"name": name, **spec}} for name, spec in TOOLS.items()]


def chat_turn(complete: Callable[[list[dict[str, Any]]], Any], messages: list[dict[str, Any]], text: str) -> str:
    """One user turn: model → tools → model ... until the model answers in text. ``complete``
    sends the history (with :data:`TOOL_SPECS`) and returns the response's message; a tool that
    raises is reported to the model as ``Error: ...``, so it can retry."""
    messages.append({"role": "user", "content": text})
    for _ in range(8):
        message = complete(messages)
        if not message.tool_calls:
            messages.append({"role": "assistant", "content": message.content})
            return message.content or ""
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in message.tool_calls
                ],
            }
        )
        for call in message.tool_calls:
            try:
                result = run_tool(call.function.name, json.loads(call.function.arguments))
                content = result if isinstance(result, str) else json.dumps(result)
            except Exception as exc:  # reported to the model, which may retry
                content = f"Error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    raise RuntimeError("the model kept asking for tools")
