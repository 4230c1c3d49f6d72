"""Logfire's own spans, made with the real OpenTelemetry SDK the way Logfire writes them: its
OpenAI Agents SDK integration (``logfire.instrument_openai_agents()``, scope
``logfire.openai_agents``) names each span by a fixed message template and sets the SDK span
data's ``export()`` as attributes, JSON-encoding every non-primitive value and describing it in
``logfire.json_schema`` (``logfire/_internal/integrations/openai_agents.py``, ``main.py``
``prepare_otlp_attribute``, ``json_schema.py`` ``create_json_schema``). The real capture of the
same integration is scored in ``tests/test_captures.py`` (``openai_agents_logfire``); these are
the shapes the capture does not show: parallel and failing tools, an agent run as a tool, the
Responses API, attributes missing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.conventions import logfire
from otel_eval.mapping import convention_name, map_spans, read_span, session_id_of
from otel_eval.spans import SpanRecord, from_sdk_span
from otel_eval.trajectory import build_trajectory

SYSTEM = "You are a helpful assistant."


def schema_of(value: Any) -> dict[str, Any]:
    """``create_json_schema``'s answer for the values these spans carry."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, (str, int, bool, float)):
        return {}
    if isinstance(value, (list, tuple)):
        return {"type": "array"}
    return {"type": "object"}


def logfire_attributes(template: str, message: str, **values: Any) -> dict[str, Any]:
    """A Logfire span's attributes: the values (non-primitives as JSON text), the message and
    its template, and the JSON schema of the values."""
    attributes: dict[str, Any] = {"logfire.msg_template": template, "logfire.msg": message, "logfire.span_type": "span"}
    for key, value in values.items():
        attributes[key] = value if isinstance(value, (str, int, bool, float)) else json.dumps(value)
    attributes["logfire.json_schema"] = json.dumps(
        {"type": "object", "properties": {key: schema_of(value) for key, value in values.items()}}
    )
    return attributes


class Agents:
    """Spans as Logfire's OpenAI Agents integration makes them, one trace per ``Runner.run``."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("logfire.openai_agents", "5.4.0")

    def span(self, template: str, message: str, **values: Any) -> Any:
        return self.tracer.start_as_current_span(template, attributes=logfire_attributes(template, message, **values))

    def trace(self, group_id: str | None = None, metadata: dict[str, Any] | None = None, **baggage: Any) -> Any:
        values: dict[str, Any] = {"name": "Agent workflow", "metadata": metadata, **baggage}
        if group_id is not None:
            values["group_id"] = group_id
        return self.span("OpenAI Agents trace: {name}", "OpenAI Agents trace: Agent workflow", **values)

    def agent(self, name: str, tools: list[str], **baggage: Any) -> Any:
        return self.span(
            "Agent run: {name!r}",
            f"Agent run: {name!r}",
            name=name,
            handoffs=[],
            tools=tools,
            output_type="str",
            **baggage,
        )

    def generation(self, messages: list[dict[str, Any]], output: dict[str, Any], **baggage: Any) -> None:
        with self.span(
            "Chat completion with {gen_ai.request.model!r}",
            "Chat completion with 'gpt-4o-mini'",
            input=messages,
            output=[output],
            **{
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.model": "gpt-4o-mini",
            },
            request_data={"messages": [*messages, output], "model": "gpt-4o-mini"},
            **{"gen_ai.usage.input_tokens": 42, "gen_ai.usage.output_tokens": 7},
            **baggage,
        ):
            pass

    def function(self, name: str, arguments: dict[str, Any], output: str, failed: bool = False, **baggage: Any) -> Any:
        values: dict[str, Any] = {"name": name, "input": json.dumps(arguments), "output": output, "mcp_data": None}
        message = f"Function: {name}"
        if failed:
            values["error"] = {
                "message": "Error running tool (non-fatal)",
                "data": {"tool_name": name, "error": "Tool execution failed. Error details are redacted."},
            }
            message += " failed: Error running tool (non-fatal)"
        return self.span("Function: {name}", message, **values, **baggage)

    def finished(self) -> list[SpanRecord]:
        return [from_sdk_span(s) for s in self.exporter.get_finished_spans()]


def calls_of(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or []]


def assistant(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """An assistant message as the Agents SDK's Chat Completions model records it."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for call_id, name, args in calls
    ]
    return {"role": "assistant", "content": text, "tool_calls": tool_calls or None, "refusal": None}


@pytest.fixture()
def agents():
    made = Agents()
    yield made
    made.provider.shutdown()


