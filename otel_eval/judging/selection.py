"""Which sessions a judge criterion judges: sampling and ``when`` filters, as pure functions.

``sample_rate`` (0..1) samples by a hash of the criterion name and the session id, so a rerun (a
rescore, a restart) samples the same sessions, and two judge criteria sample independently.
``when`` narrows the sessions judged::

    [criteria.llm_judge.options.when]
    case_ids = ["weather-*"]        # fnmatch patterns on the golden case id
    agent_versions = ["2.*"]        # ... on the agent version
    verdict = "failed"              # only sessions whose deterministic verdict is failed (or "passed")
    tool_errors = true              # only sessions with a tool error (false: only those without)
    unmatched = true                # also judge sessions no golden case matched ("only": only them)

An unmatched session has no reference answer: the judge sees its turns and tool calls only.
"""

from __future__ import annotations

import fnmatch
import hashlib
from typing import Any

WHEN_KEYS = ("case_ids", "agent_versions", "verdict", "tool_errors", "unmatched")
UNMATCHED_VALUES = (True, False, "only")
VERDICT_FILTERS = ("passed", "failed")


def sampled(session_id: str, rate: float, criterion: str = "llm_judge") -> bool:
    """Is this session in the sample? Deterministic: the same answer on every run."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    digest = hashlib.sha256(f"{criterion}\0{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < rate


def when_problems(when: Any) -> list[str]:
    """What is wrong with a ``when`` table (empty: nothing)."""
    from ..models.suggest import unknown_name

    if not isinstance(when, dict):
        return [f"options.when must be a table of filters ({', '.join(WHEN_KEYS)})"]
    problems = [
        f"options.when.{key}: " + unknown_name("filter", str(key), WHEN_KEYS, scope="when")
        for key in when
        if key not in WHEN_KEYS
    ]
    for key in ("case_ids", "agent_versions"):
        value = when.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(f"options.when.{key} must be a list of names or patterns")
    if "verdict" in when and when["verdict"] not in VERDICT_FILTERS:
        problems.append(f"options.when.verdict must be one of {', '.join(VERDICT_FILTERS)} (got {when['verdict']!r})")
    if "tool_errors" in when and not isinstance(when["tool_errors"], bool):
        problems.append("options.when.tool_errors must be true or false")
    if "unmatched" in when and not any(when["unmatched"] is v or when["unmatched"] == v for v in (True, False, "only")):
        problems.append(f"options.when.unmatched must be true, false or \"only\" (got {when['unmatched']!r})")
    return problems


def judges_unmatched(when: dict | None) -> bool:
    """Whether sessions no golden case matched are judged too (``when.unmatched``)."""
    return when is not None and when.get("unmatched") in (True, "only")


def filtered_out(
    when: dict | None, *, case_id: str | None, agent_version: str | None, verdict: str, tool_errors: int
) -> str | None:
    """Why the session is left out by the ``when`` filters, or None when it is judged."""
    if not when:
        return None
    if when.get("unmatched") == "only" and case_id:
        return "not judged: when.unmatched = \"only\" and the session matched a golden case"
    patterns = when.get("case_ids")
    if patterns is not None and case_id and not any(fnmatch.fnmatchcase(case_id, p) for p in patterns):
        return f"not judged: case {case_id!r} is not in when.case_ids"
    patterns = when.get("agent_versions")
    if patterns is not None and not any(fnmatch.fnmatchcase(agent_version or "", p) for p in patterns):
        return f"not judged: agent version {agent_version!r} is not in when.agent_versions"
    wanted = when.get("verdict")
    if wanted is not None and verdict != wanted:
        return f"not judged: the deterministic verdict is {verdict}, when.verdict asks for {wanted}"
    errors = when.get("tool_errors")
    if errors is not None and bool(tool_errors) != errors:
        return f"not judged: the session has {'no ' if not tool_errors else ''}tool errors (when.tool_errors = {str(errors).lower()})"
    return None


def not_sampled_reason(rate: float) -> str:
    """The reason a session left out by ``sample_rate`` shows, naming the rate."""
    return f"not sampled (sample_rate {rate:g})"


def option_problems(options: dict[str, Any]) -> list[str]:
    """Values of the judge pool's options that cannot work (names are checked by the scorer)."""
    problems: list[str] = []
    rate = options.get("sample_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1):
        problems.append(f"options.sample_rate must be a number from 0 to 1 (got {rate!r})")
    samples = options.get("num_samples")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        problems.append(f"options.num_samples must be a whole number of at least 1 (got {samples!r})")
    for name in (
        "max_calls_per_hour",
        "max_calls_per_day",
        "max_tokens_per_hour",
        "max_tokens_per_day",
        "max_context_chars",
    ):
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.append(f"options.{name} must be a whole number of at least 0 (got {value!r})")
    if "when" in options:
        problems.extend(when_problems(options["when"]))
    return problems
