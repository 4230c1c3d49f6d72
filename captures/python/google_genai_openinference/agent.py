"""A hand-written Gemini tool loop traced by openinference-instrumentation-google-genai.

Each scenario of :mod:`captures.scenarios` runs a plain ``generateContent`` tool loop (google-genai
SDK, ``client.models.generate_content(model=..., contents=history, config=GenerateContentConfig(
system_instruction=..., tools=[Tool(function_declarations=[...])], automatic_function_calling=
AutomaticFunctionCallingConfig(disable=True)))``) against the scripted model: the model answers
with ``functionCall`` parts, the loop runs them and sends their ``functionResponse`` parts back in
one user content (``{"result": ...}``, or ``{"error": "..."}`` when the tool raised, so the model
can retry) until the model answers in text. One ``chat_turn(...)`` per user turn; both turns of
S3 share one history.

The SDK (3.x) posts to ``{base_url}/v1/models/{model}:generateContent``, so its ``base_url`` is
``OPENAI_BASE_URL`` without ``/v1``; the key is ``GEMINI_API_KEY`` (``sk-scripted``). Its request
JSON is camelCase (``systemInstruction``, ``functionDeclarations``, ``functionCall``,
``functionResponse``), except ``parameters_json_schema``, sent as named.

Streaming: S2 uses ``client.models.generate_content_stream(...)`` (``:streamGenerateContent?alt=sse``)
and folds the chunks' parts itself; the other scenarios are not streamed. Both paths are
instrumented.

Telemetry: ``GoogleGenAIInstrumentor().instrument(tracer_provider=...)`` over an SDK
TracerProvider with a ``BatchSpanProcessor(OTLPSpanExporter())`` (OTLP/HTTP protobuf to
``OTEL_EXPORTER_OTLP_ENDPOINT``). The instrumentor makes one LLM span per model call and no other
span: the tool loop and the tools are the application's and are not traced. Session and user come
from OpenInference's ``using_session`` / ``using_user`` context.
"""

from __future__ import annotations

import os
from typing import Any

from google import genai
from google.genai import types
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, TOOLS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "google_genai_openinference")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."
MODEL = "gemini-2.5-flash"
CONFIG = types.GenerateContentConfig(
    system_instruction=SYSTEM_PROMPT,
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name=name, description=spec["description"], parameters_json_schema=spec["parameters"]
                )
                for name, spec in TOOLS.items()
            ]
        )
    ],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
#: scenarios whose model calls are streamed
STREAMED = {"S2"}


def model_turn(client: genai.Client, history: list[types.Content], streamed: bool) -> types.Content:
    """One model call; the model's content (a stream's chunks folded into one)."""
    if not streamed:
        response = client.models.generate_content(model=MODEL, contents=history, config=CONFIG)
        return response.candidates[0].content
    parts: list[types.Part] = []
    for chunk in client.models.generate_content_stream(model=MODEL, contents=history, config=CONFIG):
        for part in chunk.candidates[0].content.parts or []:
            if part.text is not None and parts and parts[-1].text is not None:
                parts[-1] = types.Part(text=parts[-1].text + part.text)
            else:
                parts.append(part)
    return types.Content(role="model", parts=parts)


def chat_turn(client: genai.Client, history: list[types.Content], text: str, streamed: bool) -> str:
    """The tool loop: model → tools → model ... until the model answers in text."""
    history.append(types.Content(role="user", parts=[types.Part(text=text)]))
    for _ in range(8):
        content = model_turn(client, history, streamed)
        history.append(content)
        calls = [part.function_call for part in content.parts or [] if part.function_call]
        if not calls:
            return "".join(part.text or "" for part in content.parts or [])
        responses = []
        for call in calls:
            try:
                response: dict[str, Any] = {"result": run_tool(call.name, dict(call.args or {}))}
            except Exception as exc:  # reported to the model, which may retry
                response = {"error": str(exc)}
            responses.append(types.Part.from_function_response(name=call.name, response=response))
        history.append(types.Content(role="user", parts=responses))
    raise RuntimeError("the model kept asking for tools")


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    GoogleGenAIInstrumentor().instrument(tracer_provider=provider)
    base_url = os.environ["OPENAI_BASE_URL"].rstrip("/").removesuffix("/v1")
    client = genai.Client(
        api_key=os.environ.get("GEMINI_API_KEY", "sk-scripted"), http_options=types.HttpOptions(base_url=base_url)
    )
    try:
        for scenario in SCENARIOS:
            session = f"{CAPTURE_NAME}-{scenario.session}"
            with using_session(session), using_user(scenario.user):
                history: list[types.Content] = []
                for turn in scenario.turns:
                    answer = chat_turn(client, history, turn, scenario.id in STREAMED)
                    print(f"{scenario.id}: {turn!r} -> {answer!r}", flush=True)
    finally:
        client.close()
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
