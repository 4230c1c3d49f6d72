"""ADK's ``Invocation`` as its judge prompts read it, and ADK's helpers that turn it into text.

The models are the part of google-adk 2.13's ``Invocation`` (``evaluation/eval_case.py``) and
genai's ``Content`` / ``Part`` / ``FunctionCall`` / ``FunctionResponse`` that the judge metrics
read, with the same field names and the same JSON shape: an :class:`Invocation` dumped with
``exclude_none`` is a JSON google-adk's own ``Invocation.model_validate`` takes (the differential
tests hand google-adk exactly that). Fields are declared in genai's order, because ADK's prompts
print them in declaration order.

The text helpers mirror ``llm_as_judge_utils.py`` (``get_text_from_content``,
``get_tool_calls_and_responses_as_json_str``, ``get_tool_declarations_as_json_str``,
``get_grounding_metadata_as_json_str``). ADK prints those JSON blocks with pydantic's serializer
(``model_dump_json(indent=2)``), whose number and non-ASCII spelling differ from ``json.dumps``
(``1e-7``, not ``1e-07``; ``é``, not ``\\u00e9``), so they are printed with pydantic's serializer
here too (:func:`pydantic_json`).
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(_Model):
    """genai's ``FunctionCall``: a tool call the model made, as the judge prompts print it."""

    id: str | None = None
    args: dict[str, Any] | None = None
    name: str | None = None


class FunctionResponse(_Model):
    """genai's ``FunctionResponse``: what a tool answered, as the judge prompts print it."""

    id: str | None = None
    name: str | None = None
    response: dict[str, Any] | None = None


class Part(_Model):
    """genai's ``Part``: one piece of a message, a text, a tool call or a tool's answer."""

    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    text: str | None = None


class Content(_Model):
    """genai's ``Content``: a message's parts and who wrote it."""

    parts: list[Part] | None = None
    role: str | None = None

    @classmethod
    def of_text(cls, text: str, role: str) -> Content:
        """A message of one text part, the shape ADK gives a user query and a final response."""
        return cls(parts=[Part(text=text)], role=role)


class InvocationEvent(_Model):
    """One event of a turn: what an agent (``author``) said or called between the query and the answer."""

    author: str
    content: Content | None = None


class InvocationEvents(_Model):
    """ADK's ``InvocationEvents``: a turn's intermediate data, the events in order."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class AgentDetails(_Model):
    """One agent of the app, as the hallucination prompt lists it: its instructions and tools."""

    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)
    """genai ``Tool`` objects as dicts: ``{"function_declarations": [{"description", "name",
    "parameters_json_schema"}]}`` (the keys in genai's order; see :func:`tool_dict`)."""


class AppDetails(_Model):
    """The agents of the app, by name: the developer instructions and tools a response is judged against."""

    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)


class RubricContent(_Model):
    """ADK's ``RubricContent``: the rubric's text, under ADK's field name."""

    text_property: str | None = None


class JudgeRubric(_Model):
    """ADK's ``Rubric``: one property the judge is asked about, with the id its verdict is matched by."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None

    @property
    def text(self) -> str | None:
        """The property's text: what the prompt asks the judge and what a verdict without id is matched by."""
        return self.rubric_content.text_property


class AdkInvocation(_Model):
    """ADK's ``Invocation``: one turn (the user's content, the events in between, the final response)
    as ADK's judge metrics read it."""

    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: InvocationEvents | None = None
    rubrics: list[JudgeRubric] | None = None
    app_details: AppDetails | None = None

    @property
    def events(self) -> list[InvocationEvent]:
        """The turn's intermediate events in order, none when the invocation has no intermediate data."""
        return self.intermediate_data.invocation_events if self.intermediate_data else []

    def to_adk_json(self) -> dict[str, Any]:
        """The JSON google-adk's ``Invocation.model_validate`` reads as this invocation."""
        return self.model_dump(mode="json", exclude_none=True)


# --- ADK's text helpers (llm_as_judge_utils.py) --------------------------------------------------


def pydantic_json(value: Any) -> str:
    """``value`` printed as pydantic's ``model_dump_json(indent=2)`` prints it."""
    return pydantic_core.to_json(value, indent=2).decode("utf-8")


def text_of(content: Content | None) -> str | None:
    """``get_text_from_content`` of a Content: its text parts joined by newlines (empty texts left
    out); None without content or parts."""
    if content is not None and content.parts:
        return "\n".join(p.text for p in content.parts if p.text)
    return None


