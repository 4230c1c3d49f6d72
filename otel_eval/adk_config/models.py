"""Mirrors of google-adk 2.13's pydantic models of ``test_config.json`` (``google.adk.evaluation.*``).

Same fields, aliases, defaults and extra-key rules as ADK's own, so a file validates here exactly
as it does in ADK (tests/test_adk_config.py checks that against the installed google-adk).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..criteria.registry import REGISTRY


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
    should_return_http_response: bool | None = None
    system_instruction: Any = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: float | None = None
    candidate_count: int | None = None
    max_output_tokens: int | None = None
    stop_sequences: list[str] | None = None
    response_logprobs: bool | None = None
    logprobs: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    response_mime_type: str | None = None
    response_schema: Any = None
    response_json_schema: Any = None
    routing_config: Any = None
    model_selection_config: Any = None
    safety_settings: list[Any] | None = None
    tools: list[Any] | None = None
    tool_config: Any = None
    labels: dict[str, str] | None = None
    cached_content: str | None = None
    response_modalities: list[str] | None = None
    media_resolution: Any = None
    speech_config: Any = None
    audio_timestamp: bool | None = None
    automatic_function_calling: Any = None
    thinking_config: Any = None
    image_config: Any = None
    enable_enhanced_civic_answers: bool | None = None
    model_armor_config: Any = None
    service_tier: Any = None
    audio_transcription_config: Any = None
    continuation_token: Any = None
    automatic_continuation: bool | None = None
    generation_output_config: Any = None
    store: bool | None = None


class JudgeModelOptions(_Forbid):
    """ADK's ``judge_model_options``: the judge model's name (mapped to an endpoint's model here) and
    its generation settings."""

    judge_model: str = "gemini-2.5-flash"
    judge_model_config: GenerateContentConfig | None = None
    num_samples: int = Field(default=5, ge=1)
    parallelism_limit: int = Field(default=1, ge=1)


class AdkRubricContent(_Forbid):
    """ADK's ``rubric_content``: the rubric's text."""

    text_property: str | None = None


class AdkRubric(_Forbid):
    """ADK's ``Rubric``: one rubric a rubric-based judge metric gives a yes/no verdict on."""

    rubric_id: str
    rubric_content: AdkRubricContent
    description: str | None = None
    type: str | None = None


class BaseCriterion(_Allow):
    """ADK's ``BaseCriterion``: a metric's threshold; extra keys allowed, as ADK allows them."""

    threshold: float
    include_intermediate_responses_in_final: bool = False


class AdkMatchType(Enum):
    """ADK's ``TrajectoryEvaluator`` match types, by number as ADK's enum stores them (EXACT, IN_ORDER,
    ANY_ORDER)."""

    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2


class ToolTrajectoryCriterion(BaseCriterion):
    """ADK's criterion for ``tool_trajectory_avg_score``: the match type and whether arguments are
    ignored."""

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
    """ADK's criterion for a judge metric: the threshold and the judge model."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsBasedCriterion(BaseCriterion):
    """ADK's criterion for the rubric-based judge metrics: the judge model and the rubrics."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    rubrics: list[AdkRubric] = Field(default_factory=list)


class HallucinationsCriterion(BaseCriterion):
    """ADK's criterion for ``hallucinations_v1``: also whether intermediate answers are checked."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    evaluate_intermediate_nl_responses: bool = False


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    """ADK's criterion for ``per_turn_user_simulator_quality_v1``: also the simulator's stop signal."""

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
    """ADK's ``CodeConfig``: the Python function a custom metric names (never imported here)."""

    model_config = ConfigDict(extra="forbid")
    name: str


class Interval(_Forbid):
    """ADK's ``Interval``: the range a custom metric's value lies in."""

    min_value: float
    open_at_min: bool = False
    max_value: float
    open_at_max: bool = False


class MetricValueInfo(_Forbid):
    """ADK's ``MetricValueInfo``: what a custom metric's values look like."""

    interval: Interval | None = None


class MetricInfo(_Forbid):
    """ADK's ``MetricInfo``: a custom metric's name, description and value range."""

    metric_name: str
    description: str | None = None
    metric_value_info: MetricValueInfo
    requires_threshold: bool = True


class CustomMetricConfig(_Ignore):
    """ADK's ``CustomMetricConfig``: a ``test_config.json`` custom metric (reported not evaluated here)."""

    code_config: CodeConfig
    metric_info: MetricInfo | None = None
    description: str = ""


class LiveModelConfig(_Ignore):
    """ADK's live (streaming) model settings of a user simulator, accepted so the file loads."""

    timeout_seconds: int = 300


class _UserSimulatorConfig(_Allow):
    model: str = "gemini-2.5-flash"
    model_configuration: GenerateContentConfig = Field(default_factory=GenerateContentConfig)
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False


class LlmBackedUserSimulatorConfig(_UserSimulatorConfig):
    """ADK's text user simulator settings, accepted so the file loads (no simulator runs here)."""

    type: Literal["llm_backed"] = "llm_backed"


class LlmAudioUserSimulatorConfig(_UserSimulatorConfig):
    """ADK's audio user simulator settings, accepted so the file loads (no simulator runs here)."""

    type: Literal["llm_audio"] = "llm_audio"
    audio_model: str = "cloud_tts"
    audio_model_configuration: GenerateContentConfig = Field(default_factory=GenerateContentConfig)
    include_text_with_audio: bool = True


class AdkEvalConfig(_Ignore):
    """google-adk's ``EvalConfig``: unknown top-level keys are ignored, as ADK ignores them."""

    criteria: dict[str, float | BaseCriterion] = Field(default_factory=dict)
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: (
        Annotated[LlmBackedUserSimulatorConfig | LlmAudioUserSimulatorConfig, Field(discriminator="type")] | None
    ) = None
    live_model_config: LiveModelConfig | None = None

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
