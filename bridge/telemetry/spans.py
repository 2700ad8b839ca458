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
from runtime.lowlevel import OBSERVING

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
        self._transport = transport
        self._common = transport_attributes(transport)
        self._version: str | None = None  # learnt from initialize, on a client
        self._in: dict[RequestId, _Open] = {}
        self._out: dict[RequestId, _Open] = {}
        self._born = time.monotonic()
        self._in_ops = _histogram(otel, "mcp.server.operation.duration")
        self._out_ops = _histogram(otel, "mcp.client.operation.duration")
        self._sessions = _histogram(otel, f"mcp.{role}.session.duration")

    def _attributes(
        self, method: str, request_id: RequestId, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        version: Any = getattr(self._handler, "protocol_version", None)
        attributes = request_attributes(
            method, request_id, params, version or self._version
        )
        attributes.update(self._common)
        if "mcp.session.id" not in attributes:
            # An HTTP client learns its session id from the first reply.
            session_id: Any = getattr(self._transport, "session_id", None)
            if isinstance(session_id, str):
                attributes["mcp.session.id"] = session_id
        return attributes

    # --- requests we answer ----------------------------------------------------------

    @contextlib.contextmanager
    def incoming(self, request: Request) -> Generator[object]:
        otel = self._otel
        params = request.params or {}
        attributes = self._attributes(request.method, request.id, params)
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
        attributes = self._attributes(method, request_id, fields)
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
        if entry.attributes["mcp.method.name"] == "initialize":
            version: Any = None
            if isinstance(result, Mapping):
                version = cast("Mapping[str, Any]", result).get("protocolVersion")
            self._version = version if isinstance(version, str) else None
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


_INSTRUMENTS: dict[tuple[int, str], Any] = {}


def _histogram(otel: Api, name: str) -> Any:
    """The histogram ``name`` of the current meter provider, made once (a
    2026-07-28 HTTP request has a tap of its own; the SDK warns when an
    instrument is made again)."""
    provider = otel.metrics.get_meter_provider()
    key = (id(provider), name)
    found = _INSTRUMENTS.get(key)
    if found is None:
        meter = provider.get_meter("yieldmcp")
        found = _INSTRUMENTS[key] = meter.create_histogram(
            name, unit="s", explicit_bucket_boundaries_advisory=_BOUNDS
        )
    return found


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
