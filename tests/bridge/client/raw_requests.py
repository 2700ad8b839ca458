"""HTTP/1.1 requests read off a raw socket, for hand-written hostile servers.

A test server that must answer what h11 would refuse to send (a body that
lies about its coding, a connection hung up mid-call) reads its requests
with :func:`requests` and writes its answers byte by byte itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio

__all__ = ["requests"]


async def requests(
    stream: trio.SocketStream,
) -> AsyncIterator[tuple[str, dict[str, str], bytes]]:
    """Each request on ``stream`` as ``(verb, headers, body)`` (header names
    lower-cased; the body by its Content-Length), until the client hangs up."""
    buffer = b""
    while True:
        while b"\r\n\r\n" not in buffer:
            data = await stream.receive_some(65536)
            if not data:
                return
            buffer += data
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        fields = {
            k.strip().lower(): v.strip()
            for k, v in (line.split(":", 1) for line in lines[1:])
        }
        size = int(fields.get("content-length", "0"))
        while len(buffer) < size:
            buffer += await stream.receive_some(65536)
        body, buffer = buffer[:size], buffer[size:]
        yield lines[0].split(" ")[0], fields, body
