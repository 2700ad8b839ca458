"""Newline-delimited JSON-RPC over byte streams: our stdio, or a child process.

The server side reads stdin and writes stdout (nothing but MCP messages go to
stdout; logs go to stderr). The client side spawns a command and talks to its
pipes. Writes are serialised with a lock so frames never interleave.
"""

from __future__ import annotations

import os
from typing import final

import trio

from ..jsonrpc import ErrorData, ErrorResponse, Message, RequestId, dumps
from ._framing import OVERSIZED, LineBuffer

__all__ = ["StreamTransport", "stdio_transport"]

_OVERSIZED_ERROR = dumps(
    ErrorResponse(None, ErrorData(-32600, "Invalid request: message too large"))
)


@final
class StreamTransport:
    """JSON-RPC frames, one per line, over a receive stream and a send stream."""

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        *,
        max_message: int = 16 * 1024 * 1024,
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._lines = LineBuffer(max_message)
        self._ready: list[bytes] = []
        self._lock = trio.Lock()

    async def receive(self) -> bytes:
        while not self._ready:
            data = await self._receive_stream.receive_some(65536)
            if not data:
                raise trio.EndOfChannel
            for line in self._lines.feed(bytes(data)):
                if line == OVERSIZED:
                    await self._write(_OVERSIZED_ERROR)
                else:
                    self._ready.append(line)
        return self._ready.pop(0)

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        await self._write(dumps(message))

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            await self._send_stream.send_all(data + b"\n")

    async def aclose(self) -> None:
        await self._send_stream.aclose()


def stdio_transport(*, max_message: int = 16 * 1024 * 1024) -> StreamTransport:
    """A transport over this process's stdin and stdout."""
    return StreamTransport(
        trio.lowlevel.FdStream(os.dup(0)),
        trio.lowlevel.FdStream(os.dup(1)),
        max_message=max_message,
    )
