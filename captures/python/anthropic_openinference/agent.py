"""A hand-written Anthropic tool loop traced by openinference-instrumentation-anthropic.

Each scenario of :mod:`captures.scenarios` runs a plain Messages API tool loop (anthropic SDK,
``client.messages.create(model=..., system=..., messages=..., tools=[{name, description,
input_schema}])``) against the scripted model: the model answers with ``tool_use`` blocks, the
loop runs them and sends ``tool_result`` blocks back in one user message (``is_error: true`` when
the tool raised, so the model can retry) until the model answers in text. One ``chat_turn(...)``
per user turn; both turns of S3 share one message history.

The anthropic SDK posts to ``{base_url}/v1/messages``, so its ``base_url`` is
``OPENAI_BASE_URL`` without ``/v1``; the key is ``ANTHROPIC_API_KEY`` (``sk-scripted``).

Streaming: S2 uses the SDK's stream helper (``client.messages.stream(...)`` +
``get_final_message()``), S5 uses ``client.messages.create(..., stream=True)`` and folds the
events itself; S1, S3, S4 and S6 are not streamed. All three paths are instrumented.

Telemetry: ``AnthropicInstrumentor().instrument(tracer_provider=...)`` over an SDK TracerProvider
with a ``BatchSpanProcessor(OTLPSpanExporter())`` (OTLP/HTTP protobuf to
``OTEL_EXPORTER_OTLP_ENDPOINT``). The instrumentor makes one LLM span per Messages call and no
other span: the tool loop and the tools are the application's and are not traced. Session and
user come from OpenInference's ``using_session`` / ``using_user`` context.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anthropic
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "anthropic_openinference")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "claude-haiku-4-5"
MAX_TOKENS = 1024
TOOL_SPECS = [
    {"name": name, "description": spec["description"], "input_schema": spec["parameters"]}
    for name, spec in TOOLS.items()
]
#: scenario id → how its model calls are made
STREAMING = {"S2": "helper", "S5": "stream=True"}


def fold_stream(events: Any) -> list[dict[str, Any]]:
    """The content blocks of a ``stream=True`` response, from its raw events."""
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for event in events:
        if event.type == "content_block_start":
            blocks.append(event.content_block.model_dump(exclude_none=True))
        elif event.type == "content_block_delta":
            if event.delta.type == "text_delta":
                blocks[event.index]["text"] += event.delta.text
            elif event.delta.type == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
    for index, raw in partial.items():
        blocks[index]["input"] = json.loads(raw or "{}")
    return blocks


def model_turn(
    client: anthropic.Anthropic, messages: list[dict[str, Any]], streaming: str | None
) -> list[dict[str, Any]]:
    """One Messages call; the assistant's content blocks as plain dicts."""
    kwargs: dict[str, Any] = dict(
        model=MODEL, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, messages=messages, tools=TOOL_SPECS
    )
    if streaming == "helper":
        with client.messages.stream(**kwargs) as stream:
            message = stream.get_final_message()
    elif streaming == "stream=True":
        return fold_stream(client.messages.create(**kwargs, stream=True))
    else:
        message = client.messages.create(**kwargs)
    return [block.model_dump(exclude_none=True) for block in message.content]


def chat_turn(client: anthropic.Anthropic, messages: list[dict[str, Any]], text: str, streaming: str | None) -> str:
    """The tool loop: model → tools → model ... until the model answers in text."""
    messages.append({"role": "user", "content": text})
    for _ in range(8):
        content = model_turn(client, messages, streaming)
        messages.append({"role": "assistant", "content": content})
        uses = [block for block in content if block["type"] == "tool_use"]
        if not uses:
            return "".join(block.get("text", "") for block in content if block["type"] == "text")
        results = []
        for use in uses:
            try:
                result = run_tool(use["name"], use["input"])
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


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    AnthropicInstrumentor().instrument(tracer_provider=provider)
    base_url = os.environ["OPENAI_BASE_URL"].rstrip("/").removesuffix("/v1")
    client = anthropic.Anthropic(base_url=base_url, api_key=os.environ.get("ANTHROPIC_API_KEY", "sk-scripted"))
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE_NAME}-{scenario.session}"
            with using_session(session), using_user(scenario.user):
                messages: list[dict[str, Any]] = []
                for turn in scenario.turns:
                    answer = chat_turn(client, messages, turn, STREAMING.get(scenario.id))
                    print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
    finally:
        client.close()
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
