"""Past one host (examples/scale-out): three otel-eval collectors on loopback behind a load split
the way the OpenTelemetry Collector's ``loadbalancing`` exporter does it — a consistent-hash ring
(crc32, 100 points per backend on a 36000-position circle) over the routing key — and
``otel-eval report --db a --db b --db c`` merged, compared with one collector on the same load.

* routing by trace id keeps a one-trace session whole: merged report == single instance;
* routing by the ``session.id`` attribute keeps multi-trace sessions whole too;
* routing multi-trace sessions by trace id splits them (the README's warning), which shows up as
  extra, partial sessions in the merged report.
"""

from __future__ import annotations

import bisect
import random
import sqlite3
import zlib
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from examples.weather_agent import agent_resource, run_session
from otel_eval.read.evaluations import current_evaluations
from otel_eval.report import summarize_sessions
from tests.polling import wait_until
from tests.test_export_evalset import GOLDEN

#: The static resolver's hostnames in examples/scale-out/otelcol-loadbalancing*.yaml.
BACKENDS = ["otel-eval-1:4317", "otel-eval-2:4317", "otel-eval-3:4317"]
MAX_POSITIONS = 36000
POINTS_PER_BACKEND = 100


class HashRing:
    """The loadbalancing exporter's ring: each backend at crc32(name + byte(i)) % 36000 for
    i < 100 (first come keeps a taken position), a key goes to the next position clockwise."""

    def __init__(self, backends):
        taken = {}
        for backend in backends:
            for i in range(POINTS_PER_BACKEND):
                position = zlib.crc32(backend.encode() + bytes([i])) % MAX_POSITIONS
                taken.setdefault(position, backend)
        self.positions = sorted(taken)
        self.owners = [taken[p] for p in self.positions]

    def backend_for(self, key: bytes) -> str:
        position = zlib.crc32(key) % MAX_POSITIONS
        i = bisect.bisect_left(self.positions, position)
        return self.owners[i % len(self.owners)]


def trace_key(trace_id: int) -> bytes:
    return trace_id.to_bytes(16, "big")


def session_key(session_id: str) -> bytes:
    return f"session.id={session_id}|".encode()  # routing_key: attributes, routing_attributes: [session.id]


class SeededIds(IdGenerator):
    """Deterministic ids, so which backend a trace lands on is the same on every run."""

    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self.random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self.random.getrandbits(128) or 1


SINGLE_TURN = [
    ("tokyo-1", ["What's the weather in Tokyo?"], "1.0.0"),
    ("tokyo-2", ["What's the weather in Tokyo?"], "2.0.0"),
    ("compare-1", ["Compare the weather in Paris and London"], "1.0.0"),
    ("compare-2", ["Compare the weather in Paris and London"], "2.0.0"),
    ("berlin-1", ["What's the weather in Berln?"], "1.0.0"),
    ("refund-1", ["What is your refund policy?"], "1.0.0"),
    ("refund-2", ["What is your refund policy?"], "2.0.0"),
    ("hello-1", ["Hello there, how are you today?"], "1.0.0"),
    ("tokyo-3", ["What's the weather in Tokyo?"], "1.0.0"),
]
MULTI_TURN = [
    (f"follow-{i}", ["What's the weather in Paris?", "What about tomorrow?"], v)
    for i, v in enumerate(["1.0.0", "2.0.0", "1.0.0", "2.0.0", "1.0.0", "2.0.0"])
]


def record_load(sessions, seed=7):
    """Finished SDK spans of the sessions, grouped per trace: [(session_id, trace_id, spans)]."""
    memory = InMemorySpanExporter()
    ids = SeededIds(seed)
    providers = []
    for session_id, turns, version in sessions:
        provider = TracerProvider(resource=agent_resource(version), id_generator=ids)
        provider.add_span_processor(SimpleSpanProcessor(memory))
        run_session(provider, session_id, turns, version=version)
        providers.append(provider)
    spans = memory.get_finished_spans()
    for provider in providers:  # shutting one down would shut the shared exporter too
        provider.shutdown()
    traces: dict[int, list] = {}
    for span in spans:
        traces.setdefault(span.context.trace_id, []).append(span)
    out = [(spans[0].attributes["session.id"], trace_id, spans) for trace_id, spans in traces.items()]
    out.sort(key=lambda t: min(s.start_time for s in t[2]))
    return out


