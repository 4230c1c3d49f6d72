"""The parts of ``python -m benchmarks.ingest`` (benchmarks/ingest.py), one job each.

The workload, pure and seeded: ``golden`` (the golden set), ``agent_spans`` (the spans an
instrumented agent emits for one turn, in either convention), ``sessions`` (agent sessions drawn
from the golden set), ``workload`` (all of it built once for a run). On the wire: ``templates``
(pre-encoded protobuf requests whose ids are renewed in place) and ``sdk_spans`` (ReadableSpans
for the SDK exporters). The servers: ``baseline`` (the minimal receiver compared against) and
``server_process`` (either server in a child process). Measuring: ``clients`` (the senders and
the load loop), ``procfs`` (CPU and memory of a process from /proc), ``stored`` (what the
server's database says), ``stats``, ``phases`` (one measured phase), ``report`` (the printout).
"""