def response_text(invocation: AdkInvocation, include_intermediate: bool = False) -> str | None:
    """``get_text_from_content`` of an invocation: its final response's text; with
    ``include_intermediate_responses_in_final``, the texts of its intermediate events first."""
    if not include_intermediate:
        return text_of(invocation.final_response)
    parts = [text for text in (text_of(e.content) for e in invocation.events) if text]
    final = text_of(invocation.final_response)
    if final:
        parts.append(final)
    return "\n".join(parts) if parts else None


def _dump(model: BaseModel) -> dict[str, Any]:
    """A genai model as ``model_dump_json(exclude_unset, exclude_defaults, exclude_none)`` keeps it:
    the fields that have a value, in declaration order."""
    return model.model_dump(mode="json", exclude_none=True)


def tool_calls(invocation: AdkInvocation) -> list[FunctionCall]:
    """Every tool call of the turn's events, in order: what the tool-use prompts print."""
    return [
        p.function_call
        for e in invocation.events
        if e.content and e.content.parts
        for p in e.content.parts
        if p.function_call is not None
    ]


def tool_responses(invocation: AdkInvocation) -> list[FunctionResponse]:
    """Every tool answer of the turn's events, in order, paired with :func:`tool_calls` in the prompts."""
    return [
        p.function_response
        for e in invocation.events
        if e.content and e.content.parts
        for p in e.content.parts
        if p.function_response is not None
    ]


def tool_calls_and_responses_json(invocation: AdkInvocation) -> str:
    """``get_tool_calls_and_responses_as_json_str``: each call with the response of the same id
    (ADK's dictionary by id: calls without an id share the last response without one)."""
    by_id = {r.id: r for r in tool_responses(invocation)}
    calls = tool_calls(invocation)
    if not calls:
        return "No intermediate steps were taken."
    steps = []
    for step, call in enumerate(calls):
        response = by_id.get(call.id)
        steps.append(
            {
                "step": step,
                "tool_call": _dump(call),
                "tool_response": _dump(response) if response is not None else "None",
            }
        )
    return pydantic_json({"tool_calls_and_response": steps})


_TOOL_KEYS = (
    "retrieval",
    "computer_use",
    "file_search",
    "google_search",
    "google_maps",
    "code_execution",
    "enterprise_web_search",
    "function_declarations",
    "google_search_retrieval",
    "parallel_ai_search",
    "url_context",
    "mcp_servers",
    "exa_ai_search",
)
_DECLARATION_KEYS = (
    "description",
    "name",
    "parameters",
    "parameters_json_schema",
    "response",
    "response_json_schema",
    "behavior",
)
"""genai 2.x's ``Tool`` and ``FunctionDeclaration`` fields, in declaration order (pydantic prints
them in that order, whatever order a dict gave them in)."""


def tool_dict(tool: Any) -> Any:
    """A tool declaration as genai's ``Tool`` prints: its keys and its function declarations' keys
    in genai's order, their nulls left out (the values inside, a JSON schema, are kept as given)."""
    if not isinstance(tool, dict):
        return tool
    ordered = {k: tool[k] for k in _TOOL_KEYS if tool.get(k) is not None}
    ordered.update({k: v for k, v in tool.items() if k not in ordered and v is not None})
    declarations = ordered.get("function_declarations")
    if isinstance(declarations, list):
        ordered["function_declarations"] = [
            {
                **{k: d[k] for k in _DECLARATION_KEYS if d.get(k) is not None},
                **{k: v for k, v in d.items() if k not in _DECLARATION_KEYS and v is not None},
            }
            if isinstance(d, dict)
            else d
            for d in declarations
        ]
    return ordered


def tool_declarations_json(app_details: AppDetails) -> str:
    """``get_tool_declarations_as_json_str``: every agent's tool declarations, by agent name."""
    return pydantic_json(
        {
            "tool_declarations": {
                name: [tool_dict(t) for t in details.tool_declarations]
                for name, details in app_details.agent_details.items()
            }
        }
    )


NO_GROUNDING = "No grounding metadata was provided."
"""``get_grounding_metadata_as_json_str`` without grounding metadata: spans carry none, so this is
what every otel-eval judge prompt shows where ADK's may show a model's search grounding."""


def developer_instructions(app_details: AppDetails, agent_name: str) -> str:
    """``AppDetails.get_developer_instructions``: an unknown agent is an error, as in ADK."""
    if agent_name not in app_details.agent_details:
        raise ValueError(f"`{agent_name}` not found in the agentic system.")
    return app_details.agent_details[agent_name].instructions
