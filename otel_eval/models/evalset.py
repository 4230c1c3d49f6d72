"""The golden-set model: EvalSet → EvalCase → Invocation, as in the evalset seed.

Every golden format otel-eval reads (EvalSet JSON, trajectory-golden, Big Sky, ADK) loads into
these classes. Expectations that only some formats carry (SQL expected or not, the expected
table, first-call-only matching) are first-class fields of :class:`Invocation`, so scoring never
digs through ``metadata``.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..errors import InputError
from .arguments import IGNORE as IGNORE  # golden formats import it from here
from .arguments import arguments_equal
from .keys import check_keys, model_spec
from .problems import GoldenFileError, ProblemLog, log_validation_errors
from .suggest import unknown_name


class _Golden(BaseModel):
    """A golden-set model: a keyword it does not know is an error, in Python as in a file (where
    :func:`check_keys` reports every one at its JSON path): a misspelled expectation
    (``expected_tool_trajectroy=``) must not leave the check it meant silently out."""

    model_config = ConfigDict(extra="forbid")


class MessageContent(_Golden):
    """A message of a golden conversation: its role and content (text, or ADK's parts)."""

    role: str
    content: str | list[dict[str, Any]]
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def user(cls, text: str) -> MessageContent:
        """A user message of plain text (for tests and golden files written in Python)."""
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str) -> MessageContent:
        """An assistant message of plain text."""
        return cls(role="assistant", content=text)

    def get_text(self) -> str:
        """The message's text; structured content contributes its ``text`` parts."""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for part in self.content:
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
        return "\n".join(parts)


class ExpectedToolCall(_Golden):
    """A tool call a golden case expects (``args``: one spelling for every tool-call class but
    AgentData's ``ToolCall``, see :class:`otel_eval.conventions.base.RequestedToolCall`)."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    result: Any | None = None
    check_args: bool | None = None
    """False: the golden names the tool only (no ``tool_input``), so any arguments match.
    None: the criterion's ``check_args`` decides."""

    def matches(self, other: ExpectedToolCall, check_args: bool = True, check_call_id: bool = False) -> bool:
        """Same tool, and (by default) the same arguments; ``"IGNORE"`` values match anything."""
        if self.name != other.name:
            return False
        if check_call_id and self.call_id != other.call_id:
            return False
        if check_args and self.check_args is not False:
            return arguments_equal(self.args, other.args)
        return True


class StepType(str, Enum):
    """What a trajectory step is: an agent node, a tool call, a message or a branch."""

    NODE = "node"
    TOOL = "tool"
    MESSAGE = "message"
    CONDITIONAL = "conditional"


class TrajectoryStep(_Golden):
    """One step a golden trajectory expects (the seed's node and tool steps)."""

    step_type: StepType
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    timestamp: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def node(cls, name: str, timestamp: float | None = None, **metadata: Any) -> TrajectoryStep:
        """A step entering an agent node."""
        return cls(step_type=StepType.NODE, name=name, timestamp=timestamp, metadata=metadata)

    @classmethod
    def tool(
        cls, name: str, args: dict[str, Any] | None = None, timestamp: float | None = None, **metadata: Any
    ) -> TrajectoryStep:
        """A step calling a tool, with its arguments."""
        return cls(step_type=StepType.TOOL, name=name, args=args or {}, timestamp=timestamp, metadata=metadata)


