"""EvalConfig criteria → one EvalCaseResult per session; results → an EvalReport.

The criteria themselves are :mod:`otel_eval.criteria` (one module each, and the registry every
kind is looked up in); this module runs them, defers the judge's, and decides the verdict.

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

import time
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from .criteria.base import Criterion, JudgeClient, JudgeContext, JudgeFailed, Skip
from .criteria.health import Health
from .criteria.judge_base import NO_JUDGE, endpoint_configured
from .criteria.registry import REGISTRY
from .judging.jobs import FILTERED, NOT_SAMPLED, PENDING, PENDING_REASON, UNAVAILABLE
from .judging.selection import filtered_out, not_sampled_reason, sampled
from .models.evalset import CriterionConfig, EvalCase, EvalConfig, EvalSet
from .models.results import (
    FAILED,
    NOT_EVALUATED,
    PASSED,
    CriterionResult,
    CriterionStats,
    EvalCaseResult,
    EvalReport,
    EvalSummary,
    verdict_of,
)
from .trajectory import Trajectory

HEALTH = Health.kind
_HEALTH_DEFAULT = CriterionConfig(threshold=Health.default_threshold)
"""``health`` as reported for every session when the config names none."""


def _skipped(name: str, cfg: CriterionConfig, reason: str, judge_state: str | None = None) -> CriterionResult:
    """Not evaluated, with the reason; a judge criterion's also says the judge's state (filtered out,
    not sampled, pending), which report, watch and the dashboard show."""
    details = {"reason": reason} if judge_state is None else {"judge": judge_state, "reason": reason}
    return CriterionResult(
        criterion=name, score=0.0, passed=False, threshold=cfg.threshold, skipped=True, details=details
    )


def _error(name: str, cfg: CriterionConfig, reason: str) -> CriterionResult:
    return CriterionResult(
        criterion=name, score=0.0, passed=False, threshold=cfg.threshold, error=reason, details={"reason": reason}
    )


def _run(
    name: str,
    criterion: Criterion,
    trajectory: Trajectory,
    case: EvalCase | None,
    cfg: CriterionConfig,
    judge: JudgeClient | None,
    probe: bool = False,
) -> CriterionResult | None:
    """The criterion's result. ``probe``: only what is known without running it (a bad option,
    a known skip), else None: the judge criteria the pool answers."""
    try:
        criterion.check_options(cfg)
        reason = criterion.known_skip(case, cfg, judge) if case is not None else None
        if reason is not None:
            return _skipped(name, cfg, reason)
        if probe:
            return None
        # case is None only for the reference-free criteria (health), which read none
        score, details = criterion.score(trajectory, case, cfg, judge=judge, name=name)  # type: ignore[arg-type]
    except Skip as skip:
        return _skipped(name, cfg, str(skip))
    except JudgeFailed as failed:  # our dependency failed, not the agent: not evaluated, never a FAIL
        return CriterionResult(
            criterion=name,
            score=0.0,
            passed=False,
            threshold=cfg.threshold,
            skipped=True,
            error=str(failed),
            details={**failed.details, "judge": UNAVAILABLE, "reason": str(failed)},
        )
    except Exception as exc:  # a criterion's failure is its result, never the scorer's crash
        return _error(name, cfg, str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}")
    return criterion.result(name, cfg, score, details)


def _deferred_judge(
    name: str,
    criterion: Criterion,
    cfg: CriterionConfig,
    trajectory: Trajectory,
    case: EvalCase | None,
    verdict: str,
    requests: list[dict[str, Any]],
    context: Callable[[], JudgeContext] | None,
) -> CriterionResult:
    """A judge criterion left to the judge pool: filtered out, not sampled, or pending with its
    request (:meth:`Criterion.judge_request`) appended to ``requests`` (plain data: it is stored
    with the pending evaluation). ``case`` None: an unmatched session (``when.unmatched``),
    judged without a reference."""
    options = cfg.options
    if not endpoint_configured(options):  # nothing to defer to
        return _skipped(name, cfg, NO_JUDGE)
    reason = filtered_out(
        options.get("when"),
        case_id=case.eval_id if case else None,
        agent_version=trajectory.agent_version,
        verdict=verdict,
        tool_errors=sum(1 for c in trajectory.calls if c.error),
    )
    if reason is not None:
        return _skipped(name, cfg, reason, FILTERED)
    rate = float(options.get("sample_rate", 1.0))
    if not sampled(trajectory.session_id, rate, name):
        return _skipped(name, cfg, not_sampled_reason(rate), NOT_SAMPLED)
    try:
        request = criterion.judge_request(name, cfg, trajectory, case, context)
    except Skip as skip:
        return _skipped(name, cfg, str(skip))
    requests.append(request)
    return _skipped(name, cfg, PENDING_REASON, PENDING)


def score_session(
    trajectory: Trajectory,
    case: EvalCase | None,
    config: EvalConfig,
    judge: JudgeClient | None = None,
    judge_requests: list[dict[str, Any]] | None = None,
    judge_context: Callable[[], JudgeContext] | None = None,
) -> EvalCaseResult:
    """Score one session against its golden case (or health only, when unmatched).

    ``judge_requests``: a list to defer the judge criteria to (see the module's notes): they are
    decided after the deterministic ones, whose verdict their ``when`` filter may ask for.
    ``judge_context``: returns trace id → (system instructions, tool definitions) the judge may
    see; called only when a judge criterion is deferred."""
    started = time.perf_counter()
    results: list[CriterionResult | None] = []  # None: a deferred judge criterion's place, filled in below
    criteria = {n: REGISTRY.criterion_for(n, c) for n, c in config.criteria.items()}
    reference_free = {n: c for n, c in config.criteria.items() if getattr(criteria[n], "reference_free", False)}
    deferred: list[tuple[int, str, Criterion, CriterionConfig]] = []
    if case is not None:
        for name, cfg in config.criteria.items():
            criterion = criteria[name]
            if not cfg.enabled or name in reference_free:
                continue
            if criterion is None:
                results.append(_error(name, cfg, REGISTRY.unknown_criterion(name, cfg)))
                continue
            if criterion.pool_judged and judge_requests is not None and judge is None:
                result = _run(name, criterion, trajectory, case, cfg, judge, probe=True)
                if result is None:
                    deferred.append((len(results), name, criterion, cfg))
                results.append(result)
                continue
            results.append(_run(name, criterion, trajectory, case, cfg, judge))
    elif judge_requests is not None and judge is None:  # unmatched: judge criteria asked to judge it anyway
        for name, cfg in config.criteria.items():
            criterion = criteria[name]
            if cfg.enabled and criterion is not None and criterion.pool_judged and criterion.judges_unmatched(cfg):
                deferred.append((len(results), name, criterion, cfg))
                results.append(None)
    if not reference_free:
        reference_free = {HEALTH: _HEALTH_DEFAULT}
    for name, cfg in reference_free.items():
        if cfg.enabled:
            results.append(_run(name, criteria.get(name) or REGISTRY[HEALTH], trajectory, case, cfg, judge))
    if deferred:
        assert judge_requests is not None
        verdict_now = verdict_of(r for r in results if r is not None)
        for at, name, criterion, cfg in deferred:
            results[at] = _deferred_judge(
                name, criterion, cfg, trajectory, case, verdict_now, judge_requests, judge_context
            )

    done = [r for r in results if r is not None]  # every place is filled by now
    ran = [r for r in done if not r.skipped]
    # Neither reference-free criteria (health) nor informational values (marked in their details,
    # as verdict_of reads them) are part of the case's score.
    scored = [
        r for r in ran if r.criterion not in reference_free and (r.details or {}).get("informational") is not True
    ]
    score = sum(r.score for r in scored) / len(scored) if scored else 0.0
    verdict = verdict_of(done)
    return EvalCaseResult(
        eval_id=case.eval_id if case is not None else "",
        name=case.name if case is not None else None,
        passed=verdict == PASSED,
        verdict=verdict,
        criterion_results=done,
        duration_seconds=round(time.perf_counter() - started, 6),
        session_id=trajectory.session_id,
        score=round(score, 6),
    )


def config_problems(config: EvalConfig) -> list[tuple[str, str]]:
    """(JSON path, reason) for every criterion name and option the scorer would not understand,
    so a config file can be refused before anything is scored."""
    problems: list[tuple[str, str]] = []
    for name, cfg in config.criteria.items():
        criterion = REGISTRY.criterion_for(name, cfg)
        if criterion is None:
            where = f"$.criteria.{name}" + (".options.kind" if cfg.options.get("kind") else "")
            problems.append((where, REGISTRY.unknown_criterion(name, cfg)))
            continue
        problems.extend(
            (f"$.criteria.{name}.options.{key}", reason) for key, reason in criterion.unknown_options(cfg.options)
        )
        problems.extend(
            (f"$.criteria.{name}.options", reason) for reason in criterion.option_value_problems(cfg.options)
        )
    return problems


# --- per-case criteria --------------------------------------------------------------------------


def config_for_case(config: EvalConfig, eval_set: EvalSet | None) -> EvalConfig:
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
    criteria = {
        n: c for n, c in config.criteria.items() if getattr(REGISTRY.criterion_for(n, c), "reference_free", False)
    }
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
    eval_set_name: str | None = None,
    duration_seconds: float = 0.0,
    include_unmatched: bool = False,
    report_id: str | None = None,
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
