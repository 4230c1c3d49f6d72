"""google-adk's efficiency evaluators on invocations of given model events, for the differential
tests of ``otel_eval.criteria.adk_efficiency`` (tests/test_adk_multiagent.py).

Runs under ``.venv-reference``. Reads one JSON list on stdin: per invocation, its model events,
each ``{"input_tokens": int, "output_tokens": int}`` (the event's usage metadata) or ``null`` (a
model event without usage metadata: the backend reported none). Writes one JSON object on stdout:
per metric (``inference_call_count_v1``, ``token_usage_v1``) what google-adk's evaluator gives
those invocations, ``{"score": overall, "per_invocation": [value]}``.

The evaluators are the classes google-adk's metric registry registers for these names (the
registry module itself imports Vertex AI's dependencies, which the reference environment lacks).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _invocation(index: int, events: list[dict[str, int] | None]) -> Any:
    from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents
    from google.genai import types

    def event(usage: dict[str, int] | None) -> Any:
        metadata = (
            types.GenerateContentResponseUsageMetadata(
                prompt_token_count=usage["input_tokens"], candidates_token_count=usage["output_tokens"]
            )
            if usage is not None
            else None
        )
        return InvocationEvent(
            author="agent",
            content=types.Content(role="model", parts=[types.Part(text="x")]),
            usage_metadata=metadata,
            model_version="scripted",
        )

    return Invocation(
        invocation_id=f"inv-{index}",
        user_content=types.Content(role="user", parts=[types.Part(text="q")]),
        intermediate_data=InvocationEvents(invocation_events=[event(u) for u in events]),
    )


def main() -> None:
    from google.adk.evaluation import _efficiency_evaluators as efficiency

    invocations = [_invocation(i, events) for i, events in enumerate(json.load(sys.stdin))]
    out = {}
    for metric, evaluator in (
        ("inference_call_count_v1", efficiency._InferenceCallCountV1Evaluator),
        ("token_usage_v1", efficiency._TokenUsageV1Evaluator),
    ):
        result = evaluator().evaluate_invocations(invocations)
        out[metric] = {
            "score": result.overall_score,
            "per_invocation": [r.score for r in result.per_invocation_results],
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
