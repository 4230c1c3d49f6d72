"""EvalSpanProcessor converting spans in a worker process (otel_eval.convert_process): the same rows
and verdicts as converting in a thread, flushes that wait for it, nothing lost when it dies, and a
process that starts only when the user allows processes and goes with the processor."""

import os
import random
import signal
import sqlite3

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import set_span_in_context

from otel_eval import EvalSpanProcessor
from otel_eval.engine import EngineSettings
from tests.polling import wait_until
from tests.test_engine import GOLDEN


class SeededIds(IdGenerator):
    """The same trace and span ids in every run, so two runs' databases can be compared row by row."""

    def __init__(self, seed):
        self._random = random.Random(seed)

    def generate_span_id(self):
        return self._random.getrandbits(64)

    def generate_trace_id(self):
        return self._random.getrandbits(128)


def agent_run(processor, sessions=30):
    """Sessions of three nested turns each, with fixed ids and times; then every span is flushed."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}), id_generator=SeededIds(7))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("agent")
    clock = 1_700_000_000_000_000_000
    for s in range(sessions):
        for turn in range(3):
            clock += 1000
            root = tracer.start_span(
                "agent.invoke",
                start_time=clock,
                attributes={
                    "openinference.span.kind": "AGENT",
                    "session.id": f"s-{s}",
                    "input.value": "What's the weather in Tokyo?",
                },
            )
            inside = set_span_in_context(root)
            tool = tracer.start_span(
                "get_weather",
                context=inside,
                start_time=clock + 10,
                attributes={
                    "openinference.span.kind": "TOOL",
                    "tool.name": "get_weather",
                    "input.value": '{"city": "Tokyo"}',
                    "session.id": f"s-{s}",
                    "tags": ("a", "b"),
                },
            )
            tool.add_event("retry", {"attempt": 1}, timestamp=clock + 15)
            tool.end(end_time=clock + 20)
            root.set_attribute("output.value", "It is 22°C and sunny in Tokyo.")
            if turn == 2:
                root.set_attribute("otel_eval.session.end", True)
            root.end(end_time=clock + 30)
    assert processor.force_flush()
    return provider


def stored(db):
    conn = sqlite3.connect(db)
    try:
        spans = conn.execute(
            "SELECT trace_id, span_id, parent_span_id, session_id, name, kind, status, start_ns, end_ns,"
            " convention, span_type, raw FROM spans ORDER BY trace_id, span_id"
        ).fetchall()
        verdicts = conn.execute(
            "SELECT session_id, case_id, matched_by, passed FROM evaluations ORDER BY session_id"
        ).fetchall()
        return spans, verdicts
    finally:
        conn.close()


def test_spans_converted_in_a_process_are_stored_and_scored_as_in_a_thread(tmp_path):
    results = {}
    for mode in (False, True):
        db = tmp_path / f"{mode}.db"
        processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=0.05, session_idle=3600, convert_process=mode)
        assert (processor.converter_pid() is not None) == mode
        agent_run(processor)
        assert processor.engine.wait_idle(30)
        processor.shutdown()
        assert processor.dropped_spans == 0
        results[mode] = stored(db)
    spans, verdicts = results[True]
    assert len(spans) == 30 * 3 * 2 and len(verdicts) == 30
    assert results[True] == results[False]


def test_a_flush_waits_for_the_spans_the_converter_process_has_not_answered(tmp_path):
    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600, convert_process=True)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("agent")
    for i in range(3000):
        tracer.start_span(f"step-{i}", attributes={"session.id": f"s-{i % 7}"}).end()
    assert processor.force_flush()  # no waiting beyond the flush itself
    count = sqlite3.connect(db).execute("SELECT COUNT(*) FROM spans").fetchone()[0]
    processor.shutdown()
    assert count == 3000


def test_no_span_is_lost_when_the_converter_process_dies(tmp_path, caplog):
    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600, convert_process=True)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("agent")
    pid = processor.converter_pid()
    for i in range(2000):
        tracer.start_span(f"before-{i}", attributes={"session.id": "s"}).end()
    assert processor.force_flush()
    os.kill(pid, signal.SIGSTOP)  # it takes what it is sent and answers nothing
    for i in range(2000):
        tracer.start_span(f"after-{i}", attributes={"session.id": "s"}).end()
    wait_until(lambda: not processor._buffer, what="the spans sent to the stopped process")
    os.kill(pid, signal.SIGKILL)  # dies with them unanswered: they are converted here
    assert processor.force_flush()
    wait_until(lambda: processor.converter_pid() is None, what="the processor noticing its converter died")
    for i in range(100):
        tracer.start_span(f"later-{i}", attributes={"session.id": "s"}).end()
    processor.shutdown()
    names = {row[0] for row in sqlite3.connect(db).execute("SELECT name FROM spans")}
    assert names == {f"{what}-{i}" for what, n in (("before", 2000), ("after", 2000), ("later", 100)) for i in range(n)}
    assert processor.dropped_spans == 0
    assert any("converter process" in record.getMessage() for record in caplog.records)


def test_the_converter_process_starts_only_when_processes_are_allowed_and_stops_with_the_processor(tmp_path):
    plain = EvalSpanProcessor(db=tmp_path / "a.db", trace_quiet=3600, session_idle=3600)
    assert plain.converter_pid() is None  # an agent that did not ask for processes gets none
    plain.shutdown()
    workers = EvalSpanProcessor(
        db=tmp_path / "b.db", trace_quiet=3600, session_idle=3600, settings=EngineSettings(score_workers=1)
    )
    pid = workers.converter_pid()
    assert pid is not None and pid != os.getpid() and pid not in workers.engine.worker_pids()
    # Below the agent's priority: when every core is busy, the kernel runs the agent's thread first.
    wait_until(
        lambda: os.getpriority(os.PRIO_PROCESS, pid) > os.getpriority(os.PRIO_PROCESS, 0),
        what="the converter process lowering its priority once started",
    )
    not_wanted = EvalSpanProcessor(
        db=tmp_path / "c.db",
        trace_quiet=3600,
        session_idle=3600,
        settings=EngineSettings(score_workers=1),
        convert_process=False,
    )
    assert not_wanted.converter_pid() is None
    not_wanted.shutdown()
    workers.shutdown()
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), what="the converter process gone")


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_batch_pickle_cannot_take_is_converted_here_after_the_ones_sent_before(tmp_path):
    """A span built by hand may hold a value no pipe can carry; its batch is converted in this
    process, the batches before and after it by the converter process, and none is lost."""
    from opentelemetry.sdk.trace import ReadableSpan

    db = tmp_path / "e.db"
    processor = EvalSpanProcessor(db=db, golden=GOLDEN, trace_quiet=3600, session_idle=3600, convert_process=True)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("agent")
    for i in range(600):
        tracer.start_span(f"before-{i}", attributes={"session.id": "s"}).end()
    context = tracer.start_span("context").get_span_context()
    processor.on_end(
        ReadableSpan(
            name="odd", context=context, attributes={"session.id": "s", "call": lambda: None}, start_time=1, end_time=2
        )
    )
    assert processor.force_flush()
    for i in range(600):
        tracer.start_span(f"after-{i}", attributes={"session.id": "s"}).end()
    assert processor.force_flush()
    alive = processor.converter_pid() is not None
    processor.shutdown()
    conn = sqlite3.connect(db)
    names = {row[0] for row in conn.execute("SELECT name FROM spans")}
    raw = conn.execute("SELECT raw FROM spans WHERE name = 'odd'").fetchone()[0]
    assert names == {"odd"} | {f"{w}-{i}" for w in ("before", "after") for i in range(600)}
    assert "<function" in raw  # written as text, as the general path writes what JSON cannot hold
    assert alive and processor.dropped_spans == 0
