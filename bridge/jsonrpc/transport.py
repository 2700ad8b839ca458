"""What a :class:`~bridge.session.Session` talks to: transports and handlers.

A transport moves whole messages (:class:`Transport`); some can close and resume
a request's stream (:class:`ReleasingTransport`, HTTP) or hand frames to the
session as they arrive (:class:`PushTransport`, memory and HTTP). A handler answers
incoming traffic (:class:`Handler`); some take requests on without a task
(:class:`ImmediateHandler`) and hold them as :class:`Adopted` values, and code
that sends with ``request_nowait`` hears replies as :class:`Replies`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .messages import Message, Notification, Request, RequestId

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "Adopted",
    "Handler",
    "ImmediateHandler",
    "PushTransport",
    "ReleasingTransport",
    "Replies",
    "Transport",
]


class Transport(Protocol):
    """Moves whole messages. ``related`` names the request a message belongs to
    (HTTP routes it onto that request's response stream; stdio ignores it)."""

    async def receive(self) -> bytes:
        """The next message's bytes; raises ``trio.EndOfChannel`` at the end."""
        ...

    async def send(
        self, message: Message, *, related: RequestId | None = None
    ) -> None: ...


@runtime_checkable
class ReleasingTransport(Transport, Protocol):
    """A transport whose per-request streams can be closed and resumed (HTTP)."""

    async def release_stream(self, related: RequestId) -> None:
        """Close the stream carrying request ``related``'s traffic for now."""
        ...


@runtime_checkable
class PushTransport(Transport, Protocol):
    """A transport that hands each frame to the session as it arrives.

    ``deliver`` is called with each frame's bytes, and with None at the end;
    the session never calls :meth:`receive`. ``send_nowait`` sends without
    waiting.
    """

    def attach(self, deliver: Callable[[bytes | None], None]) -> None:
        """Deliver frames from now on (those that arrived before first)."""
        ...

    def detach(self) -> None: ...

    def send_nowait(
        self, message: Message, *, related: RequestId | None = None
    ) -> None: ...


class Replies(Protocol):
    """Whoever sent requests with :meth:`Session.request_nowait`."""

    def replied(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        """Request ``request_id`` is settled: ``result``, or else ``error``."""
        ...


class Adopted(Protocol):
    """An incoming request a handler took on without a task."""

    def cancel(self) -> None:
        """Stop: the peer cancelled it or left. Send nothing; release it."""
        ...


class Handler(Protocol):
    """What the session calls for incoming traffic (the MCP server or client)."""

    async def handle_request(self, request: Request, session: Session) -> Any:
        """The result for ``request``; raise to answer with an error."""
        ...

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None: ...

    def closed(self, session: Session) -> None:
        """The transport ended (called once, synchronously, before teardown)."""
        ...


class ImmediateHandler(Handler, Protocol):
    """A handler that can take some requests on without a task of their own."""

    def begin_request(self, request: Request, session: Session) -> bool:
        """Take ``request`` on now and return True: answer it at once with
        :meth:`Session.respond_nowait`, or :meth:`Session.adopt` it and answer
        it later. Return False to leave it to :meth:`handle_request`, in a task.
        Called only when :attr:`Session.immediate`. An exception raised before
        adopting is answered as an error.
        """
        ...
