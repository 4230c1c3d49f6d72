"""The ingest benchmark's load is what its README says it is: every session of a request is a
session of its own (a pool session picked twice for one request must not merge into one of
twice the traces, which would hide half of the per-session work being measured)."""

from __future__ import annotations

import collections

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks import ingest


def _sessions_of(request: bytes) -> dict[str, set[str]]:
    sessions: dict[str, set[str]] = collections.defaultdict(set)
    for resource_spans in ExportTraceServiceRequest.FromString(request).resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attributes = {kv.key: kv.value.string_value for kv in span.attributes}
                sessions[attributes["session.id"]].add(span.trace_id.hex())
    return sessions


def test_each_session_of_a_raw_request_has_its_own_session_id(tmp_path):
    args = ingest.parse_args(["--protocol", "raw", "--golden-cases", "200", "--templates", "4"])
    workload = ingest.build_workload(args, tmp_path)
    for epoch, template in enumerate(workload.templates, start=1):
        for random_ids in (False, True):
            sessions = _sessions_of(template.render(epoch, random_ids))
            assert len(sessions) == template.sessions
            traces = [trace for members in sessions.values() for trace in members]
            assert len(traces) == len(set(traces))  # no trace in two sessions
            assert all(len(members) <= 3 for members in sessions.values())  # 1-3 turns, one trace each
