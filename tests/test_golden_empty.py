"""Empty means none, absent means not checked (issue 10.5), as every golden loader reads it:
``expected_tool_trajectory`` is ``None`` when the file does not say, ``[]`` when it says "no tool
call", in single- and multi-turn cases, and saving or converting keeps the difference."""

import json

import pytest

from otel_eval.errors import InputError
from otel_eval.golden import convert, load_golden, validate_golden
from otel_eval.golden.adk_eval_set import MODEL_KEYS
from otel_eval.models.evalset import EvalSet, ExpectedToolCall


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def trajectories(eval_set):
    """Per case, per turn: None or the expected tool names."""
    return {
        case.eval_id: [
            None if inv.expected_tool_trajectory is None else [c.name for c in inv.expected_tool_trajectory]
            for inv in case.conversation
        ]
        for case in eval_set.eval_cases
    }


def user(text):
    return {"role": "user", "content": text}


def adk_content(text, role="user"):
    return {"parts": [{"text": text}], "role": role}


EVALSET = {
    "eval_set_id": "s",
    "eval_cases": [
        {
            "eval_id": "multi",
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": user("Weather in Paris?"),
                    "expected_tool_trajectory": [{"name": "get_weather", "args": {"city": "Paris"}}],
                },
                {"invocation_id": "t2", "user_content": user("Thanks"), "expected_tool_trajectory": []},
                {
                    "invocation_id": "t3",
                    "user_content": user("Bye"),
                    "expected_final_response": {"role": "assistant", "content": "Bye!"},
                },
                {
                    "invocation_id": "t4",
                    "user_content": user("Really bye"),
                    "expected_tool_trajectory": None,
                    "expected_final_response": {"role": "assistant", "content": "Bye!"},
                },
            ],
        },
        {
            "eval_id": "none",
            "conversation": [{"invocation_id": "t1", "user_content": user("Hi"), "expected_tool_trajectory": []}],
        },
    ],
}

ADK_EVALSET = {
    "eval_set_id": "adk",
    "eval_cases": [
        {
            "eval_id": "multi",
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": adk_content("Book a flight"),
                    "intermediate_data": {"tool_uses": [{"name": "book", "args": {}}]},
                },
                {"invocation_id": "t2", "user_content": adk_content("Thanks"), "intermediate_data": {"tool_uses": []}},
                # ADK's eval set manager writes an empty tool_uses by leaving it out
                {"invocation_id": "t3", "user_content": adk_content("Ok"), "intermediate_data": {}},
                {
                    "invocation_id": "t4",
                    "user_content": adk_content("Bye"),
                    "final_response": adk_content("Bye", "model"),
                },
                {"invocationId": "t5", "userContent": adk_content("Again"), "intermediateData": {"toolUses": []}},
                {
                    "invocation_id": "t6",
                    "user_content": adk_content("Events"),
                    "intermediate_data": {
                        "invocation_events": [
                            {"author": "agent", "content": {"role": "model", "parts": [{"text": "no tool needed"}]}}
                        ]
                    },
                },
                {
                    "invocation_id": "t7",
                    "user_content": adk_content("Null"),
                    "intermediate_data": None,
                    "final_response": adk_content("ok", "model"),
                },
            ],
        },
    ],
}

ADK_TEST_FILE = [
    {"query": "What can you do?", "expected_tool_use": [], "reference": "I roll dice."},
    {"query": "Roll a die", "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 6}}]},
    {"query": "Thanks", "reference": "You're welcome."},
]

ADK_OLD_EVAL_SET = [{"name": "dice", "data": ADK_TEST_FILE}]

TRAJECTORY = [
    {
        "id": "absent",
        "query": "Top users",
        "expected_trajectory": ["sql_generation: yes", "tool_selection: call_db_agent"],
    },
    {"id": "empty", "query": "Hello", "expected_tool_use": [], "reference": "Hi!"},
    {"id": "given", "query": "Revenue", "expected_tool_use": [{"tool_name": "call_db_agent"}]},
    {"id": "null", "query": "Null", "expected_tool_use": None, "reference": "x"},
]


def bigsky_example(example_id, message):
    return {
        "id": example_id,
        "inputs": {"messages": [user(f"question {example_id}")]},
        "outputs": {"message": {"role": "assistant", **message}},
    }


BIGSKY = {
    "name": "b",
    "evaluators": [{"key": "tool", "function": "chat:matchToolCall"}],
    "data": [
        bigsky_example("absent", {"content": "Which city?"}),
        bigsky_example("empty", {"content": "Which city?", "tool_calls": []}),
        bigsky_example(
            "given",
            {
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "getWeather", "arguments": "{\"location\": \"Boston\"}"}}
                ],
            },
        ),
        bigsky_example("null", {"content": "x", "tool_calls": None}),
    ],
}

