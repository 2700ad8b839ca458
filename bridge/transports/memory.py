"""An in-memory transport pair: two sessions talking with no I/O in between.

Messages still go through JSON serialisation and parsing, so what is tested here
is what a real transport would carry. What is saved is the scheduling: a frame
is handed to the session attached to the other end as it is sent (see
:class:`~bridge.jsonrpc.session.PushTransport`), in the sender's task, instead of
travelling through a channel to a receive loop in a task of its own. An end
with no session attached queues what arrives for :meth:`MemoryTransport.receive`
(tests, and benchmarks that read raw frames).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import final

import trio

from bridge.jsonrpc.messages import Message, RequestId, dumps

__all__ = ["MemoryTransport", "memory_pair"]


@final
class MemoryTransport:
    """One end of an in-memory pipe. ``aclose`` ends the other side's receive."""

    def __init__(self) -> None:
        self.peer: MemoryTransport | None = None
        self.sent: list[bytes] = []  # every frame sent, for tests that inspect the wire
        self.record = False
        self._frames: collections.deque[bytes] = collections.deque()
        self._ended = False  # the other end was closed: nothing more will arrive
        self._closed = False  # this end was closed: nothing more may be sent
        self._deliver: Callable[[bytes | None], None] | None = None
        self._arrived = trio.Event()

    # --- receiving -------------------------------------------------------------------

    async def receive(self) -> bytes:
        """The next frame (for an end with no session attached)."""
        while not self._frames:
            if self._ended:
                raise trio.EndOfChannel
            self._arrived = trio.Event()
            await self._arrived.wait()
        await trio.lowlevel.checkpoint()
        return self._frames.popleft()

    def attach(self, deliver: Callable[[bytes | None], None]) -> None:
        """Hand every frame to ``deliver`` as it arrives, and None at the end.

        Frames that arrived before are delivered first, in order.
        """
        self._deliver = deliver
        while self._frames and self._deliver is deliver:
            deliver(self._frames.popleft())
        if self._ended and self._deliver is deliver:
            deliver(None)

    def detach(self) -> None:
        """Queue frames for :meth:`receive` again."""
        self._deliver = None

    def _arrive(self, data: bytes | None) -> None:
        if data is None:
            self._ended = True
        deliver = self._deliver
        if deliver is not None:
            deliver(data)
            return
        if data is not None:
            self._frames.append(data)
        self._arrived.set()

    # --- sending ---------------------------------------------------------------------

    def send_nowait(
        self, message: Message, *, related: RequestId | None = None
    ) -> None:
        """Send ``message`` now; the other end's session handles it before this
        returns (raises ``trio.ClosedResourceError`` once this end is closed)."""
        data = dumps(message)
        if self.record:
            self.sent.append(data)
        self._put(data)

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        self.send_nowait(message, related=related)

    async def send_raw(self, data: bytes) -> None:
        """Send arbitrary bytes as one frame (for fuzzing the other end)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        self._put(data)

    def _put(self, data: bytes) -> None:
        if self._closed:
            raise trio.ClosedResourceError("this end of the memory pipe is closed")
        assert self.peer is not None
        self.peer._arrive(data)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            assert self.peer is not None
            self.peer._arrive(None)
        await trio.lowlevel.checkpoint()


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives."""
    a, b = MemoryTransport(), MemoryTransport()
    a.peer, b.peer = b, a
    return a, b
