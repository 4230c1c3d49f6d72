"""Google ADK eval data (.evalset.json, old .test.json and old eval sets) → EvalSet."""

from __future__ import annotations

import json
from pathlib import Path

from otel_eval.golden import detect_format, load_golden, load_golden_data, validate_golden_data
from otel_eval.models.evalset import ExpectedToolCall, MessageContent, SessionInput

DATA = Path(__file__).parent / "data" / "golden"


def test_old_test_file_is_one_multi_turn_session():
    eval_set = load_golden(DATA / "dice.test.json")
    assert eval_set.eval_set_id == "dice"
    [case] = eval_set.eval_cases
    assert case.eval_id == "dice"
    assert case.query == "What can you do?"
    first, second = case.conversation
    assert (first.invocation_id, second.invocation_id) == ("dice-1", "dice-2")
    assert first.expected_tool_trajectory == []
    assert first.expected_final_response == MessageContent.assistant(
        "I can roll dice of different sizes and check if a number is prime."
    )
    assert second.user_content == MessageContent.user("Roll a 17 sided dice twice for me")
    assert second.expected_tool_trajectory == [ExpectedToolCall(name="roll_die", args={"sides": 17})] * 2


def test_evalset_with_tool_uses_responses_intermediate_responses_and_scenario():
    eval_set = load_golden(DATA / "flights.evalset.json")
    assert (eval_set.eval_set_id, eval_set.name) == ("flights", "Flight booking")
    booking, scenario = eval_set.eval_cases
    assert booking.session_input == SessionInput(
        config={"app_name": "flights_agent", "user_id": "test_user"}, initial_state={"currency": "EUR"}
    )
    turn1, turn2 = booking.conversation
    assert turn1.invocation_id == "turn-1"
    assert turn1.user_content == MessageContent.user("Book a flight to London")
    assert turn1.expected_tool_trajectory == [
        ExpectedToolCall(
            name="trigger_elicitation",
            args={"missing_entities": ["date", "passenger_name"]},
            call_id="fc-1",
            result={"status": "asked"},
        )
    ]
    assert turn1.expected_intermediate_responses == [
        MessageContent(
            role="assistant", content="I need the date and the passenger's name.", metadata={"author": "planner"}
        )
    ]
    assert turn1.expected_final_response is None  # {"text": null}: no expected text
    assert turn2.expected_tool_trajectory == [
        ExpectedToolCall(
            name="book_flight", args={"destination": "London", "date": "2026-05-15", "passenger_name": "Alice"}
        )
    ]
    assert turn2.expected_final_response == MessageContent.assistant(
        "Successfully booked flight to London on 2026-05-15 for Alice."
    )

    assert scenario.query == "Hi, can you kick off a long background task for me?"
    assert scenario.metadata["conversation_scenario"]["conversation_plan"].startswith("Ask the agent")


