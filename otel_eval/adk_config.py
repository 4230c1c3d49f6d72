"""google-adk's ``test_config.json``, read as google-adk reads it, as otel-eval criteria.

Where a config goes (``evaluate --config``, ``rescore --config``, the collector's ``--config`` or
its TOML ``criteria_file``), a ``.json`` file is a test_config.json. With no config at all, a
``test_config.json`` beside an ``.evalset.json`` / ``.test.json`` given with ``--golden`` is used,
as ``adk eval`` does (:func:`resolve_config`).

The file is validated with mirrors of google-adk 2.13's own pydantic models (``EvalConfig``,
``BaseCriterion`` and each metric's criterion type, ``JudgeModelOptions``, ``Rubric``, ...), in
ADK's two steps: the file as an ``EvalConfig`` (a criterion is a number or an object with a
``threshold``), then each metric's criterion as the type its evaluator validates it with. So a
file google-adk refuses is refused here (:class:`~otel_eval.criteria_file.ConfigError`: the file,
the JSON path, the reason), camelCase and snake_case keys are both read, and numbers, booleans
and match types are coerced as pydantic coerces them for ADK (``"in-order"``, ``1`` → IN_ORDER).

otel-eval is stricter than google-adk in a few places, each an error a user would otherwise not
see (docs/adk.md lists them): an unknown metric name (ADK logs it at run time and evaluates
nothing), a threshold outside 0–1, an efficiency metric given a threshold, and a key that is a
near miss of a known one (``matchtype``, ``criterai``: ADK ignores it silently). Other keys ADK
ignores are ignored here too, each with a warning.
"""

from __future__ import annotations

import json
import logging
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, NamedTuple, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel, to_snake

from .criteria.adk_not_run import CustomMetric
from .criteria.registry import REGISTRY
from .criteria_file import ConfigError
from .errors import InputError
from .models.evalset import CriterionConfig, EvalConfig, MatchType, Rubric
from .models.suggest import closest_key, unknown_name

log = logging.getLogger("otel_eval.criteria")

TEST_CONFIG = "test_config.json"
ADK_EVAL_SET_SUFFIXES = (".evalset.json", ".test.json")
"""Golden files beside which ``adk eval`` (and ``AgentEvaluator``) looks for a test_config.json."""

ADK_DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""google-adk's criteria when it finds no test_config.json (``_DEFAULT_EVAL_CONFIG``)."""


# --- mirrors of google-adk 2.13's models (google.adk.evaluation.*) -------------------------------

