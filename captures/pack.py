"""A sink folder (:mod:`captures.otlp_sink`) → the committed capture files.

``tests/data/captures/<name>.traces.pb`` and, when the framework sent logs,
``<name>.logs.pb``: length-prefixed protobuf requests (``[uint32 big-endian length][bytes]``),
the format of ``../shared/fixtures/realclients``. JSON requests (OTLP/JSON, as the JavaScript
exporters may send) are converted to protobuf with otel-eval's own decoder. Run in otel-eval's
virtualenv::

    python -m captures.pack /tmp/raw strands_default
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_eval.otlp_json import parse_logs_request, parse_trace_request

DEST = Path(__file__).resolve().parents[1] / "tests" / "data" / "captures"


def pack(raw: Path, name: str, dest: Path = DEST) -> list[Path]:
    frames: dict[str, list[bytes]] = {"traces": [], "logs": []}
    for path in sorted(raw.iterdir()):
        _, signal, kind = path.name.split(".")
        if signal not in frames:
            continue
        data = path.read_bytes()
        if kind == "json":
            parse = parse_trace_request if signal == "traces" else parse_logs_request
            data = parse(json.loads(data), str(path)).SerializeToString()
        else:  # check it parses, so a broken capture is caught here and not in a test
            (ExportTraceServiceRequest if signal == "traces" else ExportLogsServiceRequest)().ParseFromString(data)
        frames[signal].append(data)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for signal, items in frames.items():
        if not items:
            continue
        target = dest / f"{name}.{signal}.pb"
        target.write_bytes(b"".join(struct.pack(">I", len(item)) + item for item in items))
        written.append(target)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", type=Path, help="the sink's folder")
    parser.add_argument("name", help="capture name, e.g. strands_default")
    parser.add_argument("--dest", type=Path, default=DEST)
    args = parser.parse_args()
    for path in pack(args.raw, args.name, args.dest):
        print(path)


if __name__ == "__main__":
    main()
