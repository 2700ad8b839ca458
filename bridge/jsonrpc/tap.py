"""A tap on a session's requests, both ways: where observability plugs in.

A :class:`Tap` hears when an incoming request is taken on and when it is
answered, and when a request of ours goes out and when it is settled; it may
add to the params of ours (trace context in ``_meta``). The session and its
:class:`~bridge.jsonrpc.outbound.Outbound` call it at those four points, the
only places every request passes, whether handled in a task or with none.

This module knows nothing of MCP or OpenTelemetry: :mod:`bridge.telemetry`
installs a factory here (:func:`install`) and makes MCP-aware taps. With no
factory, or a factory that returns ``None`` (no telemetry configured), a
session has no tap and pays one ``None`` check at each point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .messages import ErrorResponse, Request, RequestId, Response

__all__ = ["Tap", "TapFactory", "install", "tap_for"]


class Tap(Protocol):
    """What one session tells its observer about its requests."""

    def incoming(self, request: Request) -> AbstractContextManager[object]:
        """``request`` is being taken on, inside this context manager: what
        the handler does in it (and a task it starts) sees the context the
        tap set (the request's span)."""
        ...

    def answered(
        self, request_id: RequestId, reply: Response | ErrorResponse | None
    ) -> None:
        """Incoming ``request_id`` is over: ``reply`` went out, or (``None``)
        it was cancelled. Called again for the same id, it does nothing."""
        ...

    def outgoing(
        self, request_id: RequestId, method: str, params: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        """Our request is about to go out: the params to send in its place."""
        ...

    def settled(self, request_id: RequestId, error: BaseException | None) -> None:
        """Our ``request_id`` got its reply (or ``error``); idempotent."""
        ...

    def closed(self) -> None:
        """The session ended."""
        ...


TapFactory = Callable[[object, object], "Tap | None"]
"""Makes the tap of a session from its handler and its transport."""

_factory: list[TapFactory] = []


def install(factory: TapFactory | None) -> None:
    """Sessions made from now on ask ``factory`` for their tap (None: no taps)."""
    _factory[:] = [] if factory is None else [factory]


def tap_for(handler: object, transport: object) -> Tap | None:
    """The tap of a new session with ``handler`` over ``transport``, if any."""
    return _factory[0](handler, transport) if _factory else None
