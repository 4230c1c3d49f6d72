"""EvalConfig criteria → one EvalCaseResult per session; results → an EvalReport.

Rules (docs/metrics.md has every formula):

* Invocation *i* of the case is scored against turn *i* of the trajectory. Turns the session is
  missing count as empty turns (no calls, no answer); turns beyond the case are not scored. Both
  gaps are reported in ``details['turns']``.
* A criterion that does not apply (nothing expected, no judge endpoint) is *skipped* with a reason
  and never fails the case. A criterion that fails to run (bad regex, unknown criterion name) has
  ``error`` set and fails the case: configuration mistakes must be loud. An LLM judge that is down,
  erroring, hanging or answering garbage is *our* dependency failing, not the agent: its criterion
  is not evaluated (skipped, with the reason as its ``error``), never a FAIL.
* Judge criteria can be *deferred* (``judge_requests``, the engine's way): the deterministic
  criteria are scored now, the judge criterion is stored pending (skipped, ``details['judge'] ==
  'pending'``) and its request (the turn, the reference, the tool trajectory) is handed back for the
  judge pool (:mod:`otel_eval.judging`). Sampling (``sample_rate``) and ``when`` filters decide
  here, from the session id and the deterministic verdict.
* The verdict (ADK's rule, :func:`otel_eval.models.results.verdict_of`): ``failed`` when a
  criterion that ran failed or errored; else ``passed`` when at least one check ran; else
  ``not_evaluated`` — every criterion skipped, nothing checked, so no PASS. ``health`` without
  limits only measures and is no check (ADK's INFORMATIONAL).
  ``EvalCaseResult.score`` = mean score of the non-skipped criteria other than ``health``.
* ``health`` is reported for every session (unless disabled) and fails only on a configured limit.
* With no golden case (``case=None``) only ``health`` runs; the result has ``eval_id=""`` and, by
  the same rule, is not_evaluated unless health limits are configured. :func:`build_report`
  leaves such results out unless asked.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, NamedTuple, Optional

from .metrics import adk_metrics
from .metrics.health import FLAG_LIMITS, LIMITS, health
from .metrics.judge import DEFAULT_RUBRICS, ENV_BASE_URL, Judge
from .judging import context as judge_context_
from .judging.jobs import FILTERED, NOT_SAMPLED, PENDING, PENDING_REASON, UNAVAILABLE, public_options
from .judging.selection import filtered_out, judges_unmatched, not_sampled_reason, option_problems, sampled
from .vertex_record import vertex_record
from .metrics.layer1 import check_record
from .metrics.response import adk_rouge1, contains, exact_match, regex_match, rouge1
from .metrics.sql import sql_and_tables, table_matches
from .metrics.alignment import adk_match, align
from .models.arguments import ArgumentPolicy
from .models.evalset import CriterionConfig, EvalCase, EvalConfig, EvalSet, Invocation
from .models.suggest import unknown_name
from .models.results import (FAILED, NOT_EVALUATED, PASSED, CriterionResult, CriterionStats, EvalCaseResult,
                             EvalReport, EvalSummary, verdict_of)
from .trajectory import ActualToolCall, Trajectory, Turn

HEALTH = "health"
_EPSILON = 1e-9
"""Scores like 0.7 computed as 0.69999999 still meet a 0.7 threshold."""

ALIASES = {
    "rubric_based": "llm_judge",
    "final_response_judge": "llm_judge",
    "response_match_score": "response_match",
}
"""Criterion names other tools use for the same measure. ``options.kind`` may also name the kind,
so one config can run, say, two response_match criteria with different methods."""


class _Skip(Exception):
    """The criterion does not apply; the message is the reason."""


def _decides_as_adk(name: str, kind: str) -> bool:
    """Criteria whose number is google-adk's: ``tool_trajectory_avg_score``, ``trajectory_match``
    (ADK's match-type verdict averaged) and ``response_match_score`` (ADK's ROUGE-1). Their score
    is stored unrounded and PASSes exactly when ``score >= threshold``, as ADK decides: no
    tolerance, which an average of 0/1 verdicts does not need and ADK does not give."""
    return kind in ("tool_trajectory_avg_score", "trajectory_match") or name == ADK_RESPONSE_MATCH


def _passed(score: float, threshold: float) -> bool:
    return score + _EPSILON >= threshold


def _result(name: str, cfg: CriterionConfig, score: float, details: dict[str, Any],
            exact: bool = False) -> CriterionResult:
    score = float(score)
    if exact:
        return CriterionResult(criterion=name, score=score, passed=score >= cfg.threshold,
                               threshold=cfg.threshold, details=details)
    # Decided on the unrounded score: the six-place rounding is for display only, so 0.6666666
    # never meets a threshold of 0.666667.
    return CriterionResult(criterion=name, score=round(score, 6), passed=_passed(score, cfg.threshold),
                           threshold=cfg.threshold, details=details)


# --- turn alignment -------------------------------------------------------------------------

def _turn(trajectory: Trajectory, index: int) -> Turn:
    return trajectory.turns[index] if index < len(trajectory.turns) else Turn(index=index, trace_id="")


def _turn_gap(trajectory: Trajectory, case: EvalCase) -> dict[str, Any]:
    expected, actual = len(case.conversation), len(trajectory.turns)
    return {
        "expected": expected,
        "actual": actual,
        "missing_turns": list(range(actual, expected)),
        "unscored_extra_turns": list(range(expected, actual)),
    }


def _per_invocation(
    trajectory: Trajectory,
    case: EvalCase,
    applies: Callable[[Invocation], bool],
    score_one: Callable[[Invocation, Turn], tuple[float, dict[str, Any]]],
    nothing_expected: str,
) -> tuple[float, dict[str, Any]]:
    """Mean over the invocations that carry the expectation; each detail entry names its turn."""
    scores: list[float] = []
    per_turn: list[dict[str, Any]] = []
    for i, invocation in enumerate(case.conversation):
        if not applies(invocation):
            continue
        turn = _turn(trajectory, i)
        score, details = score_one(invocation, turn)
        scores.append(score)
        per_turn.append({"invocation": invocation.invocation_id, "turn": i,
                         "turn_present": i < len(trajectory.turns), "score": round(score, 6), **details})
    if not scores:
        raise _Skip(nothing_expected)
    return sum(scores) / len(scores), {"per_turn": per_turn, "turns": _turn_gap(trajectory, case)}


# --- trajectory criteria ----------------------------------------------------------------------

def _calls_for(turn: Turn, expected_names: Callable[[], set[str]], max_depth: Any,
               adk: bool = False) -> tuple[list[ActualToolCall], Any]:
    """The calls compared with the expectation. "auto": the top-level agent's calls, unless the
    expectation names a tool only a nested (sub-agent) call used — then every call.
    ``expected_names`` is asked only then: most turns have no nested call. With ``adk``
    (``tool_trajectory_avg_score``), "auto" is what ``adk eval`` counts: every call but those
    made inside another tool call (an ``AgentTool``'s agent runs in a session of its own), so a
    sub-agent's calls after a transfer count and an agent-as-tool's never do."""
    if max_depth is None:
        return list(turn.calls), None
    if max_depth == "auto" and adk:
        return [c for c in turn.calls if not c.inside_call], "auto"
    if max_depth == "auto":
        top: list[ActualToolCall] = []
        nested_names: set[str] = set()
        for c in turn.calls:
            if c.depth == 0:
                top.append(c)
            elif c.depth > 0:
                nested_names.add(c.name)
        if nested_names and (expected_names() - {c.name for c in top}) & nested_names:
            return list(turn.calls), None
        return top, 0
    return [c for c in turn.calls if c.depth <= int(max_depth)], int(max_depth)


TRAJECTORY_MEASURES = {
    "trajectory_match": "adk_match_avg",
    "tool_trajectory_avg_score": "adk_match_avg",
    "trajectory_precision": "precision",
    "trajectory_recall": "recall",
    "trajectory_f1": "f1",
    "trajectory_in_order_score": "in_order_f1",
    "single_tool_use": "single_tool_use",
}
"""Trajectory criterion kind → the measure its score is, stored as ``details['measure']``.
``adk_match_avg``: per invocation 1.0 when the match type holds, else 0.0, averaged (ADK's
``tool_trajectory_avg_score``). Partial credit comes only from the criteria named for it."""

_ADK_OPTIONS = {"kind", "max_depth"}
"""The only options ``tool_trajectory_avg_score`` takes: anything else would stop it being ADK's number."""


def _expects_calls(inv: Invocation) -> bool:
    """None: the golden does not say, so tool use is not checked; [] says "no tool". A Big Sky
    example (first call only) is always checked, as Big Sky's matchToolCall checks every example."""
    return inv.expected_tool_trajectory is not None or inv.first_call_only


_NOT_SAID = "the case does not say which tools to call (no expected_tool_trajectory) in any turn"


def _trajectory_score(kind: str) -> Callable[..., tuple[float, dict]]:
    """The criterion computing ``kind``'s measure over the invocations that state an expected trajectory."""
    measure = TRAJECTORY_MEASURES[kind]
    adk = kind == "tool_trajectory_avg_score"

    def criterion(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, **_: Any) -> tuple[float, dict]:
        options = cfg.options
        if options.get("graded"):
            raise ValueError("options.graded: partial credit is a criterion of its own; use trajectory_in_order_score "
                             "(or trajectory_f1 / trajectory_recall / trajectory_precision) with its own threshold")
        if adk and set(options) - _ADK_OPTIONS:
            raise ValueError(f"options.{sorted(set(options) - _ADK_OPTIONS)[0]}: tool_trajectory_avg_score computes "
                             "google-adk's number (names, Python == on arguments, check_args = not ignore_args); "
                             "use trajectory_match for argument options")
        if adk:
            policy = None
        elif any(key in options for key in _ARGUMENT_OPTIONS):
            policy = ArgumentPolicy.from_options(options)
        else:  # no argument option: the default policy (frozen, never changed), built once
            policy = _DEFAULT_POLICY
        tool_name = options.get("tool_name")
        if kind == "single_tool_use" and not isinstance(tool_name, str):
            raise ValueError("options.tool_name: single_tool_use needs the name of the tool that must be used")
        max_depth = options.get("max_depth", "auto")
        arguments = "ignored" if not cfg.check_args else ("python ==" if adk else "by meaning")

        def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
            expected = inv.expected_tool_trajectory or []
            first_call_only = inv.first_call_only or bool(options.get("first_call_only"))

            def names() -> set[str]:
                return {c.name for c in expected} | ({tool_name} if kind == "single_tool_use" else set())

            calls, depth = _calls_for(turn, names, max_depth, adk)
            if adk:  # ADK's rules: every call in recorded order, no groups, failed attempts count
                alignment = align(expected, calls, check_args=cfg.check_args, collapse_retries=False,
                                  first_call_only=first_call_only, parallel_groups=False,
                                  compare=lambda e, a: a.args == e.args)
                satisfied = adk_match(expected, alignment.actual, cfg.match_type, ignore_args=not cfg.check_args)
            else:
                alignment = align(expected, calls, check_args=cfg.check_args, arg_options=policy,
                                  collapse_retries=bool(options.get("collapse_retries", True)),
                                  first_call_only=first_call_only)
                satisfied = alignment.satisfies(cfg.match_type)
            if measure == "adk_match_avg":
                score = float(satisfied)
            elif measure == "single_tool_use":
                score = float(alignment.single_tool_use(tool_name or ""))
            else:  # precision, recall, f1, in_order_f1: the alignment's properties of those names
                score = getattr(alignment, measure)
            details: dict[str, Any] = {"measure": measure}
            if measure == "adk_match_avg":
                details.update(match_type=cfg.match_type.value, satisfied=satisfied)
            if kind == "single_tool_use":
                details["tool_name"] = tool_name
            details["max_depth"] = depth
            details["first_call_only"] = first_call_only
            details.update(alignment.summary())  # not as keywords: that would copy the summary once more
            return score, details

        if kind == "single_tool_use":  # needs no golden trajectory: every turn is checked
            applies = (lambda inv: True)
        else:
            applies = _expects_calls
        score, details = _per_invocation(trajectory, case, applies, one, _NOT_SAID)
        head: dict[str, Any] = {"measure": measure, "arguments": arguments}
        if measure == "adk_match_avg":
            head["match_type"] = cfg.match_type.value
        if adk:
            head["reference"] = "google-adk TrajectoryEvaluator"
        return score, {**head, **details}

    return criterion


def _first_call(turn: Turn) -> Optional[ActualToolCall]:
    """The agent's first choice: the first call of the shallowest agent level."""
    if not turn.calls:
        return None
    depth = min(c.depth for c in turn.calls)
    return next(c for c in turn.calls if c.depth == depth)


class _Expectation(NamedTuple):
    """What a criterion needs of an invocation to check it, and the reason it is skipped when no
    invocation of the case has it."""

    applies: Callable[[Invocation], bool]
    nothing_expected: str


_EXPECTS_TOOL_SELECTION = _Expectation(lambda inv: inv.expected_tool_selection is not None,
                                       "the case sets no expected tool selection")
_EXPECTS_SQL = _Expectation(lambda inv: inv.expected_sql is not None,
                            "the case does not say whether SQL is expected")
_EXPECTS_TABLES = _Expectation(lambda inv: bool(inv.expected_tables), "the case expects no tables")


def _tool_selection(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, **_: Any) -> tuple[float, dict]:
    def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
        first = _first_call(turn)
        actual = first.name if first else None
        return float(actual == inv.expected_tool_selection), {
            "expected_tool": inv.expected_tool_selection, "actual_tool": actual,
            "calls": [c.name for c in turn.calls],
        }

    score, details = _per_invocation(trajectory, case, _EXPECTS_TOOL_SELECTION.applies, one,
                                     _EXPECTS_TOOL_SELECTION.nothing_expected)
    return score, {"measure": "first_tool_match", **details}


def _sql_generation(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, **_: Any) -> tuple[float, dict]:
    def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
        statements, tables = sql_and_tables(turn.sql_values())
        generated = bool(statements)
        return float(generated == inv.expected_sql), {
            "expected_sql": inv.expected_sql, "sql_generated": generated, "sql": statements, "tables": tables,
        }

    return _per_invocation(trajectory, case, _EXPECTS_SQL.applies, one, _EXPECTS_SQL.nothing_expected)


def _table_usage(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, **_: Any) -> tuple[float, dict]:
    def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
        statements, tables = sql_and_tables(turn.sql_values())
        found = [e for e in inv.expected_tables if any(table_matches(e, t) for t in tables)]
        missing = [e for e in inv.expected_tables if e not in found]
        return len(found) / len(inv.expected_tables), {
            "expected_tables": inv.expected_tables, "actual_tables": tables, "found": found,
            "missing": missing, "sql": statements,
        }

    return _per_invocation(trajectory, case, _EXPECTS_TABLES.applies, one, _EXPECTS_TABLES.nothing_expected)


# --- response criteria --------------------------------------------------------------------------

RESPONSE_METHODS = ("rouge1", "adk_rouge1", "exact", "contains", "regex")
ADK_RESPONSE_MATCH = "response_match_score"
"""google-adk's name: always its own measure (``adk_rouge1``), never another method."""


def _response_match(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, name: str = "response_match",
                    **_: Any) -> tuple[float, dict]:
    options = cfg.options
    if name == ADK_RESPONSE_MATCH:
        if options.get("method", "adk_rouge1") != "adk_rouge1" or "use_stemmer" in options:
            raise ValueError(f"{ADK_RESPONSE_MATCH} is google-adk's ROUGE-1 (method adk_rouge1, always stemmed); "
                             "for another method or stemming choice name the criterion differently, "
                             "with options.kind = \"response_match\"")
        method = "adk_rouge1"
    else:
        method = options.get("method", "rouge1")
    if method not in RESPONSE_METHODS:
        raise ValueError(f"options.method: unknown response method {method!r}; "
                         f"expected one of {', '.join(RESPONSE_METHODS)}")
    fold_case = options.get("fold_case")
    if method == "regex":
        pattern = options.get("pattern")
        response = trajectory.final_response
        matched = regex_match(pattern, response, ignore_case=bool(options.get("ignore_case", False)))
        return float(matched), {"method": method, "pattern": pattern, "response": response}

    def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
        reference = inv.expected_final_response.get_text() if inv.expected_final_response else ""
        candidate = turn.final_response or ""
        details: dict[str, Any] = {"expected": reference, "actual": turn.final_response}
        if method == "exact":
            score = float(exact_match(reference, candidate, fold_case=bool(fold_case)))
        elif method == "contains":
            score = float(contains(reference, candidate, fold_case=True if fold_case is None else bool(fold_case)))
        elif method == "adk_rouge1":
            r = adk_rouge1(reference, candidate)
            score = r.fmeasure
            details.update(precision=round(r.precision, 6), recall=round(r.recall, 6))
        else:
            r = rouge1(reference, candidate, use_stemmer=bool(options.get("use_stemmer", False)))
            score = r.fmeasure
            details.update(precision=round(r.precision, 6), recall=round(r.recall, 6))
        return score, details

    score, details = _per_invocation(trajectory, case, lambda inv: inv.expected_final_response is not None, one,
                                     "the case has no expected final response")
    return score, {"method": method, **details}


_NO_JUDGE = "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"


def _no_endpoint(options: dict[str, Any]) -> bool:
    """Would ``Judge.from_config`` build an unconfigured judge (and not raise)? Most sessions run
    ``llm_judge`` without an endpoint: this answers without building the judge."""
    if options and not options.keys().isdisjoint(("timeout", "max_retries", "backoff")):
        return False  # let from_config refuse a bad number as it always has
    base_url = options.get("base_url") or os.environ.get(ENV_BASE_URL)
    return not (base_url and base_url.rstrip("/"))


def _llm_judge(trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig, *, judge: Optional[Judge] = None,
               name: str = "llm_judge", **_: Any) -> tuple[float, dict]:
    if judge is None and _no_endpoint(cfg.options):
        raise _Skip(_NO_JUDGE)
    judge = judge if judge is not None else Judge.from_config(cfg)
    if not getattr(judge, "configured", True):
        raise _Skip(_NO_JUDGE)
    errors: list[str] = []

    def one(inv: Invocation, turn: Turn) -> tuple[float, dict[str, Any]]:
        result = judge.evaluate(
            question=turn.user_input or inv.user_content.get_text(),
            response=turn.final_response,
            reference=inv.expected_final_response.get_text() if inv.expected_final_response else None,
            rubrics=cfg.rubrics, threshold=cfg.threshold, criterion=name, calls=turn.calls,
        )
        if result.skipped:
            raise _Skip(result.details.get("reason", "judge skipped"))
        if result.error:
            errors.append(f"turn {turn.index}: {result.error}")
        return result.score, {"error": result.error, **result.details}

    score, details = _per_invocation(trajectory, case, lambda inv: True, one, "the case has no turns to judge")
    if errors:
        raise _JudgeFailed("; ".join(errors), details)
    return score, details


class _JudgeFailed(Exception):
    def __init__(self, reason: str, details: dict[str, Any]) -> None:
        super().__init__(reason)
        self.details = details


def _layer1(trajectory: Trajectory, case: Optional[EvalCase], cfg: CriterionConfig, **_: Any) -> tuple[float, dict]:
    """The ``layer1`` criterion: the session's Vertex record (from its trajectory: user messages
    and final answers; LLM texts between tool calls are only in exports) checked per options."""
    return check_record(vertex_record(trajectory), cfg.options)


CRITERIA: dict[str, Callable[..., tuple[float, dict]]] = {
    **{kind: _trajectory_score(kind) for kind in TRAJECTORY_MEASURES},
    "response_match": _response_match,
    "llm_judge": _llm_judge,
    "tool_selection": _tool_selection,
    "sql_generation": _sql_generation,
    "table_usage": _table_usage,
    "layer1": _layer1,
}
CRITERIA.update(adk_metrics.CRITERIA)  # every other metric google-adk registers, under its name


def criterion_kind(name: str, cfg: CriterionConfig) -> Optional[str]:
    kind = cfg.options.get("kind") or ALIASES.get(name, name)
    if kind in CRITERIA or kind == HEALTH:
        return kind
    if cfg.rubrics:
        return "llm_judge"
    return None


_ARGUMENT_OPTIONS = ("args_mode", "keys", "fold_case", "fold_whitespace", "comparators", "tools")
"""The options :meth:`ArgumentPolicy.from_options` reads."""
_DEFAULT_POLICY = ArgumentPolicy.from_options({})
_TRAJECTORY_OPTIONS = ("kind", "max_depth", "collapse_retries", "first_call_only", "graded", *_ARGUMENT_OPTIONS)
CRITERION_OPTIONS: dict[str, frozenset[str]] = {
    **{kind: frozenset(_TRAJECTORY_OPTIONS) for kind in TRAJECTORY_MEASURES},
    "single_tool_use": frozenset({*_TRAJECTORY_OPTIONS, "tool_name"}),
    "response_match": frozenset({"kind", "method", "use_stemmer", "fold_case", "pattern", "ignore_case"}),
    "llm_judge": frozenset({"kind", "base_url", "model", "api_key", "api_key_env", "timeout", "max_retries",
                            "backoff", "json_mode", "sample_rate", "when", "num_samples", "temperature",
                            "max_calls_per_hour", "max_calls_per_day", "max_tokens_per_hour",
                            "max_tokens_per_day", "max_context_chars"}),
    "tool_selection": frozenset({"kind"}),
    "sql_generation": frozenset({"kind"}),
    "table_usage": frozenset({"kind"}),
    "layer1": frozenset({"kind", "regex", "contains", "expect", "ignore_case", "field"}),
    HEALTH: frozenset({"kind", *LIMITS, *FLAG_LIMITS}),
}
CRITERION_OPTIONS.update(adk_metrics.OPTIONS)
"""Criterion kind → the option names it reads. Any other option is an error, never ignored: a
misspelled ``args_mod`` would otherwise silently compare arguments exactly. (Options a kind
knows but refuses, such as ``graded`` or an argument option on ``tool_trajectory_avg_score``,
are refused by the criterion itself with its own explanation.)"""


def unknown_options(kind: str, options: dict[str, Any]) -> list[tuple[str, str]]:
    """(option, reason) for each option ``kind`` does not read."""
    known = CRITERION_OPTIONS[kind]
    return [(str(k), unknown_name("option", str(k), known, scope=kind)) for k in options if k not in known]


def unknown_criterion(name: str, cfg: CriterionConfig) -> str:
    if cfg.options.get("kind"):
        return unknown_name("criterion kind", str(cfg.options["kind"]), [*CRITERIA, HEALTH], scope=name)
    return unknown_name("criterion", name, [*CRITERIA, *ALIASES, HEALTH]) + " (or set options.kind)"


def config_problems(config: EvalConfig) -> list[tuple[str, str]]:
    """(JSON path, reason) for every criterion name and option the scorer would not understand,
    so a config file can be refused before anything is scored."""
    problems: list[tuple[str, str]] = []
    for name, cfg in config.criteria.items():
        kind = criterion_kind(name, cfg)
        if kind is None:
            where = f"$.criteria.{name}" + (".options.kind" if cfg.options.get("kind") else "")
            problems.append((where, unknown_criterion(name, cfg)))
            continue
        problems.extend((f"$.criteria.{name}.options.{key}", reason) for key, reason in unknown_options(kind, cfg.options))
        if kind == "llm_judge":
            problems.extend((f"$.criteria.{name}.options", reason) for reason in option_problems(cfg.options))
    return problems


def _check_options(kind: str, cfg: CriterionConfig) -> None:
    if not cfg.options:
        return
    unknown = unknown_options(kind, cfg.options)
    if unknown:
        raise ValueError("; ".join(f"options.{key}: {reason}" for key, reason in unknown))
    if kind == "llm_judge":
        problems = option_problems(cfg.options)
        if problems:
            raise ValueError("; ".join(problems))


def _health_result(trajectory: Trajectory, cfg: CriterionConfig, name: str = HEALTH) -> CriterionResult:
    limits = {k: v for k, v in cfg.options.items() if k != "kind"}
    try:
        _check_options(HEALTH, cfg)
        report = health(trajectory, limits)
    except ValueError as exc:
        return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold,
                               error=str(exc), details={"reason": str(exc)})
    checked = len(limits)
    score = 1.0 - len(report["violations"]) / checked if checked else 1.0
    return CriterionResult(criterion=name, score=round(score, 6), passed=report["passed"],
                           threshold=cfg.threshold, details=report)


