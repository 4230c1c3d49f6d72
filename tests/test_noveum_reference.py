"""Our Noveum mapping against NovaEval's own output, record by record and field by field.

``dataset_v1.json`` is the exact input of ``processed_agent_dataset.json``. Every field must be
equal, except the differences listed in docs/noveum-differences.md; each of those is applied to
the reference record here (so its exact expected value is asserted) and counted, and any other
difference fails the test.
"""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from otel_eval.conventions import noveum
from otel_eval.mapping import aggregate_trace, map_span, map_spans
from otel_eval.spans import read_noveum_file
from tests.paths import FIXTURES

NOVEUM = FIXTURES / "noveum"


@pytest.fixture(scope="module")
def pairs():
    spans = read_noveum_file(str(NOVEUM / "dataset_v1.json"))
    reference = json.loads((NOVEUM / "processed_agent_dataset.json").read_text(encoding="utf-8"))
    assert len(spans) == len(reference) == 56
    return list(zip(spans, reference))


def _expected(span, ref: dict, applied: Counter) -> dict:
    """The reference record with our documented differences (D1–D5) applied."""
    exp = copy.deepcopy(ref)
    attrs = span.attributes
    if "tool.name" in attrs and ref["agent_role"] == "agent":
        # D1: a tool span is a tool record; the NEXT action it carries is not its call.
        applied["D1 tool span carrying next action"] += 1
        inputs = {k[len("tool.input.") :]: v for k, v in attrs.items() if k.startswith("tool.input.")}
        exp.update(
            agent_name="tool",
            agent_role="tool",
            agent_response=attrs["tool.output.output"],
            trace=None,
            tool_calls=[],
            parameters_passed=inputs,
            tool_call_results=[
                {"call_id": span.span_id, "result": attrs["tool.output.output"], "success": True, "error_message": None}
            ],
            retrieval_query=None,
            retrieved_context=None,
        )
        if attrs["tool.name"] == "langchain_retriever":
            exp["retrieved_context"] = [[attrs["tool.output.output"]]]
    if exp["agent_role"] == "tool" and attrs.get("tool.name") == "langchain_retriever":
        # D5: a retriever tool record also names its query.
        applied["D5 retriever tool query"] += 1
        exp["retrieval_query"] = [attrs["tool.input.input_str"]]
    if ref["agent_role"] == "llm":
        prompt = attrs["llm.input.prompts"][0]
        # D2: the ReAct question is the LLM record's task.
        applied["D2 llm agent_task"] += 1
        exp["agent_task"] = prompt.split("\nBegin!\n\nQuestion: ", 1)[1].split("\nThought:", 1)[0]
        # D3: the LLM's ReAct Action is its tool call.
        response = attrs["llm.output.response"][0]
        if "\nAction Input:" in response:
            applied["D3 llm tool_calls"] += 1
            name = response.split("Action:", 1)[1].split("\n", 1)[0].strip()
            value = response.split("Action Input:", 1)[1].strip(" ").strip('"')
            exp["tool_calls"] = [{"tool_name": name, "parameters": {"input": value}, "call_id": span.span_id}]
        # D4: the last tool's description stops at the end of the tool list.
        applied["D4 tool description"] += 1
        last = exp["tools_available"][-1]
        assert last["description"].startswith(
            "Use this tool to search through the knowledge base for relevant information. "
            "Input should be a search query.\n\nUse the following format:"
        )
        last["description"] = last["description"].split("\n\n", 1)[0]
    return exp


def test_every_record_matches_the_reference_except_documented_differences(pairs):
    applied: Counter = Counter()
    for span, ref in pairs:
        ours = map_span(span).model_dump()
        expected = _expected(span, ref, applied)
        assert set(ours) == set(ref)
        for field in ref:
            assert ours[field] == expected[field], f"{span.span_id} {span.name}: field {field}"
    assert applied == {
        "D1 tool span carrying next action": 13,
        "D2 llm agent_task": 28,
        "D3 llm tool_calls": 20,
        "D4 tool description": 28,
        "D5 retriever tool query": 4,
    }


