"""Golden files are strict (issue 10.8): an unknown key anywhere is a problem that `golden validate`
lists with file, JSON path and the closest known key, and that stops `evaluate`, `rescore` and
`collect` before they start. A case with nothing to check is a warning."""

import json
import subprocess
import sys

import pytest

from otel_eval.golden import load_golden, validate_golden
from otel_eval.models.problems import GoldenFileError
from otel_eval.store import Store
from tests.paths import FIXTURES, REPO


def otel_eval(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    )


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def user(text):
    return {"role": "user", "content": text}


# --- one document per format, each with misspellings at several depths ----------------------------

EVALSET = {
    "eval_set_id": "weather",
    "descripton": "typo at the top",
    "metadata": {"anything": "free-form, not checked"},
    "eval_cases": [
        {
            "eval_id": "paris",
            "tagz": ["typo in a case"],
            "session_input": {"initial_stat": {}, "config": {"free": "form"}},
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": {"role": "user", "contnet": "Weather in Paris?", "content": "x"},
                    "expected_tool_trajectroy": [{"name": "get_weather", "args": {"city": "Paris"}}],
                    "expected_final_response": {"role": "assistant", "content": "Sunny."},
                },
                {
                    "invocation_id": "t2",
                    "user_content": user("And Rome?"),
                    "expected_tool_trajectory": [
                        {"name": "get_weather", "argz": {"city": "Rome"}, "args": {"any key": "is fine in args"}}
                    ],
                },
            ],
        }
    ],
}
EVALSET_PROBLEMS = [
    ("$.descripton", "description"),
    ("$.eval_cases[0].tagz", "tags"),
    ("$.eval_cases[0].session_input.initial_stat", "initial_state"),
    ("$.eval_cases[0].conversation[0].user_content.contnet", "content"),
    ("$.eval_cases[0].conversation[0].expected_tool_trajectroy", "expected_tool_trajectory"),
    ("$.eval_cases[0].conversation[1].expected_tool_trajectory[0].argz", "args"),
]


def adk_content(text, role="user"):
    return {"parts": [{"text": text}], "role": role}


ADK_EVALSET = {
    "eval_set_id": "flights",
    "creation_timestamp": 0.0,
    "eval_cases": [
        {
            "eval_id": "book",
            "creation_timestamp": 1.0,
            "final_session_state": {"free": "form"},
            "sessionInput": {"appName": "app", "userId": "u", "state": {"free": "form"}, "sesion_id": "typo"},
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": {"parts": [{"txt": "Book a flight"}, {"text": "to London"}], "role": "user"},
                    "final_response": adk_content("Booked.", "model"),
                    "intermediate_data": {
                        "tool_uses": [{"id": "1", "name": "book", "arg": {"to": "London"}}],
                        "tool_responses": [{"id": "1", "name": "book", "response": {"any": "thing"}}],
                    },
                },
                {
                    "invocationId": "t2",
                    "userContent": adk_content("Thanks"),
                    "intermediateData": {"toolUse": []},
                },
                {
                    "invocation_id": "t3",
                    "user_content": adk_content("Bye"),
                    "intermediate_dta": {"tool_uses": []},
                },
            ],
        }
    ],
}
ADK_EVALSET_PROBLEMS = [
    ("$.eval_cases[0].sessionInput.sesion_id", "session_id"),
    ("$.eval_cases[0].conversation[0].user_content.parts[0].txt", "text"),
    ("$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].arg", "args"),
    ("$.eval_cases[0].conversation[1].intermediateData.toolUse", "toolUses"),  # camelCase gets a camelCase hint
    ("$.eval_cases[0].conversation[2].intermediate_dta", "intermediate_data"),
]

ADK_TEST_FILE = [
    {"query": "What can you do?", "expected_tool_uses": [], "reference": "I roll dice."},
    {
        "query": "Roll a die",
        "expected_tool_use": [{"tool_name": "roll_die", "tool_inpt": {"sides": 6}}],
        "expected_intermediate_agent_responses": [{"author": "roller", "txt": "rolling"}],
        "reference": "4",
    },
]
ADK_TEST_FILE_PROBLEMS = [
    ("$[0].expected_tool_uses", "expected_tool_use"),
    ("$[1].expected_tool_use[0].tool_inpt", "tool_input"),
    ("$[1].expected_intermediate_agent_responses[0].txt", "text"),
]

