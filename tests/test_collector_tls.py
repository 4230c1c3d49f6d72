"""TLS on both receivers with a self-signed certificate made for the test."""

from __future__ import annotations

import ssl

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.conftest import ids_of, sdk_spans, stored_span_ids


def test_both_receivers_serve_tls_and_refuse_plaintext(start_collector, self_signed_cert, monkeypatch):
    cert, key = self_signed_cert
    # requests lets these variables override a session's own CA file (the exporter's certificate_file).
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    collector = start_collector(tls_cert=str(cert), tls_key=str(key), auth_token="s3cret")

    grpc_spans = sdk_spans(service="over-grpc")
    grpc_exporter = GrpcExporter(
        endpoint=f"127.0.0.1:{collector.grpc_port}",
        insecure=False,
        credentials=grpc.ssl_channel_credentials(root_certificates=cert.read_bytes()),
        headers={"authorization": "Bearer s3cret"},
        timeout=10,
    )
    assert grpc_exporter.export(grpc_spans) == SpanExportResult.SUCCESS
    grpc_exporter.shutdown()

    http_spans = sdk_spans(service="over-http")
    http_exporter = HttpExporter(
        endpoint=f"https://127.0.0.1:{collector.http_port}/v1/traces",
        certificate_file=str(cert),
        headers={"Authorization": "Bearer s3cret"},
        timeout=10,
    )
    assert http_exporter.export(http_spans) == SpanExportResult.SUCCESS
    http_exporter.shutdown()

    assert stored_span_ids(collector.config.db) == ids_of(grpc_spans) | ids_of(http_spans)

    context = ssl.create_default_context(cafile=str(cert))
    assert httpx.get(f"https://127.0.0.1:{collector.http_port}/healthz", verify=context).status_code == 200
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{collector.http_port}/healthz", timeout=3)
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        with pytest.raises(grpc.FutureTimeoutError):
            grpc.channel_ready_future(channel).result(timeout=1)
