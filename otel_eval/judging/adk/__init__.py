"""google-adk's LLM-judge metrics on otel-eval's judge pool, with ADK's semantics (issue 31.3).

    invocation.py        ADK's Invocation as AdkInvocation (the part the judges read) and its text helpers
    from_trajectory.py   a session's turns and golden case → those invocations
    prompts/             ADK's prompt templates, verbatim, one module per metric
    final_response_match_v2.py, rubrics.py, rubric_based_*.py, hallucinations_v1.py
                         per metric: the prompt, ADK's answer parsing, ADK's aggregation (pure)
    results.py           ADK's per-invocation and overall results, its pass rule
    protocol.py          the request a criterion stores, how the pool runs it, its result

The judge is the user's OpenAI-compatible endpoint, not Gemini: a ``judge_model`` name maps to an
endpoint model through ``judge_models`` (see :func:`protocol.endpoint_model`).
"""