ADK_OLD_EVAL_SET = [
    {
        "name": "dice",
        "data": [{"query": "Roll", "expected_tool_use": [], "refrence": "4"}],
        "initial_sesion": {"state": {}},
    },
    {
        "name": "dice2",
        "data": [{"query": "Roll twice", "expected_tool_use": []}],
        "initial_session": {"state": {"free": "form"}, "app_nam": "a"},
    },
]
ADK_OLD_EVAL_SET_PROBLEMS = [
    ("$[0].data[0].refrence", "reference"),
    ("$[0].initial_sesion", "initial_session"),
    ("$[1].initial_session.app_nam", "app_name"),
]

TRAJECTORY = {
    "name": "db",
    "descripton": "typo in the container",
    "test_cases": [
        {
            "id": "a",
            "query": "Top users",
            "expected_tool_usage": [{"tool_name": "call_db_agent"}],
            "expected_trajectory": ["sql_generation: yes"],
            "metadata": {"free": "form"},
        },
        {
            "id": "b",
            "query": "Regions",
            "expected_tool_use": [{"tool_nme": "call_db_agent", "tool_name": "x", "tool_input": {"any": "key"}}],
            "expected_tabel": "regions",
        },
    ],
}
TRAJECTORY_PROBLEMS = [
    ("$.descripton", "description"),
    ("$.test_cases[0].expected_tool_usage", "expected_tool_use"),
    ("$.test_cases[1].expected_tool_use[0].tool_nme", "tool_name"),
    ("$.test_cases[1].expected_tabel", "expected_table"),
]

BIGSKY = {
    "name": "weather",
    "evaluator": [],
    "data": [
        {
            "id": "1",
            "descriptoin": "typo",
            "inputs": {
                "context": {"free": "form"},
                "messages": [{"role": "user", "contnet": "x", "content": "Weather?"}],
            },
            "outputs": {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "type": "function",
                            "functon": {},
                            "function": {"name": "getWeather", "argumnts": {}, "arguments": {}},
                        }
                    ],
                }
            },
        },
        {
            "id": "2",
            "inputs": {"messages": [user("Hi")]},
            "outputs": {"mesage": {"role": "assistant", "content": "Hello"}},
        },
    ],
    "evaluators": [
        {"key": "k", "fuction": "chat:matchToolCall", "function": "chat:matchToolCall", "arguments": {"free": "form"}}
    ],
}
BIGSKY_PROBLEMS = [
    ("$.evaluator", "evaluators"),
    ("$.data[0].descriptoin", "description"),
    ("$.data[0].inputs.messages[0].contnet", "content"),
    ("$.data[0].outputs.message.tool_calls[0].functon", "function"),
    ("$.data[0].outputs.message.tool_calls[0].function.argumnts", "arguments"),
    ("$.data[1].outputs.mesage", "message"),
    ("$.evaluators[0].fuction", "function"),
]

CASES = [
    ("weather.evalset.json", EVALSET, EVALSET_PROBLEMS),
    ("flights.evalset.json", ADK_EVALSET, ADK_EVALSET_PROBLEMS),
    ("dice.test.json", ADK_TEST_FILE, ADK_TEST_FILE_PROBLEMS),
    ("old.json", ADK_OLD_EVAL_SET, ADK_OLD_EVAL_SET_PROBLEMS),
    ("db.trajectory.json", TRAJECTORY, TRAJECTORY_PROBLEMS),
    ("weather.bigsky.json", BIGSKY, BIGSKY_PROBLEMS),
]


