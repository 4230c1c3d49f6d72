"""google-adk's LLM-judge metrics on otel-eval's judge pool, against google-adk itself (issue 31.3, 31.5).

The same invocations (ADK's ``Invocation`` JSON), the same criterion (as test_config.json writes
it) and the same scripted judge answers go to both sides: to google-adk's own evaluators with a
``BaseLlm`` registered in ADK's ``LLMRegistry`` (tests/reference/adk_judge_oracle.py, in
``.venv-reference``), and to otel-eval's judge pool calling a real OpenAI-compatible judge on
127.0.0.1 (tests/judge_server.py) scripted with the same texts. Both must give the same score,
verdict, per-invocation scores and per-rubric verdicts, and ask the judge the same prompts.

Then real multi-agent google-adk runs (captures/python/adk_multiagent/run.py): otel-eval reads
their spans (``evaluate``, the CLI on an ADK eval folder, a collector) and must ask the judge what
google-adk asks it of its own invocations of the same run, and give ADK's verdicts.

What cannot be the same, and is not compared: ADK sends a ``GenerateContentConfig`` (its retry
options, automatic function calling off) to Gemini, otel-eval a chat-completions body to the
user's endpoint (only the sampling settings of ``judge_model_config`` carry over, checked below);
which of several samples arrives first (the pool sends them at once), so prompts are compared as
multisets, and of equal votes the rationale kept may differ (scores cannot); a judge outage (ADK
drops the invocation, otel-eval the whole metric until backfill); and, from spans, a ``task``
sub-agent's invocation (ADK's has an empty user content and the delegation's call id) and
grounding metadata (not on spans). docs/adk.md lists them for users.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

import pytest

from otel_eval.adk_config.reading import read_test_config
from otel_eval.judging import jobs as J
from otel_eval.judging.adk import prompts, protocol
from otel_eval.judging.adk.invocation import AdkInvocation
from otel_eval.judging.pool import JudgePool
from otel_eval.models.results import CriterionResult
from tests.judge_server import JudgeServer, refusing_url
from tests.paths import REPO
from tests.reference.client import reference_python

ORACLE = REPO / "tests" / "reference" / "adk_judge_oracle.py"

# --- invocations, as ADK's Invocation JSON -----------------------------------------------------------


def content(text: str, role: str) -> dict[str, Any]:
    return {"parts": [{"text": text}], "role": role}


def calls(author: str, *called: tuple[str, str, dict]) -> dict[str, Any]:
    return {
        "author": author,
        "content": {
            "role": "model",
            "parts": [{"function_call": {"id": cid, "args": args, "name": name}} for cid, name, args in called],
        },
    }


def responses(author: str, *answered: tuple[str, str, dict]) -> dict[str, Any]:
    return {
        "author": author,
        "content": {
            "role": "user",
            "parts": [
                {"function_response": {"id": cid, "name": name, "response": response}}
                for cid, name, response in answered
            ],
        },
    }


def said(author: str, text: str) -> dict[str, Any]:
    return {"author": author, "content": {"role": "model", "parts": [{"text": text}]}}


def invocation(inv_id: str, user: str, answer: str | None, events=(), app=None, rubrics=None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "invocation_id": inv_id,
        "user_content": content(user, "user"),
        "intermediate_data": {"invocation_events": list(events)},
    }
    if answer is not None:
        out["final_response"] = content(answer, "model")
    if app is not None:
        out["app_details"] = app
    if rubrics is not None:
        out["rubrics"] = rubrics
    return out


def rubric(rid: str, text: str, type_: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"rubric_id": rid, "rubric_content": {"text_property": text}}
    if type_:
        out["type"] = type_
    return out


APP = {
    "agent_details": {
        "weather_agent": {
            "name": "weather_agent",
            "instructions": "You answer questions about the weather. Be brief.",
            "tool_declarations": [
                {
                    "function_declarations": [
                        {
                            "description": "Gets the current weather of a city.",
                            "name": "get_weather",
                            "parameters_json_schema": {
                                "type": "object",
                                "properties": {"city": {"type": "string"}, "precision": {"type": "number"}},
                                "required": ["city"],
                            },
                        }
                    ]
                }
            ],
        }
    }
}

ZURICH = [
    calls("weather_agent", ("c1", "get_weather", {"city": "Zürich", "precision": 1e-7, "units": None})),
    responses("weather_agent", ("c1", "get_weather", {"temperature_c": 22.5, "sky": "sonnig ☀"})),
]
OSLO = [
    said("weather_agent", "Let me look that up for Oslo."),
    calls("weather_agent", ("c2", "get_weather", {"city": "Oslo"}), ("c3", "get_weather", {"city": "Bergen"})),
    responses(
        "weather_agent", ("c2", "get_weather", {"temperature_c": -3}), ("c3", "get_weather", {"error": "no station"})
    ),
]

ACTUAL_2 = [
    invocation("z1", "What's the weather in Zürich?", "It is 22.5°C and sunny in Zürich.", ZURICH, APP),
    invocation("o1", "And in Oslo?", "It is -3°C in Oslo. Bergen has no station.", OSLO, APP),
]
EXPECTED_2 = [
    invocation("z1", "What's the weather in Zürich?", "22.5°C, sunny."),
    invocation("o1", "And in Oslo?", "Minus three degrees.", [said("weather_agent", "Checking Oslo.")]),
]


def judge_options(samples: int = 3, **more: Any) -> dict[str, Any]:
    return {"judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": samples, **more}}


def label(value: str) -> str:
    return json.dumps({"reasoning": "compared with the reference", "is_the_agent_response_valid": value}, indent=1)


VALID, INVALID = label("valid"), label("invalid")
GARBAGE = "I would say the response looks fine to me overall, but I cannot be sure about it. " * 4


def verdicts(*blocks: tuple[str | None, str, str]) -> str:
    """A rubric judge's answer: (id or None, property text, yes/no) blocks."""
    out = []
    for rid, text, verdict in blocks:
        head = f"ID: {rid}\n" if rid else ""
        out.append(
            f"{head}Property: {text}\nEvidence: the tool output.\nRationale: checked against {text[:12]}.\n"
            f"Verdict: {verdict}\n"
        )
    return "\n".join(out)


