"""``tool_trajectory_avg_score`` counts what google-adk's own invocations list, for every kind of
multi-agent ADK app (issue 31, item 4), and ADK's efficiency metrics count what ADK's evaluators
count on those invocations.

``tests/data/captures/adk_multiagent/`` holds real google-adk 2.13 runs with a scripted model
(``captures/python/adk_multiagent/run.py``): a transfer to a chat sub-agent, an ``AgentTool``, a
``SequentialAgent``, a ``ParallelAgent``, a ``LoopAgent``, a ``Workflow`` (with a tool node),
``single_turn`` and ``task`` sub-agents, each in ADK's GenAI telemetry and in its legacy schema.
Beside each capture's spans (``<name>.traces.pb``) is ADK's side of the same run
(``<name>.adk.json``): its invocations' tool calls as ``convert_events_to_eval_invocations`` and
``get_all_tool_calls`` list them, as ``adk eval`` reads them, and the values google-adk's efficiency
evaluators give those invocations.

The captures are checked against ADK itself: the scenarios are run again under the reference
environment (ADK's side must be what it was when the capture was made), and otel-eval reads both
the stored spans and the fresh ones. ADK's ``TrajectoryEvaluator`` scores the expectations live.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
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
from otel_eval.models.results import CriterionResult
from otel_eval.readers import read_spans
from tests.paths import REPO
from tests.reference.client import reference_python

CAPTURES = Path(__file__).parent / "data" / "captures" / "adk_multiagent"
NAMES = sorted(p.name[: -len(".adk.json")] for p in CAPTURES.glob("*.adk.json"))
RUN = REPO / "captures" / "python" / "adk_multiagent" / "run.py"
EFFICIENCY_ORACLE = REPO / "tests" / "reference" / "adk_efficiency_oracle.py"

Call = dict[str, Any]

EFFICIENCY = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")


def _side(name: str) -> dict[str, Any]:
    return json.loads((CAPTURES / f"{name}.adk.json").read_text())


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """Every scenario run again now, under google-adk in the reference environment: its side
    and, in ``path``, the run's spans as an OTLP/JSON file."""
    python = reference_python()
    if not python.exists():
        raise RuntimeError(
            f"reference environment missing: {python} does not exist; run `make reference` "
            "(make test does it) or set OTEL_EVAL_REFERENCE_PYTHON"
        )
    done = subprocess.run(
        [str(python), "-W", "ignore", str(RUN), "--json"], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout)
    folder = tmp_path_factory.mktemp("adk_multiagent")
    for name, run in runs.items():
        run["path"] = folder / f"{name}.otlp.json"
        run["path"].write_text(json.dumps(run.pop("otlp")))
    return runs


def _golden(name: str, side: dict[str, Any], expected: list[list[Call]]) -> EvalSet:
    """One case, one invocation per ADK invocation, each expecting ``expected[i]``. Invocation *i*
    says the *i*-th user message (the session is matched to the case by the first): where one ADK
    invocation takes two messages (a task agent asking the user), it is the captures' last."""
    return EvalSet(
        eval_set_id="adk_multiagent",
        eval_cases=[
            EvalCase(
                eval_id=name,
                conversation=[
                    Invocation(
                        invocation_id=f"{name}-{i}",
                        user_content=MessageContent.user(message),
                        expected_tool_trajectory=[ExpectedToolCall(name=c["name"], args=c["args"]) for c in calls],
                    )
                    for i, (message, calls) in enumerate(zip(side["user_messages"], expected))
                ],
            )
        ],
    )


