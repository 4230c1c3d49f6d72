"""What the criteria an LLM judge answers share: whether a judge endpoint is configured."""

from __future__ import annotations

import os
from typing import Any

from ..metrics.judge import ENV_BASE_URL
from .base import Criterion

NO_JUDGE = "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"


def endpoint_configured(options: dict[str, Any]) -> bool:
    """A judge endpoint in the criterion's options or the environment."""
    base_url = options.get("base_url") or os.environ.get(ENV_BASE_URL)
    return bool(base_url and str(base_url).rstrip("/"))


class JudgeCriterion(Criterion):
    """A criterion an LLM judge answers. Without a judge endpoint it is skipped with the reason,
    never an error; a judge that fails is our dependency failing: not evaluated, never a FAIL."""

    judge = True
