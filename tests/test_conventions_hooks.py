"""What each convention contributes through its hooks (``conventions/base.Convention``): the keys
that name a span's session and user (``IDENTITY_KEYS``, read in DESIGN §4's precedence), and the
merging of a span's log records (``merge_logs``)."""

from __future__ import annotations

import pytest

from otel_eval.conventions import CONVENTIONS
from otel_eval.conventions.base import IdentityKeys
from otel_eval.mapping import read_span, session_id_of, use_identity_attributes, user_id_of, with_log_events
from otel_eval.spans import LogEvent, SpanRecord

#: DESIGN §4: which attribute names the session when several are set (the resource's
#: ``session.id`` after every span attribute).
SESSION_PRECEDENCE = [
    "session.id",
    "gen_ai.conversation.id",
    "gcp.vertex.agent.session_id",
    "traceloop.association.properties.session_id",
    "langfuse.session.id",
    "metadata.session_id",
]
USER_PRECEDENCE = [
    "user.id",
    "enduser.id",
    "gen_ai.user.id",
    "traceloop.association.properties.user_id",
    "langfuse.user.id",
    "metadata.user_id",
]


@pytest.fixture(autouse=True)
def built_in_keys_after():
    yield
    use_identity_attributes()


def span(attributes, resource=None, scope="", name="step") -> SpanRecord:
    return SpanRecord("a" * 32, "b" * 16, None, name, 1, 2, attributes=attributes, resource=resource or {}, scope=scope)


def test_every_dialect_declares_its_keys_and_its_log_merge():
    for module in CONVENTIONS:
        assert isinstance(module.IDENTITY_KEYS, IdentityKeys), module.NAME
        assert callable(module.merge_logs), module.NAME


@pytest.mark.parametrize("kind", ["openinference", "genai"])
def test_the_session_and_user_keys_keep_design_precedence_on_spans_of_any_dialect(kind):
    base = {"openinference.span.kind": "CHAIN"} if kind == "openinference" else {"gen_ai.operation.name": "chat"}
    for precedence, name_of in ((SESSION_PRECEDENCE, session_id_of), (USER_PRECEDENCE, user_id_of)):
        keys = list(precedence)
        resource = {precedence[0]: "from-resource"}
        while keys:
            attributes = {**base, **{key: f"id-{key}" for key in keys}}
            assert name_of(span(attributes, resource)) == f"id-{keys[0]}", (kind, keys)
            keys.pop(0)
        assert name_of(span(dict(base), resource)) == "from-resource"
        assert name_of(span(dict(base))) is None


def test_a_dialects_own_keys_name_the_session_on_its_own_spans_only():
    vercel = {
        "ai.operationId": "ai.generateText",
        "ai.telemetry.metadata.sessionId": "chat-1",
        "ai.telemetry.metadata.userId": "u-1",
    }
    assert (session_id_of(span(vercel)), user_id_of(span(vercel))) == ("chat-1", "u-1")
    # a key every dialect shares still comes first on the Vercel span
    assert session_id_of(span({**vercel, "session.id": "shared"})) == "shared"
    # ingest, which knows the stored dialect name and has no reading, keys the span the same way
    assert session_id_of(span(vercel), convention="vercel_ai") == "chat-1"

    langfuse = {
        "langfuse.observation.type": "generation",
        "langfuse.trace.session_id": "lf-1",
        "langfuse.trace.user_id": "lf-u",
    }
    assert (session_id_of(span(langfuse)), user_id_of(span(langfuse))) == ("lf-1", "lf-u")
    # the same key on a span another dialect reads names nothing: it is Langfuse's own spelling
    genai = {"gen_ai.operation.name": "chat", "langfuse.trace.session_id": "lf-1", "langfuse.trace.user_id": "lf-u"}
    assert (session_id_of(span(genai)), user_id_of(span(genai))) == (None, None)
    # while Langfuse's shared key names the session on it
    assert session_id_of(span({**genai, "langfuse.session.id": "lf-2"})) == "lf-2"


def test_a_key_the_user_names_comes_before_every_dialects():
    use_identity_attributes(session=["app.thread"], user=["app.customer"])
    attributes = {
        "openinference.span.kind": "CHAIN",
        "app.thread": "t-9",
        "session.id": "s-1",
        "app.customer": "c-9",
        "user.id": "u-1",
    }
    assert (session_id_of(span(attributes)), user_id_of(span(attributes))) == ("t-9", "c-9")


def _choice_calling(name: str) -> LogEvent:
    body = {
        "index": 0,
        "finish_reason": "tool_calls",
        "message": {
            "role": "assistant",
            "tool_calls": [
                {"id": "call-1", "type": "function", "function": {"name": name, "arguments": '{"city": "Oslo"}'}}
            ],
        },
    }
    return LogEvent("a" * 32, "b" * 16, 3, "gen_ai.choice", body)


def test_semantic_kernel_names_the_calls_its_log_records_bring_without_their_plugin():
    # SK sends the model's messages as log records only; its calls name "<plugin>-<function>".
    chat = span(
        {"gen_ai.operation.name": "chat.completions", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"},
        scope="semantic_kernel.connectors.ai",
        name="chat.completions gpt-4o",
    )
    reading = read_span(chat)
    assert reading.convention == "semantic_kernel" and reading.requested_calls == []
    merged = with_log_events(chat, reading, [_choice_calling("Tools-get_weather")])
    assert [(c.name, c.args) for c in merged.requested_calls] == [("get_weather", {"city": "Oslo"})]


def test_a_genai_span_keeps_a_tool_name_with_a_dash_its_log_records_bring():
    chat = span({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}, name="chat gpt-4o")
    merged = with_log_events(chat, read_span(chat), [_choice_calling("Tools-get_weather")])
    assert [c.name for c in merged.requested_calls] == ["Tools-get_weather"]


def test_log_records_fill_a_span_no_dialect_recognises():
    plain = span({"app.step": "answer"})
    reading = read_span(plain)
    assert reading.convention == "none" and reading.user_input is None
    question = LogEvent("a" * 32, "b" * 16, 2, "gen_ai.user.message", {"content": "Weather in Oslo?"})
    merged = with_log_events(plain, reading, [question])
    assert merged.user_input == "Weather in Oslo?"
    assert reading.user_input is None  # a copy: the span's own reading is unchanged