def run_weather_turn(agents: Agents, session: str = "s-1") -> None:
    """A turn of an agent that calls two tools in parallel, one of which fails and is retried."""
    baggage = {"session.id": session, "user.id": "u-1"}
    question = {"role": "user", "content": "Compare the weather in Paris and Berlin"}
    first = assistant(("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Berln"}))
    retry = assistant(("c3", "get_weather", {"city": "Berlin"}))
    answer = assistant(text="Paris is 18°C; Berlin is 12°C.")
    history = [{"role": "system", "content": SYSTEM}, question]
    with agents.trace(group_id="group-7", metadata={"user_id": "u-meta"}, **baggage):
        with agents.agent("weather_agent", ["get_weather", "get_forecast"], **baggage):
            agents.generation(history, first, **baggage)
            with agents.function("get_weather", {"city": "Paris"}, "It is 18°C in Paris.", **baggage):
                pass
            failure = "An error occurred while running the tool. Please try again."
            with agents.function("get_weather", {"city": "Berln"}, failure, failed=True, **baggage):
                pass
            history += [
                first,
                {"role": "tool", "tool_call_id": "c1", "content": "It is 18°C in Paris."},
                {"role": "tool", "tool_call_id": "c2", "content": failure},
            ]
            agents.generation(history, retry, **baggage)
            with agents.function("get_weather", {"city": "Berlin"}, "It is 12°C in Berlin.", **baggage):
                pass
            history += [retry, {"role": "tool", "tool_call_id": "c3", "content": "It is 12°C in Berlin."}]
            agents.generation(history, answer, **baggage)


def bare_span(name: str, attributes: dict[str, Any], scope: str = "logfire.openai_agents") -> SpanRecord:
    """One span as a file would hold it, without an SDK."""
    return SpanRecord("t" * 32, "s" * 16, None, name, 1, 2, attributes=attributes, scope=scope)


def trajectory_of(spans: list[SpanRecord]):
    mapped = map_spans(spans)
    sessions = {m.session_id for m in mapped} - {None}  # group_id is on the trace root only
    assert len(sessions) == 1, sessions
    return build_trajectory(sessions.pop() or "", mapped)


def test_every_span_of_the_integration_is_logfire_with_the_type_its_template_names(agents):
    run_weather_turn(agents)
    spans = agents.finished()
    assert {convention_name(s) for s in spans} == {"logfire"}
    types = {s.attributes["logfire.msg_template"]: read_span(s).span_type for s in spans}
    assert types == {
        "OpenAI Agents trace: {name}": "chain",
        "Agent run: {name!r}": "agent",
        "Chat completion with {gen_ai.request.model!r}": "llm",
        "Function: {name}": "tool",
    }
    assert all(logfire.quick_span_type(s) == read_span(s).span_type for s in spans)


def test_parallel_calls_a_failed_one_and_its_retry_make_the_turn(agents):
    run_weather_turn(agents)
    trajectory = trajectory_of(agents.finished())
    (turn,) = trajectory.turns
    assert turn.user_input == "Compare the weather in Paris and Berlin"
    assert turn.final_response == "Paris is 18°C; Berlin is 12°C."
    assert [(c.name, c.args, c.call_id) for c in turn.calls] == [
        ("get_weather", {"city": "Paris"}, "c1"),
        ("get_weather", {"city": "Berln"}, "c2"),
        ("get_weather", {"city": "Berlin"}, "c3"),
    ]
    paris, berln, berlin = turn.calls
    assert paris.group is not None and paris.group == berln.group  # asked for together
    assert berlin.step != berln.step  # a later model step: a retry, not a parallel call
    assert berln.error == "Error running tool (non-fatal): Tool execution failed. Error details are redacted."
    assert paris.error is None and paris.result == "It is 18°C in Paris."
    assert turn.llm_calls == 3 and turn.input_tokens == 3 * 42


def test_the_agent_run_names_the_agent_and_its_tools(agents):
    run_weather_turn(agents)
    agent = next(s for s in agents.finished() if s.attributes["logfire.msg_template"] == "Agent run: {name!r}")
    reading = read_span(agent)
    assert reading.agent_name == "weather_agent"
    assert [t.name for t in reading.tools_available] == ["get_weather", "get_forecast"]


def test_the_session_is_the_baggage_then_the_sdk_group_id(agents):
    run_weather_turn(agents, session="from-baggage")
    assert {session_id_of(s) for s in agents.finished()} == {"from-baggage"}

    plain = Agents()
    with plain.trace(group_id="thread-9", metadata={"user_id": "u-meta"}):
        with plain.agent("a", []):
            plain.generation([{"role": "user", "content": "Hi"}], assistant(text="Hello"))
    root = next(s for s in plain.finished() if s.parent_span_id is None)
    reading = read_span(root)
    assert (reading.session_id, reading.user_id) == ("thread-9", "u-meta")
    assert session_id_of(root, reading, "logfire") == "thread-9"
    plain.provider.shutdown()


