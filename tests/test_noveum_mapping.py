"""The Noveum convention on its own: detection, span types, ReAct parsing, observations."""

from __future__ import annotations

from otel_eval.conventions import noveum
from otel_eval.mapping import read_span
from otel_eval.spans import SpanEvent, SpanRecord, from_noveum, read_noveum_file
from tests.paths import FIXTURES

DATASET = FIXTURES / "noveum/dataset.json"


def _span(attributes, span_id="s1", parent="root", events=(), name="x", status="ok"):
    return SpanRecord(
        trace_id="t1",
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=1,
        end_ns=2,
        status=status,
        attributes=attributes,
        events=tuple(events),
        scope="noveum-trace",
    )


PROMPT = (
    "Human: Answer the following questions as best you can. You have access to the following tools:\n\n"
    "lookup(city: str, units: Literal['c', 'f'] = \"c\", days: int = 3) -> dict - Look a city up.\n"
    "It also knows countries.\n"
    "noop() -> None - Does nothing.\n\n"
    "Use the following format:\n\nQuestion: the input question you must answer\nThought: think\n"
    "Action: the action to take\nAction Input: the input to the action\nObservation: the result\n\n"
    "Begin!\n\nQuestion: weather in Oslo?\nThought:I should look.\nAction: lookup\nAction Input: \"Oslo\"\n"
    "Observation: {'temp': 3}\nnoop() -> None - not a tool line\nThought:"
)


def test_react_tool_list_stops_at_the_end_of_the_list():
    tools = [t.model_dump() for t in noveum.parse_react_tools(PROMPT)]
    assert tools == [
        {
            "name": "lookup",
            "description": "Look a city up.\nIt also knows countries.",
            "args_schema": {
                "city": {"type": "str"},
                "units": {"type": "Literal['c', 'f']", "default": "c"},
                "days": {"type": "int", "default": "3"},
            },
            "return_schema": {"type": "dict"},
        },
        {"name": "noop", "description": "Does nothing.", "args_schema": {}, "return_schema": {"type": "None"}},
    ]


def test_react_action_and_question():
    assert noveum.react_question(PROMPT) == "weather in Oslo?"
    call = noveum.react_action('I must.\nAction: escalate_to_human\nAction Input: reason="Too hard"')
    assert (call.name, call.args) == ("escalate_to_human", {"input": 'reason="Too hard'})
    call = noveum.react_action('Action: langchain_retriever\nAction Input: "fun fact"')
    assert call.args == {"input": "fun fact"}
    assert noveum.react_action("Thought: done\nFinal Answer: 42") is None
    assert noveum.react_action("This is a greeting.\nAction: None") is None


def test_observation_is_found_after_the_previous_llm_output():
    log = "I should look.\nAction: lookup\nAction Input: \"Oslo\""
    assert noveum.observation_after(PROMPT, log) == "{'temp': 3}\nnoop() -> None - not a tool line"
    assert noveum.observation_after("no scratchpad here", log) is None


def test_span_types_by_identity_not_by_agent_keys():
    root = _span({"chain.name": "unknown", "chain.inputs": {"input": "hi"}, "chain.inputs.input": "hi"}, parent=None)
    tool = _span(
        {
            "tool.name": "user_input",
            "tool.input.input_str": "more?",
            "tool.input.argument_count": 1,
            "tool.input.expression": "more?",
            "tool.output.output": "FINAL",
            "agent.output.action.tool": "langchain_retriever",
            "agent.output.action.tool_input": "q",
        }
    )
    llm = _span(
        {
            "llm.model": "ChatOpenAI",
            "llm.input.prompts": [PROMPT],
            "llm.output.response": ["x"],
            "llm.input_tokens": 10,
            "llm.output_tokens": 2,
        }
    )
    assert [noveum.span_type_of(s) for s in (root, tool, llm)] == ["agent", "tool", "llm"]
    reading = read_span(tool)
    assert reading.convention == "noveum"
    assert reading.requested_calls == [] and reading.retrieval_query is None
    assert (reading.tool.name, reading.tool.args, reading.tool.result) == ("user_input", {"input": "more?"}, "FINAL")
    assert reading.parameters == {"input_str": "more?", "argument_count": 1, "expression": "more?"}
    assert reading.sources["tool_calls"] == "tool.name, tool.input.*"
    llm_reading = read_span(llm)
    assert (llm_reading.model, llm_reading.input_tokens, llm_reading.output_tokens) == ("ChatOpenAI", 10, 2)
    assert llm_reading.user_input == "weather in Oslo?"


