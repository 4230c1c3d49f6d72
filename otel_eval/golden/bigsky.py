"""Big Sky Agents eval datasets (``eval-agents --dataset``), seed ``bigsky-eval-dataset.md``.

Each example of ``data`` is ONE prediction: given ``inputs.messages`` (the conversation so far) and
``inputs.context``, the agent's next message should be ``outputs.message``. So an example becomes a
single-turn EvalCase whose query is the LAST user message; the earlier messages are kept as
``metadata["history"]`` (they are context the agent is given, not turns with expectations, so they
are not turned into invocations). Tool calls follow the OpenAI format; ``arguments`` may be an
object or a JSON string; ``"IGNORE"`` values are kept and match anything when compared.

Per-example ``evaluators`` become criteria (:func:`criteria_from_bigsky`), the set's
:attr:`EvalSet.criteria`; comparative and summary evaluators compare experiments, not
sessions, and are kept as given in ``EvalSet.metadata["bigsky"]``.

Keys are strict: the documented ones (:data:`DATASET_KEYS`), OpenAI chat message keys in
messages. An expected message without ``tool_calls`` → ``expected_tool_trajectory = None``,
``tool_calls: []`` → ``[]``, as in every format; with ``chat:matchToolCall`` the invocations are
``first_call_only``, and scoring then treats both as Big Sky does: only a first call with
arguments fails (see docs/golden-formats.md).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import InputError
from ..models.evalset import (
    IGNORE,
    CriterionConfig,
    EvalCase,
    EvalSet,
    ExpectedToolCall,
    Invocation,
    MatchType,
    MessageContent,
    SessionInput,
)
from ..models.keys import ListOf, Obj, check_keys
from ..models.problems import ProblemLog, child, type_name
from .common import check_unique_ids, content_text, parse_arguments, raw_id, slug_id

# --- the documented keys (seed bigsky-eval-dataset.md); messages are OpenAI chat messages ---
_TOOL_CALL = Obj({"id": None, "type": None, "function": Obj({"name": None, "arguments": None})})
_MESSAGE = Obj(
    {
        "role": None,
        "content": None,
        "name": None,
        "tool_calls": ListOf(_TOOL_CALL),
        "tool_call_id": None,
        "function_call": None,
        "refusal": None,
        "audio": None,
    }
)
_EVALUATOR = Obj({"key": None, "description": None, "function": None, "arguments": None})
_EXAMPLE = Obj(
    {
        "id": None,
        "description": None,
        "inputs": Obj({"context": None, "messages": ListOf(_MESSAGE)}),
        "outputs": Obj({"message": _MESSAGE}),
    }
)
#: A Big Sky dataset. ``context``, evaluator ``arguments`` and ``metadata`` are free-form.
DATASET_KEYS = Obj(
    {
        "name": None,
        "description": None,
        "data": ListOf(_EXAMPLE),
        "evaluators": ListOf(_EVALUATOR),
        "comparativeEvaluators": ListOf(_EVALUATOR),
        "summaryEvaluators": ListOf(_EVALUATOR),
        "metadata": None,
    }
)

#: Big Sky evaluators otel-eval knows but cannot express as a criterion; kept, not scored.
KNOWN_UNMAPPED = {
    "chat:includeContext": "needs a per-example context value; not expressible as one criterion",
}


def _match_tool_call(args: dict, log: ProblemLog, path: str) -> list[tuple[str, CriterionConfig]] | None:
    # Big Sky's matchToolCall (src/eval/evaluators/chat.js, every version that reads
    # ``outputs.message``, the seed's format): the first call's name, and its arguments by deep
    # equality with every "IGNORE" key left out on both sides; with no call expected, the first
    # call's arguments against {} (metrics.alignment.align, first_call_only).
    return [
        (
            "trajectory_match",
            CriterionConfig(
                threshold=1.0, match_type=MatchType.EXACT, check_args=True, options={"first_call_only": True}
            ),
        )
    ]


def _match_output(args: dict, log: ProblemLog, path: str) -> list[tuple[str, CriterionConfig]] | None:
    # A deep equality of the whole expected message: every tool call with its arguments, and the content.
    return [
        ("trajectory_match", CriterionConfig(threshold=1.0, match_type=MatchType.EXACT, check_args=True)),
        ("response_match", CriterionConfig(threshold=1.0, options={"method": "exact"})),
    ]


def _match_message_or_tool_call(args: dict, log: ProblemLog, path: str) -> list[tuple[str, CriterionConfig]] | None:
    # Despite its name (and its comment in chat.js) both must hold: the content equal when one is
    # expected, and the first call's NAME equal when one is expected.
    return [
        (
            "trajectory_match",
            CriterionConfig(
                threshold=1.0, match_type=MatchType.EXACT, check_args=False, options={"first_call_only": True}
            ),
        ),
        ("response_match", CriterionConfig(threshold=1.0, options={"method": "exact"})),
    ]


def _compare_content(args: dict, log: ProblemLog, path: str) -> list[tuple[str, CriterionConfig]] | None:
    return [("response_match", CriterionConfig(threshold=0.7))]


def _include_string(args: dict, log: ProblemLog, path: str) -> list[tuple[str, CriterionConfig]] | None:
    value = args.get("string")
    if not isinstance(value, str) or not value:
        log.add(child(child(path, "arguments"), "string"), "chat:includeString needs a non-empty 'string' argument")
        return None
    return [
        ("response_match", CriterionConfig(threshold=1.0, options={"method": "regex", "pattern": re.escape(value)}))
    ]


def _match_regex(args: dict, log: ProblemLog, path: str) -> list[tuple[str, CriterionConfig]] | None:
    pattern = args.get("pattern")
    where = child(child(path, "arguments"), "pattern")
    if not isinstance(pattern, str) or not pattern:
        log.add(where, "chat:matchRegex needs a non-empty 'pattern' argument")
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        log.add(where, f"not a valid regular expression: {exc}")
        return None
    return [("response_match", CriterionConfig(threshold=1.0, options={"method": "regex", "pattern": pattern}))]


#: function → builder of (criterion name, config) pairs.
EVALUATOR_CRITERIA = {
    "chat:matchToolCall": _match_tool_call,
    "chat:matchOutput": _match_output,
    "chat:matchMessageOrToolCall": _match_message_or_tool_call,
    "chat:compareContent": _compare_content,
    "chat:includeString": _include_string,
    "chat:matchRegex": _match_regex,
}


def criteria_from_bigsky(
    evaluators: Any, log: ProblemLog | None = None, path: str = "$.evaluators"
) -> dict[str, CriterionConfig]:
    """Big Sky per-example evaluators → otel-eval criteria.

    ``chat:matchToolCall`` → ``trajectory_match`` (the first call, its name and arguments,
    threshold 1.0); ``chat:matchMessageOrToolCall`` → the first call's name and an exact
    ``response_match``;
    ``chat:compareContent`` → ``response_match`` (threshold 0.7); ``chat:includeString`` /
    ``chat:matchRegex`` → ``response_match`` in contains / regex mode; ``chat:matchOutput`` →
    ``trajectory_match`` with arguments plus an exact ``response_match``. When two evaluators map
    to the same criterion the first wins. An unknown function is a problem: with ``log`` it is
    logged, without one :class:`InputError` is raised.
    """
    own_log = log is None
    log = log if log is not None else ProblemLog("<evaluators>")
    criteria: dict[str, CriterionConfig] = {}
    for i, entry in enumerate(_evaluator_entries(evaluators, log, path)):
        built = _build(entry, child(path, i), log)
        for name, config in built or []:
            criteria.setdefault(name, config)
    if own_log and log.problems:
        first = log.problems[0]
        raise InputError(first.source, first.reason, first.location)
    return criteria


def _evaluator_entries(evaluators: Any, log: ProblemLog, path: str) -> list[dict]:
    if evaluators is None:
        return []
    items = log.array(evaluators, path, "an array of evaluators")
    out: list[dict] = []
    for i, entry in enumerate(items or []):
        entry = log.object(entry, child(path, i), "an evaluator object")
        out.append(entry if entry is not None else {})
    return out


def _build(entry: dict, path: str, log: ProblemLog) -> list[tuple[str, CriterionConfig]] | None:
    if not entry:
        return None
    function = log.required(entry, "function", path)
    if "function" in entry:
        function = log.string(function, child(path, "function"), non_empty=True)
    if function is None:
        return None
    if "key" in entry:
        log.string(entry["key"], child(path, "key"))
    args = entry.get("arguments") or {}
    if not isinstance(args, dict):
        log.add(child(path, "arguments"), f"expected an object, got {type_name(args)}")
        return None
    if function in KNOWN_UNMAPPED:
        return None
    builder = EVALUATOR_CRITERIA.get(function)
    if builder is None:
        known = sorted([*EVALUATOR_CRITERIA, *KNOWN_UNMAPPED])
        log.add(child(path, "function"), f"unknown evaluator function {function!r}; known: {', '.join(known)}")
        return None
    return builder(args, log, path)


def parse_bigsky(data: Any, log: ProblemLog, eval_set_id: str) -> EvalSet:
    """A Big Sky dataset as an :class:`EvalSet`: its examples become cases and the evaluators it names
    become criteria where one maps; problems are logged with their JSON path, not raised."""
    data = log.object(data, "$", "a Big Sky dataset object")
    if data is None:
        return EvalSet(eval_set_id=eval_set_id)
    check_keys(data, DATASET_KEYS, "$", log)
    name = log.string(data.get("name"), "$.name", required=False) or ""
    description = log.string(data.get("description"), "$.description", required=False) or ""

    criteria = criteria_from_bigsky(data.get("evaluators"), log, "$.evaluators")
    unmapped, sources = _evaluator_notes(data.get("evaluators"), criteria)
    for key in ("comparativeEvaluators", "summaryEvaluators"):
        if data.get(key) is not None:
            log.array(data[key], child("$", key), "an array of evaluators")
    first_call_only = bool(
        criteria.get("trajectory_match") and criteria["trajectory_match"].options.get("first_call_only")
    )

    examples = log.required(data, "data", "$")
    cases: list[EvalCase] = []
    ids: list[tuple[str, str]] = []
    if "data" in data:
        for i, example in enumerate(log.array(examples, "$.data", "an array of examples") or []):
            path = child("$.data", i)
            case = _parse_example(example, path, log, first_call_only)
            if case is not None:
                cases.append(case)
                log.case_paths.append(path)
            example_id = raw_id(example) or (case.eval_id if case is not None else None)
            if example_id is not None:
                ids.append((example_id, child(path, "id")))
    check_unique_ids(ids, log)

    metadata: dict[str, Any] = {
        "bigsky": {
            "evaluators": data.get("evaluators") or [],
            "comparativeEvaluators": data.get("comparativeEvaluators") or [],
            "summaryEvaluators": data.get("summaryEvaluators") or [],
            "criteria_sources": sources,
            "unmapped_evaluators": unmapped,
        },
    }
    if isinstance(data.get("metadata"), dict):
        metadata["bigsky"]["metadata"] = data["metadata"]
    return EvalSet(
        eval_set_id=eval_set_id,
        name=name,
        description=description,
        eval_cases=cases,
        criteria=criteria,
        metadata=metadata,
    )


def _evaluator_notes(evaluators: Any, criteria: dict[str, CriterionConfig]) -> tuple[list[dict], dict[str, str]]:
    """Which evaluator each criterion came from, and which evaluators did not become one (and why)."""
    unmapped: list[dict] = []
    sources: dict[str, str] = {}
    if not isinstance(evaluators, list):
        return unmapped, sources
    scratch = ProblemLog("<notes>")
    for _i, entry in enumerate(evaluators):
        if not isinstance(entry, dict) or not isinstance(entry.get("function"), str):
            continue
        function: str = entry["function"]
        given_key = entry.get("key")
        key = given_key if isinstance(given_key, str) else function
        if function in KNOWN_UNMAPPED:
            unmapped.append({"key": key, "function": function, "reason": KNOWN_UNMAPPED[function]})
            continue
        builder = EVALUATOR_CRITERIA.get(function)
        given_args = entry.get("arguments")
        args: dict[str, Any] = given_args if isinstance(given_args, dict) else {}
        for name, _ in (builder(args, scratch, "$") if builder else None) or []:
            if name in sources:
                unmapped.append(
                    {
                        "key": key,
                        "function": function,
                        "reason": f"criterion '{name}' already comes from evaluator '{sources[name]}'",
                    }
                )
            else:
                sources[name] = key
    return unmapped, sources


def _parse_example(example: Any, path: str, log: ProblemLog, first_call_only: bool) -> EvalCase | None:
    example = log.object(example, path, "an example object")
    if example is None:
        return None
    before = len(log.problems)
    inputs = log.required(example, "inputs", path)
    inputs_path = child(path, "inputs")
    query: str | None = None
    history: list[Any] = []
    after: list[Any] = []
    context = None
    if "inputs" in example and log.object(inputs, inputs_path) is not None:
        query, history, after = _messages(inputs, inputs_path, log)
        if inputs.get("context") is not None:
            context = log.object(inputs["context"], child(inputs_path, "context"))

    outputs = log.required(example, "outputs", path)
    outputs_path = child(path, "outputs")
    calls: list[ExpectedToolCall] | None = None
    response: MessageContent | None = None
    if "outputs" in example and log.object(outputs, outputs_path) is not None:
        message = log.required(outputs, "message", outputs_path)
        message_path = child(outputs_path, "message")
        if "message" in outputs and log.object(message, message_path) is not None:
            calls = _tool_calls(message.get("tool_calls"), child(message_path, "tool_calls"), log)
            content = message.get("content")
            text = content_text(content)
            if content is not None and text is None and not isinstance(content, list):
                log.add(
                    child(message_path, "content"), f"expected a string or an array of parts, got {type_name(content)}"
                )
            elif text and text.strip() and text.strip() != IGNORE:
                response = MessageContent.assistant(content if isinstance(content, str) else text)

    eval_id = _example_id(example, path, log, query)
    description = example.get("description")
    if description is not None and not isinstance(description, str):
        log.add(child(path, "description"), f"expected a string, got {type_name(description)}")
    if len(log.problems) > before or query is None or eval_id is None:
        return None

    metadata: dict[str, Any] = {"history": history}
    if after:
        metadata["after_query"] = after
    invocation = Invocation(
        invocation_id=f"{eval_id}-1",
        user_content=MessageContent.user(query),
        expected_tool_trajectory=calls,
        expected_final_response=response,
        first_call_only=first_call_only,
        metadata=metadata,
    )
    return EvalCase(
        eval_id=eval_id,
        name=description or "",
        conversation=[invocation],
        session_input=SessionInput(initial_state=context) if context else None,
    )


def _messages(inputs: dict, path: str, log: ProblemLog) -> tuple[str | None, list, list]:
    """(query = text of the last user message, messages before it, messages after it)."""
    messages_path = child(path, "messages")
    messages = log.required(inputs, "messages", path)
    if "messages" not in inputs or log.array(messages, messages_path) is None:
        return None, [], []
    last_user: int | None = None
    for k, message in enumerate(messages):
        m_path = child(messages_path, k)
        if log.object(message, m_path, "a message object") is None:
            continue
        role = log.required(message, "role", m_path)
        if "role" in message and log.string(role, child(m_path, "role")) == "user":
            last_user = k
    if last_user is None:
        log.add(messages_path, "missing query: no message with role 'user'")
        return None, [], []
    q_path = child(child(messages_path, last_user), "content")
    text = content_text(messages[last_user].get("content"))
    if text is None or not text.strip():
        log.add(q_path, "missing query: the last user message has no text")
        return None, [], []
    return text, messages[:last_user], messages[last_user + 1 :]


def _tool_calls(value: Any, path: str, log: ProblemLog) -> list[ExpectedToolCall] | None:
    """``tool_calls`` of the expected message; absent (or null) → None: tool use not checked."""
    if value is None:
        return None
    calls: list[ExpectedToolCall] = []
    for j, raw in enumerate(log.array(value, path) or []):
        call_path = child(path, j)
        raw = log.object(raw, call_path, "a tool call object")
        if raw is None:
            continue
        if "type" in raw and raw["type"] != "function":
            log.add(child(call_path, "type"), f"only 'function' tool calls are supported, got {raw['type']!r}")
            continue
        function = log.required(raw, "function", call_path)
        fn_path = child(call_path, "function")
        if "function" not in raw or log.object(function, fn_path) is None:
            continue
        name = log.required(function, "name", fn_path)
        if "name" in function:
            name = log.string(name, child(fn_path, "name"), non_empty=True)
        args = parse_arguments(function.get("arguments"), log, child(fn_path, "arguments"))
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        if isinstance(name, str) and args is not None:
            calls.append(ExpectedToolCall(name=name, args=args, call_id=call_id))
    return calls


def _example_id(example: dict, path: str, log: ProblemLog, query: str | None) -> str | None:
    if "id" in example:
        value = example["id"]
        if (
            isinstance(value, bool)
            or not isinstance(value, (str, int))
            or (isinstance(value, str) and not value.strip())
        ):
            log.add(child(path, "id"), f"expected a non-empty string or an integer, got {type_name(value)}")
            return None
        return str(value)
    return slug_id(query) if query else None
