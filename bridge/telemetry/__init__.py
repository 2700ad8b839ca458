"""OpenTelemetry for MCP: spans, metrics and trace propagation (optional).

Owns turning what the JSON-RPC session and the runtime report (the session's
:mod:`~bridge.jsonrpc.tap`, the stepper's :class:`~runtime.lowlevel.Observer`)
into OpenTelemetry spans and metrics that follow the MCP semantic conventions
(:mod:`.spans`, :mod:`.effects`, :mod:`.attributes`, :mod:`.gen_ai`); the host's
model calls as ``gen_ai`` client spans (:func:`traced_completion`); and setting
up an SDK from the standard ``OTEL_*`` variables for the CLI (:mod:`.setup`).

It needs ``opentelemetry-api`` (``pip install yieldmcp[otel]``) and, to record
anything, an SDK provider; without either it costs nothing: no session gets a
tap, no call an observer, and only :mod:`._otel` ever imports OpenTelemetry.
It does not import the server, client, host, CLI, transports or providers:
they call it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator, Mapping
from typing import Any

from bridge.jsonrpc import tap as _tap

from . import _otel
from ._otel import live
from .attributes import span_name
from .gen_ai import reply_attributes

__all__ = ["install", "rounds_span", "span_event", "traced_completion"]


def _factory(handler: object, transport: object) -> Any:
    otel = live()  # checked per session: a provider may be set after import
    if otel is None:
        return None
    from .spans import McpTap

    role = getattr(handler, "mcp_role", "client")
    return McpTap(otel, role, handler, transport)


def install(enabled: bool = True) -> None:
    """Give sessions made from now on a tap when telemetry is live (or, with
    ``enabled=False``, none at all even if it is: tests that share a process
    with an SDK provider use it)."""
    _otel.enable(enabled)
    _tap.install("otel", _factory if enabled else None)


async def traced_completion(sampler: Any, request: Any) -> Any:
    """``await sampler.complete(request)``, as a ``gen_ai`` CLIENT span
    (``chat {model}``) when telemetry is live."""
    otel = live()
    if otel is None:
        return await sampler.complete(request)
    model: Any = getattr(sampler, "model", None)
    api: Any = getattr(getattr(sampler, "api", None), "name", None)
    system = api if isinstance(api, str) else type(sampler).__name__.lower()
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": system,
    }
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    max_tokens: Any = getattr(request, "max_tokens", None)
    if isinstance(max_tokens, int):
        attributes["gen_ai.request.max_tokens"] = max_tokens
    tracer = otel.trace.get_tracer("yieldmcp")
    name = "chat" if not isinstance(model, str) else f"chat {model}"
    with tracer.start_as_current_span(
        name, kind=otel.SpanKind.CLIENT, attributes=attributes
    ) as span:
        reply = await sampler.complete(request)
        span.set_attributes(reply_attributes(reply))
        return reply


@contextlib.contextmanager
def rounds_span(
    method: str, params: Mapping[str, Any], modern: bool
) -> Generator[Callable[[int], None]]:
    """Around the rounds of one 2026-07-28 call (``modern``), when live: an
    INTERNAL span ``{method} {target} (rounds)``, parent of each round's
    CLIENT span, so the rounds (and the answers made between them) read as one
    call. Yields a function to record how many rounds have started."""
    otel = live() if modern else None
    if otel is None:
        yield _ignore
        return
    tracer = otel.trace.get_tracer("yieldmcp")
    name = f"{span_name(method, params)} (rounds)"
    with tracer.start_as_current_span(name) as span:
        yield functools.partial(span.set_attribute, "yieldmcp.call.rounds")


def _ignore(count: int) -> None:
    pass


def span_event(name: str, attributes: dict[str, Any]) -> None:
    """Add an event to the current span (a provider's retry), if live."""
    otel = live()
    if otel is not None:
        otel.trace.get_current_span().add_event(name, attributes)