def _evaluated(
    path: Any,
    name: str,
    side: dict[str, Any],
    expected: list[list[Call]],
    match_type: str = "EXACT",
    also: tuple[str, ...] = (),
) -> dict[str, CriterionResult]:
    """``path``: a capture file, or the spans themselves (a list)."""
    criteria = {
        "tool_trajectory_avg_score": CriterionConfig(threshold=1.0, match_type=MatchType(match_type)),
        **{metric: CriterionConfig(threshold=0.0) for metric in also},
    }
    [result] = evaluate(
        path if isinstance(path, list) else [path],
        golden=[_golden(name, side, expected)],
        config=EvalConfig(criteria=criteria),
    )
    assert result.eval_id == name, f"{name}: the session must match its case by the first user message"
    return {c.criterion: c for c in result.criterion_results}


def _scored(
    path: Path, name: str, side: dict[str, Any], expected: list[list[Call]], match_type: str = "EXACT"
) -> CriterionResult:
    criterion = _evaluated(path, name, side, expected, match_type)["tool_trajectory_avg_score"]
    assert not criterion.skipped, criterion.details
    return criterion


def _compared(criterion: CriterionResult) -> list[list[Call]]:
    """Per turn, the calls ``tool_trajectory_avg_score`` compared, as the evaluation reports them."""
    return [
        [{"name": c["name"], "args": c["args"]} for c in turn["actual_calls"]] for turn in criterion.details["per_turn"]
    ]


def test_every_kind_of_multi_agent_app_is_captured():
    scenarios = {_side(name)["scenario"] for name in NAMES}
    assert scenarios == {
        "transfer",
        "agent_tool",
        "sequential",
        "parallel",
        "loop",
        "workflow",
        "single_turn",
        "task",
        "task_asks_user",
    }
    assert {_side(name)["telemetry_schema"] for name in NAMES} == {1, 2}
    assert all((CAPTURES / f"{name}.traces.pb").exists() for name in NAMES)


def test_the_runs_show_what_the_comparison_relies_on():
    """What ADK counts and the spans alone do not say: a transfer_to_agent and a finish_task call,
    an AgentTool's inner call left out, a task delegation that has no tool span of its own."""

    def adk_calls(name: str) -> list[str]:
        return [c["name"] for inv in _side(name)["invocations"] for c in inv["calls"]]

    assert "transfer_to_agent" in adk_calls("transfer")
    assert "finish_task" in adk_calls("task")
    assert adk_calls("agent_tool") == ["math_agent"]  # its agent's `add` ran in a session of its own
    spans = (CAPTURES / "agent_tool.traces.pb").read_bytes()
    assert b"execute_tool add" in spans
    task_spans = (CAPTURES / "task.traces.pb").read_bytes()
    assert b"invoke_agent booker" in task_spans and b"execute_tool booker" not in task_spans
    assert adk_calls("task")[0] == "booker"
    asks = _side("task_asks_user")  # the user's answer resumes the task's invocation
    assert len(asks["invocations"]) == 1 and len(asks["user_messages"]) == 2

    def names(capture: str) -> list[str]:
        return [span.name.split(" ")[0] for span in read_spans(CAPTURES / f"{capture}.traces.pb")]

    legacy = names("transfer-legacy")  # each model call shown by two spans, one inside the other
    assert legacy.count("call_llm") == legacy.count("generate_content") == 6
    assert _side("transfer-legacy")["adk_efficiency"]["inference_call_count_v1"]["per_invocation"] == [4, 2]
    # the AgentTool's agent's model calls are spans of the turn, not model events of ADK's invocation
    assert names("agent_tool").count("generate_content") == 4
    assert _side("agent_tool")["adk_efficiency"]["inference_call_count_v1"]["per_invocation"] == [2]


@pytest.mark.parametrize("name", NAMES)
def test_adk_lists_today_what_the_capture_recorded(name, live):
    """ADK run again lists the same calls and scores the same: the stored side is still ADK's."""
    stored, now = _side(name), live[name]
    for key in ("user_messages", "invocations", "calls_per_user_message", "adk_scores", "adk_efficiency"):
        assert now[key] == stored[key], f"{name}: {key} changed; rebuild with captures/python/adk_multiagent/build.py"


