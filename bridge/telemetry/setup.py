"""An OpenTelemetry SDK from the standard ``OTEL_*`` variables, for the CLI.

``yieldmcp serve`` and ``yieldmcp call`` call :func:`from_environment` first.
Only what the variables ask for is set up (the SDK's own defaults would start
exporting to a collector nobody asked for):

* ``OTEL_TRACES_EXPORTER``: ``console`` (spans as JSON on stderr: stdout is
  MCP's, or the result's), ``otlp`` (needs ``opentelemetry-exporter-otlp-proto-
  http``, or ``-grpc`` with ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``), a comma list,
  or ``none``;
* ``OTEL_METRICS_EXPORTER``: the same, for the metrics;
* the SDK reads the rest itself: ``OTEL_SERVICE_NAME``,
  ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``,
  ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``...

This module imports the SDK (never the API's importer, :mod:`._otel`, which
stays the one place for the API), and only when a variable asks for an
exporter. A missing package or an unknown exporter is a :class:`SetupError`
with a one-line message.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["SetupError", "from_environment"]

_SDK_MISSING = (
    "{var} is set but opentelemetry-sdk is not installed: "
    "pip install 'yieldmcp[otel]' opentelemetry-sdk"
)


class SetupError(Exception):
    """The ``OTEL_*`` variables ask for what cannot be set up."""


def _names(environ: Mapping[str, str], var: str) -> list[str]:
    raw = environ.get(var, "").strip().lower()
    return [n.strip() for n in raw.split(",") if n.strip() not in ("", "none")]


def _protocol(environ: Mapping[str, str], signal: str) -> str:
    specific = environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
    return (specific or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http").lower()


def _otlp(environ: Mapping[str, str], signal: str) -> Any:
    """The OTLP exporter class for ``signal`` (TRACES or METRICS)."""
    grpc = _protocol(environ, signal).startswith("grpc")
    package = "grpc" if grpc else "http"
    kind = "trace" if signal == "TRACES" else "metric"
    module = f"opentelemetry.exporter.otlp.proto.{package}.{kind}_exporter"
    try:
        found = __import__(module, fromlist=["_"])
    except ImportError:
        raise SetupError(
            f"OTEL_{signal}_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-"
            f"{package}: pip install opentelemetry-exporter-otlp-proto-{package}"
        ) from None
    return getattr(
        found, "OTLPSpanExporter" if kind == "trace" else "OTLPMetricExporter"
    )


def _has_sdk() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry.sdk") is not None
    except (ImportError, ValueError):  # no opentelemetry at all
        return False


def _unknown(var: str, name: str) -> SetupError:
    return SetupError(f"{var}={name} is not supported; use console, otlp or none")


def _traces(environ: Mapping[str, str], names: list[str]) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    processors: list[SpanProcessor] = []
    for name in names:
        if name == "console":
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        elif name == "otlp":
            processors.append(BatchSpanProcessor(_otlp(environ, "TRACES")()))
        else:
            raise _unknown("OTEL_TRACES_EXPORTER", name)
    provider = TracerProvider()  # resource and sampler from OTEL_* too
    for processor in processors:
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)


def _metrics(environ: Mapping[str, str], names: list[str]) -> None:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        MetricReader,
        PeriodicExportingMetricReader,
    )

    readers: list[MetricReader] = []
    for name in names:
        if name == "console":
            exporter: Any = ConsoleMetricExporter(out=sys.stderr)
        elif name == "otlp":
            exporter = _otlp(environ, "METRICS")()
        else:
            raise _unknown("OTEL_METRICS_EXPORTER", name)
        readers.append(PeriodicExportingMetricReader(exporter))
    metrics.set_meter_provider(MeterProvider(metric_readers=readers))


def from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Set up the SDK's providers as ``OTEL_*`` asks; True if anything was.

    Raises:
        SetupError: a package is missing, or an exporter name is unknown.
    """
    environ = os.environ if environ is None else environ
    traces = _names(environ, "OTEL_TRACES_EXPORTER")
    measures = _names(environ, "OTEL_METRICS_EXPORTER")
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    for var, names in (
        ("OTEL_TRACES_EXPORTER", traces),
        ("OTEL_METRICS_EXPORTER", measures),
    ):
        if names and not _has_sdk():
            raise SetupError(_SDK_MISSING.format(var=var))
    if traces:
        _traces(environ, traces)
    if measures:
        _metrics(environ, measures)
    return bool(traces or measures)
