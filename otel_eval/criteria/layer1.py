"""``layer1``: a regex or substring check over a text field of the session's Vertex record
(:mod:`otel_eval.metrics.layer1`)."""

from __future__ import annotations

from typing import Any, Literal

from ..metrics.layer1 import check_record
from ..models.evalset import CriterionConfig, EvalCase
from ..trajectory import Trajectory
from ..vertex_record import vertex_record
from .base import Criterion, CriterionOptions, JudgeClient


class Layer1Options(CriterionOptions):
    """Which text field of the session's Vertex record to search, and for what."""

    field: Literal["prompt", "prompt_concat", "response_concat", "response", "title"] = "response_concat"
    regex: str | None = None
    contains: str | None = None
    expect: bool = True
    """true: the pattern must be found; false: it must not be."""
    ignore_case: bool = False


class Layer1(Criterion):
    """A pattern check on one text field of the session's Vertex record: a text that must (or must
    not) appear, checked without a golden case."""

    kind = "layer1"
    description = (
        "1 when options.regex / options.contains is found (or, with expect = false, not found) in a text field"
    )
    Options = Layer1Options

    def score(
        self,
        trajectory: Trajectory,
        case: EvalCase | None,
        cfg: CriterionConfig,
        *,
        judge: JudgeClient | None = None,
        name: str = "",
    ) -> tuple[float, dict[str, Any]]:
        """The session's Vertex record (from its trajectory: user messages and final answers; LLM
        texts between tool calls are only in exports) checked per options."""
        return check_record(vertex_record(trajectory), cfg.options)
