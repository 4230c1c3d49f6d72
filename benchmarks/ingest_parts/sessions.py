"""Agent sessions drawn from the golden set: mostly what a case expects, some with a typo (a fuzzy
match), wrong tool arguments, or a question the set does not have; and whole sessions picked to
fill a request of a given size (pure, seeded)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .agent_spans import SpanSpec, turn_builder
from .golden import (
    MAX_SESSION_SPANS,
    MIN_SESSION_SPANS,
    UNKNOWN_CITIES,
    WHEN,
    GoldenCase,
    ToolStep,
    Turn,
    follow_up,
    spans_of_turn,
    weather_step,
)

#: Session ids in a raw template read ``bench-zzzzzzzz-<index>``; the z's become the request's epoch.
SESSION_MARK = b"bench-zzzzzzzz-"


@dataclass
class SessionSpec:
    index: int
    convention: str  # "openinference" | "genai"
    variant: str  # "exact" | "wrong_args" | "fuzzy" | "unmatched"
    spans: list[SpanSpec]
    traces: int

    @property
    def duration(self) -> int:
        return max(s.end for s in self.spans)

    def renumbered(self, index: int) -> SessionSpec:
        """The same session as number ``index`` of its request: its session id (in every attribute
        that carries it, JSON text included) follows the number, as its trace and span ids do, so
        a pool session picked twice for one request makes two sessions, not one of twice the traces."""
        old, new = session_id_of_index(self.index), session_id_of_index(index)

        def renamed(attributes: dict) -> dict:
            return {k: v.replace(old, new) if isinstance(v, str) else v for k, v in attributes.items()}

        spans = [
            replace(
                span,
                attributes=renamed(span.attributes),
                events=tuple((name, at, renamed(attrs)) for name, at, attrs in span.events),
            )
            for span in self.spans
        ]
        return SessionSpec(index, self.convention, self.variant, spans, self.traces)


def session_id_of_index(index: int) -> str:
    """A template's session id before the request's epoch is written into it."""
    return (SESSION_MARK + b"%04x" % index).decode()


def _typo(rng: random.Random, query: str) -> str | None:
    """Swap two inner letters of one long word: still the same question to the fuzzy matcher."""
    words = query.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not candidates:
        return None
    i = rng.choice(candidates)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def variant_turns(rng: random.Random, case: GoldenCase) -> tuple[str, list[Turn]]:
    """What the agent actually did: mostly what the case expects, sometimes not."""
    turns = list(case.turns)
    roll = rng.random()
    if roll < 0.10:
        typo = _typo(rng, turns[0].query)
        if typo:
            turns[0] = Turn(typo, turns[0].steps, turns[0].answer)
            return "fuzzy", turns
    if roll < 0.20:
        city = rng.choice(UNKNOWN_CITIES)
        step, answer = weather_step(rng, city, rng.choice(WHEN))
        turns[0] = Turn(f"What's the weather in {city} {step.args['when']}?", (step,), answer)
        return "unmatched", turns
    if roll < 0.28:
        first = turns[0]
        wrong = ToolStep(
            first.steps[0].name,
            {k: (f"{v} (wrong)" if isinstance(v, str) else v) for k, v in first.steps[0].args.items()},
            first.steps[0].result,
        )
        turns[0] = Turn(first.query, (wrong, *first.steps[1:]), first.answer)
        return "wrong_args", turns
    return "exact", turns


def make_session(index: int, case: GoldenCase, convention: str, rng: random.Random) -> SessionSpec:
    """The spans one agent session of ``case`` produces, in the given attribute convention."""
    variant, turns = variant_turns(rng, case)
    while sum(map(spans_of_turn, turns)) < MIN_SESSION_SPANS:  # a replaced first turn can be shorter
        turns.append(follow_up(rng, turns[-1]))
    session_id = session_id_of_index(index)
    user_id = f"user-{rng.randint(1, 500)}"
    build = turn_builder(convention)
    spans: list[SpanSpec] = []
    history: list[dict] = []
    offset = 0
    total = sum(map(spans_of_turn, turns))
    for trace_no, turn in enumerate(turns, start=1):
        # One tool failure and retry now and then, as long as the session stays within 20 spans.
        fail_first = total + 2 <= MAX_SESSION_SPANS and rng.random() < 0.05
        if fail_first:
            total += 2
        turn_spans, offset = build(turn, trace_no, offset, session_id, user_id, history, fail_first, rng)
        spans.extend(turn_spans)
        history += [{"role": "user", "content": turn.query}, {"role": "assistant", "content": turn.answer}]
        offset += 2_000_000_000  # the user reads and types
    return SessionSpec(index, convention, variant, spans, len(turns))


def make_sessions(cases: Sequence[GoldenCase], count: int, seed: int, first_index: int = 0) -> list[SessionSpec]:
    """``count`` sessions of random golden cases, alternating the two conventions."""
    rng = random.Random(seed)
    return [
        make_session(first_index + i, rng.choice(cases), ("openinference", "genai")[i % 2], rng) for i in range(count)
    ]


def pick_sessions(by_size: dict[int, list[SessionSpec]], target: int, rng: random.Random) -> list[SessionSpec]:
    """Whole sessions adding up to ``target`` spans (or a few less when no session fits the rest)."""
    chosen: list[SessionSpec] = []
    remaining = target
    sizes = sorted(by_size)
    while remaining >= sizes[0]:
        if remaining > sizes[-1]:
            size = rng.choice(sizes)
        elif remaining in by_size:
            size = remaining
        else:
            size = max(s for s in sizes if s <= remaining)
        chosen.append(rng.choice(by_size[size]))
        remaining -= size
    return chosen
