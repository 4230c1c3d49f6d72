"""The scripted conversations every capture plays, and the tools they call.

One table drives both sides: :mod:`captures.scripted_model` answers a framework's model request
from it, and each framework's agent script implements the tools with :func:`run_tool`, so every
framework sees the same model decisions and the same tool results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    """One model response: the tool calls it asks for (parallel when several), or the answer."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    answer: str | None = None


@dataclass(frozen=True)
class Scenario:
    id: str
    session: str
    user: str
    turns: tuple[str, ...]
    steps: dict[str, tuple[Step, ...]] = field(default_factory=dict)
    """user text of a turn → the model's responses in that turn, in order."""


SQL = "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table GROUP BY user_id ORDER BY revenue DESC LIMIT 10"

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "S1",
        "s1-weather",
        "user-alice",
        ("What's the weather in Tokyo?",),
        {
            "What's the weather in Tokyo?": (
                Step(calls=(("get_weather", {"city": "Tokyo"}),)),
                Step(answer="It is 22°C and sunny in Tokyo."),
            )
        },
    ),
    Scenario(
        "S2",
        "s2-multi-tool",
        "user-alice",
        ("Compare the weather in Paris and London",),
        {
            "Compare the weather in Paris and London": (
                Step(calls=(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"}))),
                Step(answer="Paris is 18°C and cloudy; London is 15°C and rainy, so Paris is warmer."),
            )
        },
    ),
    Scenario(
        "S3",
        "s3-followup",
        "user-dave",
        ("What's the weather in Paris?", "What about tomorrow?"),
        {
            "What's the weather in Paris?": (
                Step(calls=(("get_weather", {"city": "Paris"}),)),
                Step(answer="It is 18°C and cloudy in Paris."),
            ),
            "What about tomorrow?": (
                Step(calls=(("get_forecast", {"city": "Paris", "days": 1}),)),
                Step(answer="Tomorrow in Paris: 20°C and sunny."),
            ),
        },
    ),
    Scenario(
        "S4",
        "s4-sql",
        "user-bob",
        ("Show me the top 10 users by revenue",),
        {
            "Show me the top 10 users by revenue": (
                Step(calls=(("call_db_agent", {"question": "Show me the top 10 users by revenue"}),)),
                Step(answer=f"I ran `{SQL}`. The top user is u1 with 1000 in revenue."),
            )
        },
    ),
    Scenario(
        "S5",
        "s5-tool-error",
        "user-alice",
        ("What's the weather in Berlin?",),
        {
            "What's the weather in Berlin?": (
                Step(calls=(("get_weather", {"city": "Berln"}),)),
                Step(calls=(("get_weather", {"city": "Berlin"}),)),
                Step(answer="It is 12°C and windy in Berlin."),
            )
        },
    ),
    Scenario(
        "S6",
        "s6-retrieval",
        "user-carol",
        ("What is your refund policy?",),
        {
            "What is your refund policy?": (
                Step(calls=(("search_docs", {"query": "refund policy"}),)),
                Step(
                    answer="You can get a full refund within 30 days of purchase; "
                    "refunds are paid to the original payment method within 5 business days."
                ),
            )
        },
    ),
)

WEATHER = {
    "Tokyo": "22°C and sunny",
    "Paris": "18°C and cloudy",
    "London": "15°C and rainy",
    "Berlin": "12°C and windy",
}

DOCUMENTS = [
    {"id": "policy-001", "content": "Refunds: a full refund is available within 30 days of purchase."},
    {"id": "policy-002", "content": "Refunds are paid to the original payment method within 5 business days."},
]

#: What each tool is, for frameworks that need a description and a JSON schema.
TOOLS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    "get_forecast": {
        "description": "Get the weather forecast for a city, some days ahead.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    },
    "call_db_agent": {
        "description": "Answer a question about the sales database with SQL.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    },
    "search_docs": {
        "description": "Search the policy documents.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


def run_tool(name: str, args: dict[str, Any]) -> Any:
    """The tool's result; raises ``ValueError`` for an unknown city (S5's failed first call)."""
    if name == "get_weather":
        city = args["city"]
        if city not in WEATHER:
            raise ValueError(f"Unknown city: {city}")
        return f"It is {WEATHER[city]} in {city}."
    if name == "get_forecast":
        return f"Forecast for {args['city']} in {args['days']} day(s): 20°C and sunny."
    if name == "call_db_agent":
        return {"sql": SQL, "rows": [{"user_id": f"u{i}", "revenue": 1000 - 50 * i} for i in range(1, 11)]}
    if name == "search_docs":
        return DOCUMENTS
    raise ValueError(f"unknown tool {name}")


def step_for(user_text: str, calls_so_far: int) -> Step:
    """The model's next response in the turn that began with ``user_text``, after it has already
    asked for tools ``calls_so_far`` times in that turn. An unknown text gets a plain answer,
    so a framework's own side requests (titles, summaries) never fail."""
    text = " ".join(user_text.split())
    for scenario in SCENARIOS:
        for turn, steps in scenario.steps.items():
            if turn.lower() in text.lower():
                return steps[min(calls_so_far, len(steps) - 1)]
    return Step(answer="OK.")