FORMATS = [
    ("s.evalset.json", EVALSET, {"multi": [["get_weather"], [], None, None], "none": [[]]}),
    ("adk.evalset.json", ADK_EVALSET, {"multi": [["book"], [], [], None, [], [], None]}),
    ("dice.test.json", ADK_TEST_FILE, {"dice": [[], ["roll_die"], None]}),
    ("old.json", ADK_OLD_EVAL_SET, {"dice": [[], ["roll_die"], None]}),
    ("db.trajectory.json", TRAJECTORY, {"absent": [None], "empty": [[]], "given": [["call_db_agent"]], "null": [None]}),
    ("w.bigsky.json", BIGSKY, {"absent": [None], "empty": [[]], "given": [["getWeather"]], "null": [None]}),
]
IDS = ["evalset", "adk", "adk-test-file", "adk-old-eval-set", "trajectory", "bigsky"]


@pytest.mark.parametrize("name,data,expected", FORMATS, ids=IDS)
def test_absent_loads_as_none_and_empty_as_an_empty_list(tmp_path, name, data, expected):
    path = write(tmp_path, name, data)
    assert validate_golden(path) == []
    assert trajectories(load_golden(path)) == expected


@pytest.mark.parametrize("name,data,expected", FORMATS, ids=IDS)
def test_convert_keeps_absent_absent_and_empty_empty(tmp_path, name, data, expected):
    out = tmp_path / "out.evalset.json"
    convert(write(tmp_path, name, data), out)
    written = json.loads(out.read_text())
    turns = [inv for case in written["eval_cases"] for inv in case["conversation"]]
    flat = [t for per_case in expected.values() for t in per_case]
    assert ["expected_tool_trajectory" in inv for inv in turns] == [t is not None for t in flat]  # never null
    assert trajectories(load_golden(out)) == expected
    assert trajectories(EvalSet.load(out)) == expected


def test_trajectory_golden_tool_selection_without_tool_use_is_checked_alone(tmp_path):
    turn = load_golden(write(tmp_path, "t.trajectory.json", TRAJECTORY)).eval_cases[0].conversation[0]
    assert (turn.expected_tool_trajectory, turn.expected_tool_selection, turn.expected_sql) == (
        None,
        "call_db_agent",
        True,
    )
    given = load_golden(write(tmp_path, "t.trajectory.json", TRAJECTORY)).eval_cases[2].conversation[0]
    assert given.expected_tool_selection == "call_db_agent"  # the first expected tool, as before
    empty = load_golden(write(tmp_path, "t.trajectory.json", TRAJECTORY)).eval_cases[1].conversation[0]
    assert empty.expected_tool_selection is None


def test_trajectory_golden_no_tool_contradicting_a_tool_selection_is_a_problem(tmp_path):
    path = write(
        tmp_path,
        "t.trajectory.json",
        [{"query": "q", "expected_tool_use": [], "expected_trajectory": ["tool_selection: call_db_agent"]}],
    )
    assert [(p.location, p.reason) for p in validate_golden(path)] == [
        (
            "$[0].expected_trajectory",
            "'tool_selection: call_db_agent' contradicts 'expected_tool_use: []' (the agent must call no tool)",
        )
    ]


