"""The agent's four tools, their JSON schemas, and the canned data they answer from.

The data is fixed so that a run is reproducible: the golden sets in ``examples/golden`` quote
these numbers and sentences, and a change here must be mirrored there.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

WEATHER: dict[str, dict[str, Any]] = {
    "Tokyo": {"temperature_c": 22, "condition": "sunny"},
    "Paris": {"temperature_c": 18, "condition": "cloudy"},
    "London": {"temperature_c": 15, "condition": "light rain"},
    "Berlin": {"temperature_c": 12, "condition": "windy"},
    "New York": {"temperature_c": 25, "condition": "clear"},
}

#: Day-by-day forecast; day 1 is tomorrow.
FORECAST: dict[str, list[dict[str, Any]]] = {
    "Tokyo": [
        {"temperature_c": 24, "condition": "sunny"},
        {"temperature_c": 21, "condition": "showers"},
        {"temperature_c": 20, "condition": "cloudy"},
    ],
    "Paris": [
        {"temperature_c": 20, "condition": "sunny"},
        {"temperature_c": 17, "condition": "rain"},
        {"temperature_c": 19, "condition": "cloudy"},
    ],
    "London": [
        {"temperature_c": 16, "condition": "cloudy"},
        {"temperature_c": 14, "condition": "rain"},
        {"temperature_c": 17, "condition": "sunny"},
    ],
    "Berlin": [
        {"temperature_c": 13, "condition": "cloudy"},
        {"temperature_c": 15, "condition": "sunny"},
        {"temperature_c": 11, "condition": "rain"},
    ],
    "New York": [
        {"temperature_c": 27, "condition": "sunny"},
        {"temperature_c": 26, "condition": "humid"},
        {"temperature_c": 23, "condition": "storms"},
    ],
}

#: What the database agent "knows": a question keyword → the table it queries and the rows it returns.
REVENUE_ROWS = [
    {"user_id": f"u{n:03d}", "revenue": revenue}
    for n, revenue in enumerate([9800, 9100, 8700, 8150, 7900, 7420, 7010, 6600, 6250, 5980], start=1)
]
ACTIVE_USERS_ROWS = [{"month": "2024-05", "active_users": 4213}]

POLICY_DOCUMENTS: list[dict[str, Any]] = [
    {
        "id": "policy-001",
        "content": "Refunds are available within 30 days of purchase for unused items.",
        "score": 0.92,
        "metadata": {"source": "help-center/refunds.md"},
    },
    {
        "id": "policy-002",
        "content": "Refunds are issued to the original payment method within 5 business days.",
        "score": 0.81,
        "metadata": {"source": "help-center/payments.md"},
    },
    {
        "id": "policy-003",
        "content": "Shipping is free for orders over $50.",
        "score": 0.35,
        "metadata": {"source": "help-center/shipping.md"},
    },
]


class ToolError(Exception):
    """A tool refused its input; the message is what the model sees and can act on."""


def _known_city(city: str) -> str:
    for known in WEATHER:
        if known.lower() == str(city).strip().lower():
            return known
    close = difflib.get_close_matches(str(city).strip().title(), list(WEATHER), n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise ToolError(f"Unknown city '{city}'.{hint}")


def get_weather(city: str) -> dict[str, Any]:
    name = _known_city(city)
    return {"city": name, **WEATHER[name]}


def get_forecast(city: str, days: int = 1) -> dict[str, Any]:
    name = _known_city(city)
    days = int(days)
    if not 1 <= days <= len(FORECAST[name]):
        raise ToolError(f"days must be between 1 and {len(FORECAST[name])}, got {days}.")
    return {"city": name, "days": [{"day": i + 1, **day} for i, day in enumerate(FORECAST[name][:days])]}


def call_db_agent(question: str, table: str | None = None) -> dict[str, Any]:
    """A stand-in for a text-to-SQL sub-agent: the answer carries the SQL it ran.

    ``table`` lets the scripted "bad version" query the wrong table; real callers leave it None.
    """
    text = question.lower()
    if "active user" in text:
        table = table or "monthly_active_users"
        sql = (
            f"SELECT month, COUNT(DISTINCT user_id) AS active_users FROM {table} WHERE month = '2024-05' GROUP BY month"
        )
        return {"sql": sql, "rows": ACTIVE_USERS_ROWS}
    if "revenue" in text:
        table = table or "user_revenue_table"
        sql = f"SELECT user_id, SUM(amount) AS revenue FROM {table} GROUP BY user_id ORDER BY revenue DESC LIMIT 10"
        return {"sql": sql, "rows": REVENUE_ROWS}
    raise ToolError(f"The database agent cannot answer: {question!r}")


def search_docs(query: str) -> list[dict[str, Any]]:
    """Documents containing a word of the query (so "refund" finds "Refunds"), best first."""
    words = [word for word in query.lower().split() if len(word) > 3]
    hits = [doc for doc in POLICY_DOCUMENTS if any(word in doc["content"].lower() for word in words)]
    return sorted(hits, key=lambda doc: -doc["score"])


TOOLS: dict[str, Callable[..., Any]] = {
    "get_weather": get_weather,
    "get_forecast": get_forecast,
    "call_db_agent": call_db_agent,
    "search_docs": search_docs,
}

DESCRIPTIONS = {
    "get_weather": "Get the current weather for a city.",
    "get_forecast": "Get the weather forecast for a city for the next N days.",
    "call_db_agent": "Ask the database agent a natural-language question about company data.",
    "search_docs": "Search the help-center policy documents.",
}

#: JSON schemas of the parameters, as an LLM sees them in its ``tools`` list.
PARAMETERS: dict[str, dict[str, Any]] = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_forecast": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 3}},
        "required": ["city", "days"],
    },
    "call_db_agent": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    "search_docs": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def function_schema(name: str) -> dict[str, Any]:
    """The OpenAI-style tool definition OpenInference records under ``llm.tools.N.tool.json_schema``."""
    return {
        "type": "function",
        "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": PARAMETERS[name]},
    }
