"""How a golden format declares the keys it knows, and the check that reports every other key.

A misspelled key (``expected_tool_trajectroy``) used to be ignored: the expectation it held was
lost, every criterion was skipped, and a wrong session passed. So every object of a golden file
is checked against the keys its format defines; an unknown one is a problem with its JSON path
and the closest known key. Each format module declares its shape with the small vocabulary
below (:class:`Obj`, :class:`ListOf`, :class:`MapOf`, :class:`TupleOf`; ``None`` = a value
whose keys are not checked: scalars and free-form objects such as ``metadata`` or tool ``args``).

The check looks at keys only. A value of the wrong type is left to the format's parser, which
reports it with a better message; the check simply does not descend into it.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from .problems import ProblemLog, child
from .suggest import closest_key


@dataclass(frozen=True)
class Obj:
    """An object whose keys are ``fields`` (key → spec of its value).

    ``camel``: every key may also be written in camelCase (pydantic's ``to_camel`` alias, as
    google-adk and google-genai accept: ``tool_uses`` or ``toolUses``).
    """

    fields: Mapping[str, Spec]
    camel: bool = False
    _names: dict[str, str] = field(init=False, repr=False, compare=False, hash=False, default_factory=dict)

    def __post_init__(self) -> None:
        names = {key: key for key in self.fields}
        if self.camel:
            names.update({to_camel(key): key for key in self.fields})
        object.__setattr__(self, "_names", names)

    def spec_of(self, key: str) -> tuple[bool, Spec]:
        """(known, spec of the value) for ``key``."""
        name = self._names.get(key)
        if name is None:
            return False, None
        return True, self.fields[name]

    def known_keys(self, like: str) -> list[str]:
        """The keys to suggest for ``like``: camelCase ones when it is written in camelCase."""
        if self.camel and any(c.isupper() for c in like):
            return [to_camel(key) for key in self.fields]
        return list(self.fields)


@dataclass(frozen=True)
class ListOf:
    """A JSON array whose items all follow one spec."""

    item: Spec


@dataclass(frozen=True)
class MapOf:
    """An object with free keys (names chosen by the author) whose values have one shape."""

    value: Spec


@dataclass(frozen=True)
class TupleOf:
    """A JSON array holding a fixed sequence of values (ADK's ``[author, parts]`` pairs)."""

    items: tuple[Spec, ...]


Spec = None | Obj | ListOf | MapOf | TupleOf


def to_camel(snake: str) -> str:
    """``tool_uses`` → ``toolUses`` (pydantic's ``alias_generators.to_camel``)."""
    head, *rest = snake.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def unknown_key_reason(key: str, spec: Obj) -> str:
    """Why a key is refused: the closest known key when one is near, else the keys allowed there."""
    known = spec.known_keys(key)
    guess = closest_key(key, known)
    if guess is not None:
        return f"unknown key '{key}' (did you mean '{guess}'?)"
    listed = ", ".join(f"'{k}'" for k in sorted(known)[:12]) + (", ..." if len(known) > 12 else "")
    return f"unknown key '{key}'; known keys here: {listed}"


def check_keys(value: Any, spec: Spec, path: str, log: ProblemLog) -> None:
    """Log every key of ``value`` (and of what it holds) that ``spec`` does not know."""
    if spec is None:
        return
    if isinstance(spec, Obj):
        if not isinstance(value, dict):
            return
        for key, item in value.items():
            known, item_spec = spec.spec_of(key)
            if not known:
                log.add(child(path, key), unknown_key_reason(key, spec))
            else:
                check_keys(item, item_spec, child(path, key), log)
    elif isinstance(spec, ListOf):
        if isinstance(value, list):
            for i, item in enumerate(value):
                check_keys(item, spec.item, child(path, i), log)
    elif isinstance(spec, MapOf):
        if isinstance(value, dict):
            for key, item in value.items():
                check_keys(item, spec.value, child(path, key), log)
    elif isinstance(spec, TupleOf):
        if isinstance(value, list):
            for i, (item, item_spec) in enumerate(zip(value, spec.items)):
                check_keys(item, item_spec, child(path, i), log)


@cache
def model_spec(model: type[BaseModel]) -> Obj:
    """The keys of a pydantic model (its field names, or aliases), recursively.

    Fields typed ``dict[...]`` or ``Any`` are free-form (``metadata``, ``args``, ``initial_state``).
    """
    return Obj({info.alias or name: _annotation_spec(info.annotation) for name, info in model.model_fields.items()})


def _annotation_spec(annotation: Any) -> Spec:
    origin = get_origin(annotation)
    if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        specs = [s for s in (_annotation_spec(a) for a in get_args(annotation) if a is not type(None)) if s is not None]
        # Several structured alternatives would need merging; none of the golden models has them.
        return specs[0] if len(specs) == 1 else None
    if origin in (list, tuple, set, frozenset):
        args = get_args(annotation)
        item = _annotation_spec(args[0]) if args else None
        return ListOf(item) if item is not None else None
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return model_spec(annotation)
    return None  # scalars, Any, dict[...]: keys not checked
