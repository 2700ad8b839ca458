"""The one place that imports OpenTelemetry, and only if it is installed.

``opentelemetry-api`` is an optional dependency (``yieldmcp[otel]``). This
module tries it once, lazily, and says whether telemetry is *live*: the API is
installed and a real SDK provider is set (not the API's proxy or no-op). When
it is not, nothing else in :mod:`bridge.telemetry` runs: no session gets a tap,
no call an observer.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["Api", "api", "enable", "live"]

_loaded: list[Any] = []  # [module namespace] once tried (None inside if absent)
_enabled = [True]


class Api:
    """The API modules we use, imported together."""

    def __init__(self) -> None:
        from opentelemetry import baggage, context, metrics, propagate, trace
        from opentelemetry.trace import Link, SpanKind, Status, StatusCode

        self.baggage = baggage
        self.context = context
        self.metrics = metrics
        self.propagate = propagate
        self.trace = trace
        self.Link = Link
        self.SpanKind = SpanKind
        self.Status = Status
        self.StatusCode = StatusCode


def api() -> Api | None:
    """The OpenTelemetry API, or None if ``opentelemetry-api`` is not installed."""
    if not _loaded:
        try:
            _loaded.append(Api())
        except ImportError:
            _loaded.append(None)
    return _loaded[0]


def _is_real(provider: object) -> bool:
    name = type(provider).__name__.lstrip("_")
    return not name.startswith(("Proxy", "NoOp"))


def enable(enabled: bool) -> None:
    """Switch telemetry on (the default) or off, whatever is configured."""
    _enabled[0] = enabled


def live() -> Api | None:
    """The API if an SDK tracer or meter provider is configured, else None."""
    if not _enabled[0] or not _may_be_configured():
        return None
    otel = api()
    if otel is None:
        return None
    traced = _is_real(otel.trace.get_tracer_provider())
    return otel if traced or _is_real(otel.metrics.get_meter_provider()) else None


def _may_be_configured() -> bool:
    """Whether a provider can be set: only by code that imported OpenTelemetry
    (an SDK, ``opentelemetry-instrument``, the user's own set-up), or by the
    API itself from its ``OTEL_PYTHON_*_PROVIDER`` variables. Otherwise the
    API (30 ms of a server's start-up) is not imported just to say no."""
    return (
        "opentelemetry" in sys.modules
        or "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
        or "OTEL_PYTHON_METER_PROVIDER" in os.environ
    )