R_TEMP = "The final answer states the temperature reported by the tool."
R_BRIEF = "The final answer is at most two sentences long."
R_TOOL = "The agent calls get_weather with the city the user named."
R_ONCE = "The agent calls get_weather no more than once per city."
R_TRAJ = "The agent answers every question the user asked in the conversation."


def segmented(*sentences: str) -> str:
    return "\n".join(f"<sentence>{s}</sentence>" for s in sentences)


def validated(*rows: tuple[str, str]) -> str:
    return "\n\n".join(
        f"sentence: {s}\nlabel: {label_}\nrationale: judged.\nsupporting_excerpt: null\ncontradicting_excerpt: null"
        for s, label_ in rows
    )


SEGMENT = "**Your Sentence Segmentation Output:**"
VALIDATE = "**Sentences End**"

CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "final_response_match_v2: 2 of 3 samples valid → valid",
        {
            "metric": "final_response_match_v2",
            "criterion": {"threshold": 1.0, **judge_options(3)},
            "actual": ACTUAL_2[:1],
            "expected": EXPECTED_2[:1],
            "script": [["22.5°C and sunny", [VALID, INVALID, VALID]]],
        },
    ),
    (
        "final_response_match_v2: two turns, one valid → 0.5, below the threshold",
        {
            "metric": "final_response_match_v2",
            "criterion": {"threshold": 0.6, **judge_options(3)},
            "actual": ACTUAL_2,
            "expected": EXPECTED_2,
            "script": [["22.5°C and sunny", [VALID]], ["Bergen has no station", [INVALID, INVALID, VALID]]],
        },
    ),
    (
        "final_response_match_v2: a tie is invalid; unreadable samples do not vote",
        {
            "metric": "final_response_match_v2",
            "criterion": {"threshold": 0.5, **judge_options(4)},
            "actual": ACTUAL_2,
            "expected": EXPECTED_2,
            "script": [
                ["22.5°C and sunny", [VALID, INVALID, GARBAGE, GARBAGE]],
                [
                    "Bergen has no station",
                    [
                        GARBAGE,
                        '{"is_the_agent_response_valid": [valid],}',
                        GARBAGE,
                        '```json\n{"is_the_agent_response_invalid": "false"}\n```',
                    ],
                ],
            ],
        },
    ),
    (
        "final_response_match_v2: ADK's other labels (almost, partially, true) and the intermediate texts",
        {
            "metric": "final_response_match_v2",
            "criterion": {"threshold": 0.5, "include_intermediate_responses_in_final": True, **judge_options(3)},
            "actual": ACTUAL_2,
            "expected": EXPECTED_2,
            "script": [
                ["22.5°C and sunny", ['"is_the_agent_response_valid": almost\n}', label("true"), label("true")]],
                ["Checking Oslo.", [label("partially"), label("partially_valid"), label("TRUE")]],
            ],
        },
    ),
    (
        "final_response_match_v2: every answer unreadable → not evaluated",
        {
            "metric": "final_response_match_v2",
            "criterion": {"threshold": 0.5, **judge_options(2)},
            "actual": ACTUAL_2,
            "expected": EXPECTED_2,
            "script": [["User prompt", [GARBAGE]]],
        },
    ),
    (
        "rubric_based_final_response_quality_v1: majority per rubric, rubrics by id and by text",
        {
            "metric": "rubric_based_final_response_quality_v1",
            "criterion": {
                "threshold": 0.7,
                **judge_options(3),
                "rubrics": [rubric("temp", R_TEMP), rubric("brief", R_BRIEF)],
            },
            "actual": [
                invocation(
                    "z1",
                    "What's the weather in Zürich?",
                    "It is 22.5°C and sunny in Zürich.",
                    ZURICH,
                    APP,
                    rubrics=[
                        rubric("tool", R_TOOL, "TOOL_USE_QUALITY"),
                        rubric("polite", "The final answer is polite.", "FINAL_RESPONSE_QUALITY"),
                    ],
                ),
                invocation("o1", "And in Oslo?", "It is -3°C in Oslo. Bergen has no station.", OSLO, APP),
            ],
            "expected": None,
            "script": [
                [
                    "It is 22.5°C and sunny",
                    [
                        verdicts(("temp", R_TEMP, "yes"), ("brief", R_BRIEF, "no"), ("polite", "x", "yes")),
                        verdicts(
                            ("temp", R_TEMP, "yes"), (None, "**" + R_BRIEF.upper() + "**", "yes"), ("polite", "x", "no")
                        ),
                        verdicts(
                            ("temp", R_TEMP, "no"),
                            ("brief", R_BRIEF, "no"),
                            ("zz", "Something else.", "yes"),
                            ("polite", "x", "no"),
                        ),
                    ],
                ],
                [
                    "Bergen has no station",
                    [
                        verdicts(("temp", R_TEMP, "no"), ("brief", R_BRIEF, "yes")),
                        GARBAGE,
                        verdicts(("temp", R_TEMP, "yes"), ("brief", R_BRIEF, "yes")),
                    ],
                ],
            ],
        },
    ),
    (
        "rubric_based_tool_use_quality_v1: the tool calls and their responses",
        {
            "metric": "rubric_based_tool_use_quality_v1",
            "criterion": {
                "threshold": 0.5,
                **judge_options(1),
                "rubrics": [rubric("tool", R_TOOL, "TOOL_USE_QUALITY"), rubric("once", R_ONCE)],
            },
            "actual": ACTUAL_2,
            "expected": None,
            "script": [
                ["Zürich", [verdicts(("tool", R_TOOL, "yes"), ("once", R_ONCE, "yes"))]],
                ["Bergen", [verdicts(("tool", R_TOOL, "no"), ("once", R_ONCE, "Verdict unclear"))]],
            ],
        },
    ),
    (
        "rubric_based_tool_use_quality_v1: a verdict block missing → the answer is discarded whole",
        {
            "metric": "rubric_based_tool_use_quality_v1",
            "criterion": {
                "threshold": 0.5,
                **judge_options(2),
                "rubrics": [rubric("tool", R_TOOL), rubric("once", R_ONCE)],
            },
            "actual": ACTUAL_2[:1],
            "expected": None,
            "script": [
                [
                    "Zürich",
                    [
                        verdicts(("tool", R_TOOL, "yes"), ("once", R_ONCE, "no")).replace("Verdict: no", ""),
                        verdicts(("tool", R_TOOL, "no"), ("once", R_ONCE, "no")),
                    ],
                ]
            ],
        },
    ),
    (
        "rubric_based_multi_turn_trajectory_quality_v1: the whole conversation, judged on its last turn",
        {
            "metric": "rubric_based_multi_turn_trajectory_quality_v1",
            "criterion": {
                "threshold": 0.5,
                **judge_options(3),
                "rubrics": [rubric("all", R_TRAJ, "TRAJECTORY_QUALITY")],
            },
            "actual": [
                ACTUAL_2[0],
                {
                    **ACTUAL_2[1],
                    "rubrics": [
                        rubric("tools", R_TOOL, "TRAJECTORY_QUALITY"),
                        rubric("ignored", R_BRIEF, "TOOL_USE_QUALITY"),
                    ],
                },
            ],
            "expected": None,
            "script": [
                [
                    "USER TURN 2: And in Oslo?",
                    [
                        verdicts(("all", R_TRAJ, "yes"), ("tools", R_TOOL, "no")),
                        verdicts(("all", R_TRAJ, "yes"), ("tools", R_TOOL, "yes")),
                        verdicts(("all", R_TRAJ, "no"), ("tools", R_TOOL, "no")),
                    ],
                ]
            ],
        },
    ),
    (
        "rubric-based without rubrics: google-adk's error, not evaluated",
        {
            "metric": "rubric_based_final_response_quality_v1",
            "criterion": {"threshold": 0.5, **judge_options(1)},
            "actual": ACTUAL_2[:1],
            "expected": None,
            "script": [],
        },
    ),
    (
        "rubric-based with every answer unreadable → not evaluated",
        {
            "metric": "rubric_based_final_response_quality_v1",
            "criterion": {"threshold": 0.5, **judge_options(2), "rubrics": [rubric("temp", R_TEMP)]},
            "actual": ACTUAL_2[:1],
            "expected": None,
            "script": [["Zürich", [GARBAGE]]],
        },
    ),
    (
        "hallucinations_v1: segment then validate, the final responses",
        {
            "metric": "hallucinations_v1",
            "criterion": {"threshold": 0.8, **judge_options(5)},
            "actual": ACTUAL_2,
            "expected": None,
            "script": [
                [[SEGMENT, "sunny in Zürich"], [segmented("It is 22.5°C and sunny in Zürich.")]],
                [[VALIDATE, "<sentence>It is 22.5°C"], [validated(("It is 22.5°C and sunny in Zürich.", "supported"))]],
                [[SEGMENT, "Bergen has no station"], [segmented("It is -3°C in Oslo.", "Bergen has no station.")]],
                [
                    [VALIDATE, "<sentence>It is -3°C"],
                    [validated(("It is -3°C in Oslo.", "supported"), ("Bergen has no station.", "unsupported"))],
                ],
            ],
        },
    ),
    (
        "hallucinations_v1: intermediate responses too, each against the events before it",
        {
            "metric": "hallucinations_v1",
            "criterion": {"threshold": 0.5, "evaluate_intermediate_nl_responses": True, **judge_options(1)},
            "actual": ACTUAL_2,
            "expected": None,
            "script": [
                [[SEGMENT, "Let me look that up"], [segmented("Let me look that up for Oslo.")]],
                [[VALIDATE, "<sentence>Let me look"], [validated(("Let me look that up for Oslo.", "not_applicable"))]],
                [[SEGMENT, "sunny in Zürich"], [segmented("It is 22.5°C and sunny in Zürich.")]],
                [
                    [VALIDATE, "<sentence>It is 22.5°C"],
                    [validated(("It is 22.5°C and sunny in Zürich.", "contradictory"))],
                ],
                [[SEGMENT, "Bergen has no station"], ["no sentences here"]],
            ],
        },
    ),
]