def test_saving_an_evalset_writes_no_null_trajectory(tmp_path):
    eval_set = load_golden(write(tmp_path, "s.evalset.json", EVALSET))
    out = tmp_path / "saved.evalset.json"
    eval_set.save(out)
    text = out.read_text()
    assert '"expected_tool_trajectory": null' not in text
    assert text.count('"expected_tool_trajectory"') == 3  # t1, t2 and case "none"; t3/t4 stay absent
    assert EvalSet.load(out) == eval_set


# --- real ADK files, written by google-adk's own models ---------------------------------------------


@pytest.fixture(scope="module")
def adk_written(reference_oracle):
    return reference_oracle.ask({"op": "adk_sample_eval_set"})


@pytest.mark.parametrize("dump", ["plain", "manager", "camel"])
def test_an_eval_set_written_by_google_adk_loads_without_problems(tmp_path, adk_written, dump):
    path = write(tmp_path, "weather.evalset.json", adk_written[dump])
    found = validate_golden(path, warnings=True)
    # Only the simulated-user case warns: otel-eval has no expectation to check for it.
    assert [(p.severity, p.location) for p in found] == [("warning", "$.eval_cases[1]")]
    eval_set = load_golden(path)
    assert trajectories(eval_set) == {"weather": [["get_weather"], [], None, ["get_weather"]], "simulated": [None]}
    paris, _, _, rome = eval_set.eval_cases[0].conversation
    assert paris.expected_tool_trajectory == [
        ExpectedToolCall(name="get_weather", args={"city": "Paris"}, call_id="fc-1", result={"temp": 21})
    ]
    assert rome.expected_tool_trajectory == [
        ExpectedToolCall(name="get_weather", args={"city": "Rome"}, call_id="fc-2", result={"temp": 25})
    ]
    assert paris.expected_final_response.get_text() == "It is 21 degrees in Paris."
    assert eval_set.eval_cases[0].session_input.initial_state == {"units": "C"}


def test_every_key_of_google_adks_models_is_known(reference_oracle):
    """The known keys are google-adk's own: every field and alias of each model an eval set holds."""
    adk_keys = reference_oracle.ask({"op": "adk_model_keys"})
    assert set(adk_keys) == set(MODEL_KEYS)
    unknown = {
        model: [key for key in keys if not MODEL_KEYS[model].spec_of(key)[0]] for model, keys in adk_keys.items()
    }
    assert {model: keys for model, keys in unknown.items() if keys} == {}


def test_evalset_load_is_strict_too(tmp_path):
    data = json.loads(json.dumps(EVALSET))
    data["eval_cases"][0]["conversation"][1]["expected_tool_trajectroy"] = data["eval_cases"][0]["conversation"][1].pop(
        "expected_tool_trajectory"
    )
    path = write(tmp_path, "s.evalset.json", data)
    with pytest.raises(InputError) as err:
        EvalSet.load(path)
    assert (err.value.source, err.value.location, err.value.reason) == (
        str(path),
        "$.eval_cases[0].conversation[1].expected_tool_trajectroy",
        "unknown key 'expected_tool_trajectroy' (did you mean 'expected_tool_trajectory'?)",
    )


def test_evalset_load_lists_every_invalid_value_not_just_the_first(tmp_path):
    # Two bad values in different cases, and a misspelled key: the error carries all three,
    # each at its JSON path, so one fix-and-retry round is enough.
    from otel_eval.models.problems import GoldenFileError

    data = json.loads(json.dumps(EVALSET))
    data["eval_cases"][0]["conversation"][0]["invocation_id"] = 7
    data["eval_cases"][-1]["eval_id"] = ["not", "a", "string"]
    data["eval_cases"][-1]["sesion_input"] = None
    path = write(tmp_path, "s.evalset.json", data)
    with pytest.raises(GoldenFileError) as err:
        EvalSet.load(path)
    last = len(data["eval_cases"]) - 1
    assert [(p.source, p.location) for p in err.value.problems] == [
        (str(path), f"$.eval_cases[{last}].sesion_input"),
        (str(path), "$.eval_cases[0].conversation[0].invocation_id"),
        (str(path), f"$.eval_cases[{last}].eval_id"),
    ]
    assert "2 more problems" in err.value.reason
