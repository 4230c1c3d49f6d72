"""A hand-written OpenAI tool loop traced by the Traceloop SDK (OpenLLMetry).

Each scenario of :mod:`captures.scenarios` runs a plain Chat Completions tool loop (openai SDK,
``client.chat.completions.create(..., tools=...)``) against the scripted model: the model asks for
tools, the loop runs them and sends the results back until the model answers in text. A tool that
raises is reported back to the model as an ``Error: ...`` tool message, so the model can retry.
One ``chat_turn(...)`` per user turn; both turns of S3 share one message history.

Telemetry: ``Traceloop.init(app_name=..., exporter=OTLPSpanExporter(), disable_batch=True)``
(OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``); Traceloop instruments the openai SDK
itself (``opentelemetry-instrumentation-openai``) and its decorators make the other spans:
``@workflow`` (one user turn), ``@agent`` (the tool loop), ``@tool`` (each tool). Content tracing
is on (``TRACELOOP_TRACE_CONTENT`` defaults to true; set explicitly below); Traceloop's anonymous
usage telemetry is asked off (``telemetry_enabled=False``, ``TRACELOOP_TELEMETRY=false``; 0.62.4
sends none anyway: the flag is accepted and unused).

Session and user: ``Traceloop.set_association_properties({"session_id": ..., "user_id": ...})``,
Traceloop's documented mechanism, written as ``traceloop.association.properties.<key>`` on every
span started afterwards; and Traceloop's conversation id (``set_conversation_id``, what its
``@conversation`` decorator does), written as ``gen_ai.conversation.id``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
os.environ.setdefault("TRACELOOP_TELEMETRY", "false")

from openai import OpenAI
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import agent, tool, workflow
from traceloop.sdk.tracing import set_conversation_id

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "traceloop_openai")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "gpt-4o-mini"


@tool(name="get_weather")
def get_weather(city: str) -> str:
    return run_tool("get_weather", {"city": city})


@tool(name="get_forecast")
def get_forecast(city: str, days: int) -> str:
    return run_tool("get_forecast", {"city": city, "days": days})


@tool(name="call_db_agent")
def call_db_agent(question: str) -> dict[str, Any]:
    return run_tool("call_db_agent", {"question": question})


@tool(name="search_docs")
def search_docs(query: str) -> list[dict[str, Any]]:
    return run_tool("search_docs", {"query": query})


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "get_weather": get_weather,
    "get_forecast": get_forecast,
    "call_db_agent": call_db_agent,
    "search_docs": search_docs,
}
TOOL_SPECS = [{"type": "function", "function": {"name": name, **spec}} for name, spec in TOOLS.items()]


@agent(name="assistant")
def assistant(client: OpenAI, messages: list[dict[str, Any]]) -> str:
    """The tool loop: model → tools → model ... until the model answers in text."""
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


@workflow(name="chat_turn")
def chat_turn(client: OpenAI, messages: list[dict[str, Any]], text: str) -> str:
    messages.append({"role": "user", "content": text})
    return assistant(client, messages)


def main() -> None:
    Traceloop.init(
        app_name=os.environ.get("OTEL_SERVICE_NAME", CAPTURE),
        exporter=OTLPSpanExporter(),  # OTLP/HTTP protobuf, OTEL_EXPORTER_OTLP_ENDPOINT
        disable_batch=True,
        telemetry_enabled=False,
    )
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE}-{scenario.session}"
            Traceloop.set_association_properties({"session_id": session, "user_id": scenario.user})
            token = set_conversation_id(session)
            try:
                messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
                for turn in scenario.turns:
                    answer = chat_turn(client, messages, turn)
                    print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
            finally:
                context.detach(token)
    finally:
        client.close()
        provider = trace.get_tracer_provider()
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