def test_an_agent_run_as_a_tool_makes_calls_inside_the_call(agents):
    with agents.trace(group_id="g"):
        with agents.agent("triage", ["ask_db"]):
            agents.generation(
                [{"role": "user", "content": "Top users by revenue?"}],
                assistant(("c1", "ask_db", {"input": "Top users by revenue?"})),
            )
            with agents.function("ask_db", {"input": "Top users by revenue?"}, "u1, u2"):
                with agents.agent("db_agent", ["run_sql"]):
                    agents.generation(
                        [{"role": "user", "content": "Top users by revenue?"}],
                        assistant(("d1", "run_sql", {"sql": "SELECT 1"})),
                    )
                    with agents.function("run_sql", {"sql": "SELECT 1"}, "[[1]]"):
                        pass
                    agents.generation([{"role": "user", "content": "x"}], assistant(text="u1, u2"))
            agents.generation([{"role": "user", "content": "x"}], assistant(text="The top users are u1 and u2."))
    (turn,) = trajectory_of(agents.finished()).turns
    outer, inner = turn.calls
    assert (outer.name, outer.depth, outer.inside_call) == ("ask_db", 0, False)
    assert (inner.name, inner.args, inner.agent, inner.inside_call) == (
        "run_sql",
        {"sql": "SELECT 1"},
        "db_agent",
        True,
    )
    assert turn.final_response == "The top users are u1 and u2."


def test_a_responses_api_call_is_read_from_its_input_items_and_response(agents):
    response = {
        "id": "resp_1",
        "instructions": SYSTEM,
        "output": [
            {
                "type": "function_call",
                "call_id": "c9",
                "name": "get_forecast",
                "arguments": '{"city": "Oslo", "days": 2}',
            }
        ],
    }
    with agents.span(
        "Responses API with {gen_ai.request.model!r}",
        "Responses API with 'gpt-4.1'",
        response_id="resp_1",
        response=response,
        raw_input=[{"role": "user", "content": "Forecast for Oslo?"}],
        **{"gen_ai.request.model": "gpt-4.1", "gen_ai.system": "openai"},
    ):
        pass
    (span,) = agents.finished()
    reading = read_span(span)
    assert reading.span_type == "llm"
    assert (reading.user_input, reading.system_prompt) == ("Forecast for Oslo?", SYSTEM)
    assert [(c.name, c.args, c.call_id) for c in reading.requested_calls] == [
        ("get_forecast", {"city": "Oslo", "days": 2}, "c9")
    ]


def test_a_responses_api_call_without_the_response_is_read_from_its_events(agents):
    events = [
        {"event.name": "gen_ai.system.message", "content": SYSTEM, "role": "system"},
        {"event.name": "gen_ai.user.message", "content": "Hi there", "role": "user"},
        {"event.name": "gen_ai.assistant.message", "content": "Hello!", "role": "assistant"},
    ]
    with agents.span("Responses API", "Responses API", response_id=None, events=events):
        pass
    (span,) = agents.finished()
    reading = read_span(span)
    assert (reading.user_input, reading.response, reading.system_prompt) == ("Hi there", "Hello!", SYSTEM)


def test_values_are_decoded_only_where_the_json_schema_says_json():
    span = bare_span(
        "Function: {name}",
        {
            "logfire.msg_template": "Function: {name}",
            "input": '{"city": "Tokyo"}',  # a str that looks like JSON: schema {}
            "metadata": '{"a": 1}',
            "broken": "{not json",
            "logfire.json_schema": json.dumps(
                {
                    "type": "object",
                    "properties": {"input": {}, "metadata": {"type": "object"}, "broken": {"type": "object"}},
                }
            ),
        },
    )
    attrs = logfire.attributes(span)
    assert attrs["input"] == '{"city": "Tokyo"}'
    assert attrs["metadata"] == {"a": 1}
    assert attrs["broken"] == "{not json"  # kept, not a traceback
    assert "logfire.json_schema" not in attrs


def test_missing_attributes_read_as_far_as_they_go(agents):
    """No json_schema, no name (the message names the tool), no output, no input: never raises."""
    bare = bare_span(
        "Function: {name}",
        {
            "logfire.msg_template": "Function: {name}",
            "logfire.msg": "Function: lookup failed: Error running tool (non-fatal)",
            "error": '{"message": "Error running tool (non-fatal)", "data": null}',
        },
    )
    reading = read_span(bare)
    assert reading.tool is not None
    assert (reading.tool.name, reading.tool.args, reading.tool.result) == ("lookup", {}, None)
    assert reading.tool.error == "Error running tool (non-fatal)"
    for template in logfire.AGENTS_TEMPLATES:
        read_span(bare_span(template, {"logfire.msg_template": template}))


def test_pydantic_ai_through_logfire_stays_pydantic_ai_and_other_logfire_spans_read_as_genai():
    pydantic_ai = bare_span(
        "agent run",
        {"logfire.msg_template": "{agent_name} run", "logfire.msg": "agent run", "final_result": "Hi"},
        scope="pydantic-ai",
    )
    assert convention_name(pydantic_ai) == "pydantic_ai"
    openai = bare_span(
        "Chat Completion with {request_data[model]!r}",
        {
            "logfire.msg_template": "Chat Completion with {request_data[model]!r}",
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hello?"}]}]),
            "request_data": '{"model": "gpt-4o"}',
            "logfire.json_schema": '{"type": "object", "properties": {"request_data": {"type": "object"}}}',
        },
        scope="logfire.openai",
    )
    assert convention_name(openai) == "logfire"
    reading = read_span(openai)
    assert (reading.span_type, reading.user_input) == ("llm", "Hello?")
