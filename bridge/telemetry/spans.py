"""The MCP tap: one span per request, each way, and the operation metrics.

:class:`McpTap` is the :class:`~bridge.jsonrpc.tap.Tap` of one session (or of
one sessionless 2026-07-28 HTTP request). For each request it receives it
starts a SERVER span named ``{mcp.method.name} {target}``, continuing the trace
context the request carries in ``params._meta`` (``traceparent``,
``tracestate``, ``baggage``); for each request it sends, a CLIENT span whose
context it writes into the request's ``params._meta``. A ``tools/call`` or
``prompts/get`` it receives also gets an effect observer
(:mod:`bridge.telemetry.effects`), so each effect is a child span.

Metrics, as the semantic conventions define them (by who sends, not by which
side): ``mcp.server.operation.duration`` (seconds, per request received, until
its answer is sent), ``mcp.client.operation.duration`` (per request sent,
until its answer arrives), and ``mcp.server.session.duration`` /
``mcp.client.session.duration`` (per session, when it closes).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Mapping
from typing import Any, cast, final

from bridge.jsonrpc.messages import (
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
)
from runtime._observe import OBSERVING

from ._otel import Api
from .attributes import (
    outcome_attributes,
    request_attributes,
    span_name,
    transport_attributes,
)
from .effects import EffectSpans

__all__ = ["McpTap"]

_OBSERVED = frozenset({"tools/call", "prompts/get"})
_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class _Open:
    __slots__ = ("attributes", "observer", "span", "started")

    def __init__(
        self, span: Any, attributes: dict[str, Any], observer: EffectSpans | None
    ) -> None:
        self.span = span
        self.attributes = attributes
        self.observer = observer
        self.started = time.monotonic()


@final
class McpTap:
    """Spans and metrics for one session's requests (see the module doc).

    Args:
        otel: the OpenTelemetry API (:func:`bridge.telemetry._otel.live`).
        role: ``"server"`` or ``"client"``: which metric names apply.
        handler: the session's handler (its ``protocol_version``, if any).
        transport: the session's transport, or a name (``"http"``).
    """

    def __init__(self, otel: Api, role: str, handler: object, transport: object):
        self._otel = otel
        self._role = role
        self._handler = handler
        self._tracer = otel.trace.get_tracer("yieldmcp")
        self._common = transport_attributes(transport)
        self._in: dict[RequestId, _Open] = {}
        self._out: dict[RequestId, _Open] = {}
        self._born = time.monotonic()
        meter = otel.metrics.get_meter("yieldmcp")
        self._in_ops = meter.create_histogram(
            "mcp.server.operation.duration",  # as the receiver, either side
            unit="s",
            explicit_bucket_boundaries_advisory=_BOUNDS,
        )
        self._out_ops = meter.create_histogram(
            "mcp.client.operation.duration",  # as the sender, either side
            unit="s",
            explicit_bucket_boundaries_advisory=_BOUNDS,
        )
        self._sessions = meter.create_histogram(
            f"mcp.{role}.session.duration",
            unit="s",
            explicit_bucket_boundaries_advisory=_BOUNDS,
        )

    # --- requests we answer ----------------------------------------------------------

    @contextlib.contextmanager
    def incoming(self, request: Request) -> Generator[object]:
        otel = self._otel
        params = request.params or {}
        version: Any = getattr(self._handler, "protocol_version", None)
        attributes = request_attributes(request.method, request.id, params, version)
        attributes.update(self._common)
        parent = otel.propagate.extract(_carrier(params))
        span = self._tracer.start_span(
            span_name(request.method, params),
            context=parent,
            kind=otel.SpanKind.SERVER,
            attributes=attributes,
        )
        ctx = otel.trace.set_span_in_context(span, parent)
        observer = None
        if request.method in _OBSERVED and span.is_recording():
            observer = EffectSpans(otel, self._tracer, ctx)
        self._in[request.id] = _Open(span, attributes, observer)
        token = otel.context.attach(ctx)
        watching = OBSERVING.set(observer)
        try:
            yield span
        finally:
            OBSERVING.reset(watching)
            otel.context.detach(token)

    def answered(
        self, request_id: RequestId, reply: Response | ErrorResponse | None
    ) -> None:
        entry = self._in.pop(request_id, None)
        if entry is None:
            return
        if isinstance(reply, ErrorResponse):
            outcome = outcome_attributes(None, reply.error.code)
            message: str | None = reply.error.message
        elif reply is None:
            outcome, message = {"error.type": "cancelled"}, "cancelled"
        else:
            outcome, message = outcome_attributes(reply.result, None), None
        if entry.observer is not None:
            entry.observer.close(outcome.get("mcp.result.type", "ended"))
        self._end(entry, outcome, message, self._in_ops)

    # --- requests we send ------------------------------------------------------------

    def outgoing(
        self, request_id: RequestId, method: str, params: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        otel = self._otel
        fields = dict(params or {})
        version: Any = getattr(self._handler, "protocol_version", None)
        attributes = request_attributes(method, request_id, fields, version)
        attributes.update(self._common)
        span = self._tracer.start_span(
            span_name(method, fields), kind=otel.SpanKind.CLIENT, attributes=attributes
        )
        self._out[request_id] = _Open(span, attributes, None)
        if not span.get_span_context().is_valid:
            return params
        meta: Any = fields.get("_meta")
        carrier: dict[str, Any] = {}
        if isinstance(meta, Mapping):
            carrier.update(cast("Mapping[str, Any]", meta))
        otel.propagate.inject(carrier, context=otel.trace.set_span_in_context(span))
        fields["_meta"] = carrier
        return fields

    def settled(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        entry = self._out.pop(request_id, None)
        if entry is None:
            return
        outcome: dict[str, Any] = {}
        message = None
        if error is not None:
            code: Any = getattr(error, "code", None)
            outcome = (
                outcome_attributes(None, code)
                if isinstance(code, int)
                else {"error.type": type(error).__name__}
            )
            message = str(error)
        self._end(entry, outcome, message, self._out_ops)

    def notified(self, notification: Notification) -> None:
        pass  # notifications are not spans

    def closed(self) -> None:
        self._sessions.record(time.monotonic() - self._born, self._common)
        for table in (self._in, self._out):
            for entry in table.values():
                outcome = {"error.type": "session_closed"}
                self._end(entry, outcome, "the session closed", None)
            table.clear()

    # --- both ------------------------------------------------------------------------

    def _end(
        self,
        entry: _Open,
        outcome: dict[str, Any],
        message: str | None,
        histogram: Any,
    ) -> None:
        span, otel = entry.span, self._otel
        if outcome:
            span.set_attributes(outcome)
        if "error.type" in outcome:
            span.set_status(otel.Status(otel.StatusCode.ERROR, message))
        span.end()
        if histogram is not None:
            keep = ("mcp.method.name", "mcp.protocol.version", "network.transport")
            labels = {k: v for k, v in entry.attributes.items() if k in keep}
            labels.update((k, v) for k, v in outcome.items() if k != "mcp.result.type")
            if "gen_ai.tool.name" in entry.attributes:
                labels["gen_ai.tool.name"] = entry.attributes["gen_ai.tool.name"]
            histogram.record(time.monotonic() - entry.started, labels)


def _carrier(params: Mapping[str, Any]) -> dict[str, str]:
    """The trace context in ``params._meta`` (string entries only)."""
    meta: Any = params.get("_meta")
    if not isinstance(meta, Mapping):
        return {}
    fields = cast("Mapping[str, Any]", meta)
    return {
        k: v
        for k in ("traceparent", "tracestate", "baggage")
        if isinstance(v := fields.get(k), str)
    }
