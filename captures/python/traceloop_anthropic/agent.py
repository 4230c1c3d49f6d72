"""A hand-written Anthropic tool loop traced by the Traceloop SDK (OpenLLMetry).

Each scenario of :mod:`captures.scenarios` runs a plain Messages API tool loop (anthropic SDK,
``client.messages.create(model=..., system=..., messages=..., tools=[{name, description,
input_schema}])``, not streamed) against the scripted model: the model answers with ``tool_use``
blocks, the loop runs them and sends ``tool_result`` blocks back in one user message
(``is_error: true`` when the tool raised, so the model can retry) until the model answers in
text. One ``chat_turn(...)`` per user turn; both turns of S3 share one message history.

The anthropic SDK posts to ``{base_url}/v1/messages``, so its ``base_url`` is
``OPENAI_BASE_URL`` without ``/v1``; the key is ``ANTHROPIC_API_KEY`` (``sk-scripted``).

Telemetry: ``Traceloop.init(app_name=..., exporter=OTLPSpanExporter(), disable_batch=True)``
(OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``); Traceloop instruments the anthropic SDK
itself (``opentelemetry-instrumentation-anthropic``, ``anthropic.chat`` spans) and its decorators
make the other spans: ``@workflow`` (one user turn), ``@agent`` (the tool loop), ``@tool`` (each
tool). Content tracing is on (``TRACELOOP_TRACE_CONTENT`` set explicitly below); Traceloop's
anonymous usage telemetry is asked off (``telemetry_enabled=False``, ``TRACELOOP_TELEMETRY=false``).

Session and user, as ``traceloop_openai`` sets them:
``Traceloop.set_association_properties({"session_id": ..., "user_id": ...})``, written as
``traceloop.association.properties.<key>`` on every span started afterwards; and Traceloop's
conversation id (``set_conversation_id``), written as ``gen_ai.conversation.id``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
os.environ.setdefault("TRACELOOP_TELEMETRY", "false")

import anthropic
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import agent, tool, workflow
from traceloop.sdk.tracing import set_conversation_id

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "traceloop_anthropic")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "claude-haiku-4-5"
MAX_TOKENS = 1024


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
TOOL_SPECS = [
    {"name": name, "description": spec["description"], "input_schema": spec["parameters"]}
    for name, spec in TOOLS.items()
]


@agent(name="assistant")
def assistant(client: anthropic.Anthropic, messages: list[dict[str, Any]]) -> str:
    """The tool loop: model → tools → model ... until the model answers in text."""
    for _ in range(8):
        response = client.messages.create(
            model=MODEL, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, messages=messages, tools=TOOL_SPECS
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        uses = [block for block in content if block["type"] == "tool_use"]
        if not uses:
            return "".join(block.get("text", "") for block in content if block["type"] == "text")
        results = []
        for use in uses:
            try:
                result = FUNCTIONS[use["name"]](**use["input"])
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": use["id"],
                        "content": result if isinstance(result, str) else json.dumps(result),
                    }
                )
            except Exception as exc:  # reported to the model, which may retry
                results.append(
                    {"type": "tool_result", "tool_use_id": use["id"], "content": f"Error: {exc}", "is_error": True}
                )
        messages.append({"role": "user", "content": results})
    raise RuntimeError("the model kept asking for tools")


@workflow(name="chat_turn")
def chat_turn(client: anthropic.Anthropic, messages: list[dict[str, Any]], text: str) -> str:
    messages.append({"role": "user", "content": text})
    return assistant(client, messages)


def main() -> None:
    Traceloop.init(
        app_name=os.environ.get("OTEL_SERVICE_NAME", CAPTURE),
        exporter=OTLPSpanExporter(),  # OTLP/HTTP protobuf, OTEL_EXPORTER_OTLP_ENDPOINT
        disable_batch=True,
        telemetry_enabled=False,
    )
    base_url = os.environ["OPENAI_BASE_URL"].rstrip("/").removesuffix("/v1")
    client = anthropic.Anthropic(base_url=base_url, api_key=os.environ.get("ANTHROPIC_API_KEY", "sk-scripted"))
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE}-{scenario.session}"
            Traceloop.set_association_properties({"session_id": session, "user_id": scenario.user})
            token = set_conversation_id(session)
            try:
                messages: list[dict[str, Any]] = []
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