# --- the two sides ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adk_answers() -> list[dict[str, Any]]:
    run = subprocess.run(
        [str(reference_python()), str(ORACLE)],
        input=json.dumps([c for _, c in CASES]),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def run_job(request: dict[str, Any], **pool_options: Any) -> CriterionResult:
    """One job through a real JudgePool (its own thread, HTTP to the judge), its outcome."""
    done = threading.Event()
    outcome: list[CriterionResult] = []

    def on_outcome(job, results, usage, retry):
        outcome.extend(results)
        done.set()

    pool = JudgePool(on_outcome, **{"deadline": 20.0, **pool_options}).start()
    try:
        assert pool.submit(J.JudgeJob(1, "s1", [request]))
        assert done.wait(30), "the pool gave no outcome"
    finally:
        pool.close(5)
    return outcome[0]


def our_request(case: dict[str, Any], url: str) -> dict[str, Any]:
    """The case's criterion as otel-eval reads it from a test_config.json, built into a request."""
    metric = case["metric"]
    cfg = read_test_config(json.dumps({"criteria": {metric: case["criterion"]}})).config.criteria[metric]
    options = {**cfg.options, "base_url": url, "max_retries": 0, "timeout": 10}
    actual = [AdkInvocation.model_validate(i) for i in case["actual"]]
    expected = (
        [AdkInvocation.model_validate(i) for i in case["expected"]]
        if case["expected"] is not None
        else [None] * len(actual)
    )
    return protocol.build(
        metric,
        name=metric,
        threshold=cfg.threshold,
        judge_model=cfg.judge_model,
        options=J.public_options(options),
        rubrics=protocol.criterion_rubrics(cfg.rubrics, cfg.options.get("rubric_types")),
        actual=actual,
        expected=expected,
        turns=list(range(len(actual))),
    )


def status_of(result: CriterionResult) -> str:
    return "NOT_EVALUATED" if result.skipped else "PASSED" if result.passed else "FAILED"


def rubric_scores(entries: list[dict[str, Any]] | None) -> list[tuple[str, Any]] | None:
    return None if entries is None else [(e["rubric_id"], e["score"]) for e in entries]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[name for name, _ in CASES])
