"""Google ADK eval data: ``.evalset.json`` (EvalSet/EvalCase/Invocation of
``google/adk-python`` ``src/google/adk/evaluation/``) and the older ``.test.json`` files.

Three shapes are read:

* the current EvalSet: ``{eval_set_id, eval_cases: [{eval_id, conversation: [{invocation_id,
  user_content: {parts, role}, final_response, intermediate_data: {tool_uses, tool_responses,
  intermediate_responses} | {invocation_events}}], conversation_scenario, session_input}]}``.
  ADK's EvalCase/Invocation accept camelCase aliases (``evalId``, ``userContent``, ``toolUses``...);
  so does this loader.
* the old test file: a list of ``{query, expected_tool_use: [{tool_name, tool_input}],
  expected_intermediate_agent_responses, reference}``. As in ADK (``AgentEvaluator``), the whole
  file is ONE session: one EvalCase (eval_id = file stem) whose turns are the items in order.
* the old eval set: a list of ``{name, data: [<test file items>], initial_session}``, one case each.

Keys are strict: every key ADK's own models define is known (:data:`EVAL_SET_KEYS`, checked
against google-adk by the tests), anything else is a problem. Expected tool use: an invocation
without ``intermediate_data`` → ``None`` (not checked); with it → the calls it lists, ``[]`` when
it lists none. ADK writes an empty ``tool_uses`` by leaving it out (its eval set manager dumps
with ``exclude_defaults``), so ``"intermediate_data": {}`` is an explicit "no tool calls" and
is read as such. Old test files: ``expected_tool_use`` absent → ``None``, ``[]`` → ``[]``.
"""

from __future__ import annotations

from typing import Any

from ..models.evalset import EvalCase, EvalSet, ExpectedToolCall, Invocation, MessageContent, SessionInput
from ..models.keys import ListOf, MapOf, Obj, TupleOf, check_keys
from ..models.problems import ProblemLog, child, type_name
from ..models.suggest import closest_key
from .common import TOOL_USE_KEYS, check_unique_ids, parse_arguments, parse_tool_uses

# --- the keys of google-adk's models (src/google/adk/evaluation/eval_set.py, eval_case.py, and the
# google-genai types they hold). None = a value whose keys are not checked (scalars, free-form
# objects: args, response, state, usage metadata...). camel=True: ADK/genai accept camelCase aliases.