class _Forbid(BaseModel):
    """ADK's ``EvalBaseModel``: camelCase aliases, snake_case names, unknown keys refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class _Allow(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class _Ignore(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class GenerateContentConfig(_Forbid):
    """google-genai's ``GenerateContentConfig`` (``judge_model_options.judge_model_config``): every
    key it defines, the scalar ones typed as genai types them; nested objects are passed on
    unchecked (tests/test_adk_config.py checks the key list against the installed google-genai)."""

    http_options: Any = None
    should_return_http_response: Optional[bool] = None
    system_instruction: Any = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    top_k: Optional[float] = None
    candidate_count: Optional[int] = None
    max_output_tokens: Optional[int] = None
    stop_sequences: Optional[list[str]] = None
    response_logprobs: Optional[bool] = None
    logprobs: Optional[int] = None
    presence_penalty: Optional[float] = None
    frequency_penalty: Optional[float] = None
    seed: Optional[int] = None
    response_mime_type: Optional[str] = None
    response_schema: Any = None
    response_json_schema: Any = None
    routing_config: Any = None
    model_selection_config: Any = None
    safety_settings: Optional[list[Any]] = None
    tools: Optional[list[Any]] = None
    tool_config: Any = None
    labels: Optional[dict[str, str]] = None
    cached_content: Optional[str] = None
    response_modalities: Optional[list[str]] = None
    media_resolution: Any = None
    speech_config: Any = None
    audio_timestamp: Optional[bool] = None
    automatic_function_calling: Any = None
    thinking_config: Any = None
    image_config: Any = None
    enable_enhanced_civic_answers: Optional[bool] = None
    model_armor_config: Any = None
    service_tier: Any = None
    audio_transcription_config: Any = None
    continuation_token: Any = None
    automatic_continuation: Optional[bool] = None
    generation_output_config: Any = None
    store: Optional[bool] = None


class JudgeModelOptions(_Forbid):
    judge_model: str = "gemini-2.5-flash"
    judge_model_config: Optional[GenerateContentConfig] = None
    num_samples: int = Field(default=5, ge=1)
    parallelism_limit: int = Field(default=1, ge=1)


class AdkRubricContent(_Forbid):
    text_property: Optional[str] = None


class AdkRubric(_Forbid):
    rubric_id: str
    rubric_content: AdkRubricContent
    description: Optional[str] = None
    type: Optional[str] = None


class BaseCriterion(_Allow):
    threshold: float
    include_intermediate_responses_in_final: bool = False


class AdkMatchType(Enum):
    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2


class ToolTrajectoryCriterion(BaseCriterion):
    match_type: AdkMatchType = AdkMatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _coerce_match_type(cls, value: object) -> object:  # as google-adk coerces it
        if isinstance(value, str):
            normalized = value.strip().upper().replace("-", "_").replace(" ", "_")
            if normalized in AdkMatchType.__members__:
                return AdkMatchType[normalized]
        return value


class LlmAsAJudgeCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsBasedCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    rubrics: list[AdkRubric] = Field(default_factory=list)


class HallucinationsCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    evaluate_intermediate_nl_responses: bool = False


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    stop_signal: str = "</finished>"


CRITERION_TYPES: dict[str, type[BaseCriterion]] = {
    "tool_trajectory_avg_score": ToolTrajectoryCriterion,
    "response_match_score": BaseCriterion,
    "final_response_match_v2": LlmAsAJudgeCriterion,
    "rubric_based_final_response_quality_v1": RubricsBasedCriterion,
    "rubric_based_tool_use_quality_v1": RubricsBasedCriterion,
    "rubric_based_multi_turn_trajectory_quality_v1": RubricsBasedCriterion,
    "hallucinations_v1": HallucinationsCriterion,
    "per_turn_user_simulator_quality_v1": LlmBackedUserSimulatorCriterion,
    **{name: BaseCriterion for name in REGISTRY.adk_metrics("vertex")},
}
"""Metric → the criterion type its google-adk evaluator validates the criterion with."""


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class Interval(_Forbid):
    min_value: float
    open_at_min: bool = False
    max_value: float
    open_at_max: bool = False


class MetricValueInfo(_Forbid):
    interval: Optional[Interval] = None


class MetricInfo(_Forbid):
    metric_name: str
    description: Optional[str] = None
    metric_value_info: MetricValueInfo
    requires_threshold: bool = True


class CustomMetricConfig(_Ignore):
    code_config: CodeConfig
    metric_info: Optional[MetricInfo] = None
    description: str = ""


class LiveModelConfig(_Ignore):
    timeout_seconds: int = 300


class _UserSimulatorConfig(_Allow):
    model: str = "gemini-2.5-flash"
    model_configuration: GenerateContentConfig = Field(default_factory=GenerateContentConfig)
    max_allowed_invocations: int = 20
    custom_instructions: Optional[str] = None
    include_function_calls: bool = False


class LlmBackedUserSimulatorConfig(_UserSimulatorConfig):
    type: Literal["llm_backed"] = "llm_backed"


class LlmAudioUserSimulatorConfig(_UserSimulatorConfig):
    type: Literal["llm_audio"] = "llm_audio"
    audio_model: str = "cloud_tts"
    audio_model_configuration: GenerateContentConfig = Field(default_factory=GenerateContentConfig)
    include_text_with_audio: bool = True


class AdkEvalConfig(_Ignore):
    """google-adk's ``EvalConfig``: unknown top-level keys are ignored, as ADK ignores them."""

    criteria: dict[str, Union[float, BaseCriterion]] = Field(default_factory=dict)
    custom_metrics: Optional[dict[str, CustomMetricConfig]] = None
    user_simulator_config: Optional[Annotated[Union[LlmBackedUserSimulatorConfig, LlmAudioUserSimulatorConfig],
                                              Field(discriminator="type")]] = None
    live_model_config: Optional[LiveModelConfig] = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_user_simulator_type(cls, values: Any) -> Any:  # ADK's _inject_default_user_simulator_type
        if not isinstance(values, dict):
            return values
        for key in ("user_simulator_config", "userSimulatorConfig"):
            inner = values.get(key)
            if isinstance(inner, dict) and inner.get("type") is None:
                values = {**values, key: {**inner, "type": "llm_backed"}}
        return values


# --- reading a file ------------------------------------------------------------------------------