_HEALTH_DEFAULT = CriterionConfig(threshold=1.0)


_EXPECTATIONS: dict[str, _Expectation] = {
    "tool_selection": _EXPECTS_TOOL_SELECTION,
    "sql_generation": _EXPECTS_SQL,
    "table_usage": _EXPECTS_TABLES,
}
"""The criteria that read no option and need nothing but their expectation (see
:func:`_known_skip`)."""


def _known_skip(kind: str, case: EvalCase, cfg: CriterionConfig, judge: Optional[Judge]) -> Optional[str]:
    """Why the criterion would skip, when that is known without running it: no invocation of the
    case states what it checks (most cases state one or two kinds of expectation), or an LLM
    judge without an endpoint. Asked first, it spares calling the criterion and raising and
    catching its :class:`_Skip` every session; the criteria still check for themselves."""
    expectation = _EXPECTATIONS.get(kind)
    if expectation is not None:
        return None if any(map(expectation.applies, case.conversation)) else expectation.nothing_expected
    if kind == "llm_judge" and judge is None and _no_endpoint(cfg.options):
        return _NO_JUDGE
    return None


def _skipped(name: str, cfg: CriterionConfig, reason: str) -> CriterionResult:
    return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold, skipped=True,
                           details={"reason": reason})


def _run(name: str, kind: str, trajectory: Trajectory, case: EvalCase, cfg: CriterionConfig,
         judge: Optional[Judge], probe: bool = False) -> Any:
    """The criterion's result. ``probe``: only what is known without running it (a bad option,
    a known skip), else None: the judge criteria the pool answers."""
    try:
        _check_options(kind, cfg)
        reason = _known_skip(kind, case, cfg, judge)
        if reason is not None:
            return _skipped(name, cfg, reason)
        if probe:
            return None
        score, details = CRITERIA[kind](trajectory, case, cfg, judge=judge, name=name)
    except (_Skip, adk_metrics.NotRun) as skip:
        return _skipped(name, cfg, str(skip))
    except _JudgeFailed as failed:  # our dependency failed, not the agent: not evaluated, never a FAIL
        return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold, skipped=True,
                               error=str(failed), details={**failed.details, "judge": UNAVAILABLE,
                                                           "reason": str(failed)})
    except Exception as exc:  # a criterion's failure is its result, never the scorer's crash
        reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold,
                               error=reason, details={"reason": reason})
    if kind != name:
        details = {"kind": kind, **details}
    if adk_metrics.is_informational_details(details):  # reported, never passes or fails
        return adk_metrics.informational_result(name, cfg, score, details)
    return _result(name, cfg, score, details, exact=_decides_as_adk(name, kind))


