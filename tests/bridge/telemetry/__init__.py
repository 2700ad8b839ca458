"""Tests of ``bridge/telemetry``: OpenTelemetry spans and metrics."""
