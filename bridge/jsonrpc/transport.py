"""What moves a :class:`~bridge.jsonrpc.session.Session`'s messages.

A transport moves whole messages (:class:`Transport`); some can close and resume
a request's stream (:class:`ReleasingTransport`, HTTP) or hand frames to the
session as they arrive (:class:`PushTransport`, memory and HTTP). The
transports themselves live in ``bridge.transports`` and ``bridge.client``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from .messages import Message, RequestId

__all__ = ["PushTransport", "ReleasingTransport", "Transport"]


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
