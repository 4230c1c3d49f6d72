"""google-adk's ``test_config.json``, read as google-adk reads it, as otel-eval criteria.

    models.py      mirrors of google-adk 2.13's pydantic models of the file
    problems.py    what is wrong in a file, each as (JSON path, reason)
    reading.py     a file read in ADK's two steps (:func:`~.reading.read_test_config`)
    translate.py   ADK's criteria mapped onto otel-eval's ``CriterionConfig``
    resolve.py     which file a run uses (``--config``, ``criteria_file``, beside the golden eval set)

The file is validated with mirrors of google-adk 2.13's own pydantic models (``EvalConfig``,
``BaseCriterion`` and each metric's criterion type, ``JudgeModelOptions``, ``Rubric``, ...), in
ADK's two steps. So a file google-adk refuses is refused here
(:class:`~otel_eval.criteria_file.ConfigError`: the file, the JSON path, the reason), camelCase and
snake_case keys are both read, and numbers, booleans and match types are coerced as pydantic
coerces them for ADK (``"in-order"``, ``1`` → IN_ORDER).

otel-eval is stricter than google-adk in a few places, each an error a user would otherwise not
see (docs/adk.md lists them): an unknown metric name (ADK logs it at run time and evaluates
nothing), a threshold outside 0–1, an efficiency metric given a threshold, and a key that is a
near miss of a known one (``matchtype``, ``criterai``: ADK ignores it silently). Other keys ADK
ignores are ignored here too, each with a warning.
"""