class Invocation(_Golden):
    """One turn of a golden case: the user's message and what the agent is expected to do and answer."""

    invocation_id: str
    user_content: MessageContent
    expected_tool_trajectory: list[ExpectedToolCall] | None = None
    """None: the golden file does not say (tool use not checked); []: the agent must call no tool."""
    expected_intermediate_responses: list[MessageContent] = Field(default_factory=list)
    expected_final_response: MessageContent | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    # Expectations from the trajectory-golden and Big Sky formats.
    expected_tool_selection: str | None = None
    """The tool the agent should pick first (trajectory-golden ``tool_selection``)."""
    expected_sql: bool | None = None
    """Whether SQL should be generated (``sql_generation: yes|no``); None = not checked."""
    expected_tables: list[str] = Field(default_factory=list)
    """Tables the generated SQL should read (``expected_table``)."""
    first_call_only: bool = False
    """Only the first actual tool call is compared (Big Sky's ``chat:matchToolCall``)."""

    @model_serializer(mode="wrap")
    def _absent_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Written as null, "not checked" would read like a value; a golden file that did not give
        # the trajectory does not get one when it is saved or converted.
        data: dict[str, Any] = handler(self)
        if self.expected_tool_trajectory is None:
            data.pop("expected_tool_trajectory", None)
        return data


class SessionInput(_Golden):
    """The state a golden session starts from (ADK's ``session_input``), kept for round trips."""

    thread_id: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    initial_state: dict[str, Any] = Field(default_factory=dict)


class EvalCase(_Golden):
    """A golden case: the conversation a session is matched to and scored against."""

    eval_id: str
    name: str = ""
    conversation: list[Invocation] = Field(default_factory=list)
    session_input: SessionInput | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)

    @property
    def query(self) -> str:
        """The first user message: what a session is matched on."""
        return self.conversation[0].user_content.get_text() if self.conversation else ""


