"""A hand-written OpenAI tool loop traced by OpenLIT.

Each scenario of :mod:`captures.scenarios` runs a plain Chat Completions tool loop (openai SDK,
``client.chat.completions.create(..., tools=...)``) against the scripted model: the model asks for
tools, the loop runs them and sends the results back until the model answers in text. A tool that
raises is reported back to the model as an ``Error: ...`` tool message, so the model can retry.
One agent run per user turn; both turns of S3 share one message history.

Telemetry: ``openlit.init(otlp_endpoint=..., disable_metrics=True, capture_message_content=True,
application_name=..., environment=...)``. OpenLIT builds its own TracerProvider and LoggerProvider
(OTLP/HTTP protobuf, batched) and instruments the openai SDK (a ``chat gpt-4o-mini`` CLIENT span
per request, plus its ``gen_ai.client.inference.operation.details`` log events) and, by default,
httpx/requests/urllib3 (so an HTTP ``POST`` span under each model call). ``pricing_json`` points
at a local file so that init does not fetch OpenLIT's price list from the network.

OpenLIT makes no agent or tool spans for a hand-rolled loop, so the loop makes them the way users
write them, with an OTel tracer from the same provider: ``invoke_agent weather_agent`` around each
user turn (``gen_ai.operation.name=invoke_agent``, ``session.id``, ``user.id``) and ``execute_tool
<name>`` around each tool (``gen_ai.tool.name`` / ``.call.id`` / ``.call.arguments`` /
``.call.result``; a failure is status ERROR, ``error.type`` and ``record_exception``).

Session and user: OpenLIT has no session API of its own; its documented way to put attributes on
the spans it makes is ``openlit.using_attributes({...})`` (the docs' example is ``user.id``), used
here with ``session.id`` and ``user.id`` around each turn, so the chat spans carry them too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import openlit
from openai import OpenAI
from opentelemetry import _logs, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "openlit_openai")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "gpt-4o-mini"
AGENT = "weather_agent"
TOOL_SPECS = [{"type": "function", "function": {"name": name, **spec}} for name, spec in TOOLS.items()]


def execute_tool(tracer: trace.Tracer, call: Any) -> str:
    """Run one requested tool in an ``execute_tool`` span; an error becomes the tool's message."""
    name, arguments = call.function.name, call.function.arguments
    with tracer.start_as_current_span(
        f"execute_tool {name}", kind=SpanKind.INTERNAL, record_exception=False, set_status_on_exception=False
    ) as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", name)
        span.set_attribute("gen_ai.tool.type", "function")
        span.set_attribute("gen_ai.tool.call.id", call.id)
        span.set_attribute("gen_ai.tool.call.arguments", arguments)
        try:
            result = run_tool(name, json.loads(arguments))
        except Exception as exc:  # reported to the model, which may retry
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            span.set_attribute("error.type", type(exc).__name__)
            return f"Error: {exc}"
        content = result if isinstance(result, str) else json.dumps(result)
        span.set_attribute("gen_ai.tool.call.result", content)
        return content


def run_turn(
    tracer: trace.Tracer, client: OpenAI, messages: list[dict[str, Any]], text: str, session: str, user: str
) -> str:
    """One agent run: the user's message, then model → tools → model ... until a text answer."""
    with (
        tracer.start_as_current_span(f"invoke_agent {AGENT}", kind=SpanKind.INTERNAL) as span,
        openlit.using_attributes({"session.id": session, "user.id": user}),
    ):
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
        span.set_attribute("gen_ai.agent.name", AGENT)
        span.set_attribute("session.id", session)
        span.set_attribute("user.id", user)
        messages.append({"role": "user", "content": text})
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
                messages.append({"role": "tool", "tool_call_id": call.id, "content": execute_tool(tracer, call)})
        raise RuntimeError("the model kept asking for tools")


def main() -> None:
    openlit.init(
        otlp_endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"],  # OTLP/HTTP protobuf
        application_name=os.environ.get("OTEL_SERVICE_NAME", CAPTURE),
        environment="captures",
        disable_metrics=True,
        capture_message_content=True,
        pricing_json=str(Path(__file__).with_name("pricing.json")),  # no price list download
    )
    tracer = trace.get_tracer(AGENT)
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE}-{scenario.session}"
            messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
            for turn in scenario.turns:
                answer = run_turn(tracer, client, messages, turn, session, scenario.user)
                print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
    finally:
        client.close()
        for provider in (trace.get_tracer_provider(), _logs.get_logger_provider()):
            provider.force_flush()
            provider.shutdown()


if __name__ == "__main__":
    main()
