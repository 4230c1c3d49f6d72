"""A criteria config is strict, like a golden file: a misspelled criterion name, setting or option
never passes silently (issue 10: "a misspelled criterion name or option must not silently pass").

Before, ``threshhold = 1.0`` or ``match_tpye = "IN_ORDER"`` in a ``[criteria.NAME]`` table, or
``options = {args_mod = "subset"}``, were dropped without a word and the defaults judged the
session. Now ``evaluate`` / ``rescore`` refuse to start (exit 2, one line per problem naming the
file, the TOML path and the closest known key), the collector's config loader refuses unknown
criterion settings, and a config built in Python with an unknown option gives that criterion an
error (the session fails) instead of ignoring it.
"""

from __future__ import annotations

import pytest

from otel_eval.criteria_file import eval_config_from_dict, load_eval_config
from otel_eval.errors import InputError
from otel_eval.models.evalset import CriterionConfig, EvalConfig
from otel_eval.scoring import score_session
from tests.paths import FIXTURES
from tests.test_cli import GOLDEN, otel_eval
from tests.test_trajectory_verdicts import captured, case_of

CAPTURE = FIXTURES / "realclients" / "openai_otel_genai.otlp.json"


def evaluate_with(tmp_path, toml: str):
    config = tmp_path / "criteria.toml"
    config.write_text(toml)
    db = tmp_path / "e.db"
    run = otel_eval(
        "evaluate", CAPTURE, "--db", db, "--config", config, *[arg for g in GOLDEN for arg in ("--golden", g)]
    )
    return run, config, db


@pytest.mark.parametrize(
    "toml, where, reason",
    [
        (
            "[criteria.trajectory_match]\nthreshhold = 1.0\n",
            "$.criteria.trajectory_match.threshhold",
            "unknown setting 'threshhold' (did you mean 'threshold'?)",
        ),
        (
            '[criteria.trajectory_match]\nmatch_tpye = "IN_ORDER"\n',
            "$.criteria.trajectory_match.match_tpye",
            "unknown setting 'match_tpye' (did you mean 'match_type'?)",
        ),
        (
            '[criteria.trajectory_match]\noptions = {args_mod = "subset"}\n',
            "$.criteria.trajectory_match.options.args_mod",
            "unknown option 'args_mod' for trajectory_match (did you mean 'args_mode'?)",
        ),
        (
            "[criteria.response_match]\noptions = {use_stemer = true}\n",
            "$.criteria.response_match.options.use_stemer",
            "unknown option 'use_stemer' for response_match (did you mean 'use_stemmer'?)",
        ),
        (
            "[criteria.trajectry_match]\nthreshold = 1.0\n",
            "$.criteria.trajectry_match",
            "unknown criterion 'trajectry_match' (did you mean 'trajectory_match'?)",
        ),
        (
            "[criterias.trajectory_match]\nthreshold = 1.0\n",
            "$.criterias",
            "unknown key 'criterias' (did you mean 'criteria'?)",
        ),
        (
            '[criteria.llm_judge]\noptions = {base_ur = "http://127.0.0.1:1/v1"}\n',
            "$.criteria.llm_judge.options.base_ur",
            "unknown option 'base_ur' for llm_judge (did you mean 'base_url'?)",
        ),
        ("[criteria.trajectory_match]\nthreshold = 80\n", "$.criteria.trajectory_match.threshold", "between 0 and 1"),
    ],
)
def test_evaluate_refuses_a_misspelled_config_with_one_line_naming_file_path_and_closest_key(
    tmp_path, toml, where, reason
):
    run, config, db = evaluate_with(tmp_path, toml)
    assert run.returncode == 2, run.stdout
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr
    assert f"{config}: at {where}: " in lines[0] and reason in lines[0]
    assert not db.exists()  # refused before any work


