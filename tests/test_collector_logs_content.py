"""Content an instrumentation sends only as OTLP log records reaches its span's AgentData."""

import sqlite3

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.polling import wait_until

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
ROOT, CHAT = bytes.fromhex("b7ad6b7169203331"), bytes.fromhex("00f067aa0ba902b7")


def any_value(value):
    out = AnyValue()
    if isinstance(value, dict):
        for key, item in value.items():
            out.kvlist_value.values.add(key=key).value.CopyFrom(any_value(item))
    else:
        out.string_value = str(value)
    return out


def test_log_record_content_fills_the_chat_span_and_the_session_query(start_collector, channel_to):
    collector = start_collector(http=None, trace_quiet=0.1, session_idle=0.3)
    channel = channel_to(collector)

    traces = ExportTraceServiceRequest()
    spans = traces.resource_spans.add().scope_spans.add().spans
    root = spans.add(
        trace_id=TRACE, span_id=ROOT, name="invoke_agent weather", start_time_unix_nano=1, end_time_unix_nano=9
    )
    root.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
    root.attributes.add(key="gen_ai.conversation.id").value.string_value = "conv-logs"
    chat = spans.add(
        trace_id=TRACE,
        span_id=CHAT,
        parent_span_id=ROOT,
        name="chat gpt-4o",
        start_time_unix_nano=2,
        end_time_unix_nano=8,
    )
    chat.attributes.add(key="gen_ai.operation.name").value.string_value = "chat"  # no content attributes

    logs = ExportLogsServiceRequest()
    records = logs.resource_logs.add().scope_logs.add().log_records
    for at, name, body in (
        (3, "gen_ai.user.message", {"content": "What's the weather in Tokyo?"}),
        (7, "gen_ai.choice", {"index": "0", "message": {"content": "Sunny in Tokyo."}}),
    ):
        record = records.add(trace_id=TRACE, span_id=CHAT, time_unix_nano=at, event_name=name)
        record.body.CopyFrom(any_value(body))

    LogsServiceStub(channel).Export(logs, timeout=5)
    TraceServiceStub(channel).Export(traces, timeout=5)

    conn = sqlite3.connect(collector.config.db)
    wait_until(lambda: conn.execute("SELECT 1 FROM evaluations").fetchall(), timeout=15, what="the session scored")
    row = conn.execute(
        "SELECT agent_task, agent_response FROM agent_data WHERE span_id = ? AND level = 'span'", (CHAT.hex(),)
    ).fetchone()
    assert row == ("What's the weather in Tokyo?", "Sunny in Tokyo.")
    assert conn.execute("SELECT session_id, query FROM evaluations").fetchall() == [
        ("conv-logs", "What's the weather in Tokyo?")
    ]
