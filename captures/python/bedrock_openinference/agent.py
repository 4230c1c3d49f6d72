"""A hand-written Amazon Bedrock Converse tool loop traced by openinference-instrumentation-bedrock.

Each scenario of :mod:`captures.scenarios` runs a plain Converse API tool loop (boto3's
``bedrock-runtime`` client, ``client.converse(modelId=..., system=[{"text": ...}], messages=...,
toolConfig={"tools": [{"toolSpec": {name, description, inputSchema: {"json": ...}}}]})``) against
the scripted model: the model answers with ``toolUse`` blocks, the loop runs them and sends their
``toolResult`` blocks back in one user message (``{"json": ...}`` content for an object,
``{"text": ...}`` otherwise; ``status: "error"`` with the error text when the tool raised, so the
model can retry) until the model answers in text. One ``chat_turn(...)`` per user turn; both turns of S3 share one history.

boto3 posts to ``{endpoint_url}/model/{modelId}/converse`` (``/converse-stream`` streamed), so its
``endpoint_url`` is ``OPENAI_BASE_URL`` without ``/v1``; the credentials are dummies (``x``) and
the region ``us-east-1``: the scripted model does not check the signature.

Streaming: S2 and S5 use ``client.converse_stream(...)`` (AWS's binary event stream) and fold the
events themselves; the other scenarios are not streamed. Both paths are instrumented.

Telemetry: ``BedrockInstrumentor().instrument(tracer_provider=...)`` over an SDK TracerProvider
with a ``BatchSpanProcessor(OTLPSpanExporter())`` (OTLP/HTTP protobuf to
``OTEL_EXPORTER_OTLP_ENDPOINT``), before the client is made (the instrumentor wraps the clients
boto3 creates). It makes one LLM span per Converse call and no other span: the tool loop and the
tools are the application's and are not traced. Session and user come from OpenInference's
``using_session`` / ``using_user`` context.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.bedrock import BedrockInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "bedrock_openinference")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"
TOOL_CONFIG = {
    "tools": [
        {"toolSpec": {"name": name, "description": spec["description"], "inputSchema": {"json": spec["parameters"]}}}
        for name, spec in TOOLS.items()
    ]
}
#: scenarios whose model calls are streamed (``converse_stream``)
STREAMING = {"S2", "S5"}


def fold_stream(events: Any) -> list[dict[str, Any]]:
    """The content blocks of a ``converse_stream`` response, from its events."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"].get("toolUse")
            if use:
                blocks[start["contentBlockIndex"]] = {"toolUse": {**use, "input": {}}}
        elif "contentBlockDelta" in event:
            index, delta = event["contentBlockDelta"]["contentBlockIndex"], event["contentBlockDelta"]["delta"]
            if "text" in delta:
                block = blocks.setdefault(index, {"text": ""})
                block["text"] += delta["text"]
            elif "toolUse" in delta:
                partial[index] = partial.get(index, "") + delta["toolUse"]["input"]
    for index, raw in partial.items():
        blocks[index]["toolUse"]["input"] = json.loads(raw or "{}")
    return [blocks[index] for index in sorted(blocks)]


def model_turn(client: Any, messages: list[dict[str, Any]], streaming: bool) -> list[dict[str, Any]]:
    """One Converse call; the assistant's content blocks."""
    kwargs: dict[str, Any] = dict(
        modelId=MODEL_ID, system=[{"text": SYSTEM_PROMPT}], messages=messages, toolConfig=TOOL_CONFIG
    )
    if streaming:
        return fold_stream(client.converse_stream(**kwargs)["stream"])
    return client.converse(**kwargs)["output"]["message"]["content"]


def tool_result(use: dict[str, Any]) -> dict[str, Any]:
    """The ``toolResult`` block of one ``toolUse``: its result, or the error it raised."""
    try:
        result = run_tool(use["name"], use["input"])
    except Exception as exc:  # reported to the model, which may retry
        return {
            "toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": f"Error: {exc}"}], "status": "error"}
        }
    if isinstance(result, dict):
        content: list[dict[str, Any]] = [{"json": result}]  # an object: a JSON document
    else:
        content = [{"text": result if isinstance(result, str) else json.dumps(result)}]
    return {"toolResult": {"toolUseId": use["toolUseId"], "content": content, "status": "success"}}


def chat_turn(client: Any, messages: list[dict[str, Any]], text: str, streaming: bool) -> str:
    """The tool loop: model → tools → model ... until the model answers in text."""
    messages.append({"role": "user", "content": [{"text": text}]})
    for _ in range(8):
        content = model_turn(client, messages, streaming)
        messages.append({"role": "assistant", "content": content})
        uses = [block["toolUse"] for block in content if "toolUse" in block]
        if not uses:
            return "".join(block.get("text", "") for block in content)
        messages.append({"role": "user", "content": [tool_result(use) for use in uses]})
    raise RuntimeError("the model kept asking for tools")


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    BedrockInstrumentor().instrument(tracer_provider=provider)
    endpoint = os.environ["OPENAI_BASE_URL"].rstrip("/").removesuffix("/v1")
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE_NAME}-{scenario.session}"
            with using_session(session), using_user(scenario.user):
                messages: list[dict[str, Any]] = []
                for turn in scenario.turns:
                    answer = chat_turn(client, messages, turn, scenario.id in STREAMING)
                    print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
    finally:
        client.close()
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