def test_every_problem_of_a_config_gets_its_own_line(tmp_path):
    run, config, _ = evaluate_with(
        tmp_path,
        '[criteria.trajectory_match]\nthreshhold = 1.0\n'
        'options = {colapse_retries = false}\n\n'
        '[criteria.respons_match]\nthreshold = 0.5\n',
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert [line.split(": at ")[1].split(":")[0] for line in lines] == [
        "$.criteria.trajectory_match.threshhold",
        "$.criteria.trajectory_match.options.colapse_retries",
        "$.criteria.respons_match",
    ]


def test_rescore_refuses_a_misspelled_config(tmp_path):
    run, _, db = evaluate_with(tmp_path, "[criteria.trajectory_match]\nthreshold = 0.8\n")
    assert run.returncode == 0, run.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[criteria.trajectory_match]\noptions = {max_dept = 1}\n')
    again = otel_eval("rescore", "--db", db, "--config", bad)
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        f"otel-eval: error: {bad}: at $.criteria.trajectory_match.options.max_dept: unknown option 'max_dept' "
        "for trajectory_match (did you mean 'max_depth'?)"
    ]


def test_the_collector_config_refuses_an_unknown_criterion_setting(tmp_path):
    from collector.config import load_config

    config = tmp_path / "collector.toml"
    config.write_text('db = "e.db"\n\n[criteria.trajectory_match]\nmatch_tpye = "IN_ORDER"\n')
    with pytest.raises(InputError) as err:
        load_config(["--config", str(config)], environ={})
    assert "match_tpye" in str(err.value) and "did you mean 'match_type'" in str(err.value)


def test_documented_settings_and_options_all_load(tmp_path):
    config = tmp_path / "all.toml"
    config.write_text('''
[criteria.trajectory_match]
threshold = 0.8
match_type = "IN_ORDER"
check_args = true
[criteria.trajectory_match.options]
args_mode = "subset"
fold_case = true
fold_whitespace = true
keys = ["city"]
max_depth = "auto"
collapse_retries = false
first_call_only = false
comparators = {city = "text"}
tools = {get_weather = {mode = "exact"}}
[criteria.tool_trajectory_avg_score]
threshold = 1.0
options = {max_depth = 0}
[criteria.trajectory_recall]
threshold = 0.75
[criteria.booked]
kind = "single_tool_use"
options = {tool_name = "book"}
[criteria.response_match]
options = {method = "rouge1", use_stemmer = true}
[criteria.response_exact]
options = {kind = "response_match", method = "exact", fold_case = true}
[criteria.answer_regex]
options = {kind = "response_match", method = "regex", pattern = "Tokyo", ignore_case = true}
[criteria.response_match_score]
threshold = 0.8
[criteria.llm_judge]
judge_model = "m"
rubrics = [{name = "helpful", description = "answers the question", weight = 2.0}]
[criteria.llm_judge.options]
base_url = "http://127.0.0.1:1/v1"
model = "m"
api_key_env = "K"
timeout = 5
max_retries = 1
backoff = 0.1
json_mode = true
[criteria.no_apology]
kind = "layer1"
options = {regex = "sorry", expect = false, ignore_case = true, field = "response"}
[criteria.health]
options = {max_tool_errors = 0, require_final_answer = true}
''')
    criteria = load_eval_config(config).criteria
    assert criteria["trajectory_match"].options["args_mode"] == "subset"
    assert criteria["booked"].options == {"kind": "single_tool_use", "tool_name": "book"}


def test_a_misspelled_rubric_field_is_refused():
    with pytest.raises(InputError) as err:
        eval_config_from_dict(
            {"criteria": {"llm_judge": {"rubrics": [{"name": "r", "description": "d", "wieght": 2}]}}}, "c.toml"
        )
    assert "wieght" in str(err.value) and "did you mean 'weight'" in str(err.value)


def test_an_unknown_option_in_a_python_config_is_the_criterions_error_never_ignored():
    trajectory = captured("openai_otel_genai", "s1-weather")  # get_weather(Tokyo)
    case = case_of([("get_weather", {"city": "TOKYO"})])
    config = EvalConfig(criteria={"trajectory_match": CriterionConfig(options={"fold_cse": True})})
    result = score_session(trajectory, case, config)
    tm = next(c for c in result.criterion_results if c.criterion == "trajectory_match")
    assert tm.error == "options.fold_cse: unknown option 'fold_cse' for trajectory_match (did you mean 'fold_case'?)"
    assert result.verdict == "failed"