def test_adk_and_otel_eval_judge_alike(adk_answers, index):
    name, case = CASES[index]
    adk = adk_answers[index]
    with JudgeServer(script=case["script"]) as server:
        try:
            request = our_request(case, server.url)
        except ValueError as exc:  # google-adk's evaluator raises there too: adk eval records NOT_EVALUATED
            assert "error" in adk, adk
            assert str(exc) in adk["error"]
            return
        assert "error" not in adk, adk["error"]
        result = run_job(request)
        ours_prompts = server.prompts()
    assert status_of(result) == adk["status"], (result, adk)
    if adk["score"] is None:
        assert result.skipped and result.error, result
    else:
        assert result.score == adk["score"]
    per_invocation = result.details["per_invocation"]
    assert [(p["score"], p["status"].upper()) for p in per_invocation] == [
        (p["score"], p["status"]) for p in adk["per_invocation"]
    ]
    if case["metric"].startswith("rubric_based"):
        assert [rubric_scores(p.get("rubrics")) for p in per_invocation] == [
            rubric_scores(p["rubric_scores"]) if p["rubric_scores"] is not None else None for p in adk["per_invocation"]
        ]
        assert rubric_scores(result.details.get("rubrics")) == rubric_scores(adk["rubric_scores"])
    assert sorted(ours_prompts) == sorted(adk["prompts"])


