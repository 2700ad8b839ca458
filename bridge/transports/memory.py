"""An in-memory transport pair: two sessions talking through trio channels.

Messages still go through JSON serialisation and parsing, so what is tested here
is what a real transport would carry.
"""

from __future__ import annotations

import math
from typing import final

import trio

from ..jsonrpc import Message, RequestId, dumps

__all__ = ["MemoryTransport", "memory_pair"]


@final
class MemoryTransport:
    """One end of an in-memory pipe. ``aclose`` ends the other side's receive."""

    def __init__(
        self,
        outbox: trio.MemorySendChannel[bytes],
        inbox: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._outbox = outbox
        self._inbox = inbox
        self.sent: list[bytes] = []  # every frame sent, for tests that inspect the wire
        self.record = False

    async def receive(self) -> bytes:
        return await self._inbox.receive()

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        data = dumps(message)
        if self.record:
            self.sent.append(data)
        await self._outbox.send(data)

    async def send_raw(self, data: bytes) -> None:
        """Send arbitrary bytes as one frame (for fuzzing the other end)."""
        await self._outbox.send(data)

    async def aclose(self) -> None:
        await self._outbox.aclose()


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives."""
    a_out, b_in = trio.open_memory_channel[bytes](math.inf)
    b_out, a_in = trio.open_memory_channel[bytes](math.inf)
    return MemoryTransport(a_out, a_in), MemoryTransport(b_out, b_in)