_FUNCTION_CALL = Obj({"id": None, "args": None, "name": None, "partial_args": None, "will_continue": None}, camel=True)
_FUNCTION_RESPONSE = Obj(
    {"will_continue": None, "scheduling": None, "parts": None, "id": None, "name": None, "response": None}, camel=True
)
_PART = Obj(
    {
        "media_resolution": None,
        "code_execution_result": None,
        "executable_code": None,
        "file_data": None,
        "function_call": _FUNCTION_CALL,
        "function_response": _FUNCTION_RESPONSE,
        "inline_data": None,
        "text": None,
        "thought": None,
        "thought_signature": None,
        "video_metadata": None,
        "tool_call": None,
        "tool_response": None,
        "part_metadata": None,
        "audio_transcription": None,
        "media_processing": None,
        "speech_metadata": None,
    },
    camel=True,
)
_CONTENT = Obj({"parts": ListOf(_PART), "role": None}, camel=True)
_RUBRIC = Obj(
    {"rubric_id": None, "rubric_content": Obj({"text_property": None}, camel=True), "description": None, "type": None},
    camel=True,
)
_INVOCATION_EVENT = Obj(
    {
        "author": None,
        "content": _CONTENT,
        "grounding_metadata": None,
        "usage_metadata": None,
        "model_version": None,
        # Written by the adk web eval editor; ADK ignores them (InvocationEvent has extra="ignore" for them).
        "invocation_index": None,
        "tool_use_index": None,
    },
    camel=True,
)
#: IntermediateData | InvocationEvents: the keys of both alternatives.
_INTERMEDIATE_DATA = Obj(
    {
        "tool_uses": ListOf(_FUNCTION_CALL),
        "tool_responses": ListOf(_FUNCTION_RESPONSE),
        "intermediate_responses": ListOf(TupleOf((None, ListOf(_PART)))),
        "invocation_events": ListOf(_INVOCATION_EVENT),
    },
    camel=True,
)
_AGENT_DETAILS = Obj({"name": None, "instructions": None, "tool_declarations": None}, camel=True)
_APP_DETAILS = Obj({"agent_details": MapOf(_AGENT_DETAILS)}, camel=True)
_INVOCATION = Obj(
    {
        "invocation_id": None,
        "user_content": _CONTENT,
        "final_response": _CONTENT,
        "intermediate_data": _INTERMEDIATE_DATA,
        "creation_timestamp": None,
        "duration": None,
        "model_duration": None,
        "tool_duration": None,
        "rubrics": ListOf(_RUBRIC),
        "app_details": _APP_DETAILS,
    },
    camel=True,
)
_EVAL_CASE = Obj(
    {
        "eval_id": None,
        "conversation": ListOf(_INVOCATION),
        "conversation_scenario": Obj(
            {"starting_prompt": None, "conversation_plan": None, "user_persona": None}, camel=True
        ),
        "session_input": Obj({"app_name": None, "user_id": None, "session_id": None, "state": None}, camel=True),
        "creation_timestamp": None,
        "rubrics": ListOf(_RUBRIC),
        "final_session_state": None,
        # otel-eval's own: ADK's EvalCase allows extra keys, and `golden suggest` files a draft's
        # cluster (size, phrasings, example sessions) here.
        "metadata": None,
    },
    camel=True,
)
#: ADK's EvalSet. (ADK reads its top level in snake_case only; ``evalCases`` is accepted here too.)
EVAL_SET_KEYS = Obj(
    {
        "eval_set_id": None,
        "name": None,
        "description": None,
        "eval_cases": ListOf(_EVAL_CASE),
        "creation_timestamp": None,
    },
    camel=True,
)

#: The keys above by the google-adk / google-genai class they come from (tests compare them with
#: the models of the installed google-adk).
MODEL_KEYS = {
    "EvalSet": EVAL_SET_KEYS,
    "EvalCase": _EVAL_CASE,
    "Invocation": _INVOCATION,
    "IntermediateData": _INTERMEDIATE_DATA,
    "InvocationEvents": _INTERMEDIATE_DATA,
    "InvocationEvent": _INVOCATION_EVENT,
    "SessionInput": _EVAL_CASE.fields["session_input"],
    "ConversationScenario": _EVAL_CASE.fields["conversation_scenario"],
    "Rubric": _RUBRIC,
    "RubricContent": _RUBRIC.fields["rubric_content"],
    "AppDetails": _APP_DETAILS,
    "AgentDetails": _AGENT_DETAILS,
    "Content": _CONTENT,
    "Part": _PART,
    "FunctionCall": _FUNCTION_CALL,
    "FunctionResponse": _FUNCTION_RESPONSE,
}

#: An item of an old test file (AgentEvaluator's ``.test.json``).
TEST_FILE_ITEM_KEYS = Obj(
    {
        "query": None,
        "expected_tool_use": ListOf(TOOL_USE_KEYS),
        "expected_intermediate_agent_responses": ListOf(Obj({"author": None, "text": None})),
        "reference": None,
    }
)
#: An entry of an old eval set.
OLD_EVAL_SET_ENTRY_KEYS = Obj(
    {
        "name": None,
        "data": ListOf(TEST_FILE_ITEM_KEYS),
        "initial_session": Obj({"state": None, "app_name": None, "user_id": None}),
    }
)


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.title() for word in rest)


def _key(obj: dict, snake: str) -> str | None:
    """The key ``obj`` uses for a field: ADK writes snake_case and accepts camelCase aliases."""
    if snake in obj:
        return snake
    camel = _camel(snake)
    return camel if camel in obj else None


def _get(obj: dict, snake: str) -> Any:
    key = _key(obj, snake)
    return obj[key] if key is not None else None


