"""The scripted "model": reads the chat so far and decides tool calls or a final answer.

No LLM is involved, so every run is reproducible; the decisions follow the user's words the
way a tool-calling model would, including reading a tool's error and retrying. Deliberate
mistakes (see :data:`MISTAKES`) make a "bad version" of the agent whose traces must fail
evaluation for a visible reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: The bad version calls get_forecast(city, days=1) where get_weather(city) was asked for.
FORECAST_FOR_WEATHER = "forecast_for_weather"
#: The bad version's database agent reads an outdated table (the SQL names the wrong table).
WRONG_TABLE = "wrong_table"
MISTAKES = frozenset({FORECAST_FOR_WEATHER, WRONG_TABLE})

#: Table the database agent wrongly reads under :data:`WRONG_TABLE`.
WRONG_TABLE_NAME = "revenue_archive_2019"


@dataclass
class PlannedCall:
    name: str
    arguments: dict[str, Any]


@dataclass
class Decision:
    """One model response: either tool calls (issued together, i.e. in parallel) or a final text."""

    calls: list[PlannedCall] = field(default_factory=list)
    text: str | None = None


_COMPARE = re.compile(r"compare the weather in (?P<a>.+?) and (?P<b>.+?)[?.!]*$", re.IGNORECASE)
_FORECAST = re.compile(r"forecast (?:for|in) (?P<city>.+?)(?: for the next (?P<days>\d+) days?)?[?.!]*$", re.IGNORECASE)
_WEATHER = re.compile(r"weather (?:in|for) (?P<city>.+?)[?.!]*$", re.IGNORECASE)
_TOMORROW = re.compile(r"\btomorrow\b", re.IGNORECASE)
_DATA = re.compile(r"\b(revenue|active users|orders|sales)\b", re.IGNORECASE)
_POLICY = re.compile(r"\b(refund|return|shipping|policy|policies)\b", re.IGNORECASE)
_POLICY_TOPIC = re.compile(r"(?:your|the) (?P<topic>.+?)[?.!]*$", re.IGNORECASE)
_DID_YOU_MEAN = re.compile(r"Unknown city '(?P<bad>[^']*)'\. Did you mean '(?P<good>[^']*)'\?")

FALLBACK_ANSWER = "I can help with the weather, forecasts, company data and our help-center policies."


def decide(messages: list[dict[str, Any]], mistakes: frozenset[str] = frozenset()) -> Decision:
    """The next model response for an OpenAI-style message list (system/user/assistant/tool)."""
    last_user = max(i for i, message in enumerate(messages) if message["role"] == "user")
    since_user = messages[last_user + 1 :]
    if not since_user:
        return _plan(messages[last_user]["content"], messages[:last_user], mistakes)
    retry = _retry_after_error(since_user)
    if retry is not None:
        return retry
    return Decision(text=_answer(since_user))


def _plan(text: str, history: list[dict[str, Any]], mistakes: frozenset[str]) -> Decision:
    text = text.strip()
    if match := _COMPARE.search(text):
        return Decision(calls=[_weather_call(match["a"], mistakes), _weather_call(match["b"], mistakes)])
    if match := _FORECAST.search(text):
        return Decision(calls=[PlannedCall("get_forecast", {"city": match["city"], "days": int(match["days"] or 1)})])
    if _TOMORROW.search(text):
        city = _last_city(history)
        if city:
            return Decision(calls=[PlannedCall("get_forecast", {"city": city, "days": 1})])
    if match := _WEATHER.search(text):
        return Decision(calls=[_weather_call(match["city"], mistakes)])
    if _DATA.search(text):
        return Decision(calls=[PlannedCall("call_db_agent", {"question": text})])
    if _POLICY.search(text):
        topic = _POLICY_TOPIC.search(text)
        return Decision(calls=[PlannedCall("search_docs", {"query": topic["topic"] if topic else text})])
    return Decision(text=FALLBACK_ANSWER)


def _weather_call(city: str, mistakes: frozenset[str]) -> PlannedCall:
    city = city.strip()
    if FORECAST_FOR_WEATHER in mistakes:
        return PlannedCall("get_forecast", {"city": city, "days": 1})
    return PlannedCall("get_weather", {"city": city})


def _last_city(history: list[dict[str, Any]]) -> str | None:
    """The city of the latest successful weather/forecast call: what "tomorrow" refers to."""
    for message in reversed(history):
        if message["role"] == "tool" and message.get("name") in ("get_weather", "get_forecast"):
            result = _json(message["content"])
            if isinstance(result, dict) and result.get("city"):
                return str(result["city"])
    return None


def _retry_after_error(since_user: list[dict[str, Any]]) -> Decision | None:
    """Retry a failed call once when the tool suggested a correction ("Did you mean 'Berlin'?")."""
    last_batch = _last_tool_batch(since_user)
    already_retried = sum(1 for message in since_user if message["role"] == "assistant") > 1
    if already_retried:
        return None
    calls = []
    for message in last_batch:
        match = _DID_YOU_MEAN.search(message["content"])
        if match:
            call = _call_of(since_user, message["tool_call_id"])
            arguments = {**call["arguments"], "city": match["good"]}
            calls.append(PlannedCall(call["name"], arguments))
    return Decision(calls=calls) if calls else None


def _last_tool_batch(since_user: list[dict[str, Any]]) -> list[dict[str, Any]]:
    batch: list[dict[str, Any]] = []
    for message in reversed(since_user):
        if message["role"] != "tool":
            break
        batch.insert(0, message)
    return batch


def _call_of(messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call["id"] == call_id:
                return {"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])}
    raise KeyError(call_id)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _answer(since_user: list[dict[str, Any]]) -> str:
    """The final answer, composed from the successful tool results of this turn."""
    results: dict[str, list[Any]] = {}
    errors: list[str] = []
    for message in since_user:
        if message["role"] != "tool":
            continue
        if message["content"].startswith("Error: "):
            errors.append(message["content"][len("Error: ") :])
        else:
            results.setdefault(message["name"], []).append(_json(message["content"]))
    if "get_weather" in results:
        return _weather_answer(results["get_weather"])
    if "get_forecast" in results:
        return _forecast_answer(results["get_forecast"][-1])
    if "call_db_agent" in results:
        return _data_answer(results["call_db_agent"][-1])
    if "search_docs" in results:
        documents = results["search_docs"][-1] or []
        return " ".join(doc["content"] for doc in documents) or "I found no policy document about that."
    if errors:
        return f"Sorry, I could not get that: {errors[-1]}"
    return FALLBACK_ANSWER


def _weather_answer(reports: list[dict[str, Any]]) -> str:
    if len(reports) == 1:
        report = reports[0]
        return f"It's currently {report['temperature_c']}°C and {report['condition']} in {report['city']}."
    first, second = reports[0], reports[1]
    difference = first["temperature_c"] - second["temperature_c"]
    if difference == 0:
        verdict = "so both are equally warm right now"
    else:
        warmer = first if difference > 0 else second
        verdict = f"so {warmer['city']} is {abs(difference)}°C warmer right now"
    return (
        f"{first['city']} is {first['temperature_c']}°C and {first['condition']}, while "
        f"{second['city']} is {second['temperature_c']}°C and {second['condition']}, {verdict}."
    )


def _forecast_answer(forecast: dict[str, Any]) -> str:
    days = forecast["days"]
    if len(days) == 1:
        return f"Tomorrow in {forecast['city']}: {days[0]['temperature_c']}°C and {days[0]['condition']}."
    parts = "; ".join(f"day {day['day']}: {day['temperature_c']}°C and {day['condition']}" for day in days)
    return f"Forecast for {forecast['city']}: {parts}."


def _data_answer(answer: dict[str, Any]) -> str:
    rows = answer.get("rows") or []
    if rows and "revenue" in rows[0]:
        users = ", ".join(row["user_id"] for row in rows)
        return (
            f"The top {len(rows)} users by revenue are {users}; {rows[0]['user_id']} leads with {rows[0]['revenue']}."
        )
    if rows and "active_users" in rows[0]:
        return f"We had {rows[0]['active_users']} active users in {rows[0]['month']}."
    return "The database returned no rows."
