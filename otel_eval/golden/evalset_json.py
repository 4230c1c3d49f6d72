"""otel-eval's own ``.evalset.json`` (the evalset seed's model), with every problem reported.

Every pydantic error becomes a problem with its JSON path (as in ``EvalSet.load``), and the
checks pydantic cannot make (unique eval ids, a query to match on) are added, with what could be
read of a bad file kept for ``golden validate``. The known keys are the model's own fields.

``expected_tool_trajectory`` absent (or null) → ``None``, tool use not checked; ``[]`` → the agent
must call no tool.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..models.evalset import EvalCase, EvalSet
from ..models.keys import check_keys, model_spec
from ..models.problems import ProblemLog, child, log_validation_errors
from .common import check_unique_ids, content_text


def parse_evalset_json(data: Any, log: ProblemLog, default_eval_set_id: str) -> EvalSet:
    """Validate ``data`` as an EvalSet; returns what could be read (possibly empty)."""
    check_keys(data, model_spec(EvalSet), "$", log)
    try:
        eval_set = EvalSet.model_validate(data)
        log.case_paths.extend(child("$.eval_cases", i) for i in range(len(eval_set.eval_cases)))
    except ValidationError as exc:
        log_validation_errors(data, exc, log)
        eval_set = _salvage(data, default_eval_set_id, log)
    _check_cases(data, log)
    return eval_set


def _check_cases(data: Any, log: ProblemLog) -> None:
    raw_cases = data.get("eval_cases") if isinstance(data, dict) else None
    if not isinstance(raw_cases, list):
        return
    ids: list[tuple[str, str]] = []
    for i, raw in enumerate(raw_cases):
        path = child("$.eval_cases", i)
        if not isinstance(raw, dict):
            continue
        if isinstance(raw.get("eval_id"), str):
            ids.append((raw["eval_id"], child(path, "eval_id")))
        conversation = raw.get("conversation", [])
        if isinstance(conversation, list) and not conversation:
            log.add(child(path, "conversation"), "case has no conversation: no query to match and nothing to score")
            continue
        first = conversation[0] if isinstance(conversation, list) else None
        user = first.get("user_content") if isinstance(first, dict) else None
        if isinstance(user, dict) and "content" in user:
            text = content_text(user["content"])
            if text is not None and not text.strip():
                log.add(
                    child(child(child(path, "conversation"), 0), "user_content") + ".content",
                    "missing query: the first user message is empty",
                )
    check_unique_ids(ids, log)


def _salvage(data: Any, default_eval_set_id: str, log: ProblemLog) -> EvalSet:
    """The valid cases of an invalid file, so validation can still check what it can."""
    if not isinstance(data, dict):
        return EvalSet(eval_set_id=default_eval_set_id)
    cases = []
    raw_cases = data.get("eval_cases")
    for i, raw in enumerate(raw_cases if isinstance(raw_cases, list) else []):
        case = _try(EvalCase, raw)
        if case is not None:
            cases.append(case)
            log.case_paths.append(child("$.eval_cases", i))
    eval_set_id = data.get("eval_set_id")
    return EvalSet(eval_set_id=eval_set_id if isinstance(eval_set_id, str) else default_eval_set_id, eval_cases=cases)


def _try(model: Any, raw: Any) -> Any | None:
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None