@pytest.mark.parametrize(
    "name,data,expected", CASES, ids=["evalset", "adk", "adk-test-file", "adk-old-eval-set", "trajectory", "bigsky"]
)
def test_validate_names_every_unknown_key_with_path_and_closest_key(tmp_path, name, data, expected):
    path = write(tmp_path, name, data)
    unknown = [(p.source, p.location, p.reason) for p in validate_golden(path) if "unknown key" in p.reason]
    assert unknown == [
        (str(path), location, f"unknown key '{location.rsplit('.', 1)[1]}' (did you mean '{guess}'?)")
        for location, guess in expected
    ]
    with pytest.raises(GoldenFileError) as err:
        load_golden(path)
    assert len(err.value.problems) >= len(expected)


def test_the_cli_lists_file_path_and_closest_key_and_exits_1(tmp_path):
    path = write(tmp_path, "weather.evalset.json", EVALSET)
    run = otel_eval("golden", "validate", path)
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert (
        f"{path}: at $.eval_cases[0].conversation[0].expected_tool_trajectroy: unknown key "
        "'expected_tool_trajectroy' (did you mean 'expected_tool_trajectory'?)"
    ) in lines
    assert lines[-1] == f"{len(EVALSET_PROBLEMS)} problem(s) in 1 file(s)"
    as_json = json.loads(otel_eval("golden", "validate", "--json", path).stdout)
    assert {
        "source": str(path),
        "location": "$.eval_cases[0].tagz",
        "severity": "error",
        "reason": "unknown key 'tagz' (did you mean 'tags'?)",
    } in as_json


def test_a_key_like_no_known_one_lists_the_known_keys(tmp_path):
    path = write(tmp_path, "t.trajectory.json", [{"query": "q", "expected_tool_use": [], "zzz": 1}])
    [problem] = validate_golden(path)
    assert problem.location == "$[0].zzz"
    assert problem.reason.startswith("unknown key 'zzz'; known keys here: 'eval_id', 'expected_response',")


def test_free_form_objects_are_not_checked(tmp_path):
    data = {
        "eval_set_id": "s",
        "metadata": {"x": {"y": 1}},
        "eval_cases": [
            {
                "eval_id": "c",
                "metadata": {"owner": "qa"},
                "session_input": {"config": {"a": 1}, "initial_state": {"b": 2}},
                "conversation": [
                    {
                        "invocation_id": "t",
                        "user_content": {"role": "user", "content": "q", "metadata": {"m": 1}},
                        "expected_tool_trajectory": [
                            {"name": "t", "args": {"deep": {"anything": 1}}, "result": {"any": "thing"}}
                        ],
                        "metadata": {"free": True},
                    }
                ],
            }
        ],
    }
    assert validate_golden(write(tmp_path, "s.evalset.json", data), warnings=True) == []


# --- refusing to start ------------------------------------------------------------------------------

MISSPELLED = {
    "eval_set_id": "weather",
    "eval_cases": [
        {
            "eval_id": "tokyo",
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": user("What's the weather in Tokyo?"),
                    "expected_tool_trajectroy": [{"name": "get_weather", "args": {"city": "Tokyo"}}],
                    "expected_final_responce": {"role": "assistant", "content": "Sunny in Tokyo."},
                }
            ],
        }
    ],
}
MISSPELLED_LINES = [
    "at $.eval_cases[0].conversation[0].expected_tool_trajectroy: unknown key 'expected_tool_trajectroy' "
    "(did you mean 'expected_tool_trajectory'?)",
    "at $.eval_cases[0].conversation[0].expected_final_responce: unknown key 'expected_final_responce' "
    "(did you mean 'expected_final_response'?)",
]


def test_evaluate_refuses_a_golden_file_with_an_unknown_key_one_line_per_problem(tmp_path):
    bad = write(tmp_path, "bad.evalset.json", MISSPELLED)
    db = tmp_path / "e.db"
    run = otel_eval(
        "evaluate", FIXTURES / "realclients" / "langgraph_openinference.otlp.json", "--golden", bad, "--db", db
    )
    assert run.returncode == 2
    assert run.stderr.splitlines() == [f"otel-eval: error: {bad}: {line}" for line in MISSPELLED_LINES]
    assert not db.exists()  # refused before any work