@pytest.mark.parametrize("source", ["stored", "live"])
@pytest.mark.parametrize("name", NAMES)
def test_each_turn_lists_the_calls_adk_lists(name, source, live):
    """The session has one turn per ADK invocation, and the calls compared in each are, in order
    and with their arguments, that invocation's calls; a task agent that asks the user included
    (the user's answer resumes its invocation: one turn for the two messages)."""
    side = _side(name) if source == "stored" else live[name]
    path = CAPTURES / f"{name}.traces.pb" if source == "stored" else live[name]["path"]
    invocations = [inv["calls"] for inv in side["invocations"]]
    ours = _compared(_scored(path, name, side, invocations))
    assert ours == invocations, json.dumps({"otel-eval": ours, "google-adk": invocations}, indent=1)


@pytest.mark.parametrize("source", ["stored", "live"])
@pytest.mark.parametrize("name", NAMES)
def test_efficiency_metrics_are_what_adks_evaluators_give_its_invocations(name, source, live):
    """``tool_call_count_v1``, ``inference_call_count_v1`` and ``token_usage_v1``, per invocation
    (and token_usage_v1's input and output tokens) and overall, are the values google-adk's own
    efficiency evaluators give ADK's invocations of the same run: in the legacy schema, whose
    ``call_llm`` span has a ``generate_content`` span inside, each model call and its tokens once;
    an ``AgentTool``'s agent's model calls left out (it runs in a session of its own)."""
    side = _side(name) if source == "stored" else live[name]
    path = CAPTURES / f"{name}.traces.pb" if source == "stored" else live[name]["path"]
    by_name = _evaluated(path, name, side, [inv["calls"] for inv in side["invocations"]], also=EFFICIENCY)
    ours, theirs = {}, {}
    for metric in EFFICIENCY:
        criterion, adk = by_name[metric], side["adk_efficiency"][metric]
        assert criterion.passed and criterion.details["informational"] is True, criterion.details
        ours[metric] = {"score": criterion.score, "per_invocation": [t["value"] for t in criterion.details["per_turn"]]}
        theirs[metric] = {"score": adk["score"], "per_invocation": adk["per_invocation"]}
    ours["tokens"] = [
        {k: t[k] for k in ("input_tokens", "output_tokens")} for t in by_name["token_usage_v1"].details["per_turn"]
    ]
    theirs["tokens"] = [
        {k: t[k] for k in ("input_tokens", "output_tokens")}
        for t in side["adk_efficiency"]["token_usage_v1"]["per_invocation_tokens"]
    ]
    assert ours == theirs, json.dumps({"otel-eval": ours, "google-adk": theirs}, indent=1)


