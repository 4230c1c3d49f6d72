"""``rubric_based_multi_turn_trajectory_quality_v1``: google-adk's
``RubricBasedMultiTurnTrajectoryEvaluator`` prompt (``evaluation/rubric_based_multi_turn_trajectory_evaluator.py``).

The whole conversation is judged once, on its last invocation, with every turn's dialogue (user
input, the agents' texts, tool calls and outputs, final responses) as context; the invocations
before it are NOT_EVALUATED. Parsing and aggregation are the rubric metrics' own (:mod:`.rubrics`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from . import prompts
from .invocation import AdkInvocation, JudgeRubric
from .rubrics import TRAJECTORY_QUALITY

RUBRIC_TYPE = TRAJECTORY_QUALITY


def _texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.text]


def dialogue(invocations: Sequence[AdkInvocation]) -> str:
    """``_assemble_dialogue_history``'s dialogue: one line per user input, agent text, tool call,
    tool output and final response, each tagged with its turn number (from 1)."""
    lines = []
    for index, invocation in enumerate(invocations):
        turn = index + 1
        if invocation.user_content and invocation.user_content.parts:
            texts = _texts(invocation.user_content.parts)
            if texts:
                lines.append(f"USER TURN {turn}: {' '.join(texts)}")
        for event in invocation.events:
            role = "USER" if event.author and event.author.lower() == "user" else f"AGENT ({event.author})"
            if event.content and event.content.parts:
                texts = _texts(event.content.parts)
                if texts:
                    lines.append(f"{role} TURN {turn}: {' '.join(texts)}")
                for p in event.content.parts:
                    if p.function_call:
                        args = json.dumps(dict(p.function_call.args)) if p.function_call.args else "{}"
                        lines.append(f"{role} TURN {turn} (tool call): {p.function_call.name}({args})")
                    if p.function_response:
                        response = (
                            json.dumps(dict(p.function_response.response)) if p.function_response.response else "{}"
                        )
                        lines.append(f"{role} TURN {turn} (tool output): {p.function_response.name} -> {response}")
        if invocation.final_response and invocation.final_response.parts:
            agent = invocation.events[0].author if invocation.events else "agent"
            texts = _texts(invocation.final_response.parts)
            if texts:
                lines.append(f"AGENT ({agent}) TURN {turn}: {' '.join(texts)}")
    return "\n".join(lines)


def instructions_and_tools(invocations: Sequence[AdkInvocation]) -> tuple[str, str]:
    """Every agent's instructions, and every agent's tools as ``- name: description`` lines, each
    once, in the order first seen. A tool without function declarations (a built-in such as
    google_search) is an error, as it is for ADK."""
    instructions, tools = [], []
    for invocation in invocations:
        if invocation.app_details and invocation.app_details.agent_details:
            for agent_id, details in invocation.app_details.agent_details.items():
                instructions.append(f"Agent {agent_id} Instructions:\n{details.instructions}")
                tools.append(f"Agent: {agent_id}")
                for tool in details.tool_declarations or ():
                    declarations = tool.get("function_declarations") if isinstance(tool, dict) else None
                    if declarations is None:
                        raise ValueError(f"a tool of agent {agent_id} has no function declarations: {tool!r}")
                    for func in declarations:
                        tools.append(f"- {func.get('name')}: {func.get('description')}")
    return "\n\n".join(dict.fromkeys(instructions)), "\n".join(dict.fromkeys(tools))


def prompt(invocations: Sequence[AdkInvocation], rubrics: Sequence[JudgeRubric]) -> str:
    """The one judge prompt of the conversation (``rubrics``: the last invocation's effective ones)."""
    listed = []
    for r in rubrics:
        entry = {"id": r.rubric_id, "property": r.text}
        if r.type:
            entry["type"] = r.type
        listed.append(entry)
    instructions, tools = instructions_and_tools(invocations)
    return prompts.RUBRIC_BASED_MULTI_TURN_TRAJECTORY_QUALITY_V1.format(
        user_agent_dialogue=dialogue(invocations),
        properties=json.dumps(listed, indent=2),
        agent_instructions=instructions,
        agent_tool_definitions=tools,
    )