_UNION_TAGS = {"float", "BaseCriterion", "llm_backed", "llm_audio", "function-after[_coerce_match_type()]"}


def _keys_of(model: type[BaseModel]) -> list[str]:
    return [k for name, f in model.model_fields.items() for k in (name, f.alias or name)]


def _path(data: Any, loc: Sequence[Any], prefix: str = "$") -> str:
    """Pydantic's location as a JSON path with the keys the file spelled (camelCase or snake_case)."""
    out, node = prefix, data
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or part.startswith("function-")):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        key = str(part)
        if isinstance(node, dict) and key not in node:
            for spelling in (to_snake(key), to_camel(key)):
                if spelling in node:
                    key = spelling
                    break
        out += f".{key}"
        node = node.get(key) if isinstance(node, dict) else None
    return out


def _node(data: Any, loc: Sequence[Any]) -> Any:
    """The value at pydantic's location ``loc`` in ``data`` (either key spelling), or None."""
    node = data
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or part.startswith("function-")):
            continue
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        elif isinstance(node, dict):
            node = next((node[k] for k in (part, to_snake(part), to_camel(part)) if k in node), None)
        else:
            return None
    return node


def _problems(exc: ValidationError, data: Any, prefix: str = "$") -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    errors = exc.errors()
    for err in errors:
        loc = tuple(err["loc"])
        # A criterion is a number or an object: when it is an object, only the object's errors say
        # what is wrong; when it is neither, say so once.
        if len(loc) >= 3 and loc[0] == "criteria" and loc[2] == "float":
            value = data.get("criteria", {}).get(loc[1]) if isinstance(data, dict) else None
            if isinstance(value, dict):
                continue
            found.append((_path(data, loc[:2], prefix),
                          f"expected a number (the threshold) or an object with a threshold, got {json.dumps(value)}"))
            continue
        if len(loc) >= 3 and loc[0] == "criteria" and loc[2] == "BaseCriterion":
            value = data.get("criteria", {}).get(loc[1]) if isinstance(data, dict) else None
            if not isinstance(value, dict):
                continue
        reason = err["msg"]
        if err["type"] == "missing":
            reason = "required, missing"
            parent = _node(data, loc[:-1])
            written = closest_key(str(loc[-1]), [str(k) for k in parent]) if isinstance(parent, dict) else None
            if written is not None:
                reason += f" (the file has '{written}': did you mean '{_spelled_like(written, str(loc[-1]))}'?)"
        elif err["type"] == "extra_forbidden":
            parent = err["loc"][:-1]
            reason = f"unknown key '{loc[-1]}'"
            known = _known_at(parent)
            guess = _spelled_like(str(loc[-1]), closest_key(str(loc[-1]), known) if known else None)
            reason += f" (did you mean '{guess}'?)" if guess else ""
            reason += "; google-adk refuses it too"
        elif err["type"] == "enum" and loc and loc[-1] in ("match_type", "matchType"):
            reason = "expected EXACT, IN_ORDER or ANY_ORDER (or 0, 1, 2), got " + json.dumps(err.get("input"))
        found.append((_path(data, loc, prefix), reason))
    return list(dict.fromkeys(found))


_KNOWN_AT: dict[str, type[BaseModel]] = {
    "judge_model_options": JudgeModelOptions, "judgeModelOptions": JudgeModelOptions,
    "judge_model_config": GenerateContentConfig, "judgeModelConfig": GenerateContentConfig,
    "rubric_content": AdkRubricContent, "rubricContent": AdkRubricContent,
    "metric_info": MetricInfo, "metricInfo": MetricInfo, "metric_value_info": MetricValueInfo,
    "metricValueInfo": MetricValueInfo, "interval": Interval, "code_config": CodeConfig, "codeConfig": CodeConfig,
    "rubrics": AdkRubric,
}


def _spelled_like(key: str, guess: Optional[str]) -> Optional[str]:
    """The suggestion in the file's spelling: snake_case unless the key has a capital."""
    if guess is None or any(c.isupper() for c in key):
        return guess
    return to_snake(guess)


def _known_at(loc: Sequence[Any]) -> list[str]:
    for part in reversed(loc):
        if isinstance(part, str) and part in _KNOWN_AT:
            return _keys_of(_KNOWN_AT[part])
    return []


_TOP_LEVEL = _keys_of(AdkEvalConfig)


class TestConfig(NamedTuple):
    """A test_config.json read: otel-eval's criteria and what the file said that otel-eval ignores."""

    config: EvalConfig
    warnings: list[str]


