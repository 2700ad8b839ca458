"""A tap on a session's requests, both ways: where observability plugs in.

A :class:`Tap` hears when an incoming request is taken on and when it is
answered, and when a request of ours goes out and when it is settled; it may
add to the params of ours (trace context in ``_meta``). The session and its
:class:`~bridge.jsonrpc.outbound.Outbound` call it at those four points, the
only places every request passes, whether handled in a task or with none.

This module knows nothing of MCP or OpenTelemetry: :mod:`bridge.telemetry`
installs a factory here (:func:`install`) and makes MCP-aware taps, and so
does ``yieldmcp call --trace`` (a recorder of the wire). With no factory, or
factories that return ``None`` (no telemetry configured), a session has no
tap and pays one ``None`` check at each point; with two taps, both are told.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .messages import ErrorResponse, Notification, Request, RequestId, Response

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

    def settled(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        """Our ``request_id`` got its ``result`` (or ``error``); idempotent."""
        ...

    def notified(self, notification: Notification) -> None:
        """The peer sent ``notification``."""
        ...

    def closed(self) -> None:
        """The session ended."""
        ...


TapFactory = Callable[[object, object], "Tap | None"]
"""Makes the tap of a session from its handler and its transport."""

_factories: dict[str, TapFactory] = {}


def install(name: str, factory: TapFactory | None) -> None:
    """Sessions made from now on ask ``factory`` (known as ``name``) for a
    tap; ``None`` removes it."""
    if factory is None:
        _factories.pop(name, None)
    else:
        _factories[name] = factory


def tap_for(handler: object, transport: object) -> Tap | None:
    """The tap of a new session with ``handler`` over ``transport``, if any."""
    if not _factories:
        return None
    taps = [t for f in _factories.values() if (t := f(handler, transport))]
    if len(taps) < 2:
        return taps[0] if taps else None
    return _Both(taps)


class _Both:
    """Several taps, told in turn (the params each returns go to the next)."""

    def __init__(self, taps: list[Tap]) -> None:
        self._taps = taps

    @contextlib.contextmanager
    def incoming(self, request: Request) -> Generator[object]:
        with contextlib.ExitStack() as stack:
            for tap in self._taps:
                stack.enter_context(tap.incoming(request))
            yield None

    def answered(
        self, request_id: RequestId, reply: Response | ErrorResponse | None
    ) -> None:
        for tap in self._taps:
            tap.answered(request_id, reply)

    def outgoing(
        self, request_id: RequestId, method: str, params: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        for tap in self._taps:
            params = tap.outgoing(request_id, method, params)
        return params

    def settled(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        for tap in self._taps:
            tap.settled(request_id, result, error)

    def notified(self, notification: Notification) -> None:
        for tap in self._taps:
            tap.notified(notification)

    def closed(self) -> None:
        for tap in self._taps:
            tap.closed()
