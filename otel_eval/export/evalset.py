"""Production sessions promoted to golden cases: what the agent did becomes what it should do.

One session → one :class:`EvalCase`; turn *i* → invocation *i* (so a multi-turn session is a
multi-turn case). Each invocation expects the turn's user message, the tool calls the scorer
compares (failed attempts a later call retried are left out, as the alignment leaves them out;
the top-level agent's calls when there are any), the final answer as the expected response, and,
when the turn generated SQL, that SQL is expected and which tables it read. Scoring the same
sessions against the exported set therefore passes every default criterion — the round trip the
tests check.

Pure functions: :mod:`otel_eval.export` loads the sessions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..golden.matcher import normalize_query
from ..metrics.alignment import expected_calls
from ..metrics.sql import sql_and_tables
from ..models.evalset import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent
from ..trajectory import Trajectory
from ..vertex_record import title_of

SOURCE = "otel-eval export"


@dataclass
class Skipped:
    """A session left out of an export, and why (no user message, say)."""

    session_id: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """The entry as an export's ``skipped`` list gives it."""
        return {"session_id": self.session_id, "reason": self.reason}


@dataclass
class Promotion:
    """Sessions promoted to golden cases: the EvalSet, and the sessions that could not become a case."""

    eval_set: EvalSet
    skipped: list[Skipped] = field(default_factory=list)


def session_case(
    trajectory: Trajectory, eval_id: str | None = None, metadata: dict[str, Any] | None = None
) -> EvalCase:
    """One session as a golden case (``eval_id`` defaults to the session id)."""
    eval_id = eval_id or trajectory.session_id
    invocations = []
    for turn in trajectory.turns:
        statements, tables = sql_and_tables(turn.sql_values())
        invocations.append(
            Invocation(
                invocation_id=f"{eval_id}-{turn.index + 1}",
                user_content=MessageContent.user(turn.user_input or ""),
                expected_tool_trajectory=[
                    ExpectedToolCall(name=c.name, args=dict(c.args)) for c in expected_calls(turn)
                ],
                expected_final_response=MessageContent.assistant(turn.final_response) if turn.final_response else None,
                expected_sql=True if statements else None,
                expected_tables=tables,
                metadata={"trace_id": turn.trace_id},
            )
        )
    return EvalCase(
        eval_id=eval_id,
        name=title_of(trajectory),
        conversation=invocations,
        metadata={
            "source": SOURCE,
            "session_id": trajectory.session_id,
            "agent_version": trajectory.agent_version,
            **(metadata or {}),
        },
        tags=["promoted"],
    )


def promote_sessions(
    trajectories: Sequence[Trajectory],
    eval_set_id: str = "promoted",
    name: str = "",
    description: str = "",
    metadata: dict[str, Any] | None = None,
    verdicts: Mapping[str, str] | None = None,
) -> Promotion:
    """Sessions → an EvalSet. ``verdicts`` (session id → evaluation outcome) go into each case's
    ``metadata.verdict``, so a promoted case says how its session was judged.
    A session that cannot become a usable case is skipped with a reason:
    no user message (nothing to match on), or the same first message as a case already taken
    (the matcher would find both and call it ambiguous; the earliest session wins)."""
    cases: list[EvalCase] = []
    skipped: list[Skipped] = []
    taken: dict[str, str] = {}
    ids: set[str] = set()
    for trajectory in trajectories:
        query = normalize_query(trajectory.query)
        if not query or not trajectory.turns or not trajectory.turns[0].user_input:
            skipped.append(Skipped(trajectory.session_id, "the session's first turn has no user message to match on"))
            continue
        if query in taken:
            skipped.append(
                Skipped(
                    trajectory.session_id,
                    f"same first user message as case {taken[query]!r}; a second case would be ambiguous",
                )
            )
            continue
        eval_id = trajectory.session_id
        suffix = 2
        while eval_id in ids:
            eval_id, suffix = f"{trajectory.session_id}-{suffix}", suffix + 1
        ids.add(eval_id)
        taken[query] = eval_id
        verdict = (verdicts or {}).get(trajectory.session_id)
        cases.append(session_case(trajectory, eval_id, {"verdict": verdict} if verdict is not None else None))
    eval_set = EvalSet(
        eval_set_id=eval_set_id,
        name=name or eval_set_id,
        description=description or f"{len(cases)} production session(s) promoted by {SOURCE}",
        eval_cases=cases,
        metadata={"exported_by": SOURCE, **(metadata or {})},
    )
    return Promotion(eval_set, skipped)