def is_old_eval_set(items: list) -> bool:
    """A list of ``{name, data: [...], initial_session}`` entries, not of test queries: no entry has
    a ``query``, and some entry has ``data`` or ``initial_session`` or a key that misspells one of
    them (so that key is reported as a misspelling of ``data``, and a right ``data`` never as
    unknown)."""
    entries = [item for item in items if isinstance(item, dict)]
    if not entries or any("query" in entry for entry in entries):
        return False
    own = ("data", "initial_session")
    return any(key in own or closest_key(str(key), own) for entry in entries for key in entry)


def parse_adk_eval_set(data: Any, log: ProblemLog, eval_set_id: str) -> EvalSet:
    """An ADK eval set (or the older test-file and eval-set lists ``adk eval`` still reads) as our
    :class:`EvalSet`, every problem logged with its JSON path rather than raised."""
    if isinstance(data, list):
        if is_old_eval_set(data):
            check_keys(data, ListOf(OLD_EVAL_SET_ENTRY_KEYS), "$", log)
            return _parse_legacy_eval_set(data, log, eval_set_id)
        check_keys(data, ListOf(TEST_FILE_ITEM_KEYS), "$", log)
        return _parse_legacy_test_file(data, log, eval_set_id)
    data = log.object(data, "$", "an ADK eval set object or a list of test queries")
    if data is None:
        return EvalSet(eval_set_id=eval_set_id)
    check_keys(data, EVAL_SET_KEYS, "$", log)
    set_id = _get(data, "eval_set_id")
    if set_id is not None:
        set_id = log.string(set_id, child("$", _key(data, "eval_set_id") or "eval_set_id"), non_empty=True)
    name = log.string(_get(data, "name"), "$.name", required=False) or ""
    description = log.string(_get(data, "description"), "$.description", required=False) or ""
    cases_key = _key(data, "eval_cases") or "eval_cases"
    cases_path = child("$", cases_key)
    cases: list[EvalCase] = []
    ids: list[tuple[str, str]] = []
    raw_cases = log.array(data[cases_key], cases_path) if cases_key in data else log.required(data, cases_key, "$")
    for i, raw in enumerate(raw_cases or []):
        path = child(cases_path, i)
        case = _parse_case(raw, path, log)
        if case is not None:
            cases.append(case)
            log.case_paths.append(path)
        id_key = _key(raw, "eval_id") if isinstance(raw, dict) else None
        if id_key and isinstance(raw[id_key], str):
            ids.append((raw[id_key], child(path, id_key)))
    check_unique_ids(ids, log)
    return EvalSet(eval_set_id=set_id or eval_set_id, name=name, description=description, eval_cases=cases)


# --- current EvalSet schema -------------------------------------------------------------------


def _parse_case(raw: Any, path: str, log: ProblemLog) -> EvalCase | None:
    raw = log.object(raw, path, "an eval case object")
    if raw is None:
        return None
    before = len(log.problems)
    id_key = _key(raw, "eval_id") or "eval_id"
    eval_id = log.required(raw, id_key, path)
    if id_key in raw:
        eval_id = log.string(eval_id, child(path, id_key), non_empty=True)
    # the key the case uses, snake_case when it has neither spelling (then it is not in ``raw``)
    conv_key = _key(raw, "conversation") or "conversation"
    scen_key = _key(raw, "conversation_scenario") or "conversation_scenario"
    metadata: dict[str, Any] = {}
    invocations: list[Invocation] = []
    has_conversation = conv_key in raw and raw[conv_key] is not None
    has_scenario = scen_key in raw and raw[scen_key] is not None
    if has_conversation == has_scenario:
        log.add(child(path, "conversation"), "exactly one of 'conversation' and 'conversation_scenario' must be given")
    elif has_conversation:
        conv_path = child(path, conv_key)
        turns = log.array(raw[conv_key], conv_path) or []
        if isinstance(raw[conv_key], list) and not turns:
            log.add(conv_path, "case has no conversation: no query to match and nothing to score")
        for n, turn in enumerate(turns):
            invocation = _parse_invocation(turn, child(conv_path, n), log, f"{eval_id}-{n + 1}", first=n == 0)
            if invocation is not None:
                invocations.append(invocation)
    else:
        scen_path = child(path, scen_key)
        scenario = log.object(raw[scen_key], scen_path)
        if scenario is not None:
            prompt_key = _key(scenario, "starting_prompt") or "starting_prompt"
            prompt = log.required(scenario, prompt_key, scen_path)
            if prompt_key in scenario:
                prompt = log.string(prompt, child(scen_path, prompt_key), non_empty=True)
            if isinstance(prompt, str):
                # A simulated user: only the opening message is known; it is what a session is matched on.
                invocations.append(Invocation(invocation_id=f"{eval_id}-1", user_content=MessageContent.user(prompt)))
                metadata["conversation_scenario"] = scenario
    session_input = _session_input(
        _get(raw, "session_input"), child(path, _key(raw, "session_input") or "session_input"), log
    )
    for field in ("rubrics", "final_session_state"):
        if _get(raw, field):
            metadata[field] = _get(raw, field)
    own = _get(raw, "metadata")
    if own is not None:
        own = log.object(own, child(path, _key(raw, "metadata") or "metadata"), "an object")
        metadata.update(own or {})
    if len(log.problems) > before or not isinstance(eval_id, str):
        return None
    return EvalCase(eval_id=eval_id, conversation=invocations, session_input=session_input, metadata=metadata)


