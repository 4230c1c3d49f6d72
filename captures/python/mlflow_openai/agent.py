"""A hand-written OpenAI tool loop traced by MLflow Tracing (``mlflow-tracing``).

Each scenario of :mod:`captures.scenarios` runs a plain Chat Completions tool loop (openai SDK,
``client.chat.completions.create(..., tools=...)``) against the scripted model: the model asks for
tools, the loop runs them and sends the results back until the model answers in text. A tool that
raises is reported back to the model as an ``Error: ...`` tool message, so the model can retry.
One agent run (``WeatherAgent.chat``) per user turn; both turns of S3 share one agent, whose
message history carries the conversation.

Telemetry, as MLflow documents it: ``mlflow.openai.autolog()`` traces every
``chat.completions.create`` (a ``Completions`` span, ``mlflow.spanType`` ``CHAT_MODEL``), and the
application's own functions are traced with ``@mlflow.trace(span_type=SpanType.AGENT)`` (one user
turn) and ``@mlflow.trace(span_type=SpanType.TOOL)`` (each tool). MLflow sends its traces to an
OpenTelemetry collector instead of a tracking server when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set: its OtelSpanProcessor, a BatchSpanProcessor with
the OTLP exporter of ``OTEL_EXPORTER_OTLP_PROTOCOL`` (http/protobuf here). MLflow's own usage
telemetry is turned off (``MLFLOW_DISABLE_TELEMETRY``), as the run must stay offline.

Session and user: ``mlflow.update_current_trace(session_id=..., user=...)`` inside the agent
span, MLflow's documented way (trace metadata ``mlflow.trace.session`` / ``mlflow.trace.user``).
MLflow's OTLP export drops trace metadata (its OtelSpanProcessor exports only tags without the
``mlflow.`` prefix, as ``mlflow.traceTag.<key>``; only its Databricks UC processor copies the two
keys to ``session.id`` / ``user.id``), so the agent also sets ``session.id`` and ``user.id`` on its
span with MLflow's span API (``LiveSpan.set_attributes``): the attributes MLflow's own server
reads a session and user from when it ingests OTLP.
"""

from __future__ import annotations

import json
import os
from typing import Any

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# MLflow's documented switch for OTLP export is the traces endpoint. The kit gives the base
# endpoint, which MLflow would also read as a metrics endpoint; its OTLP metrics need a tracking
# experiment that mlflow-tracing cannot resolve (NameError on every span end), so only traces.
if "OTEL_EXPORTER_OTLP_ENDPOINT" in os.environ:
    base = os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT").rstrip("/")
    os.environ.setdefault("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{base}/v1/traces")

import mlflow
from mlflow.entities import SpanType
from mlflow.tracing.provider import provider
from openai import OpenAI

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE = os.environ.get("CAPTURE_NAME", "mlflow_openai")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "gpt-4o-mini"
TOOL_SPECS = [{"type": "function", "function": {"name": name, **spec}} for name, spec in TOOLS.items()]


@mlflow.trace(span_type=SpanType.TOOL)
def get_weather(city: str) -> str:
    return run_tool("get_weather", {"city": city})


@mlflow.trace(span_type=SpanType.TOOL)
def get_forecast(city: str, days: int) -> str:
    return run_tool("get_forecast", {"city": city, "days": days})


@mlflow.trace(span_type=SpanType.TOOL)
def call_db_agent(question: str) -> dict[str, Any]:
    return run_tool("call_db_agent", {"question": question})


@mlflow.trace(span_type=SpanType.TOOL)
def search_docs(query: str) -> list[dict[str, Any]]:
    return run_tool("search_docs", {"query": query})


FUNCTIONS = {
    "get_weather": get_weather,
    "get_forecast": get_forecast,
    "call_db_agent": call_db_agent,
    "search_docs": search_docs,
}


class WeatherAgent:
    """A chat agent keeping its conversation in ``messages``."""

    def __init__(self, client: OpenAI, session: str, user: str) -> None:
        self.client, self.session, self.user = client, session, user
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]

    @mlflow.trace(name="weather_agent", span_type=SpanType.AGENT)
    def chat(self, question: str) -> str:
        """One agent run: the user's message, then model → tools → model ... until a text answer."""
        mlflow.update_current_trace(session_id=self.session, user=self.user)
        mlflow.get_current_active_span().set_attributes({"session.id": self.session, "user.id": self.user})
        self.messages.append({"role": "user", "content": question})
        for _ in range(8):
            response = self.client.chat.completions.create(model=MODEL, messages=self.messages, tools=TOOL_SPECS)
            message = response.choices[0].message
            if not message.tool_calls:
                self.messages.append({"role": "assistant", "content": message.content})
                return message.content or ""
            self.messages.append(
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
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        raise RuntimeError("the model kept asking for tools")


def main() -> None:
    mlflow.openai.autolog()
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    try:
        for scenario in SCENARIOS:
            agent = WeatherAgent(client, f"{CAPTURE}-{scenario.session}", scenario.user)
            for turn in scenario.turns:
                answer = agent.chat(turn)
                print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
    finally:
        client.close()
        tracer_provider = provider.get()  # MLflow's own (isolated) TracerProvider
        if tracer_provider is not None:
            tracer_provider.force_flush()
            tracer_provider.shutdown()


if __name__ == "__main__":
    main()