def _deferred_judge(name: str, cfg: CriterionConfig, trajectory: Trajectory, case: Optional[EvalCase], verdict: str,
                    requests: list, context: Optional[Callable[[], dict[str, Any]]]) -> CriterionResult:
    """A judge criterion left to the judge pool: filtered out, not sampled, or pending with its
    request appended to ``requests`` (plain data: it is stored with the pending evaluation).
    ``case`` None: an unmatched session (``when.unmatched``), judged without a reference."""
    options = cfg.options
    base_url = options.get("base_url") or os.environ.get(ENV_BASE_URL)
    if not (base_url and str(base_url).rstrip("/")):  # nothing to defer to
        return _skipped(name, cfg, _NO_JUDGE)
    reason = filtered_out(options.get("when"), case_id=case.eval_id if case else None,
                          agent_version=trajectory.agent_version,
                          verdict=verdict, tool_errors=sum(1 for c in trajectory.calls if c.error))
    if reason is not None:
        return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold, skipped=True,
                               details={"judge": FILTERED, "reason": reason})
    rate = float(options.get("sample_rate", 1.0))
    if not sampled(trajectory.session_id, rate, name):
        return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold, skipped=True,
                               details={"judge": NOT_SAMPLED, "reason": not_sampled_reason(rate)})
    rubrics = list(cfg.rubrics) or DEFAULT_RUBRICS
    max_chars = int(options.get("max_context_chars", judge_context_.DEFAULT_MAX_CONTEXT_CHARS))
    turns = []
    seen = context() if context is not None else {}  # built only for a session the judge will see
    pairs = ([(i, _turn(trajectory, i), inv) for i, inv in enumerate(case.conversation)] if case is not None
             else [(i, turn, None) for i, turn in enumerate(trajectory.turns)])
    for i, turn, inv in pairs:
        system, tools = seen.get(turn.trace_id, (None, None))
        question = turn.user_input or (inv.user_content.get_text() if inv is not None else None)
        reference = inv.expected_final_response.get_text() if inv is not None and inv.expected_final_response else None
        messages = judge_context_.build_messages(question, turn.final_response, reference, rubrics, calls=turn.calls,
                                                 system=system, tools=tools, max_chars=max_chars)
        turns.append({"turn": i, "invocation": inv.invocation_id if inv is not None else None, "messages": messages})
    if not turns:
        return _skipped(name, cfg, "the case has no turns to judge")
    requests.append({"criterion": name, "threshold": cfg.threshold, "judge_model": cfg.judge_model,
                     "rubrics": [r.model_dump() for r in rubrics], "options": public_options(options),
                     "turns": turns})
    return CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold, skipped=True,
                           details={"judge": PENDING, "reason": PENDING_REASON})