def test_evaluate_lists_the_problems_of_every_bad_golden_file(tmp_path):
    bad = write(tmp_path, "bad.evalset.json", MISSPELLED)
    other = write(tmp_path, "other.trajectory.json", [{"query": "q", "expected_tool_usage": []}])
    good = REPO / "examples" / "golden" / "weather.trajectory.json"
    run = otel_eval(
        "evaluate",
        FIXTURES / "noveum" / "dataset.json",
        "--golden",
        bad,
        "--golden",
        good,
        "--golden",
        other,
        "--db",
        tmp_path / "e.db",
    )
    assert run.returncode == 2
    assert run.stderr.splitlines() == [f"otel-eval: error: {bad}: {line}" for line in MISSPELLED_LINES] + [
        f"otel-eval: error: {other}: at $[0].expected_tool_usage: unknown key 'expected_tool_usage' "
        "(did you mean 'expected_tool_use'?)"
    ]


def test_rescore_refuses_before_touching_the_database(tmp_path):
    db = tmp_path / "e.db"
    Store(db).close()
    bad = write(tmp_path, "bad.evalset.json", MISSPELLED)
    run = otel_eval("rescore", "--db", db, "--golden", bad)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [f"otel-eval: error: {bad}: {line}" for line in MISSPELLED_LINES]
    store = Store(db)
    try:
        assert store.stored_eval_sets() == []
    finally:
        store.close()