def test_the_prompt_templates_are_google_adks():
    run = subprocess.run(
        [str(reference_python()), str(ORACLE), "--templates"], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    for name, text in json.loads(run.stdout).items():
        assert getattr(prompts, name) == text, name


# --- what a user of the pool sees around the numbers --------------------------------------------------

OUTAGE = {
    "metric": "final_response_match_v2",
    "criterion": {"threshold": 0.5, **judge_options(2)},
    "actual": ACTUAL_2,
    "expected": EXPECTED_2,
    "script": [["User prompt", ["__RAISE__"]]],
}


def test_a_judge_outage_is_not_evaluated_with_the_reason_as_for_adk():
    run = subprocess.run(
        [str(reference_python()), str(ORACLE)], input=json.dumps([OUTAGE]), capture_output=True, text=True, timeout=300
    )
    adk = json.loads(run.stdout)[0]
    assert adk["status"] == "NOT_EVALUATED" and adk["score"] is None
    result = run_job(our_request(OUTAGE, refusing_url()))
    assert status_of(result) == "NOT_EVALUATED"
    assert result.details["judge"] == J.UNAVAILABLE
    assert "cannot reach" in result.error and "gave up" in result.error


def test_unreadable_answers_are_named_by_their_first_200_characters():
    name, case = next(c for c in CASES if c[0].startswith("final_response_match_v2: every answer unreadable"))
    with JudgeServer(script=case["script"]) as server:
        result = run_job(our_request(case, server.url))
    assert result.skipped and not result.passed and result.details["judge"] == J.INVALID
    assert repr(GARBAGE[:200]) in result.error
    assert GARBAGE[:201] not in result.error


def test_some_unreadable_samples_still_give_adks_score_and_are_listed():
    name, case = next(c for c in CASES if "a tie is invalid" in c[0])
    with JudgeServer(script=case["script"]) as server:
        result = run_job(our_request(case, server.url))
    assert not result.skipped and result.score == 0.5
    first = result.details["per_invocation"][0]
    assert first["samples"].count("label field not found") == 2
    assert first["spread"] == {"valid": 1, "invalid": 1, "not_found": 2} and first["label"] == "invalid"
    assert len(result.details["unreadable_answers"]) == 4


def test_judge_model_config_reaches_the_endpoint_as_adk_sends_it():
    case = {
        "metric": "final_response_match_v2",
        "criterion": {
            "threshold": 0.5,
            **judge_options(
                1,
                judge_model_config={
                    "temperature": 0.3,
                    "max_output_tokens": 256,
                    "system_instruction": "Be terse.",
                    "top_k": 5,
                },
            ),
        },
        "actual": ACTUAL_2[:1],
        "expected": EXPECTED_2[:1],
        "script": [["User prompt", [VALID]]],
    }
    run = subprocess.run(
        [str(reference_python()), str(ORACLE)], input=json.dumps([case]), capture_output=True, text=True, timeout=300
    )
    adk_config = json.loads(run.stdout)[0]["configs"][0]
    with JudgeServer(script=case["script"]) as server:
        run_job(our_request(case, server.url))
        body = server.requests[0]
    assert body["temperature"] == adk_config["temperature"] == 0.3
    assert body["max_tokens"] == adk_config["max_output_tokens"] == 256
    assert body["messages"][0] == {"role": "system", "content": "Be terse."}
    assert "top_k" not in body  # Gemini's, not a chat-completions parameter


def test_gemini_judge_model_names_map_to_the_endpoint_model(caplog, monkeypatch):
    case = CASES[0][1]
    monkeypatch.delenv("OTEL_EVAL_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MODELS", "gemini-2.5-pro=from-env")
    with JudgeServer(script=case["script"]) as server:
        run_job(our_request(case, server.url), judge_models={"gemini-2.5-flash": "gpt-4o-mini"})
        mapped = {r["model"] for r in server.requests}
        request = our_request(case, server.url)
        request["judge_model"] = "gemini-2.5-pro"
        server.requests.clear()
        run_job(request)
        from_env = {r["model"] for r in server.requests}
        request["options"]["judge_models"] = {"gemini-2.5-pro": "criterion-model"}
        server.requests.clear()
        run_job(request)
        own = {r["model"] for r in server.requests}
        request = our_request(case, server.url)
        request["judge_model"] = "gemini-9-unmapped"
        request["options"]["model"] = "configured-model"
        server.requests.clear()
        with caplog.at_level("INFO", logger="otel_eval.judge"):
            run_job(request)
            run_job(request)
        unmapped = {r["model"] for r in server.requests}
    assert (mapped, from_env, own, unmapped) == (
        {"gpt-4o-mini"},
        {"from-env"},
        {"criterion-model"},
        {"configured-model"},
    )
    told = [r for r in caplog.records if "gemini-9-unmapped is not mapped" in r.getMessage()]
    assert len(told) == 1 and "configured-model" in told[0].getMessage()


def test_a_stored_request_is_judged_the_same_after_a_restart(adk_answers):
    """The request is plain JSON (stored in judge_jobs): read back in a fresh pool, it is judged as ADK judges it."""
    index = next(i for i, (n, _) in enumerate(CASES) if n.startswith("hallucinations_v1: segment"))
    case = CASES[index][1]
    with JudgeServer(script=case["script"]) as server:
        stored = json.dumps(J.JudgeJob(7, "s7", [our_request(case, server.url)]).to_json())
        result = run_job(json.loads(stored)["criteria"][0])
    assert result.score == adk_answers[index]["score"] == 0.75
    assert not result.passed


def test_the_collector_maps_judge_models_from_its_toml_flags_and_environment(tmp_path):
    from collector.app import engine_settings
    from collector.config import load_config
    from otel_eval.errors import InputError

    toml = tmp_path / "collector.toml"
    toml.write_text('[judge_models]\n"gemini-2.5-flash" = "gpt-4o-mini"\n"gemini-2.5-pro" = "gpt-4o"\n')
    assert engine_settings(load_config(["--config", str(toml)], environ={})).judge_models == (
        ("gemini-2.5-flash", "gpt-4o-mini"),
        ("gemini-2.5-pro", "gpt-4o"),
    )
    assert load_config(
        ["--judge-models", "gemini-2.5-flash=llama3", "--judge-models", "a=b"], environ={}
    ).judge_models == {"gemini-2.5-flash": "llama3", "a": "b"}
    assert load_config([], environ={"OTEL_EVAL_JUDGE_MODELS": "gemini-2.5-flash=qwen, x=y"}).judge_models == {
        "gemini-2.5-flash": "qwen",
        "x": "y",
    }
    with pytest.raises(InputError, match="expected NAME=MODEL"):
        load_config(["--judge-models", "gemini-2.5-flash"], environ={})


def test_offline_evaluate_returns_each_session_with_its_judge_outcome():
    """``evaluate`` (and ``otel-eval evaluate``) end every session at the end of the files: the
    result they return is the judged one, not a pending one lost when the engine closes."""
    from otel_eval import evaluate
    from otel_eval.models import EvalCase, EvalSet, MessageContent
    from otel_eval.models import Invocation as GoldenInvocation
    from otel_eval.models.evalset import CriterionConfig, EvalConfig
    from otel_eval.spans import SpanRecord

    golden = EvalSet(
        eval_set_id="w",
        eval_cases=[
            EvalCase(
                eval_id="tokyo",
                conversation=[
                    GoldenInvocation(
                        invocation_id="t1",
                        user_content=MessageContent.user("Weather in Tokyo?"),
                        expected_final_response=MessageContent.assistant("Sunny."),
                    )
                ],
            )
        ],
    )
    root = SpanRecord(
        "ab" * 16,
        "cd" * 8,
        None,
        "agent.invoke",
        1_000,
        9_000,
        attributes={
            "session.id": "s1",
            "openinference.span.kind": "AGENT",
            "input.value": "Weather in Tokyo?",
            "output.value": "Sunny.",
        },
    )
    with JudgeServer(score=2) as server:
        config = EvalConfig(criteria={"llm_judge": CriterionConfig(threshold=0.7, options={"base_url": server.url})})
        [result] = evaluate([root], golden=[golden], config=config)
    [judged] = [c for c in result.criterion_results if c.criterion == "llm_judge"]
    assert judged.details["judge"] == J.ANSWERED and judged.score == 0.25 and not judged.passed
    assert result.verdict == "failed"


# --- real google-adk runs: their spans through otel-eval, their own invocations through google-adk ----

SCENARIOS = ["transfer", "agent_tool", "sequential", "parallel", "loop", "workflow", "single_turn"]
"""captures/python/adk_multiagent/run.py's scenarios whose invocations otel-eval reads from the
spans as ADK builds them from its events. Not compared: ``task`` and ``task_asks_user``, where
google-adk's invocation has an empty user content and the delegation's call id (docs/adk.md,
"Every difference"); otel-eval's turns do follow ADK's invocations there (one turn per
``gcp.vertex.agent.invocation_id``), but the judge's context for a turn made of several traces
is read from its first trace."""

RUN_RUBRIC = "The agent answers what the user asked."
RUN_METRICS = {
    "final_response_match_v2": {"threshold": 0.5, "include_intermediate_responses_in_final": True, **judge_options(3)},
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.5,
        "include_intermediate_responses_in_final": True,
        **judge_options(3),
        "rubrics": [rubric("asked", RUN_RUBRIC)],
    },
    "rubric_based_tool_use_quality_v1": {"threshold": 0.5, **judge_options(1), "rubrics": [rubric("tools", R_TOOL)]},
    "rubric_based_multi_turn_trajectory_quality_v1": {
        "threshold": 0.5,
        **judge_options(1),
        "rubrics": [rubric("asked", RUN_RUBRIC)],
    },
    "hallucinations_v1": {"threshold": 0.6, "evaluate_intermediate_nl_responses": True, **judge_options(1)},
}
RUN_SCRIPT = [
    [SEGMENT, [segmented("A first claim.", "A second claim.")]],
    [[VALIDATE, "tool_outputs"], [validated(("A first claim.", "supported"), ("A second claim.", "unsupported"))]],
    [VALIDATE, [validated(("A first claim.", "not_applicable"), ("A second claim.", "supported"))]],
    ["<conversation_history>", [verdicts(("asked", RUN_RUBRIC, "yes")), verdicts(("asked", RUN_RUBRIC, "no"))]],
    [["is_the_agent_response_valid", "rain in Oslo"], [INVALID, VALID, INVALID]],
    ["is_the_agent_response_valid", [VALID]],
    [["<final_answer>", "Paris"], [verdicts(("asked", RUN_RUBRIC, "no"))]],
    [
        "<final_answer>",
        [
            verdicts(("asked", RUN_RUBRIC, "yes")),
            verdicts(("asked", RUN_RUBRIC, "no")),
            verdicts(("asked", RUN_RUBRIC, "yes")),
        ],
    ],
    [["<response>", '"name": "get_weather"'], [verdicts(("tools", R_TOOL, "yes"))]],
    ["<response>", [verdicts(("tools", R_TOOL, "no"))]],
]