def _session_input(value: Any, path: str, log: ProblemLog) -> SessionInput | None:
    if value is None:
        return None
    value = log.object(value, path)
    if value is None:
        return None
    state = _get(value, "state")
    if state is not None and log.object(state, child(path, _key(value, "state") or "state")) is None:
        return None
    config = {k: _get(value, k) for k in ("app_name", "user_id") if _get(value, k) is not None}
    session_id = _get(value, "session_id")
    return SessionInput(
        thread_id=session_id if isinstance(session_id, str) else None, config=config, initial_state=state or {}
    )


def _parse_invocation(raw: Any, path: str, log: ProblemLog, default_id: str, first: bool) -> Invocation | None:
    raw = log.object(raw, path, "an invocation object")
    if raw is None:
        return None
    before = len(log.problems)
    inv_id = _get(raw, "invocation_id")
    if inv_id is not None:
        inv_id = log.string(inv_id, child(path, _key(raw, "invocation_id") or "invocation_id"))
    user_key = _key(raw, "user_content") or "user_content"
    user = None
    if user_key in raw:
        user = _content(raw[user_key], child(path, user_key), log, "user", require_text=first)
    else:
        log.required(raw, user_key, path)
    final_key = _key(raw, "final_response")
    final = (
        _content(raw[final_key], child(path, final_key), log, "assistant")
        if final_key and raw[final_key] is not None
        else None
    )
    calls: list[ExpectedToolCall] | None = None  # no intermediate_data: tool use is not checked
    responses: list[MessageContent] = []
    data_key = _key(raw, "intermediate_data")
    if data_key and raw[data_key] is not None:
        calls, responses = _intermediate(raw[data_key], child(path, data_key), log)
    metadata = {"rubrics": _get(raw, "rubrics")} if _get(raw, "rubrics") else {}
    if len(log.problems) > before or user is None:
        return None
    return Invocation(
        invocation_id=inv_id or default_id,
        user_content=user,
        expected_tool_trajectory=calls,
        expected_intermediate_responses=responses,
        expected_final_response=final if final is not None and final.get_text().strip() else None,
        metadata=metadata,
    )