def _criterion_extras(name: str, value: Mapping[str, Any], model: type[BaseModel]) -> tuple[list, list]:
    """Keys of a criterion object its type does not define (google-adk keeps and ignores them):
    a near miss of a known key is a problem, any other a warning."""
    known = _keys_of(model)
    problems, warnings = [], []
    for key in value:
        if key in known:
            continue
        guess = _spelled_like(str(key), closest_key(str(key), known))
        where = f"$.criteria.{name}.{key}"
        if guess is not None:
            problems.append((where, f"unknown key '{key}' (did you mean '{guess}'?); google-adk would ignore it "
                                    "silently and use the default"))
        else:
            warnings.append(f"at {where}: '{key}' is no setting of {name}; ignored, as google-adk ignores it")
    return problems, warnings


def _judge_options(criterion: BaseCriterion) -> tuple[dict[str, Any], dict[str, Any]]:
    """(CriterionConfig fields, options) of an ADK judge criterion."""
    fields: dict[str, Any] = {}
    options: dict[str, Any] = {}
    judge = getattr(criterion, "judge_model_options", None)
    if judge is not None:
        fields["judge_model"] = judge.judge_model
        options["num_samples"] = judge.num_samples
        if judge.parallelism_limit != 1:
            options["parallelism_limit"] = judge.parallelism_limit
        if judge.judge_model_config is not None:
            options["judge_model_config"] = judge.judge_model_config.model_dump(exclude_none=True)
    rubrics = getattr(criterion, "rubrics", None) or []
    if rubrics:
        fields["rubrics"] = [Rubric(name=r.rubric_id, description=r.rubric_content.text_property or r.description or "")
                             for r in rubrics]
        types = {r.rubric_id: r.type for r in rubrics if r.type}
        if types:
            options["rubric_types"] = types
    if criterion.include_intermediate_responses_in_final:
        options["include_intermediate_responses_in_final"] = True
    if getattr(criterion, "evaluate_intermediate_nl_responses", False):
        options["evaluate_intermediate_nl_responses"] = True
    stop = getattr(criterion, "stop_signal", None)
    if stop is not None and stop != "</finished>":
        options["stop_signal"] = stop
    return fields, options


def _threshold_problem(name: str, value: Any, threshold: float) -> Optional[tuple[str, str]]:
    if 0.0 <= threshold <= 1.0:
        return None
    where = f"$.criteria.{name}" + (".threshold" if isinstance(value, dict) else "")
    return where, (f"threshold must be between 0 and 1 (every score is 0-1), got {threshold:g}; google-adk would "
                   "accept it and pass or fail every case")