def send(port: int, spans) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        TraceServiceStub(channel).Export(encode_spans(spans), timeout=10)


def settled(dbs) -> bool:
    """Every session that arrived is scored (nothing open or waiting)."""
    for db in dbs:
        if not Path(db).exists():
            continue
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            if conn.execute("SELECT COUNT(*) FROM sessions WHERE status != 'scored'").fetchone()[0]:
                return False
        finally:
            conn.close()
    return True


def run_split(start_collector, tmp_path, load, key_of, name):
    """Send ``load`` to three collectors by ring and to one collector whole; return
    (summary of the merged three, summary of the single, backend per trace)."""
    collectors = {
        b: start_collector(db=str(tmp_path / f"{name}-{i}.db"), golden=[str(GOLDEN)]) for i, b in enumerate(BACKENDS)
    }
    single_db = str(tmp_path / f"{name}-single.db")
    single = start_collector(db=single_db, golden=[str(GOLDEN)])
    ring = HashRing(BACKENDS)
    routed = []
    for session_id, trace_id, spans in load:
        backend = ring.backend_for(key_of(session_id, trace_id))
        routed.append((session_id, backend))
        send(collectors[backend].grpc_port, spans)
        send(single.grpc_port, spans)
    dbs = [c.config.db for c in collectors.values()]
    wait_until(
        lambda: settled(dbs + [single_db]) and _count(dbs) >= len({s for s, _, _ in load}),
        timeout=20,
        what="every session scored",
    )
    return summarize_sessions(current_evaluations(dbs)), summarize_sessions(current_evaluations([single_db])), routed


def _count(dbs) -> int:
    return sum(len(current_evaluations([db])) for db in dbs if Path(db).exists())


def test_trace_id_routing_of_one_trace_sessions_merges_to_the_single_instance_report(start_collector, tmp_path):
    load = record_load(SINGLE_TURN)
    merged, single, routed = run_split(start_collector, tmp_path, load, lambda s, t: trace_key(t), "traceid")
    assert len({backend for _, backend in routed}) >= 2  # the load really was spread
    assert merged == single
    assert single["sessions"] == len(SINGLE_TURN)
    assert single["matched"] == len(SINGLE_TURN) - 1  # "hello" matches no case
    assert 0 < single["passed"] < single["matched"]  # 2.0.0 regresses: a report worth comparing


def test_session_attribute_routing_keeps_multi_trace_sessions_whole(start_collector, tmp_path):
    load = record_load(MULTI_TURN)
    merged, single, routed = run_split(start_collector, tmp_path, load, lambda s, t: session_key(s), "session")
    assert merged == single
    assert single["sessions"] == len(MULTI_TURN)
    per_session = {}
    for session_id, backend in routed:
        per_session.setdefault(session_id, set()).add(backend)
    assert all(len(b) == 1 for b in per_session.values())


def test_trace_id_routing_splits_multi_trace_sessions(start_collector, tmp_path):
    load = record_load(MULTI_TURN)
    ring = HashRing(BACKENDS)
    split = {s for s, _, _ in load if len({ring.backend_for(trace_key(t)) for s2, t, _ in load if s2 == s}) > 1}
    assert split, "with these seeded ids some two-turn session lands on two instances"
    merged, single, _ = run_split(start_collector, tmp_path, load, lambda s, t: trace_key(t), "split")
    assert single["sessions"] == len(MULTI_TURN)
    # Each split session is scored twice, once per half, and neither half is the whole conversation.
    assert merged["sessions"] == len(MULTI_TURN) + len(split)
    assert merged != single


@pytest.mark.parametrize("path", ["otelcol-loadbalancing.yaml", "otelcol-loadbalancing-by-session.yaml"])
def test_example_configs_name_the_backends_the_ring_uses(path):
    text = (Path(__file__).resolve().parent.parent / "examples" / "scale-out" / path).read_text()
    for backend in BACKENDS:
        assert f"- {backend}" in text
    if "by-session" in path:
        assert "routing_key: attributes" in text and "- session.id" in text
    else:
        assert "routing_key: traceID" in text
