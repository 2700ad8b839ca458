"""One SDK tracer and meter provider for the telemetry tests, in memory.

OpenTelemetry's providers are process-wide and set once, so they are set on
first use and telemetry is switched off again after each test: the rest of the
suite runs as without an SDK.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from bridge import telemetry

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()
_SET: list[bool] = []


def _providers() -> None:
    if _SET:
        return
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    _SET.append(True)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The finished spans of this test (telemetry on for its duration)."""
    _providers()
    _EXPORTER.clear()
    telemetry.install()
    try:
        yield _EXPORTER
    finally:
        telemetry.install(enabled=False)
        _EXPORTER.clear()


@pytest.fixture
def reader(spans: InMemorySpanExporter) -> InMemoryMetricReader:
    return _READER