@pytest.fixture(scope="module")
def adk_runs() -> dict[str, Any]:
    run = subprocess.run(
        [str(reference_python()), "-W", "ignore", str(ORACLE), "--adk-run"],
        input=json.dumps({"scenarios": SCENARIOS, "metrics": RUN_METRICS, "script": RUN_SCRIPT}),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def golden_of(scenario: str, invocations: list[dict[str, Any]]) -> dict[str, Any]:
    """An ADK eval set whose one case's conversation is google-adk's own invocations of the run
    (what ``adk eval`` compares with: its expected invocations)."""
    return {"eval_set_id": f"adk_{scenario}", "eval_cases": [{"eval_id": scenario, "conversation": invocations}]}


def test_real_adk_runs_are_judged_from_their_spans_as_google_adk_judges_its_events(adk_runs, tmp_path, monkeypatch):
    """For each run: otel-eval reads the spans ADK's telemetry emitted (evaluate, the judge pool)
    and asks the judge exactly what google-adk's own evaluators ask it of ADK's invocations of
    the same run, and gets ADK's scores and verdicts."""
    from otel_eval import evaluate

    config = read_test_config(json.dumps({"criteria": RUN_METRICS})).config
    for scenario in SCENARIOS:
        run = adk_runs[scenario]
        spans = tmp_path / f"{scenario}.otlp.json"
        spans.write_text(json.dumps(run["otlp"]))
        golden = tmp_path / f"{scenario}.evalset.json"
        golden.write_text(json.dumps(golden_of(scenario, run["invocations"])))
        with JudgeServer(script=RUN_SCRIPT) as server:
            monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", server.url)
            [result] = evaluate([spans], golden=[golden], config=config)
            prompts = server.prompts()
        by_name = {c.criterion: c for c in result.criterion_results}
        expected_prompts = []
        for metric, adk in run["results"].items():
            assert "error" not in adk, (scenario, metric, adk)
            ours = by_name[metric]
            assert status_of(ours) == adk["status"], (scenario, metric, ours, adk["status"])
            assert (ours.score if not ours.skipped else None) == adk["score"], (scenario, metric)
            expected_prompts += adk["prompts"]
        assert sorted(prompts) == sorted(expected_prompts), scenario


def test_an_adk_eval_folder_through_otel_eval_evaluate_gives_adks_verdicts(adk_runs, tmp_path):
    """``otel-eval evaluate --golden my_agent/x.evalset.json spans.json``, with the
    test_config.json beside the eval set naming two judge metrics, and the judge endpoint in the
    environment, as a user coming from ``adk eval`` would run it."""
    import os
    import sys

    run = adk_runs["transfer"]
    folder = tmp_path / "my_agent"
    folder.mkdir()
    (folder / "weather.evalset.json").write_text(json.dumps(golden_of("transfer", run["invocations"])))
    chosen = ("final_response_match_v2", "rubric_based_final_response_quality_v1")
    (folder / "test_config.json").write_text(json.dumps({"criteria": {m: RUN_METRICS[m] for m in chosen}}))
    spans = tmp_path / "transfer.otlp.json"
    spans.write_text(json.dumps(run["otlp"]))
    with JudgeServer(script=RUN_SCRIPT) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "otel_eval.cli",
                "evaluate",
                "--golden",
                str(folder / "weather.evalset.json"),
                "--db",
                str(tmp_path / "e.db"),
                "--json",
                str(spans),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=REPO,
            env={**os.environ, "OTEL_EVAL_JUDGE_BASE_URL": server.url},
        )
    assert done.returncode in (0, 1), done.stderr
    assert "criteria from" in done.stderr and "test_config.json" in done.stderr
    report = json.loads(done.stdout)
    [case] = report["sessions"]
    by_name = {c["criterion"]: c for c in case["criteria"]}
    for metric in chosen:
        adk = run["results"][metric]
        ours = by_name[metric]
        assert ours["score"] == adk["score"] and ("PASSED" if ours["passed"] else "FAILED") == adk["status"], metric
    verdict = "passed" if all(run["results"][m]["status"] == "PASSED" for m in chosen) else "failed"
    assert case["verdict"] == verdict