def score_session(trajectory: Trajectory, case: Optional[EvalCase], config: EvalConfig,
                  judge: Optional[Judge] = None, judge_requests: Optional[list] = None,
                  judge_context: Optional[Callable[[], dict[str, Any]]] = None) -> EvalCaseResult:
    """Score one session against its golden case (or health only, when unmatched).

    ``judge_requests``: a list to defer the judge criteria to (see the module's notes): they are
    decided after the deterministic ones, whose verdict their ``when`` filter may ask for.
    ``judge_context``: returns trace id → (system instructions, tool definitions) the judge may
    see; called only when a judge criterion is deferred."""
    started = time.perf_counter()
    results: list[CriterionResult] = []
    kinds = {n: criterion_kind(n, c) for n, c in config.criteria.items()}
    health_cfgs = {n: c for n, c in config.criteria.items() if kinds[n] == HEALTH}
    deferred: list[tuple[int, str, CriterionConfig]] = []
    if case is not None:
        for name, cfg in config.criteria.items():
            if not cfg.enabled or name in health_cfgs:
                continue
            kind = kinds[name]
            if kind is None:
                reason = unknown_criterion(name, cfg)
                results.append(CriterionResult(criterion=name, score=0.0, passed=False, threshold=cfg.threshold,
                                               error=reason, details={"reason": reason}))
                continue
            if kind == "llm_judge" and judge_requests is not None and judge is None:
                result = _run(name, kind, trajectory, case, cfg, judge, probe=True)
                if result is None:
                    deferred.append((len(results), name, cfg))
                    results.append(result)  # type: ignore[arg-type]  # filled in below
                    continue
                results.append(result)
                continue
            results.append(_run(name, kind, trajectory, case, cfg, judge))
    elif judge_requests is not None and judge is None:  # unmatched: judge criteria asked to judge it anyway
        for name, cfg in config.criteria.items():
            if (cfg.enabled and kinds[name] == "llm_judge" and judges_unmatched(cfg.options.get("when"))
                    and not unknown_options("llm_judge", cfg.options) and not option_problems(cfg.options)
                    and not _no_endpoint(cfg.options)):
                deferred.append((len(results), name, cfg))
                results.append(None)  # type: ignore[arg-type]  # filled in below
    if not health_cfgs:
        health_cfgs = {HEALTH: _HEALTH_DEFAULT}
    for name, cfg in health_cfgs.items():
        if cfg.enabled:
            results.append(_health_result(trajectory, cfg, name))
    if deferred:
        assert judge_requests is not None
        verdict_now = verdict_of(r for r in results if r is not None)
        for at, name, cfg in deferred:
            results[at] = _deferred_judge(name, cfg, trajectory, case, verdict_now, judge_requests, judge_context)

    ran = [r for r in results if not r.skipped]
    scored = [r for r in ran if r.criterion not in health_cfgs and not adk_metrics.is_informational(r)]
    score = sum(r.score for r in scored) / len(scored) if scored else 0.0
    verdict = verdict_of(results)
    return EvalCaseResult(
        eval_id=case.eval_id if case is not None else "",
        name=case.name if case is not None else None,
        passed=verdict == PASSED,
        verdict=verdict,
        criterion_results=results,
        duration_seconds=round(time.perf_counter() - started, 6),
        session_id=trajectory.session_id,
        score=round(score, 6),
    )