def test_roots_match_the_reference_exactly_including_the_events_dump(pairs):
    roots = [(s, r) for s, r in pairs if s.is_root]
    assert len(roots) == 8
    for span, ref in roots:
        assert map_span(span).model_dump() == ref
    first = roots[0][1]
    assert json.loads(first["trace"])[0]["timestamp"] == "2025-09-11T15:55:05.277839+00:00"


def test_reference_kinds_and_ours(pairs):
    theirs = Counter(r["agent_role"] for _, r in pairs)
    ours = Counter(map_span(s).agent_role for s, _ in pairs)
    assert theirs == {"agent": 21, "llm": 28, "tool": 7}
    assert ours == {"agent": 8, "llm": 28, "tool": 20}


def test_the_tool_list_is_parsed_like_the_reference_up_to_its_end(pairs):
    span, ref = next((s, r) for s, r in pairs if r["agent_role"] == "llm")
    tools = [t.model_dump() for t in map_span(span).tools_available]
    assert [t["name"] for t in tools] == ["escalate_to_human", "user_input", "langchain_retriever"]
    assert tools[:2] == ref["tools_available"][:2]
    assert tools[2] == {
        "name": "langchain_retriever",
        "description": "Use this tool to search through the knowledge base for relevant information. "
        "Input should be a search query.",
        "args_schema": {"query": {"type": "str"}},
        "return_schema": {"type": "str"},
    }


@pytest.fixture(scope="module")
def current_dataset():
    return read_noveum_file(str(NOVEUM / "dataset.json"))


def test_dataset_json_gives_62_span_records(current_dataset):
    records = [map_span(s) for s in current_dataset]
    assert len(records) == 62
    assert Counter(r.agent_role for r in records) == {"agent": 10, "llm": 31, "tool": 21}
    assert all(noveum.detect(s) for s in current_dataset)
    assert {m.reading.convention for m in map_spans(current_dataset)} == {"noveum"}


def test_dataset_json_aggregates_to_10_trace_records(current_dataset):
    by_trace: dict = {}
    for m in map_spans(current_dataset):
        by_trace.setdefault(m.span.trace_id, []).append(m)
    records = {trace_id: aggregate_trace(members) for trace_id, members in by_trace.items()}
    assert len(records) == 10
    tasks = Counter(r.agent_task for r in records.values())
    assert tasks == {
        "hi": 2,
        "what tools do you have access to": 1,
        "use langchain retriever and tell me a fun fact": 1,
        "tell me a fun fact from the docs": 1,
        "Tell tell me the fun fact from the docs": 1,
        "tell me a fun fac": 1,
        "okay.... what was my last question": 1,
        "tell me what is the fun fact": 1,
        "can you use langchain retriever tool?": 1,
    }
    # The three oldest runs offered end_conversation where the later ones offer user_input.
    older = {"9efaa0c4", "121bb7f1", "a8fe28a3"}
    for trace_id, record in records.items():
        middle = "end_conversation" if trace_id[:8] in older else "user_input"
        assert [t.name for t in record.tools_available] == ["escalate_to_human", middle, "langchain_retriever"]
        assert record.agent_exit is True
        assert record.turn_id == next(s.span_id for s in current_dataset if s.trace_id == trace_id and s.is_root)
    record = records["4675c7f8-e284-4c0c-bff4-2f901c2ecbe3"]
    assert record.agent_response == "The tools available are escalate_to_human, user_input, and langchain_retriever."
    assert [(c.tool_name, c.parameters) for c in record.tool_calls] == [
        ("user_input", {"input": "Please provide more information about the tools you have access to."}),
        ("langchain_retriever", {"input": "tools available"}),
    ]
    # The root listed before its LLM span in the file is still the root of its trace.
    late = records["a8fe28a3-2ebb-428d-b679-9aba40c69be0"]
    assert late.turn_id.startswith("028bb2cf")
    assert late.agent_response == "Yes, I can use the langchain_retriever tool to search for information."
