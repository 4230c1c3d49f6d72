"""What a session's spans carry that no rule read: the answer to "which framework data is
otel-eval missing, and where is it?" for an instrumentation it has never seen.

A reading records, per AgentData field, the attribute or event it came from
(``Reading.sources``). Attributes that look like content (messages, prompts, inputs, outputs,
tool arguments and results) and span events that carry content, which a span's reader did not
read, are listed by name with how many spans carry them and one example span; so are the
reasons a reader gave for what it could not parse (``Reading.unread``). ``otel-eval inspect``
and ``report --session`` show the list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .mapping import MappedSpan

#: Key segments that mark an attribute as content a reader may have wanted.
_CONTENT_WORDS = frozenset(
    {
        "message",
        "messages",
        "content",
        "contents",
        "prompt",
        "prompts",
        "completion",
        "completions",
        "input",
        "inputs",
        "output",
        "outputs",
        "args",
        "arguments",
        "result",
        "results",
        "response",
        "responses",
        "text",
        "query",
        "instructions",
        "choice",
        "choices",
        "tool_calls",
        "toolcalls",
        "documents",
        "value",
        "answer",
    }
)
#: Key segments that are about content but are not content themselves.
_METADATA_WORDS = frozenset(
    {
        "mime_type",
        "role",
        "id",
        "name",
        "type",
        "finish_reason",
        "finish_reasons",
        "count",
        "tokens",
        "model",
        "index",
        "status",
        "length",
        "size",
    }
)
#: Events no reader needs: the ``exception`` event feeds every dialect's error rule.
_IGNORED_EVENTS = frozenset({"exception", "session.end"})
_SOURCE_KEY = re.compile(r"(?:event:)?[A-Za-z_][\w*-]*(?:\.[\w*-]+)+|event:[\w.-]+")


@dataclass(frozen=True)
class Unread:
    """One attribute, event or reader problem nobody read, with how many spans carry it and one of
    them to look at."""

    kind: str
    """"attribute", "event" (a span event's name) or "problem" (a reader's reason)."""
    name: str
    spans: int
    example_span: str

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON, as ``inspect`` and ``report --session`` show it."""
        return {"kind": self.kind, "name": self.name, "spans": self.spans, "example_span": self.example_span}


def unread_in_session(mapped: Sequence[MappedSpan]) -> list[Unread]:
    """Content attributes and events that a span carried and its reader did not read, by name
    over the session's spans, and the readers' reasons for what they could not parse; most
    frequent first."""
    attributes: dict[str, list[str]] = {}
    events: dict[str, list[str]] = {}
    problems: dict[str, list[str]] = {}
    for m in mapped:
        read_patterns = _read_patterns([m.reading.sources.values()])
        for key, value in m.span.attributes.items():
            if _is_content(key, value) and not _is_read(key, read_patterns):
                attributes.setdefault(key, []).append(m.span.name)
        for event in m.span.events:
            if event.name in _IGNORED_EVENTS or not event.attributes:
                continue
            if not _is_read("event:" + event.name, read_patterns):
                events.setdefault(event.name, []).append(m.span.name)
        for reason in getattr(m.reading, "unread", None) or ():
            problems.setdefault(str(reason), []).append(m.span.name)
    out = [Unread("attribute", key, len(names), names[0]) for key, names in attributes.items()]
    out += [Unread("event", name, len(names), names[0]) for name, names in events.items()]
    out += [Unread("problem", reason, len(names), names[0]) for reason, names in problems.items()]
    out.sort(key=lambda u: (u.kind != "problem", -u.spans, u.kind, u.name))
    return out


def _family(key: str) -> str:
    """An indexed attribute's family: ``llm.input_messages.2.message.content`` →
    ``llm.input_messages``. A reader that read one member read the list (the rest is history)."""
    parts = key.split(".")
    for i, part in enumerate(parts):
        if part == "*" or part.isdigit():
            return ".".join(parts[:i])
    return key


def _read_patterns(sources: Iterable[Iterable[str]]) -> tuple[set[str], list[re.Pattern[str]]]:
    """Every attribute or event a reading named, as exact names, indexed families and patterns
    (``*`` in a source such as ``llm.input_messages.*.message.content`` stands for any segments)."""
    exact: set[str] = set()
    patterns: dict[str, re.Pattern[str]] = {}
    for values in sources:
        for source in values:
            exact.update(word.strip("()'\",") for word in str(source).split())  # keys without a dot: final_result
            for token in _SOURCE_KEY.findall(str(source)):
                family = _family(token)
                if family != token:
                    exact.add(family)
                if "*" in token:
                    if token not in patterns:
                        body = re.escape(token).replace(r"\*", r"[^\s]*")
                        patterns[token] = re.compile(body + r"(?:\..*)?")
                else:
                    exact.add(token)
    return exact, list(patterns.values())


def _is_read(key: str, read: tuple[set[str], list[re.Pattern[str]]]) -> bool:
    exact, patterns = read
    if key in exact:
        return True
    # A family read as a whole: ``gen_ai.prompt`` read covers ``gen_ai.prompt.0.content``.
    if _family(key) in exact:
        return True
    parts = key.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in exact:
            return True
    return any(p.fullmatch(key) for p in patterns)


def _is_content(key: str, value: Any) -> bool:
    if isinstance(value, str):
        if not value.strip():
            return False
    elif not isinstance(value, (list, tuple)) or not value:
        return False
    # The last segment that is not an index names what the value is: ``ai.response.text`` is
    # content, ``ai.response.providerMetadata`` is not.
    last = next((s for s in reversed(key.split(".")) if s and not s.isdigit()), "")
    word = _CAMEL.sub("_", last).replace("-", "_").lower()
    if word in _METADATA_WORDS or word.endswith(("_id", "_type", "_name")):
        return False
    return word in _CONTENT_WORDS or word.endswith(
        ("_messages", "_input", "_inputs", "_output", "_outputs", "_args", "_result")
    )


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
