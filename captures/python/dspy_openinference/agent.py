"""DSPy ``ReAct`` traced by openinference-instrumentation-dspy and -litellm.

Plays every scenario of :mod:`captures.scenarios` against the scripted model at
``OPENAI_BASE_URL``: ``dspy.LM("openai/gpt-4o-mini", api_base=...)`` (DSPy calls it through
LiteLLM, Chat Completions) drives a ``dspy.ReAct`` over the four tools, and the spans go over
OTLP/HTTP protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``. A tool that raises is caught by ReAct
itself, which writes ``Execution error in <tool>: ...`` as the observation, so the model retries.
One ReAct call per user turn; the conversation is a ``dspy.History`` input, kept the way DSPy's
docs keep it (``history.messages.append({"question": question, **outputs})``), so S3's second turn
sees the first. LM caching is off (``cache=False``), so every turn really calls the model.

Telemetry is the documented OpenInference setup for DSPy: ``DSPyInstrumentor`` (module, predictor,
adapter, LM and tool spans) and ``LiteLLMInstrumentor`` (the model calls, with token counts), on an
SDK TracerProvider with a ``BatchSpanProcessor(OTLPSpanExporter())``. Session and user come from
OpenInference's ``using_session`` / ``using_user`` context.

DSPy's ReAct does not use native tool calls: the model answers in ChatAdapter text
(``[[ ## next_thought ## ]]``, ``[[ ## next_tool_name ## ]]``, ``[[ ## next_tool_args ## ]]``),
one tool per step, then ``finish``, then an extract step (``reasoning``, ``answer``). So the LM
sends the header ``x-scripted-dspy-react: 1``, which switches on that option of
``captures/scripted_model.py`` (off by default; the env ``SCRIPTED_DSPY_REACT`` does the same). A
header only the scripted server reads: it changes no span. S2's two "parallel" calls become two
ReAct steps.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM: no download of its price list

import dspy
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.dspy import DSPyInstrumentor
from openinference.instrumentation.litellm import LiteLLMInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from captures.scenarios import SCENARIOS, run_tool

CAPTURE_NAME = os.environ.get("CAPTURE_NAME", "dspy_openinference")


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return run_tool("get_weather", {"city": city})


def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city, some days ahead."""
    return run_tool("get_forecast", {"city": city, "days": days})


def call_db_agent(question: str) -> str:
    """Answer a question about the sales database with SQL."""
    return json.dumps(run_tool("call_db_agent", {"question": question}))


def search_docs(query: str) -> str:
    """Search the policy documents."""
    return json.dumps(run_tool("search_docs", {"query": query}))


class Assistant(dspy.Signature):
    """You are a helpful assistant. Use the tools to answer."""

    question: str = dspy.InputField()
    history: dspy.History = dspy.InputField()
    answer: str = dspy.OutputField()


def main() -> None:
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTLP/HTTP protobuf
    DSPyInstrumentor().instrument(tracer_provider=provider)
    LiteLLMInstrumentor().instrument(tracer_provider=provider)

    lm = dspy.LM(
        "openai/gpt-4o-mini",
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        cache=False,
        extra_headers={"x-scripted-dspy-react": "1"},
    )
    dspy.configure(lm=lm)
    agent = dspy.ReAct(Assistant, tools=[get_weather, get_forecast, call_db_agent, search_docs], max_iters=8)
    try:
        for scenario in SCENARIOS:
            history = dspy.History(messages=[])
            with using_session(f"{CAPTURE_NAME}-{scenario.session}"), using_user(scenario.user):
                for turn in scenario.turns:
                    outputs = agent(question=turn, history=history)
                    history.messages.append({"question": turn, **outputs})
                    print(f"{scenario.id}: {turn!r} -> {outputs.answer!r}", flush=True)
    finally:
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