class EvalSet(_Golden):
    """A golden set (ADK's ``.evalset.json`` shape): cases and, optionally, the criteria they are scored
    with."""

    eval_set_id: str
    name: str = ""
    description: str = ""
    eval_cases: list[EvalCase] = Field(default_factory=list)
    criteria: dict[str, CriterionConfig] = Field(default_factory=dict)
    """The criteria the set itself says its cases are judged by (Big Sky's ``evaluators``); they
    replace the run config's reference criteria for its cases (``scoring.config_for_case``).
    Empty: the run config decides. Not written when empty."""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _criteria_from_old_metadata(cls, data: Any) -> Any:
        # Sets saved before `criteria` was a field kept it in metadata (databases, converted files).
        if (
            isinstance(data, dict)
            and "criteria" not in data
            and isinstance(data.get("metadata"), dict)
            and isinstance(data["metadata"].get("criteria"), dict)
        ):
            metadata = dict(data["metadata"])
            data = {**data, "criteria": metadata.pop("criteria"), "metadata": metadata}
        return data

    @model_serializer(mode="wrap")
    def _no_empty_criteria(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.criteria:
            data.pop("criteria", None)
        return data

    @classmethod
    def load(cls, path: str | Path) -> EvalSet:
        """Read an ``.evalset.json`` file; a bad file raises :class:`InputError` naming the JSON path."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(str(path), "file not found") from None
        except UnicodeDecodeError as exc:
            raise InputError(str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise InputError(str(path), f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<evalset>") -> EvalSet:
        """``data`` as an EvalSet; unknown keys and invalid values raise :class:`GoldenFileError`
        (an :class:`InputError`) with every one of them, each at its JSON path."""
        log = ProblemLog(source)
        check_keys(data, model_spec(cls), "$", log)  # strict: a misspelled key must not silently skip a check
        try:
            eval_set = cls.model_validate(data)
        except ValidationError as exc:
            log_validation_errors(data, exc, log)
        if log.problems:
            raise GoldenFileError(log.problems)
        return eval_set

    def save(self, path: str | Path) -> None:
        """Write the set as an ``.evalset.json`` file that :meth:`load` reads back unchanged."""
        Path(path).write_text(self.model_dump_json(indent=2, exclude_defaults=False) + "\n", encoding="utf-8")


def json_path(loc: tuple[int | str, ...]) -> str:
    """Pydantic's error location as a JSON path: ``('eval_cases', 0, 'eval_id')`` → ``$.eval_cases[0].eval_id``."""
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


class MatchType(str, Enum):
    """How a turn's calls must match the expected ones: all in order and nothing else, in order with
    others between, or in any order."""

    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"


def unknown_settings(model: type[BaseModel], data: Any, also: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(key, reason) for each key of ``data`` that is no field of ``model``: a config key, unlike
    golden metadata, has no free-form place, so a misspelled one would silently keep the default."""
    if not isinstance(data, dict):
        return []
    known = [*model.model_fields, *also]
    return [(str(k), unknown_name("setting", str(k), known)) for k in data if k not in known]


class _StrictSettings(BaseModel):
    """A config object that refuses keys it does not define (``threshhold = 1.0`` is an error)."""

    also_known: ClassVar[tuple[str, ...]] = ()
    """Keys accepted besides the fields (moved into place by another validator)."""

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_settings(cls, data: Any) -> Any:
        unknown = unknown_settings(cls, data, cls.also_known)
        if unknown:  # a custom error: its message is shown as is, without pydantic's "Value error, "
            raise PydanticCustomError("unknown_setting", "; ".join(reason for _, reason in unknown))
        return data


class Rubric(_StrictSettings):
    """One quality an LLM judge grades, with the guide to its 1-5 scale."""

    name: str
    description: str
    scoring_guide: str = "5=fully meets the description, 1=does not meet it at all"
    weight: float = 1.0


class CriterionConfig(_StrictSettings):
    """One criterion as a config names it: on or off, its threshold and the options its kind reads."""

    enabled: bool = True
    threshold: float = 0.8
    match_type: MatchType = MatchType.EXACT
    judge_model: str = "gpt-4o-mini"
    rubrics: list[Rubric] = Field(default_factory=list)
    check_args: bool = True
    """For trajectory criteria: compare arguments as well as tool names."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Criterion-specific settings (argument modes, per-tool overrides, regex patterns, ...);
    which names each criterion knows is its ``Options`` model (:mod:`otel_eval.criteria`)."""

    also_known: ClassVar[tuple[str, ...]] = ("kind",)

    @field_validator("threshold")
    @classmethod
    def _a_score_can_reach_it(cls, value: float) -> float:
        # Every score is 0–1: a threshold outside would pass (or fail) every session unseen.
        if not 0.0 <= value <= 1.0:
            raise PydanticCustomError(
                "threshold_range", f"threshold must be between 0 and 1 (scores are 0–1), got {value:g}"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _kind_is_an_option(cls, data: Any) -> Any:
        # `kind = "layer1"` written next to threshold in TOML means options.kind: accept both.
        if isinstance(data, dict) and "kind" in data:
            data = dict(data)
            data["options"] = {**(data.get("options") or {}), "kind": data.pop("kind")}
        return data


class UserSimulatorConfig(_Golden):
    """ADK's user simulator settings, kept so an ADK config loads (no simulator runs here)."""

    model: str = "gpt-4o-mini"
    max_turns: int = 10


class EvalConfig(_Golden):
    """The criteria sessions are scored with (a ``criteria.toml`` or ADK's ``test_config.json``)."""

    criteria: dict[str, CriterionConfig] = Field(default_factory=dict)
    user_simulator_config: UserSimulatorConfig | None = None

    @classmethod
    def default(cls) -> EvalConfig:
        """The seed defaults plus the trajectory-golden checks, which skip when a case sets no expectation."""
        return cls(
            criteria={
                "trajectory_match": CriterionConfig(threshold=0.8, match_type=MatchType.EXACT),
                "response_match": CriterionConfig(threshold=0.7),
                "llm_judge": CriterionConfig(threshold=0.7, judge_model="gpt-4o-mini"),
                "tool_selection": CriterionConfig(threshold=1.0),
                "sql_generation": CriterionConfig(threshold=1.0),
                "table_usage": CriterionConfig(threshold=1.0),
            }
        )


EvalSet.model_rebuild()  # `criteria` names CriterionConfig, defined below EvalSet