def test_a_collector_judges_adk_metrics_through_its_judge_pool(adk_runs, start_collector, tmp_path, monkeypatch):
    """The same run sent to a running collector over OTLP/HTTP: the deterministic verdict first
    (judge pending), then the judge pool's outcome, ADK's scores."""
    import sqlite3
    import urllib.request

    from otel_eval.adk_config.reading import load_test_config
    from tests.polling import wait_until

    run = adk_runs["transfer"]
    golden = tmp_path / "weather.evalset.json"
    golden.write_text(json.dumps(golden_of("transfer", run["invocations"])))
    chosen = ("final_response_match_v2", "rubric_based_multi_turn_trajectory_quality_v1", "hallucinations_v1")
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {m: RUN_METRICS[m] for m in chosen}}))
    with JudgeServer(script=RUN_SCRIPT) as server:
        monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", server.url)
        collector = start_collector(
            golden=[str(golden)],
            eval_config=load_test_config(tmp_path / "test_config.json").config,
            judge_models={"gemini-2.5-flash": "endpoint-model"},
        )
        request = urllib.request.Request(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            data=json.dumps(run["otlp"]).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        assert urllib.request.urlopen(request, timeout=10).status == 200

        def judged():
            conn = sqlite3.connect(collector.config.db)
            try:
                rows = conn.execute(
                    "SELECT c.criterion, c.score, c.passed, c.skipped FROM criterion_results c JOIN "
                    "evaluations e ON e.id = c.evaluation_id WHERE e.superseded = 0 "
                    "AND e.judge_pending = 0"
                ).fetchall()
            finally:
                conn.close()
            return {r[0]: r[1:] for r in rows} if any(r[0] in chosen for r in rows) else None

        outcome = wait_until(judged, timeout=60)
        models = {r["model"] for r in server.requests}
    for metric in chosen:
        adk = run["results"][metric]
        score, passed, skipped = outcome[metric]
        assert not skipped and score == adk["score"] and ("PASSED" if passed else "FAILED") == adk["status"], metric
    assert models == {"endpoint-model"}


def test_adk_judge_work_pending_at_shutdown_is_judged_after_a_restart(adk_runs, tmp_path):
    """A hallucinations_v1 job (two calls in sequence per response) left waiting when the engine
    stopped is stored in judge_jobs with its protocol; the next start judges it as google-adk
    judges the run."""
    import sqlite3

    from otel_eval import Engine, EngineSettings
    from otel_eval.readers import read_spans
    from tests.polling import wait_until

    run = adk_runs["transfer"]
    golden = tmp_path / "transfer.evalset.json"
    golden.write_text(json.dumps(golden_of("transfer", run["invocations"])))
    spans_file = tmp_path / "transfer.otlp.json"
    spans_file.write_text(json.dumps(run["otlp"]))
    spans = read_spans(spans_file)
    db = tmp_path / "e.db"

    def start(url: str) -> Engine:
        criterion = {**RUN_METRICS["hallucinations_v1"]}
        config = read_test_config(json.dumps({"criteria": {"hallucinations_v1": criterion}})).config
        config.criteria["hallucinations_v1"].options["base_url"] = url
        settings = EngineSettings(config=config, trace_quiet=0.05, session_idle=0.1)
        return Engine(db, golden=[golden], settings=settings).start()

    def outcome():
        conn = sqlite3.connect(db)
        try:
            return conn.execute(
                "SELECT c.score, c.passed, c.skipped FROM criterion_results c JOIN evaluations e ON "
                "e.id = c.evaluation_id WHERE e.superseded = 0 AND e.judge_pending = 0 AND "
                "c.criterion = 'hallucinations_v1'"
            ).fetchone()
        finally:
            conn.close()

    with JudgeServer(mode="hang") as judge:
        engine = start(judge.url)
        engine.ingest(spans)
        wait_until(lambda: judge.requests)
        engine.close()
    conn = sqlite3.connect(db)
    [(status, request)] = conn.execute("SELECT status, request FROM judge_jobs").fetchall()
    conn.close()
    assert status == "queued" and json.loads(request)["criteria"][0]["protocol"] == "hallucinations_v1"
    with JudgeServer(script=RUN_SCRIPT) as judge:
        engine = start(judge.url)
        try:
            score, passed, skipped = wait_until(outcome, timeout=30)
        finally:
            engine.close()
        asked = judge.prompts()
    adk = run["results"]["hallucinations_v1"]
    assert not skipped and score == adk["score"] and ("PASSED" if passed else "FAILED") == adk["status"]
    assert sorted(asked) == sorted(adk["prompts"])
