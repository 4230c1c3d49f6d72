"""An OTLP/HTTP receiver that keeps every export request exactly as it arrived.

Each ``POST /v1/traces`` or ``/v1/logs`` body (protobuf or JSON, gzip undone) is written to
``OUT/<n>.<signal>.<pb|json>`` in arrival order and answered with an empty success. Standard
library only, so it runs beside any capture (Python or Node); :mod:`captures.pack` then turns
the folder into the committed ``.pb`` files::

    python -m captures.otlp_sink --port 4318 --out /tmp/raw
"""

from __future__ import annotations

import argparse
import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_lock = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    out: Path = Path(".")
    count = 0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            body = self._read_chunked()  # the JavaScript exporters stream their requests
        else:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
        if (self.headers.get("content-encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        signal = self.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        json_body = "json" in (self.headers.get("content-type") or "")
        if signal in ("traces", "logs", "metrics"):
            with _lock:
                Sink.count += 1
                name = f"{Sink.count:05d}.{signal}.{'json' if json_body else 'pb'}"
                (self.out / name).write_bytes(body)
        answer = b"{}" if json_body else b""
        self.send_response(200)
        self.send_header("content-type", "application/json" if json_body else "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _read_chunked(self) -> bytes:
        parts = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()  # the CRLF after each chunk


def serve(out: Path, port: int = 0) -> ThreadingHTTPServer:
    """Start the sink on 127.0.0.1 in a daemon thread, writing into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    Sink.out = out
    server = ThreadingHTTPServer(("127.0.0.1", port), Sink)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    server = serve(args.out, args.port)
    print(f"OTLP sink on http://127.0.0.1:{server.server_port} writing {args.out}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
