"""A hand-written OpenAI tool loop traced by the Langfuse Python SDK (OpenTelemetry-based).

Each scenario of :mod:`captures.scenarios` runs a plain Chat Completions tool loop against the
scripted model, through Langfuse's drop-in OpenAI client (``from langfuse.openai import OpenAI``,
which records each model call as a Langfuse ``generation``): the model asks for tools, the loop
runs them and sends the results back until the model answers in text. A tool that raises is
reported back to the model as an ``Error: ...`` tool message, so the model can retry. One
``chat_turn(...)`` per user turn; both turns of S3 share one message history.

Telemetry: the Langfuse client (``get_client()``, configured from ``LANGFUSE_*`` variables)
owns its own OpenTelemetry TracerProvider and exports OTLP/HTTP protobuf to
``{LANGFUSE_BASE_URL}/api/public/otel/v1/traces``; the base URL here is the sink
(``OTEL_EXPORTER_OTLP_ENDPOINT``) and the keys are dummies. ``@observe(as_type="agent")`` wraps
a user turn, ``@observe(as_type="tool")`` each tool; input and output capture is on by default.

Session and user: ``propagate_attributes(session_id=..., user_id=...)``, the Langfuse SDK's
documented mechanism (v4+, replacing ``update_current_trace``), entered inside the turn's root
observation so every span of the turn carries ``session.id`` / ``user.id``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LANGFUSE_BASE_URL", os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"))
os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-scripted")
os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-scripted")

from langfuse import get_client, observe, propagate_attributes
from langfuse.openai import OpenAI

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "langfuse_openai")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "gpt-4o-mini"


@observe(name="get_weather", as_type="tool")
def get_weather(city: str) -> str:
    return run_tool("get_weather", {"city": city})


@observe(name="get_forecast", as_type="tool")
def get_forecast(city: str, days: int) -> str:
    return run_tool("get_forecast", {"city": city, "days": days})


@observe(name="call_db_agent", as_type="tool")
def call_db_agent(question: str) -> dict[str, Any]:
    return run_tool("call_db_agent", {"question": question})


@observe(name="search_docs", as_type="tool")
def search_docs(query: str) -> list[dict[str, Any]]:
    return run_tool("search_docs", {"query": query})


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "get_weather": get_weather,
    "get_forecast": get_forecast,
    "call_db_agent": call_db_agent,
    "search_docs": search_docs,
}
TOOL_SPECS = [{"type": "function", "function": {"name": name, **spec}} for name, spec in TOOLS.items()]


def tool_loop(client: OpenAI, messages: list[dict[str, Any]]) -> str:
    """model → tools → model ... until the model answers in text."""
    for _ in range(8):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SPECS)
        message = response.choices[0].message
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
                result = FUNCTIONS[call.function.name](**json.loads(call.function.arguments))
                content = result if isinstance(result, str) else json.dumps(result)
            except Exception as exc:  # reported to the model, which may retry
                content = f"Error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    raise RuntimeError("the model kept asking for tools")


class Conversation:
    """One scenario's conversation: its message history, session and user."""

    def __init__(self, client: OpenAI, session: str, user: str) -> None:
        self.client, self.session, self.user = client, session, user
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]

    @observe(name="chat_turn", as_type="agent")
    def chat_turn(self, text: str) -> str:
        """One user turn (the input Langfuse records is ``{"args": [text], "kwargs": {}}``)."""
        with propagate_attributes(session_id=self.session, user_id=self.user):
            self.messages.append({"role": "user", "content": text})
            return tool_loop(self.client, self.messages)


def main() -> None:
    langfuse = get_client()
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    try:
        for scenario in SCENARIOS:
            conversation = Conversation(client, f"{CAPTURE}-{scenario.session}", scenario.user)
            for turn in scenario.turns:
                answer = conversation.chat_turn(turn)
                print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
    finally:
        client.close()
        langfuse.flush()
        langfuse.shutdown()


if __name__ == "__main__":
    main()
