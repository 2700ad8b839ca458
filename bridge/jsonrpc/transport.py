"""What moves a :class:`~bridge.jsonrpc.session.Session`'s messages.

A transport moves whole messages (:class:`Transport`); some can close and resume
a request's stream (:class:`ReleasingTransport`, HTTP) or hand frames to the
session as they arrive (:class:`PushTransport`, memory and HTTP). The
transports themselves live in ``bridge.transports`` and ``bridge.client``.

A session always sends without waiting when it must (a call driven from the
receive path sends its questions at once): a transport that can only wait to
send is given a queue and one task that writes it, in order (:class:`Queued`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, final, runtime_checkable

import trio

from .messages import Message, RequestId

__all__ = ["PushTransport", "Queued", "ReleasingTransport", "Transport"]


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


@final
class Queued:
    """``inner`` with a queue: :meth:`send_nowait` never waits, and one task
    (:meth:`pump`, run by the session) sends what is queued, in order.
    :meth:`send` goes straight through (its caller waits anyway)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self._queue: list[tuple[Message | None, RequestId | None, trio.Event | None]]
        self._queue = []
        self._queued = trio.Event()
        self._broken: BaseException | None = None

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        sent = trio.Event()
        self._put(message, related, sent)
        await sent.wait()
        if self._broken is not None:
            raise trio.BrokenResourceError("the transport failed") from self._broken

    def send_nowait(
        self, message: Message, *, related: RequestId | None = None
    ) -> None:
        if self._broken is not None:
            raise trio.BrokenResourceError("the transport failed") from self._broken
        self._put(message, related, None)

    async def release_stream(self, related: RequestId) -> None:
        if isinstance(self.inner, ReleasingTransport):
            await self.inner.release_stream(related)

    def release_stream_nowait(self, related: RequestId) -> None:
        self._put(None, related, None)

    def _put(
        self,
        message: Message | None,
        related: RequestId | None,
        sent: trio.Event | None,
    ) -> None:
        self._queue.append((message, related, sent))
        self._queued.set()

    async def flush(self) -> None:
        """Send what is queued (the session's last writes before it ends)."""
        while self._queue:
            message, related, sent = self._queue.pop(0)
            try:
                if self._broken is None:
                    if message is None:
                        if isinstance(self.inner, ReleasingTransport):
                            await self.inner.release_stream(related)  # type: ignore[arg-type]
                    else:
                        await self.inner.send(message, related=related)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self._broken = exc
            finally:
                if sent is not None:
                    sent.set()

    async def pump(self) -> None:
        """Write the queue until cancelled."""
        while True:
            await self._queued.wait()
            self._queued = trio.Event()
            await self.flush()