def test_structured_tool_inputs_are_the_arguments():
    assert noveum.tool_arguments({"query": "x", "limit": "10", "argument_count": "2"}) == {"query": "x", "limit": "10"}
    assert noveum.tool_arguments({"expression": "2+2", "argument_count": 1}) == {"input": "2+2"}
    assert noveum.tool_arguments({}) == {}


def test_parse_error_spans_are_failed_calls():
    span = _span(
        {
            "tool.name": "_Exception",
            "tool.input.input_str": "Invalid Format: Missing 'Action Input:'",
            "tool.output.output": "FINAL",
        }
    )
    tool = read_span(span).tool
    assert (tool.result, tool.error) == (None, "Invalid Format: Missing 'Action Input:'")


def test_agent_reading_events_and_first_action():
    events = [
        SpanEvent("agent_action", 1_757_606_105_277_839_000, {"action.tool": "langchain_retriever"}),
        SpanEvent("agent_finish", 1_757_606_152_705_207_000, {"finish.return_values": {"output": "done"}}),
    ]
    span = _span(
        {
            "chain.name": "unknown",
            "chain.inputs": {"input": "find it"},
            "agent.output.action.tool": "langchain_retriever",
            "agent.output.action.tool_input": "it",
            "agent.output.finish.return_values": {"output": "done"},
        },
        parent=None,
        events=events,
    )
    reading = read_span(span)
    assert (reading.span_type, reading.user_input, reading.response, reading.agent_exit) == (
        "agent",
        "find it",
        "done",
        True,
    )
    assert [(c.name, c.args) for c in reading.requested_calls] == [("langchain_retriever", {"input": "it"})]
    assert reading.retrieval_query == ["it"]
    assert reading.trace == (
        '[{"name": "agent_action", "timestamp": "2025-09-11T15:55:05.277839+00:00", "attributes": '
        '{"action.tool": "langchain_retriever"}}, {"name": "agent_finish", "timestamp": '
        '"2025-09-11T15:55:52.705207+00:00", "attributes": {"finish.return_values": {"output": "done"}}}]'
    )


def test_detection_keys_and_foreign_spans():
    assert noveum.detect(_span({"agent.output.action.tool": "x"}))
    assert noveum.detect(_span({"tool.output.output": "x"}))
    assert not noveum.detect(SpanRecord("t", "s", None, "n", 0, 0, attributes={"tool.name": "x"}))
    assert noveum.detect(
        from_noveum({"trace_id": "t", "span_id": "s", "attributes": {"tool.name": "x", "langchain.run_id": "r"}})
    )


def test_missing_attributes_never_raise():
    for attrs in (
        {"llm.model": "m", "langchain.run_id": "r"},
        {"tool.name": "t", "langchain.run_id": "r"},
        {"chain.name": "c", "langchain.run_id": "r"},
        {"agent.output.action.log": "x"},
    ):
        reading = noveum.read(_span(attrs))
        assert reading.convention == "noveum"


def test_observations_of_a_real_run():
    spans = [s for s in read_noveum_file(str(DATASET)) if s.trace_id.startswith("4675c7f8")]
    first_llm = next(s.span_id for s in spans if s.span_id.startswith("c9c4910a"))
    second_llm = next(s.span_id for s in spans if s.span_id.startswith("4ddbda21"))
    found = noveum.tool_observations(spans)
    assert set(found) == {first_llm, second_llm}
    assert found[first_llm] == "User response: what tools do you have access to?"
    assert found[second_llm].startswith("Retrieved information:\n\n1. LangChain Agent Documentation")