# --- per-case criteria --------------------------------------------------------------------------

def config_for_case(config: EvalConfig, eval_set: Optional[EvalSet]) -> EvalConfig:
    """The criteria a matched case is scored with: its eval set's own, when it declares any.

    A golden format that says how its cases are judged (Big Sky's per-dataset ``evaluators``,
    loaded into :attr:`EvalSet.criteria`) replaces the run config's reference criteria for that
    set's cases: a dataset that only asks "is the first tool call right?" must not fail on a
    ROUGE threshold it never set. The run config's health criteria stay (they are about the
    agent, not the dataset); an eval-set criterion of the same name wins. Sets without criteria,
    and unmatched sessions (``eval_set=None``), use ``config`` unchanged.
    """
    if eval_set is None or not eval_set.criteria:
        return config
    criteria = {n: c for n, c in config.criteria.items() if criterion_kind(n, c) == HEALTH}
    criteria.update(eval_set.criteria)
    return EvalConfig(criteria=criteria, user_simulator_config=config.user_simulator_config)


def _redacted(config: EvalConfig) -> dict[str, Any]:
    """The config as used, without secrets (an API key in a criterion's options)."""
    data = config.model_dump(mode="json")
    for criterion in data.get("criteria", {}).values():
        options = criterion.get("options") or {}
        for key in list(options):
            if "api_key" in key and key != "api_key_env":
                options[key] = "***"
    return data


