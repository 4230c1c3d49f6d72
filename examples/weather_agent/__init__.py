"""The example weather agent: scripted decisions, OpenInference-shaped spans.

from examples.weather_agent import run_session, agent_resource
provider = TracerProvider(resource=agent_resource("1.0.0"))
run_session(provider, "s1", ["What's the weather in Tokyo?"])
"""

from .agent import (
    AGENT_NAME,
    MODEL_NAME,
    SessionResult,
    TurnResult,
    agent_resource,
    mistakes_for,
    run_session,
)
from .policy import FORECAST_FOR_WEATHER, MISTAKES, WRONG_TABLE, WRONG_TABLE_NAME

__all__ = [
    "AGENT_NAME",
    "MODEL_NAME",
    "SessionResult",
    "TurnResult",
    "agent_resource",
    "mistakes_for",
    "run_session",
    "FORECAST_FOR_WEATHER",
    "MISTAKES",
    "WRONG_TABLE",
    "WRONG_TABLE_NAME",
]