def _content(value: Any, path: str, log: ProblemLog, role: str, require_text: bool = False) -> MessageContent | None:
    """A genai ``Content`` ({parts: [{text}|{function_call}|...], role}) as a MessageContent.

    Text-only content becomes a plain string (what matching and ROUGE use); content with other
    parts keeps the parts, whose ``text`` entries :meth:`MessageContent.get_text` still reads.
    """
    value = log.object(value, path, "a content object with 'parts'")
    if value is None:
        return None
    parts = log.required(value, "parts", path)
    if "parts" not in value or log.array(parts, child(path, "parts")) is None:
        return None
    kept: list[dict] = []
    for k, part in enumerate(parts):
        part = log.object(part, child(child(path, "parts"), k), "a part object")
        if part is None:
            continue
        if part.get("text") is not None and not isinstance(part["text"], str):
            log.add(child(child(child(path, "parts"), k), "text"), f"expected a string, got {type_name(part['text'])}")
            continue
        cleaned = {key: v for key, v in part.items() if v is not None}
        if cleaned:
            kept.append(cleaned)
    texts = [p["text"] for p in kept if "text" in p]
    if require_text and not "".join(texts).strip():
        log.add(child(path, "parts"), "missing query: the first user message has no text")
        return None
    if all(set(p) == {"text"} for p in kept):
        return MessageContent(role=role, content="\n".join(texts))
    return MessageContent(role=role, content=kept)


def _intermediate(value: Any, path: str, log: ProblemLog) -> tuple[list[ExpectedToolCall], list[MessageContent]]:
    """The expected calls and intermediate responses; no ``tool_uses`` means none (ADK's default)."""
    value = log.object(value, path)
    if value is None:
        return [], []
    if _key(value, "invocation_events") is not None:
        return _events(value, path, log)
    calls: list[ExpectedToolCall] = []
    uses_key = _key(value, "tool_uses") or "tool_uses"
    for j, use in enumerate(log.array(value.get(uses_key) or [], child(path, uses_key)) or []):
        call = _function_call(use, child(child(path, uses_key), j), log)
        if call is not None:
            calls.append(call)
    resp_key = _key(value, "tool_responses") or "tool_responses"
    for j, resp in enumerate(log.array(value.get(resp_key) or [], child(path, resp_key)) or []):
        if isinstance(resp, dict):
            _attach_result(calls, resp)
        else:
            log.add(child(child(path, resp_key), j), f"expected a function response object, got {type_name(resp)}")
    responses: list[MessageContent] = []
    ir_key = _key(value, "intermediate_responses") or "intermediate_responses"
    for j, entry in enumerate(log.array(value.get(ir_key) or [], child(path, ir_key)) or []):
        entry_path = child(child(path, ir_key), j)
        if not (
            isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], list)
        ):
            log.add(entry_path, "expected an [author, parts] pair")
            continue
        text = "\n".join(p["text"] for p in entry[1] if isinstance(p, dict) and isinstance(p.get("text"), str))
        responses.append(MessageContent(role="assistant", content=text, metadata={"author": entry[0]}))
    return calls, responses


def _events(value: dict, path: str, log: ProblemLog) -> tuple[list[ExpectedToolCall], list[MessageContent]]:
    """``InvocationEvents``: tool calls and texts the agents produced, in order."""
    calls: list[ExpectedToolCall] = []
    responses: list[MessageContent] = []
    key = _key(value, "invocation_events") or "invocation_events"  # the caller saw one spelling
    for e, event in enumerate(log.array(value[key], child(path, key)) or []):
        e_path = child(child(path, key), e)
        event = log.object(event, e_path, "an invocation event object")
        if event is None:
            continue
        content = event.get("content") or {}
        parts = content.get("parts") if isinstance(content, dict) else None
        for k, part in enumerate(parts or []):
            if not isinstance(part, dict):
                continue
            fc_key, fr_key = _key(part, "function_call"), _key(part, "function_response")
            if fc_key and part[fc_key] is not None:
                call = _function_call(
                    part[fc_key], child(child(child(child(e_path, "content"), "parts"), k), fc_key), log
                )
                if call is not None:
                    calls.append(call)
            elif fr_key and isinstance(part[fr_key], dict):
                _attach_result(calls, part[fr_key])
            elif isinstance(part.get("text"), str) and part["text"].strip():
                responses.append(
                    MessageContent(role="assistant", content=part["text"], metadata={"author": event.get("author", "")})
                )
    return calls, responses


def _function_call(raw: Any, path: str, log: ProblemLog) -> ExpectedToolCall | None:
    raw = log.object(raw, path, "a function call object")
    if raw is None:
        return None
    name = log.required(raw, "name", path)
    if "name" in raw:
        name = log.string(name, child(path, "name"), non_empty=True)
    args = parse_arguments(raw.get("args"), log, child(path, "args"))
    call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    if not isinstance(name, str) or args is None:
        return None
    return ExpectedToolCall(name=name, args=args, call_id=call_id)


