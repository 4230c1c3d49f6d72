"""google-adk's test_config.json wherever a config goes (issue 31, items 2 and 3).

The parsing is differential: every file of the corpus below is read by google-adk itself (in
``.venv-reference``, see tests/reference/adk_config_oracle.py) and by otel-eval; the two must
accept and refuse the same files and read the same metrics, thresholds, match types and judge
options. The few files otel-eval refuses although google-adk takes them are marked, each with
the reason a user gets (docs/adk.md, "Stricter than adk eval").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from collector.config import load_config as load_collector_config
from otel_eval.adk_config.models import GenerateContentConfig
from otel_eval.adk_config.reading import read_test_config
from otel_eval.adk_config.resolve import resolve_config
from otel_eval.errors import InputError
from otel_eval.models.evalset import CriterionConfig, EvalCase, EvalConfig, Invocation, MessageContent
from otel_eval.models.results import NOT_EVALUATED, PASSED
from otel_eval.scoring import score_session
from otel_eval.trajectory import ActualToolCall, Trajectory, Turn
from tests.paths import FIXTURES, REPO
from tests.reference.client import reference_python

ORACLE = REPO / "tests" / "reference" / "adk_config_oracle.py"
CAPTURE = FIXTURES / "realclients" / "langgraph_openinference.otlp.json"
WEATHER = REPO / "examples" / "golden" / "weather.evalset.json"
INFORMATIONAL = ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]


def _rubric(rid: str, text: str, **more) -> dict:
    return {"rubric_id": rid, "rubric_content": {"text_property": text}, **more}


# (id, the file's content, None when both must agree, else the reason otel-eval refuses it with)
CORPUS = [
    ("adk-default", {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}, None),
    ("empty", {}, None),
    ("empty-criteria", {"criteria": {}}, None),
    ("threshold-as-text", {"criteria": {"tool_trajectory_avg_score": "0.5"}}, None),
    ("threshold-as-bool", {"criteria": {"response_match_score": True}}, None),
    ("threshold-int", {"criteria": {"response_match_score": 1}}, None),
    ("threshold-null", {"criteria": {"tool_trajectory_avg_score": None}}, None),
    ("threshold-word", {"criteria": {"tool_trajectory_avg_score": "high"}}, None),
    ("object-no-threshold", {"criteria": {"tool_trajectory_avg_score": {"match_type": "EXACT"}}}, None),
    (
        "match-type-camel",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "matchType": "in-order", "ignoreArgs": True}}},
        None,
    ),
    (
        "match-type-snake",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "ANY_ORDER", "ignore_args": False}}},
        None,
    ),
    (
        "match-type-spaces",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": " any order "}}},
        None,
    ),
    ("match-type-number", {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": 1}}}, None),
    (
        "match-type-unknown",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOMETIMES"}}},
        None,
    ),
    ("match-type-out-of-range", {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": 7}}}, None),
    ("ignore-args-word", {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": "maybe"}}}, None),
    ("ignore-args-yes", {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": "yes"}}}, None),
    (
        "extra-key-ignored",
        {"criteria": {"response_match_score": {"threshold": 0.7, "note": "from the team wiki"}}},
        None,
    ),
    ("judge-number", {"criteria": {"final_response_match_v2": 0.5}}, None),
    (
        "judge-options-camel",
        {
            "criteria": {
                "final_response_match_v2": {
                    "threshold": 0.5,
                    "judgeModelOptions": {"judgeModel": "gemini-2.5-pro", "numSamples": 3},
                }
            }
        },
        None,
    ),
    (
        "judge-options-snake",
        {
            "criteria": {
                "final_response_match_v2": {
                    "threshold": 0.5,
                    "judge_model_options": {"judge_model": "gemini-2.5-pro", "num_samples": 2, "parallelism_limit": 4},
                }
            }
        },
        None,
    ),
    (
        "judge-config",
        {
            "criteria": {
                "hallucinations_v1": {
                    "threshold": 0.8,
                    "judge_model_options": {
                        "judge_model_config": {
                            "temperature": 0.2,
                            "maxOutputTokens": 100,
                            "stop_sequences": ["END"],
                            "seed": 7,
                        }
                    },
                }
            }
        },
        None,
    ),
    (
        "judge-config-misspelled",
        {
            "criteria": {
                "hallucinations_v1": {
                    "threshold": 0.8,
                    "judge_model_options": {"judge_model_config": {"temprature": 0.2}},
                }
            }
        },
        None,
    ),
    (
        "judge-config-bad-type",
        {
            "criteria": {
                "hallucinations_v1": {
                    "threshold": 0.8,
                    "judge_model_options": {"judge_model_config": {"max_output_tokens": "lots"}},
                }
            }
        },
        None,
    ),
    (
        "num-samples-zero",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 0}}}},
        None,
    ),
    (
        "judge-options-unknown",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"numsamples": 2}}}},
        None,
    ),
    (
        "judge-options-not-object",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": "gemini"}}},
        None,
    ),
    (
        "include-intermediate",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "include_intermediate_responses_in_final": True}}},
        None,
    ),
    (
        "rubrics",
        {
            "criteria": {
                "rubric_based_final_response_quality_v1": {
                    "threshold": 0.8,
                    "rubrics": [
                        _rubric("r1", "The answer is polite.", type="FINAL_RESPONSE_QUALITY"),
                        {"rubricId": "r2", "rubricContent": {"textProperty": "It names the city."}, "description": "d"},
                    ],
                }
            }
        },
        None,
    ),
    (
        "rubric-tool-use",
        {
            "criteria": {
                "rubric_based_tool_use_quality_v1": {
                    "threshold": 1.0,
                    "rubrics": [_rubric("t1", "get_weather is called before answering.", type="TOOL_USE_QUALITY")],
                }
            }
        },
        None,
    ),
    (
        "rubric-multi-turn",
        {
            "criteria": {
                "rubric_based_multi_turn_trajectory_quality_v1": {
                    "threshold": 0.5,
                    "rubrics": [_rubric("m1", "Stays on topic.")],
                }
            }
        },
        None,
    ),
    ("rubrics-number", {"criteria": {"rubric_based_final_response_quality_v1": 0.8}}, None),
    (
        "rubric-missing-content",
        {"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.8, "rubrics": [{"rubric_id": "r1"}]}}},
        None,
    ),
    (
        "rubric-unknown-key",
        {
            "criteria": {
                "rubric_based_final_response_quality_v1": {"threshold": 0.8, "rubrics": [_rubric("r1", "x", weight=2)]}
            }
        },
        None,
    ),
    (
        "rubric-content-empty",
        {
            "criteria": {
                "rubric_based_final_response_quality_v1": {
                    "threshold": 0.8,
                    "rubrics": [{"rubric_id": "r1", "rubric_content": {}}],
                }
            }
        },
        None,
    ),
    (
        "rubric-description-only",
        {
            "criteria": {
                "rubric_based_final_response_quality_v1": {
                    "threshold": 0.8,
                    "rubrics": [{"rubric_id": "r1", "rubric_content": {}, "description": "Be brief."}],
                }
            }
        },
        None,
    ),
    (
        "rubric-ids-camel-and-snake",
        {
            "criteria": {
                "rubric_based_tool_use_quality_v1": {
                    "threshold": 0.8,
                    "rubrics": [{"rubricId": "a", "rubric_content": {"textProperty": "x"}, "type": "T"}],
                }
            }
        },
        None,
    ),
    (
        "hallucinations-intermediate",
        {"criteria": {"hallucinations_v1": {"threshold": 0.8, "evaluateIntermediateNlResponses": True}}},
        None,
    ),
    (
        "hallucinations-intermediate-word",
        {"criteria": {"hallucinations_v1": {"threshold": 0.8, "evaluate_intermediate_nl_responses": "yes"}}},
        None,
    ),
    (
        "hallucinations-intermediate-bad",
        {"criteria": {"hallucinations_v1": {"threshold": 0.8, "evaluate_intermediate_nl_responses": "sometimes"}}},
        None,
    ),
    (
        "vertex",
        {
            "criteria": {
                "safety_v1": 0.8,
                "response_evaluation_score": 0.5,
                "multi_turn_task_success_v1": 0.5,
                "multi_turn_trajectory_quality_v1": 0.5,
                "multi_turn_tool_use_quality_v1": 0.5,
            }
        },
        None,
    ),
    (
        "user-simulator-metric",
        {
            "criteria": {
                "per_turn_user_simulator_quality_v1": {
                    "threshold": 1,
                    "stop_signal": "DONE",
                    "judge_model_options": {"num_samples": 1},
                }
            }
        },
        None,
    ),
    (
        "custom-metric",
        {
            "criteria": {"my_metric": 0.5},
            "custom_metrics": {"my_metric": {"code_config": {"name": "agent.metrics.mine"}, "description": "mine"}},
        },
        None,
    ),
    (
        "custom-metric-info",
        {
            "criteria": {"my_metric": 0.5},
            "customMetrics": {
                "my_metric": {
                    "codeConfig": {"name": "a.b"},
                    "metricInfo": {"metricName": "x", "metricValueInfo": {"interval": {"minValue": 0, "maxValue": 1}}},
                }
            },
        },
        None,
    ),
    ("custom-metric-no-code", {"criteria": {"my_metric": 0.5}, "custom_metrics": {"my_metric": {}}}, None),
    (
        "custom-metric-code-extra",
        {"criteria": {"my_metric": 0.5}, "custom_metrics": {"my_metric": {"code_config": {"name": "a", "args": 1}}}},
        None,
    ),
    (
        "user-simulator-config",
        {
            "criteria": {"response_match_score": 0.5},
            "user_simulator_config": {"model": "gemini-2.5-flash", "max_allowed_invocations": 5},
        },
        None,
    ),
    ("user-simulator-config-bad", {"user_simulator_config": {"max_allowed_invocations": "many"}}, None),
    ("user-simulator-config-type", {"user_simulator_config": {"type": "telepathy"}}, None),
    ("live-model-config", {"criteria": {"response_match_score": 0.5}, "liveModelConfig": {"timeoutSeconds": 30}}, None),
    ("live-model-config-bad", {"live_model_config": {"timeout_seconds": 1.5}}, None),
    ("unknown-top-level", {"criteria": {"response_match_score": 0.5}, "comment": "owned by the eval team"}, None),
    ("criteria-not-object", {"criteria": [1]}, None),
    ("not-object", [1], None),
    ("criterion-list", {"criteria": {"response_match_score": [0.5]}}, None),
    # otel-eval refuses these, google-adk takes them:
    (
        "unknown-metric",
        {"criteria": {"tool_trajectry_avg_score": 1.0}},
        "unknown metric 'tool_trajectry_avg_score' (did you mean 'tool_trajectory_avg_score'?)",
    ),
    ("informational-named", {"criteria": {"tool_call_count_v1": 1.0}}, "does not support a threshold"),
    ("threshold-above-one", {"criteria": {"tool_trajectory_avg_score": 1.5}}, "threshold must be between 0 and 1"),
    (
        "threshold-negative",
        {"criteria": {"response_match_score": {"threshold": -0.1}}},
        "threshold must be between 0 and 1",
    ),
    (
        "misspelled-criteria",
        {"criterai": {"tool_trajectory_avg_score": 1.0}},
        "unknown key 'criterai' (did you mean 'criteria'?)",
    ),
    (
        "misspelled-match-type",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_typ": "IN_ORDER"}}},
        "unknown key 'match_typ' (did you mean 'match_type'?)",
    ),
]
"""Files that only otel-eval refuses (the third member set): google-adk takes them, then logs and
skips an unknown or informational metric at run time, or silently ignores a misspelled key."""


def _text(content) -> str:
    return json.dumps(content)


@pytest.fixture(scope="module")
def adk_readings():
    python = reference_python()
    if not python.exists():
        raise RuntimeError(f"reference environment missing: {python}; run `make reference`")
    run = subprocess.run(
        [str(python), str(ORACLE)],
        input=json.dumps([_text(c) for _, c, _ in CORPUS]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return dict(zip([case_id for case_id, _, _ in CORPUS], json.loads(run.stdout)))


def _ours(criteria: dict[str, CriterionConfig]) -> list[dict]:
    """otel-eval's reading in the oracle's terms (see adk_config_oracle.py)."""
    out = []
    for name, c in criteria.items():
        if name in INFORMATIONAL:
            out.append({"name": name, "informational": True})
            continue
        entry = {"name": name, "informational": False, "threshold": c.threshold}
        if c.options.get("kind") == "adk_custom_metric":
            entry["custom"] = c.options["function"]
            out.append(entry)
            continue
        entry["include_intermediate_responses_in_final"] = bool(
            c.options.get("include_intermediate_responses_in_final", False)
        )
        if name == "tool_trajectory_avg_score":
            entry.update(match_type=c.match_type.value, ignore_args=not c.check_args)
        if "num_samples" in c.options:
            entry.update(
                judge_model=c.judge_model,
                num_samples=c.options["num_samples"],
                judge_model_config=c.options.get("judge_model_config"),
            )
        if name.startswith("rubric_based"):
            types = c.options.get("rubric_types", {})
            entry["rubrics"] = [
                {"rubric_id": r.name, "text": r.description or None, "type": types.get(r.name)} for r in c.rubrics
            ]
        if name == "hallucinations_v1":
            entry["evaluate_intermediate_nl_responses"] = bool(c.options.get("evaluate_intermediate_nl_responses"))
        if name == "per_turn_user_simulator_quality_v1":
            entry["stop_signal"] = c.options.get("stop_signal", "</finished>")
        out.append(entry)
    return out


def _adk(metrics: list[dict]) -> list[dict]:
    for m in metrics:
        for r in m.get("rubrics") or []:
            description = r.pop("description", None)
            if r["text"] is None and description:  # otel-eval's rubric text falls back to ADK's description
                r["text"] = description
    return metrics


@pytest.mark.parametrize("case_id,content,stricter", CORPUS, ids=[c[0] for c in CORPUS])
def test_google_adk_and_otel_eval_read_test_config_json_alike(adk_readings, case_id, content, stricter):
    adk = adk_readings[case_id]
    try:
        ours = read_test_config(_text(content), "eval/test_config.json")
    except InputError as exc:
        lines = exc.lines() if hasattr(exc, "lines") else [str(exc)]
        assert all(line.startswith("eval/test_config.json: at $") for line in lines), lines
        if stricter is not None:
            assert adk["accepted"] or adk["stage"] == "metric", adk
            assert any(stricter in line for line in lines), lines
        else:
            assert not adk["accepted"], f"google-adk takes it, otel-eval refuses it: {lines}"
        return
    assert stricter is None, f"otel-eval should refuse it ({stricter})"
    assert adk["accepted"], f"google-adk refuses it ({adk['error']}), otel-eval takes it"
    assert _ours(ours.config.criteria) == _adk(adk["metrics"])


def test_rubric_text_falls_back_to_its_description():
    read = read_test_config(
        _text(
            {
                "criteria": {
                    "rubric_based_final_response_quality_v1": {
                        "threshold": 0.8,
                        "rubrics": [{"rubric_id": "r1", "rubric_content": {}, "description": "Be brief."}],
                    }
                }
            }
        )
    )
    assert read.config.criteria["rubric_based_final_response_quality_v1"].rubrics[0].description == "Be brief."


def test_judge_model_config_knows_every_key_google_genai_defines():
    run = subprocess.run(
        [
            str(reference_python()),
            "-c",
            "from google.genai import types; import json; "
            "print(json.dumps(sorted(types.GenerateContentConfig.model_fields)))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(GenerateContentConfig.model_fields) == json.loads(run.stdout)


def test_keys_google_adk_ignores_are_ignored_with_a_warning():
    read = read_test_config(
        _text(
            {
                "criteria": {"response_match_score": {"threshold": 0.7, "note": "x"}},
                "comment": "team",
                "user_simulator_config": {"model": "m"},
            }
        )
    )
    assert read.config.criteria["response_match_score"].threshold == 0.7
    text = "\n".join(read.warnings)
    assert "$.criteria.response_match_score.note" in text and "$.comment" in text
    assert "$.user_simulator_config: ignored" in text


# --- scoring -----------------------------------------------------------------------------------


def _session(calls=2, tokens=(100, 20)) -> Trajectory:
    turn = Turn(
        index=0,
        trace_id="t",
        user_input="weather in Paris?",
        final_response="Sunny, 21 C.",
        calls=[ActualToolCall(name="get_weather", args={"city": "Paris"}) for _ in range(calls)]
        + [ActualToolCall(name="inner", inside_call=True)],
        start_ns=1_000_000_000,
        end_ns=3_500_000_000,
        llm_calls=3,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
    )
    return Trajectory(session_id="s", turns=[turn])


CASE = EvalCase(
    eval_id="paris",
    conversation=[
        Invocation(
            invocation_id="i",
            user_content=MessageContent.user("weather in Paris?"),
            expected_final_response=MessageContent.assistant("Sunny, 21 C."),
        )
    ],
)


def _by_name(result):
    return {c.criterion: c for c in result.criterion_results}


def test_informational_metrics_are_reported_and_never_fail_or_pass_a_session(monkeypatch):
    monkeypatch.delenv("OTEL_EVAL_JUDGE_BASE_URL", raising=False)
    config = read_test_config(_text({"criteria": {"safety_v1": 0.9, "final_response_match_v2": 0.5}})).config
    result = score_session(_session(), CASE, config)
    by = _by_name(result)
    assert (by["tool_call_count_v1"].score, by["inference_call_count_v1"].score) == (2.0, 3.0)  # not the AgentTool's
    assert by["token_usage_v1"].score == 120.0
    assert by["token_usage_v1"].details["per_turn"][0]["input_tokens"] == 100.0
    assert by["invocation_duration_v1"].score == 2.5
    assert all(by[n].passed and not by[n].skipped for n in INFORMATIONAL)
    assert "Vertex AI" in by["safety_v1"].details["reason"] and by["safety_v1"].skipped
    assert "no judge endpoint" in by["final_response_match_v2"].details["reason"]
    assert by["final_response_match_v2"].skipped and by["final_response_match_v2"].error is None
    # nothing was checked: informational values are no verdict
    assert result.verdict == NOT_EVALUATED


def test_informational_values_stay_out_of_the_case_score():
    config = read_test_config(_text({"criteria": {"response_match_score": 0.8}})).config
    result = score_session(_session(), CASE, config)
    assert result.verdict == PASSED and result.score == 1.0  # 120 tokens do not raise the mean


def test_token_usage_without_counts_is_not_available_rather_than_zero():
    config = read_test_config(_text({})).config
    by = _by_name(score_session(_session(tokens=(0, 0)), CASE, config))
    assert by["token_usage_v1"].skipped and "n/a" in by["token_usage_v1"].details["reason"]


def test_judge_metrics_whose_judge_refuses_are_not_evaluated_never_pass(monkeypatch):
    """Judged in line (no judge pool), against an endpoint that refuses: not evaluated with the
    reason, never a pass; the rubric metrics without rubrics: google-adk's own refusal.
    (tests/test_adk_judge_metrics.py compares the judged results with google-adk's.)"""
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    answered = ["final_response_match_v2", "hallucinations_v1"]
    rubric_based = [
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "rubric_based_multi_turn_trajectory_quality_v1",
    ]
    config = read_test_config(_text({"criteria": {n: 0.5 for n in answered + rubric_based}})).config
    by = _by_name(score_session(_session(), CASE, config))
    for name in answered:
        assert by[name].skipped and not by[name].passed and "cannot reach" in by[name].error, by[name]
    for name in rubric_based:
        assert by[name].skipped and not by[name].passed and "Rubrics are required" in by[name].details["reason"]


def test_custom_metrics_are_not_evaluated_with_the_function_named():
    config = read_test_config(
        _text({"criteria": {"mine": 0.5}, "custom_metrics": {"mine": {"code_config": {"name": "agent.m.mine"}}}})
    ).config
    by = _by_name(score_session(_session(), CASE, config))
    assert by["mine"].skipped and "agent.m.mine" in by["mine"].details["reason"]


def test_adk_names_work_in_toml_criteria_too(tmp_path):
    from otel_eval.criteria_file import eval_config_from_dict

    config = eval_config_from_dict({"criteria": {"safety_v1": {"threshold": 0.5}}})
    assert "safety_v1" in config.criteria
    with pytest.raises(InputError, match="did you mean 'hallucinations_v1'"):
        eval_config_from_dict({"criteria": {"halucinations_v1": {"threshold": 0.5}}})


# --- where a config goes -----------------------------------------------------------------------


def otel_eval(*args, cwd):
    env = {"COLUMNS": "160", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=180,
        env=env,
    )


@pytest.fixture
def eval_folder(tmp_path):
    """An ADK agent's eval folder: an eval set in google-adk's schema and its test_config.json."""
    folder = tmp_path / "weather_agent"
    folder.mkdir()
    run = otel_eval("golden", "convert", "--to", "adk", WEATHER, folder / "weather.evalset.json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    (folder / "test_config.json").write_text(
        json.dumps(
            {
                "criteria": {
                    "tool_trajectory_avg_score": {"threshold": 1.0, "matchType": "IN_ORDER"},
                    "response_match_score": 0.5,
                    "final_response_match_v2": {
                        "threshold": 0.6,
                        "judge_model_options": {"judge_model": "gemini-2.5-pro"},
                    },
                    "safety_v1": 0.8,
                }
            }
        )
    )
    return folder


def test_evaluate_finds_test_config_json_beside_the_eval_set(eval_folder):
    cwd = eval_folder.parent
    run = otel_eval(
        "evaluate", CAPTURE, "--golden", "weather_agent/weather.evalset.json", "--db", "e.db", "--json", cwd=cwd
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip().splitlines() == [
        "otel-eval: criteria from weather_agent/test_config.json (found beside weather_agent/weather.evalset.json, "
        "as adk eval does)"
    ]
    sessions = [s for s in json.loads(run.stdout)["sessions"] if s["case_id"]]
    assert len(sessions) == 5
    for s in sessions:
        by = {c["criterion"]: c for c in s["criteria"]}
        assert list(by) == [
            "tool_trajectory_avg_score",
            "response_match_score",
            "final_response_match_v2",
            "safety_v1",
            *INFORMATIONAL,
            "health",
        ]
        assert by["tool_trajectory_avg_score"]["details"]["match_type"] == "IN_ORDER"
        assert by["response_match_score"]["threshold"] == 0.5
        assert by["safety_v1"]["skipped"] and by["final_response_match_v2"]["skipped"]
        assert by["tool_call_count_v1"]["passed"] and by["tool_call_count_v1"]["score"] >= 1
        assert s["verdict"] == "passed"
    report = otel_eval("report", "--db", "e.db", "--json", cwd=cwd)
    criteria = json.loads(report.stdout)["summary"]["criteria"]
    assert criteria["token_usage_v1"]["pass_rate"] is None and criteria["token_usage_v1"]["avg_score"] > 0
    assert criteria["safety_v1"]["skipped"] == 5 and criteria["safety_v1"]["evaluated"] == 0
    detail = otel_eval("report", "--db", "e.db", "--session", sessions[0]["session_id"], cwd=cwd).stdout
    assert "tool_call_count_v1: info score=" in detail and "safety_v1: skipped" in detail


def test_evaluate_without_test_config_json_keeps_otel_eval_defaults(eval_folder):
    (eval_folder / "test_config.json").unlink()
    run = otel_eval(
        "evaluate",
        CAPTURE,
        "--golden",
        "weather_agent/weather.evalset.json",
        "--db",
        "e.db",
        "--json",
        cwd=eval_folder.parent,
    )
    assert run.returncode == 0 and run.stderr == ""
    session = next(s for s in json.loads(run.stdout)["sessions"] if s["case_id"])
    names = [c["criterion"] for c in session["criteria"]]
    assert "trajectory_match" in names and "tool_call_count_v1" not in names


def test_explicit_config_wins_and_a_bad_one_exits_2_with_file_path_and_reason(eval_folder):
    bad = eval_folder / "strict.json"
    bad.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOMETIMES"}}}))
    run = otel_eval(
        "evaluate",
        CAPTURE,
        "--golden",
        "weather_agent/weather.evalset.json",
        "--config",
        "weather_agent/strict.json",
        "--db",
        "e.db",
        cwd=eval_folder.parent,
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "otel-eval: error: weather_agent/strict.json: at $.criteria.tool_trajectory_avg_score.match_type: expected "
        "EXACT, IN_ORDER or ANY_ORDER (or 0, 1, 2), got \"SOMETIMES\""
    ]
    assert not (eval_folder.parent / "e.db").exists()


def test_unknown_metric_exits_2_in_one_line_naming_the_closest(eval_folder):
    (eval_folder / "test_config.json").write_text(json.dumps({"criteria": {"hallucination_v1": 0.5}}))
    run = otel_eval(
        "evaluate", CAPTURE, "--golden", "weather_agent/weather.evalset.json", "--db", "e.db", cwd=eval_folder.parent
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "otel-eval: error: weather_agent/test_config.json: at $.criteria.hallucination_v1: unknown metric "
        "'hallucination_v1' (did you mean 'hallucinations_v1'?)"
    ]


def test_invalid_json_exits_2_without_a_traceback(eval_folder):
    (eval_folder / "test_config.json").write_text('{"criteria": {"response_match_score": 0.8,}}')
    run = otel_eval(
        "evaluate", CAPTURE, "--golden", "weather_agent/weather.evalset.json", "--db", "e.db", cwd=eval_folder.parent
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "weather_agent/test_config.json: at $: invalid JSON" in run.stderr


def test_eval_sets_in_two_folders_with_their_own_configs_need_one_named(eval_folder):
    other = eval_folder.parent / "other_agent"
    shutil.copytree(eval_folder, other)
    run = otel_eval(
        "evaluate",
        CAPTURE,
        "--golden",
        "weather_agent/weather.evalset.json",
        "--golden",
        "other_agent/weather.evalset.json",
        "--db",
        "e.db",
        cwd=eval_folder.parent,
    )
    assert run.returncode == 2
    assert "different test_config.json files" in run.stderr and "--config" in run.stderr


def test_rescore_takes_a_test_config_json(eval_folder):
    cwd = eval_folder.parent
    assert (
        otel_eval(
            "evaluate", CAPTURE, "--golden", "weather_agent/weather.evalset.json", "--db", "e.db", cwd=cwd
        ).returncode
        == 0
    )
    (cwd / "tight.json").write_text(json.dumps({"criteria": {"response_match_score": 1.0}}))
    run = otel_eval("rescore", "--db", "e.db", "--config", "tight.json", "--json", cwd=cwd)
    assert run.returncode == 0, run.stderr
    assert "criteria from tight.json" in run.stderr
    changes = json.loads(run.stdout)["sessions"]
    assert any(c["before_verdict"] == "pass" and c["after_verdict"] == "fail" for c in changes)


def test_collector_reads_test_config_json_three_ways(eval_folder, tmp_path):
    golden = str(eval_folder / "weather.evalset.json")
    # 1. found beside the golden eval set
    found = load_collector_config(["--golden", golden], environ={})
    assert found.eval_config.criteria["response_match_score"].threshold == 0.5
    assert found.criteria_message.startswith("criteria from ") and "found beside" in found.criteria_message
    # 2. --config test_config.json: criteria only, other settings from flags
    direct = load_collector_config(
        ["--config", str(eval_folder / "test_config.json"), "--session-idle", "7"], environ={}
    )
    assert "safety_v1" in direct.eval_config.criteria and direct.session_idle == 7
    # 3. criteria_file in the TOML file, relative to it
    toml = tmp_path / "collector.toml"
    (tmp_path / "mine.json").write_text(json.dumps({"criteria": {"response_match_score": 0.3}}))
    toml.write_text(f'golden = ["{golden}"]\ncriteria_file = "mine.json"\n')
    named = load_collector_config(["--config", str(toml)], environ={})
    assert named.eval_config.criteria["response_match_score"].threshold == 0.3  # named wins over the one beside


def test_evaluate_reads_the_criteria_file_a_collector_toml_names(eval_folder):
    cwd = eval_folder.parent
    (cwd / "collector.toml").write_text('session_idle = 30\ncriteria_file = "weather_agent/test_config.json"\n')
    run = otel_eval(
        "evaluate",
        CAPTURE,
        "--golden",
        "weather_agent/weather.evalset.json",
        "--config",
        "collector.toml",
        "--db",
        "e.db",
        "--json",
        cwd=cwd,
    )
    assert run.returncode == 0, run.stderr
    assert "criteria from weather_agent/test_config.json (criteria_file of collector.toml)" in run.stderr
    session = next(s for s in json.loads(run.stdout)["sessions"] if s["case_id"])
    assert "safety_v1" in [c["criterion"] for c in session["criteria"]]


def test_a_toml_file_of_settings_only_leaves_the_criteria_to_the_test_config_json_beside(eval_folder):
    cwd = eval_folder.parent
    (cwd / "collector.toml").write_text("session_idle = 30\n")
    run = otel_eval(
        "evaluate",
        CAPTURE,
        "--golden",
        "weather_agent/weather.evalset.json",
        "--config",
        "collector.toml",
        "--db",
        "e.db",
        "--json",
        cwd=cwd,
    )
    assert run.returncode == 0, run.stderr
    assert "criteria from weather_agent/test_config.json (found beside" in run.stderr
    (cwd / "collector.toml").write_text("[criteria.trajectory_match]\nthreshold = 0.5\n")
    run = otel_eval(
        "evaluate",
        CAPTURE,
        "--golden",
        "weather_agent/weather.evalset.json",
        "--config",
        "collector.toml",
        "--db",
        "e2.db",
        "--json",
        cwd=cwd,
    )
    assert run.returncode == 0 and run.stderr == ""  # its own criteria win
    session = next(s for s in json.loads(run.stdout)["sessions"] if s["case_id"])
    assert "trajectory_match" in [c["criterion"] for c in session["criteria"]]


def test_collector_refuses_two_sources_of_criteria_and_bad_files(eval_folder, tmp_path):
    toml = tmp_path / "collector.toml"
    toml.write_text('criteria_file = "x.json"\n[criteria.trajectory_match]\nthreshold = 0.5\n')
    with pytest.raises(InputError, match="not both"):
        load_collector_config(["--config", str(toml)], environ={})
    (eval_folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_call_count_v1": 1}}))
    with pytest.raises(InputError) as caught:
        load_collector_config(["--golden", str(eval_folder / "weather.evalset.json")], environ={})
    assert caught.value.location == "$.criteria.tool_call_count_v1"


def test_collector_refuses_an_unknown_metric_in_its_toml_criteria(tmp_path):
    toml = tmp_path / "collector.toml"
    toml.write_text("[criteria.hallucination_v1]\nthreshold = 0.5\n")
    with pytest.raises(InputError) as caught:
        load_collector_config(["--config", str(toml)], environ={})
    assert caught.value.location == "$.criteria.hallucination_v1"
    assert "did you mean 'hallucinations_v1'" in caught.value.reason
    toml.write_text("[criteria.safety_v1]\nthreshold = 0.5\n")  # ADK's names are criteria in TOML too
    assert "safety_v1" in load_collector_config(["--config", str(toml)], environ={}).eval_config.criteria


def test_collector_process_exits_2_on_a_bad_test_config_json(eval_folder):
    (eval_folder / "test_config.json").write_text(json.dumps({"criteria": {"safety_v1": {"threshhold": 0.5}}}))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_eval.cli",
            "collect",
            "--golden",
            str(eval_folder / "weather.evalset.json"),
            "--db",
            str(eval_folder / "c.db"),
            "--grpc",
            "off",
            "--http",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"otel-eval collect: error: {eval_folder / 'test_config.json'} at $.criteria.safety_v1.threshold: required, "
        "missing (the file has 'threshhold': did you mean 'threshold'?)"
    ]


def test_resolve_config_says_which_defaults_apply_without_a_file(tmp_path):
    golden = tmp_path / "a.evalset.json"
    golden.write_text("{}")
    resolved = resolve_config(None, [str(golden)])
    assert resolved.config is None and "otel-eval's default criteria apply" in resolved.message
    assert isinstance(EvalConfig.default(), EvalConfig)


def test_docs_name_every_metric_google_adk_registers():
    from otel_eval.criteria.registry import REGISTRY

    ADK_METRICS = REGISTRY.adk_metrics()
    run = subprocess.run(
        [str(reference_python()), str(ORACLE), "--registered"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert sorted(ADK_METRICS) == sorted(json.loads(run.stdout))
    page = (REPO / "docs" / "adk.md").read_text(encoding="utf-8")
    assert [m for m in ADK_METRICS if f"`{m}`" not in page] == []


def test_test_json_files_are_looked_beside_too(tmp_path):
    golden = tmp_path / "home_automation.test.json"
    golden.write_text("[]")
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.9}}))
    resolved = resolve_config(None, [str(golden)])
    assert resolved.config.criteria["tool_trajectory_avg_score"].threshold == 0.9
    assert Path(resolved.source).name == "test_config.json"


def test_python_entry_points_take_a_test_config_json_path(eval_folder, tmp_path):
    from otel_eval import EvalSpanProcessor, evaluate

    config = eval_folder / "test_config.json"
    results = evaluate([CAPTURE], golden=[eval_folder / "weather.evalset.json"], config=str(config))
    matched = [r for r in results if r.eval_id]
    assert matched and all("safety_v1" in {c.criterion for c in r.criterion_results} for r in matched)
    processor = EvalSpanProcessor(db=tmp_path / "p.db", config=config)
    try:
        assert processor.engine.settings.config.criteria["response_match_score"].threshold == 0.5
    finally:
        processor.shutdown()
