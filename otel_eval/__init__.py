"""otel-eval: live evaluation of AI agents from their OpenTelemetry traces."""

__version__ = "0.1.0"