def _attach_result(calls: list[ExpectedToolCall], response: dict) -> None:
    """A function response joins its call: by id when both have one, else the first open call of that name."""
    target = None
    if response.get("id"):
        target = next((c for c in calls if c.call_id == response["id"]), None)
    if target is None:
        target = next((c for c in calls if c.name == response.get("name") and c.result is None), None)
    if target is not None:
        target.result = response.get("response")


# --- old formats ------------------------------------------------------------------------------


def _parse_legacy_test_file(items: list, log: ProblemLog, eval_set_id: str) -> EvalSet:
    invocations = _legacy_invocations(items, "$", log, eval_set_id)
    cases = [EvalCase(eval_id=eval_set_id, conversation=invocations)] if invocations else []
    log.case_paths.extend("$" for _ in cases)
    if not items:
        log.add("$", "the test file has no queries")
    return EvalSet(eval_set_id=eval_set_id, eval_cases=cases)


def _parse_legacy_eval_set(items: list, log: ProblemLog, eval_set_id: str) -> EvalSet:
    cases: list[EvalCase] = []
    ids: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        path = child("$", i)
        before = len(log.problems)
        item = log.object(item, path, "an eval set entry {name, data}")
        if item is None:
            continue
        name = log.required(item, "name", path)
        if "name" in item:
            name = log.string(name, child(path, "name"), non_empty=True)
        data = log.required(item, "data", path)
        if data is not None:
            data = log.array(data, child(path, "data"))
        invocations = _legacy_invocations(data or [], child(path, "data"), log, name or f"case{i + 1}")
        if isinstance(data, list) and not data:
            log.add(child(path, "data"), "case has no conversation: no query to match and nothing to score")
        session = item.get("initial_session")
        session_input = None
        if isinstance(session, dict) and session:
            session_input = SessionInput(
                config={k: session[k] for k in ("app_name", "user_id") if k in session},
                initial_state=session.get("state") or {},
            )
        if len(log.problems) == before and isinstance(name, str):
            cases.append(EvalCase(eval_id=name, conversation=invocations, session_input=session_input))
            log.case_paths.append(path)
        if isinstance(name, str):
            ids.append((name, child(path, "name")))
    check_unique_ids(ids, log)
    return EvalSet(eval_set_id=eval_set_id, eval_cases=cases)


def _legacy_invocations(items: list, base: str, log: ProblemLog, case_id: str) -> list[Invocation]:
    invocations: list[Invocation] = []
    for n, item in enumerate(items):
        path = child(base, n)
        item = log.object(item, path, "a query object")
        if item is None:
            continue
        before = len(log.problems)
        query = log.required(item, "query", path)
        if "query" in item:
            query = log.string(query, child(path, "query"), non_empty=True)
        calls = parse_tool_uses(item.get("expected_tool_use"), child(path, "expected_tool_use"), log)
        responses = []
        for k, resp in enumerate(
            log.array(
                item.get("expected_intermediate_agent_responses") or [],
                child(path, "expected_intermediate_agent_responses"),
            )
            or []
        ):
            r_path = child(child(path, "expected_intermediate_agent_responses"), k)
            if isinstance(resp, dict) and isinstance(resp.get("text"), str):
                responses.append(
                    MessageContent(role="assistant", content=resp["text"], metadata={"author": resp.get("author", "")})
                )
            else:
                log.add(r_path, "expected an object with 'author' and 'text'")
        reference = log.string(item.get("reference"), child(path, "reference"), required=False)
        if len(log.problems) > before or not isinstance(query, str):
            continue
        invocations.append(
            Invocation(
                invocation_id=f"{case_id}-{n + 1}",
                user_content=MessageContent.user(query),
                expected_tool_trajectory=calls,
                expected_intermediate_responses=responses,
                expected_final_response=MessageContent.assistant(reference)
                if reference and reference.strip()
                else None,
            )
        )
    return invocations