def _otel_eval_criterion(name: str, value: Any) -> CriterionConfig:
    """An otel-eval criterion named in a test_config.json (an extension: ``adk eval`` knows only its own)."""
    if isinstance(value, dict):
        return CriterionConfig.model_validate(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number (the threshold) or an object of otel-eval settings, got {json.dumps(value)}")
    return CriterionConfig(threshold=float(value))


def read_test_config(text: str, source: str = TEST_CONFIG) -> TestConfig:
    """A test_config.json's text as otel-eval criteria. Raises :class:`ConfigError` (every problem
    with its JSON path) for a file google-adk would refuse, and for the stricter checks above."""
    from .scoring import config_problems  # the scorer knows which criteria and options exist

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    problems: list[tuple[str, str]] = []
    warnings: list[str] = []
    if isinstance(data, dict):
        for key in data:
            if key in _TOP_LEVEL:
                continue
            guess = closest_key(str(key), _TOP_LEVEL)
            if guess is not None:
                problems.append((f"$.{key}", f"unknown key '{key}' (did you mean '{guess}'?); google-adk would "
                                             "ignore it silently"))
            else:
                warnings.append(f"at $.{key}: not a test_config.json key; ignored, as google-adk ignores it")
    try:
        adk = AdkEvalConfig.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(source, problems + _problems(exc, data)) from None
    raw_criteria = data.get("criteria") or {}
    custom = adk.custom_metrics or {}
    criteria: dict[str, CriterionConfig] = {}
    # otel-eval's own criteria, which a test_config.json may name too (health, reported for every
    # session, is configured in otel-eval's TOML only)
    otel_eval_names = [c.kind for c in REGISTRY if c.adk in (None, "deterministic") and not c.reference_free]
    informational = REGISTRY.adk_metrics("informational")
    for name, criterion in adk.criteria.items():
        value = raw_criteria.get(name)
        where = f"$.criteria.{name}"
        if name in informational:
            problems.append((where, f"{name} does not support a threshold: it reports a value and never passes or "
                                    "fails. Remove it from criteria; it is reported automatically (google-adk refuses "
                                    "it too)"))
            continue
        if name in custom:
            threshold = criterion if isinstance(criterion, float) else criterion.threshold
            problem = _threshold_problem(name, value, threshold)
            if problem:
                problems.append(problem)
                continue
            criteria[name] = CriterionConfig(threshold=threshold, options={
                "kind": CustomMetric.kind, "function": custom[name].code_config.name})
            continue
        model = CRITERION_TYPES.get(name)
        if model is None:
            if name in otel_eval_names:
                try:
                    criteria[name] = _otel_eval_criterion(name, value)
                except (ValidationError, ValueError) as exc:
                    if isinstance(exc, ValidationError):
                        problems += [(_path(value, e["loc"], where), e["msg"]) for e in exc.errors()]
                    else:
                        problems.append((where, str(exc)))
                continue
            problems.append((where, unknown_name("metric", name, [*REGISTRY.adk_metrics(), *otel_eval_names])))
            continue
        base = criterion if isinstance(criterion, BaseCriterion) else BaseCriterion(threshold=criterion)
        try:  # ADK's second step: the evaluator validates the criterion as its own type
            typed = model.model_validate(base.model_dump())
        except ValidationError as exc:
            problems += _problems(exc, value, where)
            continue
        if isinstance(value, dict):
            extra_problems, extra_warnings = _criterion_extras(name, value, model)
            problems += extra_problems
            warnings += extra_warnings
        problem = _threshold_problem(name, value, typed.threshold)
        if problem:
            problems.append(problem)
            continue
        if typed.include_intermediate_responses_in_final and name in REGISTRY.adk_metrics("deterministic"):
            warnings.append(f"at {where}.include_intermediate_responses_in_final: has no effect on {name} "
                            "(google-adk ignores it there too)")
        if isinstance(typed, ToolTrajectoryCriterion):
            criteria[name] = CriterionConfig(threshold=typed.threshold, match_type=MatchType(typed.match_type.name),
                                             check_args=not typed.ignore_args)
        elif name == "response_match_score":
            criteria[name] = CriterionConfig(threshold=typed.threshold)
        else:
            fields, options = _judge_options(typed)
            criteria[name] = CriterionConfig(threshold=typed.threshold, options=options, **fields)
    if adk.user_simulator_config is not None:
        warnings.append("at $.user_simulator_config: ignored; otel-eval scores the conversations your agent had and "
                        "runs no user simulator")
    if adk.live_model_config is not None:
        warnings.append("at $.live_model_config: ignored; otel-eval does not run the agent")
    for name in informational:  # reported for every case, as google-adk does
        criteria.setdefault(name, CriterionConfig(threshold=REGISTRY[name].default_threshold))
    config = EvalConfig(criteria=criteria)
    if not problems:
        problems += config_problems(config)
    if problems:
        order = {name: i for i, name in enumerate(raw_criteria)} if isinstance(raw_criteria, dict) else {}

        def in_file_order(problem: tuple[str, str]) -> int:
            parts = problem[0].split(".")
            return order.get(parts[2], -1) if len(parts) > 2 and parts[1] == "criteria" else -1

        raise ConfigError(source, sorted(problems, key=in_file_order))
    return TestConfig(config, warnings)


def load_test_config(path: Union[str, Path]) -> TestConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a test_config.json") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    return read_test_config(text, str(path))


def is_test_config(path: Union[str, Path]) -> bool:
    """A config path that names a test_config.json (any ``.json`` file) rather than TOML."""
    return str(path).lower().endswith(".json")


def beside(golden: Sequence[Union[str, Path]]) -> list[tuple[Path, Path]]:
    """(test_config.json, the golden file it is beside) for each ``.evalset.json`` / ``.test.json``
    in ``golden`` that has one, once per test_config.json (paths as the golden paths were given)."""
    found: dict[Path, tuple[Path, Path]] = {}
    for item in golden:
        path = Path(item)
        if not path.name.lower().endswith(ADK_EVAL_SET_SUFFIXES) or not path.is_file():
            continue
        candidate = path.parent / TEST_CONFIG
        if candidate.is_file():
            found.setdefault(candidate.resolve(), (candidate, path))
    return list(found.values())


def _toml_table(path: Union[str, Path]) -> dict[str, Any]:
    """The part of a TOML config file that speaks about evaluation (its ``[evaluation]`` table, if any)."""
    from .criteria_file import read_toml

    data = read_toml(path)
    return data["evaluation"] if isinstance(data.get("evaluation"), dict) else data


def _criteria_file_of_toml(path: Union[str, Path]) -> Optional[str]:
    """The test_config.json a TOML file names with ``criteria_file`` (relative to the TOML file), if any."""
    table = _toml_table(path)
    named = table.get("criteria_file", table.get("criteria-file"))
    if named is None:
        return None
    if not isinstance(named, str) or not is_test_config(named):
        raise InputError(str(path), f"criteria_file names google-adk's test_config.json (a .json file), got {named!r}",
                         "$.criteria_file")
    if "criteria" in table:
        raise InputError(str(path), "give the criteria either as [criteria.NAME] tables or as criteria_file, not both",
                         "$.criteria_file")
    return named if Path(named).is_absolute() else str(Path(path).parent / named)


class Resolved(NamedTuple):
    config: Optional[EvalConfig]
    """None: no file; the caller's defaults (``EvalConfig.default()``) apply."""
    source: Optional[str]
    """The file the criteria came from, or None."""
    message: str
    """One line saying which criteria apply and why."""
    warnings: list[str]


def resolve_config(config_path: Optional[Union[str, Path]], golden: Sequence[Union[str, Path]] = (),
                   toml_loader: Any = None) -> Resolved:
    """The criteria a run uses: ``config_path`` (a ``.json`` test_config.json, else TOML read by
    ``toml_loader``), else the test_config.json beside a golden ``.evalset.json`` / ``.test.json``
    (as ``adk eval``), else none (otel-eval's defaults). Raises :class:`InputError` for a bad
    file, and when golden files in different folders each have a test_config.json."""
    if config_path:
        if is_test_config(config_path):
            read = load_test_config(config_path)
            return Resolved(read.config, str(config_path), f"criteria from {config_path}", read.warnings)
        named = _criteria_file_of_toml(config_path)
        if named is not None:  # a collector TOML file naming a test_config.json serves evaluate too
            read = load_test_config(named)
            return Resolved(read.config, named, f"criteria from {named} (criteria_file of {config_path})",
                            read.warnings)
        if toml_loader is None:
            from .criteria_file import load_eval_config as toml_loader
        config = toml_loader(config_path)
        if "criteria" in _toml_table(config_path) or not beside(golden):
            return Resolved(config, str(config_path), f"criteria from {config_path}", [])
        # A TOML file of settings only (a collector's): the criteria come from beside the golden
        # eval set, as they do for `collect` with the same file.
    found = beside(golden)
    if len(found) > 1:
        listed = "; ".join(f"{c} (beside {g})" for c, g in found)
        raise InputError(str(found[1][1]), f"the golden files have different {TEST_CONFIG} files: {listed}. Name the "
                                           "one to use with --config (adk eval reads one eval set's at a time)",
                         "--golden")
    if found:
        config_file, golden_file = found[0]
        shown = str(config_file)
        read = load_test_config(shown)
        return Resolved(read.config, shown, f"criteria from {shown} (found beside {golden_file}, as adk eval does)",
                        read.warnings)
    adk_named = [str(g) for g in golden if str(g).lower().endswith(ADK_EVAL_SET_SUFFIXES)]
    if adk_named:
        message = (f"no {TEST_CONFIG} beside {adk_named[0]}: otel-eval's default criteria apply (not adk eval's "
                   "tool_trajectory_avg_score 1.0 and response_match_score 0.8; see docs/adk.md)")
    else:
        message = "otel-eval's default criteria apply (no --config)"
    return Resolved(None, None, message, [])


def config_for_command(config_path: Optional[str], golden: Sequence[str] = ()) -> Optional[EvalConfig]:
    """:func:`resolve_config` for ``evaluate`` and ``rescore``: the criteria, with one line on
    stderr saying which test_config.json is used (and one per key it ignores)."""
    import sys

    resolved = resolve_config(config_path, golden)
    log.info("%s", resolved.message)
    if resolved.source and is_test_config(resolved.source):
        print(f"otel-eval: {resolved.message}", file=sys.stderr)
    for warning in resolved.warnings:
        print(f"otel-eval: warning: {resolved.source}: {warning}", file=sys.stderr)
    return resolved.config