@pytest.mark.parametrize(
    "command",
    [["-m", "otel_eval.cli", "collect"], ["-m", "collector"]],
    ids=["otel-eval collect", "python -m collector"],
)
def test_collect_refuses_to_start_one_line_per_problem(tmp_path, command):
    bad = write(tmp_path, "bad.evalset.json", MISSPELLED)
    db = tmp_path / "c.db"
    run = subprocess.run(
        [
            sys.executable,
            *command,
            "--golden",
            str(bad),
            "--db",
            str(db),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    mentions = [line for line in run.stderr.splitlines() if str(bad) in line]
    assert len(mentions) == len(MISSPELLED_LINES)
    for line, expected in zip(mentions, MISSPELLED_LINES):
        assert line.endswith(f"{bad} {expected}")  # the collector writes "FILE at PATH: reason"
    assert not db.exists()  # nothing bound, nothing written


# --- warnings -------------------------------------------------------------------------------------


def test_a_case_with_nothing_to_check_is_a_warning_not_an_error(tmp_path):
    path = write(
        tmp_path,
        "w.evalset.json",
        {
            "eval_set_id": "w",
            "eval_cases": [
                {"eval_id": "vague", "conversation": [{"invocation_id": "t", "user_content": user("Hello")}]},
                {
                    "eval_id": "no_tools",
                    "conversation": [
                        {"invocation_id": "t", "user_content": user("Hi"), "expected_tool_trajectory": []}
                    ],
                },
            ],
        },
    )
    assert validate_golden(path) == []  # loads: a warning does not stop anything
    run = otel_eval("golden", "validate", path)
    assert run.returncode == 0
    assert run.stdout.splitlines() == [
        f"{path}: at $.eval_cases[0]: warning: case 'vague' has nothing to check: no turn gives an expected tool "
        "trajectory, response, tool selection, SQL expectation or table, so every criterion that compares a session "
        "with it is skipped (an explicitly empty tool list means 'must call no tool')",
        "0 problem(s) in 1 file(s), 1 warning(s)",
    ]


@pytest.mark.parametrize(
    "name,data,location",
    [
        ("t.trajectory.json", [{"query": "a", "expected_tool_use": []}, {"id": "b", "query": "b"}], "$[1]"),
        ("d.test.json", [{"query": "a"}, {"query": "b"}], "$"),
        (
            "b.bigsky.json",
            {
                "data": [
                    {
                        "id": "1",
                        "inputs": {"messages": [user("a")]},
                        "outputs": {"message": {"role": "assistant", "content": "x"}},
                    },
                    {"id": "2", "inputs": {"messages": [user("b")]}, "outputs": {"message": {"role": "assistant"}}},
                ]
            },
            "$.data[1]",
        ),
        (
            "a.evalset.json",
            {
                "eval_set_id": "a",
                "eval_cases": [
                    {"eval_id": "c", "conversation": [{"user_content": adk_content("a"), "intermediate_data": {}}]},
                    {"eval_id": "d", "conversation": [{"user_content": adk_content("b")}]},
                ],
            },
            "$.eval_cases[1]",
        ),
    ],
    ids=["trajectory", "adk-test-file", "bigsky", "adk"],
)
def test_the_warning_points_at_the_case_in_every_format(tmp_path, name, data, location):
    warnings = [p for p in validate_golden(write(tmp_path, name, data), warnings=True)]
    assert [(p.severity, p.location) for p in warnings] == [("warning", location)]


def test_errors_and_warnings_together_exit_1(tmp_path):
    path = write(tmp_path, "t.trajectory.json", [{"query": "a", "refrence": "x"}])
    run = otel_eval("golden", "validate", path)
    assert run.returncode == 1
    assert run.stdout.splitlines()[-1] == "1 problem(s) in 1 file(s), 1 warning(s)"


def test_the_example_golden_sets_load_cleanly():
    files = sorted([*(REPO / "examples" / "golden").iterdir(), *(REPO / "tests" / "data" / "golden").iterdir()])
    assert len(files) >= 7
    run = otel_eval("golden", "validate", *files)
    assert run.returncode == 0, run.stdout
    assert f"0 problem(s) in {len(files)} file(s)" in run.stdout
    for path in files:
        load_golden(path)


def test_a_misspelled_format_key_is_named_when_no_format_fits(tmp_path):
    path = write(tmp_path, "cases.json", {"eval_set_id": "s", "eval_case": [{"eval_id": "c"}]})
    [problem] = validate_golden(path)
    assert problem.location == "$"
    assert problem.reason.startswith("unrecognised golden format")
    assert problem.reason.endswith("found keys eval_case, eval_set_id; 'eval_case' (did you mean 'eval_cases'?)")


@pytest.mark.parametrize(
    "entries, expected",
    [
        # The only entry misspells 'data': still an old ADK eval set, not trajectory-golden items.
        (
            [{"name": "weather", "dataa": [{"query": "q", "expected_tool_use": []}]}],
            [("$[0].dataa", "unknown key 'dataa' (did you mean 'data'?)")],
        ),
        # One entry of two misspells it: the right 'data' of the other is never called unknown.
        (
            [
                {"name": "a", "data": [{"query": "q", "expected_tool_use": []}]},
                {"name": "b", "dat": [{"query": "r", "expected_tool_use": []}]},
            ],
            [("$[1].dat", "unknown key 'dat' (did you mean 'data'?)")],
        ),
    ],
)
def test_a_misspelled_data_key_of_an_old_adk_eval_set_is_named(tmp_path, entries, expected):
    path = write(tmp_path, "old.json", entries)
    unknown = [(p.location, p.reason) for p in validate_golden(path) if "unknown key" in p.reason]
    assert unknown == expected


def test_a_golden_set_built_in_python_refuses_a_misspelled_expectation(tmp_path):
    """In Python as in a file: a misspelled keyword is an error, never a check quietly left out
    (the case below would otherwise pass on its response alone, its tools never compared)."""
    from pydantic import ValidationError

    from otel_eval.models.evalset import EvalCase, EvalConfig, EvalSet, ExpectedToolCall, Invocation, MessageContent

    with pytest.raises(ValidationError) as err:
        Invocation(
            invocation_id="i",
            user_content=MessageContent.user("What's the weather in Tokyo?"),
            expected_final_response=MessageContent.assistant("Sunny in Tokyo."),
            expected_tool_trajectroy=[ExpectedToolCall(name="get_weather", args={"city": "Tokyo"})],
        )
    assert "expected_tool_trajectroy" in str(err.value)
    for model, keywords in (
        (EvalSet, {"eval_set_id": "s", "eval_case": []}),
        (EvalCase, {"eval_id": "c", "conversations": []}),
        (ExpectedToolCall, {"name": "get_weather", "arguments": {"city": "Tokyo"}}),
        (EvalConfig, {"criterias": {}}),
    ):
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            model(**keywords)