@pytest.mark.parametrize("name", ["transfer", "transfer-legacy"])
def test_token_usage_counts_a_turn_without_token_counts_as_adk_does(name):
    """The second invocation's model calls reported no token counts (stripped from its spans):
    n/a for that turn, and the average over every turn, as google-adk's evaluator gives
    invocations whose model events carry no usage metadata (its model calls still count)."""
    side = _side(name)
    spans = read_spans(CAPTURES / f"{name}.traces.pb")
    first_trace = min(spans, key=lambda s: s.start_ns).trace_id
    for span in spans:
        if span.trace_id == first_trace:
            continue
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            span.attributes.pop(key, None)
        if "gcp.vertex.agent.llm_response" in span.attributes:  # the legacy schema has them here too
            response = json.loads(span.attributes["gcp.vertex.agent.llm_response"])
            response.pop("usage_metadata", None)
            span.attributes["gcp.vertex.agent.llm_response"] = json.dumps(response)
    by_name = _evaluated(spans, name, side, [inv["calls"] for inv in side["invocations"]], also=EFFICIENCY)
    ours = {
        metric: {
            "score": by_name[metric].score,
            "per_invocation": [t["value"] for t in by_name[metric].details["per_turn"]],
        }
        for metric in ("inference_call_count_v1", "token_usage_v1")
    }
    # ADK's side: each invocation's model events, the first's with the usage ADK recorded per call
    efficiency = side["adk_efficiency"]
    first_calls = int(efficiency["inference_call_count_v1"]["per_invocation"][0])
    first_tokens = efficiency["token_usage_v1"]["per_invocation_tokens"][0]
    per_call = {k: first_tokens[k] // first_calls for k in ("input_tokens", "output_tokens")}
    events = [[per_call] * first_calls, [None] * int(efficiency["inference_call_count_v1"]["per_invocation"][1])]
    done = subprocess.run(
        [str(reference_python()), "-W", "ignore", str(EFFICIENCY_ORACLE)],
        input=json.dumps(events),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout)
    assert theirs["token_usage_v1"]["per_invocation"][1] is None  # what is compared: a turn without counts
    assert ours == theirs, json.dumps({"otel-eval": ours, "google-adk": theirs}, indent=1)


def _expectations(calls: list[Call]) -> list[list[Call]]:
    """What a golden file could say of one turn: ADK's calls, reordered, cut, with other arguments,
    with one more call, and no call."""
    out = [calls, calls[::-1], calls[1:], calls[:-1], [], calls + [{"name": "get_time", "args": {}}]]
    if calls:
        out.append([{**calls[0], "args": {**calls[0]["args"], "unexpected": True}}, *calls[1:]])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_tool_trajectory_avg_score_gives_adks_score_and_verdict(name, reference_oracle):
    """The capture's recorded expectations (one met, one not) and variants of ADK's calls, per
    match type: otel-eval's score, per-turn scores and verdict are google-adk's
    ``TrajectoryEvaluator``'s on ADK's own invocations."""
    side = _side(name)
    path = CAPTURES / f"{name}.traces.pb"
    invocations = [inv["calls"] for inv in side["invocations"]]
    for recorded in side["adk_scores"].values():
        criterion = _scored(path, name, side, recorded["expected"])
        assert (criterion.score, criterion.passed) == (recorded["score"], recorded["status"] == "PASSED"), name
    per_turn = [_expectations(calls) for calls in invocations]
    variants = [
        [options[k] if k < len(options) else options[0] for options in per_turn] for k in range(max(map(len, per_turn)))
    ]
    disagreements = []
    for match_type in [m.value for m in MatchType]:
        for expected in variants:
            adk = reference_oracle.ask(
                {
                    "op": "adk_trajectory",
                    "match_type": match_type,
                    "threshold": 1.0,
                    "invocations": [
                        {"actual": actual, "expected": calls} for actual, calls in zip(invocations, expected)
                    ],
                }
            )
            criterion = _scored(path, name, side, expected, match_type)
            ours = {
                "score": criterion.score,
                "passed": criterion.passed,
                "per_invocation": [turn["score"] for turn in criterion.details["per_turn"]],
            }
            theirs = {
                "score": adk["score"],
                "passed": adk["status"] == "PASSED",
                "per_invocation": adk["per_invocation"],
            }
            if ours != theirs:
                disagreements.append(
                    {"match_type": match_type, "expected": expected, "otel-eval": ours, "google-adk": theirs}
                )
    assert not disagreements, json.dumps(disagreements, indent=1)


@pytest.mark.parametrize("name", ["transfer", "transfer-legacy"])
def test_calls_of_one_model_response_are_known_as_parallel_in_both_schemas(name):
    """The weather agent asked for Rome and Oslo in one response. ADK's GenAI spans name such a
    call ``get_weather_0`` on the model span and ``adk-<uuid>`` on the tool span; read as the
    same call, both schemas show one parallel group: otel-eval's own ``trajectory_match`` takes
    the pair in either order, while ``tool_trajectory_avg_score`` keeps ADK's order, as ADK does."""
    side = _side(name)
    first, second = side["calls_per_user_message"]
    assert [c["name"] for c in second] == ["get_weather", "get_weather"]
    swapped = [first, second[::-1]]
    config = EvalConfig(
        criteria={
            "trajectory_match": CriterionConfig(threshold=1.0, match_type=MatchType.EXACT),
            "tool_trajectory_avg_score": CriterionConfig(threshold=1.0, match_type=MatchType.EXACT),
        }
    )
    [result] = evaluate([CAPTURES / f"{name}.traces.pb"], golden=[_golden(name, side, swapped)], config=config)
    by_name = {c.criterion: c for c in result.criterion_results}
    assert by_name["trajectory_match"].passed, by_name["trajectory_match"].details
    assert [t["score"] for t in by_name["tool_trajectory_avg_score"].details["per_turn"]] == [1.0, 0.0]


def test_a_requested_call_counts_when_an_agent_of_its_name_ran_it_and_only_then():
    """The rule behind the task delegation, in any GenAI-convention trace: a call the model asked
    for with no tool span of its own is a call of the turn when an agent of that name ran after
    the request (a delegation), in the order asked; a call that nothing ran stays out while the
    turn's other calls have tool spans, as before."""
    from otel_eval.mapping import map_spans
    from otel_eval.spans import SpanRecord
    from otel_eval.trajectory import build_trajectory

    def span(span_id: str, parent: Any, name: str, start: int, end: int, **attrs: Any) -> SpanRecord:
        return SpanRecord("t1", span_id, parent, name, start, end, status="ok", attributes=attrs)

    asked = [
        {"type": "tool_call", "id": f"c{i}", "name": name, "arguments": args}
        for i, (name, args) in enumerate([("lookup", {"q": "x"}), ("helper", {"request": "do it"}), ("ghost", {})])
    ]
    spans = [
        span(
            "r",
            None,
            "invoke_agent boss",
            0,
            100,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "boss"},
        ),
        span(
            "m",
            "r",
            "chat m",
            1,
            10,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": asked}]),
            },
        ),
        span(
            "t",
            "r",
            "execute_tool lookup",
            11,
            20,
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "c0"},
        ),
        span(
            "h",
            "r",
            "invoke_agent helper",
            21,
            40,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"},
        ),
    ]
    calls = build_trajectory("s", map_spans(spans)).calls
    assert [(c.name, c.args, c.agent) for c in calls] == [
        ("lookup", {"q": "x"}, "boss"),
        ("helper", {"request": "do it"}, "boss"),
    ]
    before = [s for s in spans if s.span_id != "h"] + [
        span(
            "h",
            "r",
            "invoke_agent helper",
            0,
            1,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"},
        )
    ]
    assert [c.name for c in build_trajectory("s", map_spans(before)).calls] == ["lookup"]  # ran before it was asked


def test_traces_are_one_turn_only_when_their_model_spans_name_one_adk_invocation():
    """The task that asks the user is one turn because its two traces' model spans carry one ADK
    invocation id; the same spans without that attribute are two turns, one per trace, as for
    every other framework."""
    from otel_eval.mapping import map_spans
    from otel_eval.trajectory import build_trajectory

    spans = read_spans(CAPTURES / "task_asks_user.traces.pb")
    [turn] = build_trajectory("s", map_spans(spans)).turns
    assert len(turn.trace_ids) == 2 and turn.trace_id == turn.trace_ids[0]
    assert (turn.user_input, turn.final_response) == ("Book me a table.", "Your table is booked.")
    for span in spans:
        span.attributes.pop("gcp.vertex.agent.invocation_id", None)
    turns = build_trajectory("s", map_spans(spans)).turns
    assert [t.user_input for t in turns] == ["Book me a table.", "Friday, for two."]
    assert [[c.name for c in t.calls] for t in turns] == [["booker"], ["book_table", "finish_task"]]
