"""The ingest benchmark's golden set: agent conversations over four tools (weather, forecast,
company data, policy documents), each case with distinct first queries (pure, seeded)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Every session built from a case has this many spans at most and at least (the agent root, an LLM
#: call and a tool per tool call, the final LLM answer, per turn; a failed call and its retry add two).
MAX_SESSION_SPANS = 20
MIN_SESSION_SPANS = 5

CITIES = [
    "Tokyo",
    "Paris",
    "London",
    "Berlin",
    "Madrid",
    "Rome",
    "Vienna",
    "Prague",
    "Warsaw",
    "Lisbon",
    "Dublin",
    "Oslo",
    "Stockholm",
    "Helsinki",
    "Copenhagen",
    "Amsterdam",
    "Brussels",
    "Zurich",
    "Athens",
    "Istanbul",
    "Cairo",
    "Nairobi",
    "Lagos",
    "Johannesburg",
    "Dubai",
    "Mumbai",
    "Delhi",
    "Bangalore",
    "Singapore",
    "Bangkok",
    "Jakarta",
    "Manila",
    "Seoul",
    "Beijing",
    "Shanghai",
    "Sydney",
    "Melbourne",
    "Auckland",
    "Toronto",
    "Vancouver",
    "Montreal",
    "Chicago",
    "Boston",
    "Seattle",
    "Denver",
    "Austin",
    "Miami",
    "Atlanta",
    "Phoenix",
    "Mexico City",
    "Lima",
    "Bogota",
    "Santiago",
    "Buenos Aires",
    "Sao Paulo",
    "Reykjavik",
    "Edinburgh",
    "Marseille",
    "Munich",
    "Hamburg",
]
UNKNOWN_CITIES = ["Springfield", "Riverton", "Fairview", "Greenville", "Lakeside", "Oakdale", "Maplewood"]
WHEN = ["today", "tomorrow", "tonight", "this morning", "this afternoon", "this weekend", "on Monday", "on Friday"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "foggy", "snowy", "partly cloudy", "stormy"]
ENTITIES = ["customers", "products", "sellers", "stores", "campaigns", "suppliers", "subscriptions", "categories"]
METRICS = ["revenue", "order count", "refund rate", "average basket size", "margin", "churn", "page views", "returns"]
REGIONS = [
    "Europe",
    "North America",
    "Asia Pacific",
    "Latin America",
    "the Nordics",
    "Germany",
    "Japan",
    "Brazil",
    "Canada",
    "Australia",
    "India",
    "France",
]
PERIODS = ["last week", "last month", "last quarter", "this year", "the holiday season", "the first half"]
TOPICS = [
    "refund",
    "shipping",
    "warranty",
    "privacy",
    "cancellation",
    "exchange",
    "price match",
    "data retention",
    "gift card",
    "loyalty points",
]
PRODUCTS = [
    "laptops",
    "phones",
    "headphones",
    "furniture",
    "groceries",
    "books",
    "toys",
    "garden tools",
    "software licences",
    "concert tickets",
]


@dataclass(frozen=True)
class ToolStep:
    name: str
    args: dict
    result: Any


@dataclass(frozen=True)
class Turn:
    query: str
    steps: tuple[ToolStep, ...]
    answer: str


@dataclass(frozen=True)
class GoldenCase:
    eval_id: str
    turns: tuple[Turn, ...]


def spans_of_turn(turn: Turn) -> int:
    """agent root + (LLM deciding + tool) per step + the final LLM answer."""
    return 2 + 2 * len(turn.steps)


def weather_step(rng: random.Random, city: str, when: str) -> tuple[ToolStep, str]:
    temp, cond = rng.randint(-5, 35), rng.choice(CONDITIONS)
    step = ToolStep(
        "get_weather", {"city": city, "when": when}, {"city": city, "temperature_c": temp, "condition": cond}
    )
    return step, f"{city}: {temp}°C and {cond} {when}."


def _forecast(rng: random.Random, city: str, days: int) -> tuple[ToolStep, str]:
    daily: list[dict[str, Any]] = [
        {"day": d + 1, "high_c": rng.randint(0, 35), "condition": rng.choice(CONDITIONS)} for d in range(days)
    ]
    step = ToolStep("get_forecast", {"city": city, "days": days}, {"city": city, "daily": daily})
    return step, f"Over the next {days} days {city} peaks at {max(d['high_c'] for d in daily)}°C."


def _sql(rng: random.Random, question: str, entity: str, metric: str, region: str, n: int) -> tuple[ToolStep, str]:
    column = metric.replace(" ", "_")
    table = f"{entity[:-1] if entity.endswith('s') else entity}_{column}_daily"
    sql = (
        f"SELECT {entity[:-1]}_id, SUM({column}) AS {column} FROM {table} WHERE region = '{region}' "
        f"GROUP BY {entity[:-1]}_id ORDER BY {column} DESC LIMIT {n}"
    )
    rows = [[f"{entity[:2]}-{rng.randint(1000, 9999)}", round(rng.uniform(10, 10_000), 2)] for _ in range(min(n, 5))]
    step = ToolStep("call_db_agent", {"question": question}, {"sql": sql, "rows": rows})
    return step, f"The top {entity} by {metric} in {region} start with {rows[0][0]} at {rows[0][1]}."


def _docs(rng: random.Random, topic: str, product: str) -> tuple[ToolStep, str]:
    docs = [
        {
            "id": f"policy-{rng.randint(100, 999)}",
            "score": round(rng.uniform(0.6, 0.99), 2),
            "content": f"{topic.capitalize()} for {product}: requests are handled within {rng.randint(2, 30)} days "
            f"of purchase with proof of purchase; exceptions apply to opened items.",
        }
        for _ in range(2)
    ]
    step = ToolStep("search_docs", {"query": f"{topic} policy {product}"}, {"documents": docs})
    return step, f"Per {docs[0]['id']}: {docs[0]['content']}"


def _first_turn(rng: random.Random) -> Turn:
    """A first user turn with a query that names everything the tools need."""
    kind = rng.choices(["weather", "compare", "forecast", "sql", "docs"], weights=[15, 15, 10, 45, 15])[0]
    if kind == "weather":
        city, when = rng.choice(CITIES), rng.choice(WHEN)
        step, answer = weather_step(rng, city, when)
        return Turn(f"What's the weather in {city} {when}?", (step,), answer)
    if kind == "compare":
        a, b = rng.sample(CITIES, 2)
        when = rng.choice(WHEN)
        (s1, a1), (s2, a2) = weather_step(rng, a, when), weather_step(rng, b, when)
        return Turn(f"Compare the weather in {a} and {b} {when}", (s1, s2), f"{a1} {a2}")
    if kind == "forecast":
        city, days = rng.choice(CITIES), rng.randint(2, 10)
        step, answer = _forecast(rng, city, days)
        return Turn(f"Give me the {days}-day forecast for {city}", (step,), answer)
    if kind == "sql":
        n, entity, metric = rng.choice([3, 5, 10, 20, 25, 50]), rng.choice(ENTITIES), rng.choice(METRICS)
        region, period = rng.choice(REGIONS), rng.choice(PERIODS)
        query = f"Show me the top {n} {entity} by {metric} in {region} for {period}"
        step, answer = _sql(rng, query, entity, metric, region, n)
        return Turn(query, (step,), answer)
    topic, product, region = rng.choice(TOPICS), rng.choice(PRODUCTS), rng.choice(REGIONS)
    step, answer = _docs(rng, topic, product)
    return Turn(f"What is your {topic} policy for {product} bought in {region}?", (step,), answer)


def follow_up(rng: random.Random, previous: Turn) -> Turn:
    """A second or third turn that leans on the first ("what about tomorrow?")."""
    first = previous.steps[0]
    if first.name in ("get_weather", "get_forecast"):
        city = first.args["city"]
        days = rng.randint(2, 5)
        step, answer = _forecast(rng, city, days)
        return Turn(f"And the next {days} days?", (step,), answer)
    if first.name == "call_db_agent":
        question = "Break that down by month"
        step, answer = _sql(rng, question, rng.choice(ENTITIES), rng.choice(METRICS), rng.choice(REGIONS), 12)
        return Turn(question, (step,), answer)
    step, answer = _docs(rng, rng.choice(TOPICS), rng.choice(PRODUCTS))
    return Turn("Does that also apply to gifts?", (step,), answer)


def make_golden_cases(count: int, seed: int) -> list[GoldenCase]:
    """``count`` cases with distinct first queries; every session built from one has 5-20 spans."""
    rng = random.Random(seed)
    cases: list[GoldenCase] = []
    seen: set[str] = set()
    attempts = 0
    while len(cases) < count:
        attempts += 1
        if attempts > count * 50:
            raise ValueError(f"cannot make {count} distinct golden queries from the built-in vocabulary")
        first = _first_turn(rng)
        if first.query.casefold() in seen:
            continue
        seen.add(first.query.casefold())
        turns = [first]
        for _ in range(rng.choices([0, 1, 2], weights=[6, 3, 1])[0]):
            turns.append(follow_up(rng, turns[-1]))
        while sum(map(spans_of_turn, turns)) < MIN_SESSION_SPANS:
            turns.append(follow_up(rng, turns[-1]))
        while sum(map(spans_of_turn, turns)) > MAX_SESSION_SPANS:
            turns.pop()
        cases.append(GoldenCase(f"case-{len(cases):05d}", tuple(turns)))
    return cases


def golden_evalset(cases: Sequence[GoldenCase]) -> dict:
    """The cases as an ``.evalset.json`` document (the canonical golden format)."""
    return {
        "eval_set_id": "ingest_benchmark",
        "name": "Ingest benchmark golden set",
        "description": "Generated by benchmarks/ingest.py; one case per distinct first query.",
        "eval_cases": [
            {
                "eval_id": case.eval_id,
                "conversation": [
                    {
                        "invocation_id": f"{case.eval_id}-{i + 1}",
                        "user_content": {"role": "user", "content": turn.query},
                        "expected_tool_trajectory": [{"name": s.name, "args": s.args} for s in turn.steps],
                        "expected_final_response": {"role": "assistant", "content": turn.answer},
                    }
                    for i, turn in enumerate(case.turns)
                ],
            }
            for case in cases
        ],
    }