def build_report(
    results: Iterable[EvalCaseResult],
    eval_set_id: str,
    config: EvalConfig,
    eval_set_name: Optional[str] = None,
    duration_seconds: float = 0.0,
    include_unmatched: bool = False,
    report_id: Optional[str] = None,
) -> EvalReport:
    """Summary over the results: pass rate, mean case score and per-criterion stats.

    not_evaluated results are counted apart: neither passed nor failed, out of the pass rate's
    denominator and of the mean score. Unmatched sessions (``eval_id == ""``) are left out unless
    ``include_unmatched``: they were not checked against a reference."""
    kept = [r for r in results if include_unmatched or r.eval_id]
    total = len(kept)
    passed = sum(1 for r in kept if r.verdict == PASSED)
    failed = sum(1 for r in kept if r.verdict == FAILED)
    evaluated = [r for r in kept if r.verdict != NOT_EVALUATED]
    stats: dict[str, CriterionStats] = {}
    sums: dict[str, float] = {}
    for result in kept:
        for c in result.criterion_results:
            s = stats.setdefault(c.criterion, CriterionStats())
            if c.skipped:
                s.skipped += 1
                continue
            s.evaluated += 1
            s.passed += int(c.passed)
            sums[c.criterion] = sums.get(c.criterion, 0.0) + c.score
    for name, s in stats.items():
        s.pass_rate = round(s.passed / s.evaluated, 6) if s.evaluated else 0.0
        s.avg_score = round(sums.get(name, 0.0) / s.evaluated, 6) if s.evaluated else 0.0
    summary = EvalSummary(
        total_cases=total,
        passed_cases=passed,
        failed_cases=failed,
        not_evaluated_cases=total - passed - failed,
        pass_rate=round(passed / (passed + failed), 6) if passed + failed else 0.0,
        avg_score=round(sum(r.score for r in evaluated) / len(evaluated), 6) if evaluated else 0.0,
        criterion_stats=stats,
    )
    return EvalReport(
        report_id=report_id or uuid.uuid4().hex,
        eval_set_id=eval_set_id,
        eval_set_name=eval_set_name,
        results=kept,
        summary=summary,
        config_used=_redacted(config),
        created_at=datetime.now(timezone.utc),
        duration_seconds=duration_seconds,
    )
