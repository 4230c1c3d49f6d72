"""One chat message as every dialect's messages become it, and what all the readers share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...json_text import parse_json_maybe
from ..base import RequestedToolCall, ToolResponse

_ROLE_ALIASES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system", "function": "tool"}


@dataclass
class Message:
    """One chat message, whatever dialect it was written in."""

    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[RequestedToolCall] = field(default_factory=list)
    responses: list[ToolResponse] = field(default_factory=list)
    reasoning: Sequence[str] = ()
    """The model's reasoning (``reasoning`` / ``thinking`` parts, Gemini ``thought`` texts): not text."""
    unread: Sequence[str] = ()
    """Why parts of the message were not read, or were kept as JSON text (``"unknown content
    part type 'foo'"``). Empty tuples until something is noted: most messages need no list."""

    @property
    def text(self) -> str | None:
        """The message's texts joined by newlines; None when it has none."""
        return "\n".join(self.texts) if self.texts else None

    def note(self, reason: str) -> None:
        """Record what was not read (each reason once, at most :data:`MAX_NOTES`)."""
        unread = self.unread if type(self.unread) is list else list(self.unread)
        if reason not in unread and len(unread) < MAX_NOTES:
            unread.append(reason)
        self.unread = unread

    def think(self, text: str) -> None:
        """Add one piece of reasoning (the shared empty tuple becomes a list of this message's own)."""
        reasoning = self.reasoning if type(self.reasoning) is list else list(self.reasoning)
        reasoning.append(text)
        self.reasoning = reasoning


MAX_NOTES = 20


def is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, quick for the plain dicts messages nearly always are (a test
    against the ABC is slow)."""
    return type(value) is dict or isinstance(value, Mapping)


def normalise_role(role: Any) -> str:
    """A role as the readers compare it: lower case, aliases resolved (``model``/``ai`` →
    ``assistant``, ``human`` → ``user``, ...), none → ``user``."""
    if type(role) is str:
        known = _NORMALISED.get(role)
        if known is not None:
            return known
    text = str(role or "").strip().lower()
    normalised = _ROLE_ALIASES.get(text, text or "user")
    if type(role) is str and len(_NORMALISED) < 256:  # the same few roles come in every message
        _NORMALISED[role] = normalised
    return normalised


_NORMALISED: dict[str, str] = {}


def as_list(value: Any) -> list[Any]:
    """A value as a list: JSON text parsed, None empty, one item a list of one."""
    value = parse_json_maybe(value)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def str_or_none(value: Any) -> str | None:
    """A value as text, None and ``""`` as None."""
    return None if value in (None, "") else str(value)
