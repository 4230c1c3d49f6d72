"""``tool_trajectory_avg_score`` on a real multi-agent google-adk run, against google-adk itself.

The reference oracle runs an ADK app (``tests/reference/adk_app.py``: a coordinator with a
function tool, an ``AgentTool`` whose agent calls a tool of its own, and a sub-agent it transfers
to) with a scripted model, and answers with the spans ADK's telemetry emitted and each
invocation's tool calls as ``adk eval`` counts them. otel-eval scores those spans, through the
engine, against expectations built from both views of the run; google-adk's own
``TrajectoryEvaluator`` scores ADK's calls against the same expectations. The per-invocation
scores must agree: which calls are "the agent's" is part of ADK's number.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_eval import evaluate
from otel_eval.models.evalset import (
    CriterionConfig,
    EvalCase,
    EvalConfig,
    EvalSet,
    ExpectedToolCall,
    Invocation,
    MatchType,
    MessageContent,
)

Call = dict[str, Any]


@pytest.fixture(scope="module", params=[2, 1], ids=["semconv-spans", "legacy-spans"])
def adk_run(request, reference_oracle, tmp_path_factory) -> dict[str, Any]:
    """The run, with ADK's telemetry in its current schema (GenAI semantic conventions) and in
    its legacy one (``agent_run``, ``call_llm``, parallel calls' responses merged in one span)."""
    run = reference_oracle.ask({"op": "adk_multi_agent_run", "schema": request.param})
    path = tmp_path_factory.mktemp("adk") / "multi_agent.otlp.json"
    path.write_text(json.dumps(run["otlp"]))
    return {**run, "path": path}


def _span_calls(otlp: dict[str, Any]) -> list[str]:
    return [
        span["name"].split(" ", 1)[1]
        for rs in otlp["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        if span["name"].startswith("execute_tool ")
    ]


def _expectations(adk_calls: list[Call], nested: list[Call]) -> list[list[Call]]:
    """What a golden file could say of one turn: ADK's calls, reordered, cut, with other
    arguments, with the calls an AgentTool's agent made (which ADK never sees), and nothing."""
    out = [
        adk_calls,
        adk_calls[::-1],
        adk_calls[:-1],
        adk_calls[1:],
        [],
        [{**adk_calls[0], "args": {"unexpected": True}}, *adk_calls[1:]],
    ]
    for call in nested:
        out += [adk_calls + [call], [call], [*adk_calls[:1], call, *adk_calls[1:]]]
    return out


def _case(queries: list[str], expected: list[list[Call]]) -> EvalSet:
    return EvalSet(
        eval_set_id="multi_agent",
        eval_cases=[
            EvalCase(
                eval_id="run",
                conversation=[
                    Invocation(
                        invocation_id=f"turn-{i}",
                        user_content=MessageContent.user(query),
                        expected_tool_trajectory=[ExpectedToolCall(name=c["name"], args=c["args"]) for c in calls],
                    )
                    for i, (query, calls) in enumerate(zip(queries, expected))
                ],
            )
        ],
    )


def test_the_run_has_what_the_comparison_needs(adk_run):
    """The app did what the comparison relies on: a nested AgentTool call ADK does not count, a
    transfer, a sub-agent's calls, and two calls in one model response."""
    counted = [[c["name"] for c in inv["calls"]] for inv in adk_run["invocations"]]
    assert counted == [["get_time", "math_agent"], ["transfer_to_agent", "get_weather"], ["get_weather", "get_weather"]]
    assert "add" in _span_calls(adk_run["otlp"])  # made inside the AgentTool: in the spans, not in ADK's events


@pytest.mark.parametrize("match_type", [m.value for m in MatchType])
def test_tool_trajectory_avg_score_counts_the_calls_adk_counts(adk_run, reference_oracle, match_type):
    invocations = adk_run["invocations"]
    queries = [inv["query"] for inv in invocations]
    nested = [{"name": "add", "args": {"a": 2, "b": 3}}]
    per_turn = [_expectations(inv["calls"], nested if i == 0 else []) for i, inv in enumerate(invocations)]
    # Variant k of every turn together, the turns with fewer variants repeating their first.
    variants = [
        [options[k] if k < len(options) else options[0] for options in per_turn] for k in range(max(map(len, per_turn)))
    ]
    config = EvalConfig(
        criteria={"tool_trajectory_avg_score": CriterionConfig(threshold=1.0, match_type=MatchType(match_type))}
    )
    disagreements = []
    for expected in variants:
        adk = reference_oracle.ask(
            {
                "op": "adk_trajectory",
                "match_type": match_type,
                "threshold": 1.0,
                "invocations": [
                    {"actual": inv["calls"], "expected": calls} for inv, calls in zip(invocations, expected)
                ],
            }
        )
        [result] = evaluate([adk_run["path"]], golden=[_case(queries, expected)], config=config)
        assert result.eval_id == "run", "the session must match its case by the first user query"
        [criterion] = [c for c in result.criterion_results if c.criterion == "tool_trajectory_avg_score"]
        ours = [turn["score"] for turn in criterion.details["per_turn"]]
        if ours != adk["per_invocation"]:
            disagreements.append(
                {
                    "expected": [[c["name"] for c in calls] for calls in expected],
                    "otel-eval": ours,
                    "google-adk": adk["per_invocation"],
                }
            )
    assert not disagreements, json.dumps(disagreements, indent=1)


def test_response_match_score_reads_the_final_response_adk_reads(adk_run, reference_oracle):
    """Each turn's final response (the sub-agent's, after a transfer) and ADK's ROUGE-1 of it."""
    invocations = adk_run["invocations"]
    queries = [inv["query"] for inv in invocations]
    config = EvalConfig(criteria={"response_match_score": CriterionConfig(threshold=0.8)})
    for rewrite in (lambda text: text, lambda text: f"Well: {text.lower()} Anything else?", lambda text: "No idea."):
        expected = [rewrite(inv["final_response"]) for inv in invocations]
        case = EvalSet(
            eval_set_id="multi_agent",
            eval_cases=[
                EvalCase(
                    eval_id="run",
                    conversation=[
                        Invocation(
                            invocation_id=f"turn-{i}",
                            user_content=MessageContent.user(query),
                            expected_final_response=MessageContent.assistant(text),
                        )
                        for i, (query, text) in enumerate(zip(queries, expected))
                    ],
                )
            ],
        )
        [result] = evaluate([adk_run["path"]], golden=[case], config=config)
        [criterion] = [c for c in result.criterion_results if c.criterion == "response_match_score"]
        adk = reference_oracle.ask(
            {
                "op": "adk_response_match",
                "threshold": 0.8,
                "invocations": [
                    {"actual": inv["final_response"], "expected": text} for inv, text in zip(invocations, expected)
                ],
            }
        )
        assert [turn["score"] for turn in criterion.details["per_turn"]] == pytest.approx(adk["per_invocation"])
        assert criterion.passed == (adk["status"] == "PASSED")


def test_spans_without_message_content_are_unmatched_and_say_why(reference_oracle, tmp_path, caplog, monkeypatch):
    """google-adk's default telemetry leaves message content off its spans: no query, so no case
    can match. The evaluation, the report and the log (once a process) say why, and what to set."""
    import logging
    import subprocess
    import sys

    from otel_eval import session_evaluation

    monkeypatch.setattr(session_evaluation, "_warned_no_content", False)
    run = reference_oracle.ask({"op": "adk_multi_agent_run", "schema": 2, "content": False})
    path = tmp_path / "no_content.otlp.json"
    path.write_text(json.dumps(run["otlp"]))
    golden = _case([inv["query"] for inv in run["invocations"]], [inv["calls"] for inv in run["invocations"]])
    db = tmp_path / "r.db"
    with caplog.at_level(logging.WARNING, logger="otel_eval.scoring"):
        [result] = evaluate([path], golden=[golden], db=db)
    assert (result.eval_id, result.verdict) == ("", "not_evaluated")
    assert [r.getMessage() for r in caplog.records if "CAPTURE_MESSAGE_CONTENT" in r.getMessage()]
    report = subprocess.run(
        [sys.executable, "-m", "otel_eval.cli", "report", "--db", str(db), "--session", result.session_id],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"},
    )
    why = " ".join(report.stdout.split())
    assert "why: no user input to match on" in why and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in why