def test_camel_case_aliases_and_invocation_events():
    data = {
        "eval_set_id": "camel",
        "eval_cases": [
            {
                "evalId": "c1",
                "conversation": [
                    {
                        "invocationId": "t1",
                        "userContent": {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
                        "finalResponse": {"role": "model", "parts": [{"text": "Cold."}]},
                        "intermediateData": {
                            "invocationEvents": [
                                {
                                    "author": "root",
                                    "content": {
                                        "parts": [
                                            {
                                                "functionCall": {
                                                    "id": "a",
                                                    "name": "get_weather",
                                                    "args": {"city": "Oslo"},
                                                }
                                            }
                                        ]
                                    },
                                },
                                {
                                    "author": "root",
                                    "content": {
                                        "parts": [
                                            {
                                                "functionResponse": {
                                                    "id": "a",
                                                    "name": "get_weather",
                                                    "response": {"t": -3},
                                                }
                                            }
                                        ]
                                    },
                                },
                                {"author": "helper", "content": {"parts": [{"text": "Looking it up"}]}},
                            ]
                        },
                    }
                ],
                "sessionInput": {"appName": "w", "userId": "u", "sessionId": "s-9", "state": {}},
            }
        ],
    }
    assert detect_format(data) == "adk"
    [case] = load_golden_data(data, "camel.evalset.json").eval_cases
    assert case.eval_id == "c1"
    [turn] = case.conversation
    assert turn.invocation_id == "t1"
    assert turn.expected_tool_trajectory == [
        ExpectedToolCall(name="get_weather", args={"city": "Oslo"}, call_id="a", result={"t": -3})
    ]
    assert turn.expected_intermediate_responses == [
        MessageContent(role="assistant", content="Looking it up", metadata={"author": "helper"})
    ]
    assert turn.expected_final_response == MessageContent.assistant("Cold.")
    assert case.session_input == SessionInput(thread_id="s-9", config={"app_name": "w", "user_id": "u"})


def test_old_eval_set_list_one_case_per_entry():
    data = [
        {
            "name": "roll_17_sided_dice_twice",
            "data": [
                {
                    "query": "What can you do?",
                    "expected_tool_use": [],
                    "expected_intermediate_agent_responses": [],
                    "reference": "I can roll dice.",
                },
                {
                    "query": "Roll a 17 sided dice twice for me",
                    "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 17}}],
                    "expected_intermediate_agent_responses": [{"author": "roller", "text": "rolling"}],
                    "reference": "13 and 4.",
                },
            ],
            "initial_session": {"state": {}, "app_name": "hello_world", "user_id": "user"},
        }
    ]
    assert detect_format(data) == "adk"
    [case] = load_golden_data(data, "old.json").eval_cases
    assert case.eval_id == "roll_17_sided_dice_twice"
    assert [t.invocation_id for t in case.conversation] == ["roll_17_sided_dice_twice-1", "roll_17_sided_dice_twice-2"]
    assert case.conversation[1].expected_intermediate_responses == [
        MessageContent(role="assistant", content="rolling", metadata={"author": "roller"})
    ]
    assert case.session_input == SessionInput(config={"app_name": "hello_world", "user_id": "user"})


def test_adk_problems_are_all_reported():
    data = {
        "eval_set_id": "bad",
        "eval_cases": [
            {"eval_id": "a", "conversation": [{"user_content": {"role": "user", "parts": [{"text": "  "}]}}]},
            {
                "eval_id": "a",
                "conversation": [
                    {
                        "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                        "intermediate_data": {"tool_uses": [{"args": "{bad"}]},
                    }
                ],
            },
            {"eval_id": "c"},
            {"eval_id": "d", "conversation": [{"final_response": {"parts": []}}]},
        ],
    }
    problems = validate_golden_data(data, "bad.evalset.json")
    assert [(p.location, p.reason) for p in problems] == [
        ("$.eval_cases[0].conversation[0].user_content.parts", "missing query: the first user message has no text"),
        ("$.eval_cases[1].conversation[0].intermediate_data.tool_uses[0].name", "missing required field 'name'"),
        (
            "$.eval_cases[1].conversation[0].intermediate_data.tool_uses[0].args",
            "arguments string is not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        ),
        ("$.eval_cases[2].conversation", "exactly one of 'conversation' and 'conversation_scenario' must be given"),
        ("$.eval_cases[3].conversation[0].user_content", "missing required field 'user_content'"),
        ("$.eval_cases[1].eval_id", "duplicate eval_id 'a' (first used at $.eval_cases[0].eval_id)"),
    ]


def test_test_json_name_decides_only_for_bare_query_lists(tmp_path):
    bare = [{"query": "hi", "expected_tool_use": []}, {"query": "bye", "expected_tool_use": []}]
    path = tmp_path / "greet.test.json"
    path.write_text(json.dumps(bare))
    assert detect_format(bare, str(path)) == "adk"
    assert detect_format(bare, "greet.json") == "trajectory"
    assert [len(c.conversation) for c in load_golden(path).eval_cases] == [2]
    assert [len(c.conversation) for c in load_golden_data(bare, "greet.json").eval_cases] == [1, 1]
