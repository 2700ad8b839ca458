"""Reading an httpx response's body with a bound, and stopping early cleanly.

Every body yieldmcp reads over HTTP as a client (an MCP server's answers, a
model provider's, an authorization server's) comes from a peer that may send
without end, so each reader stops at a limit. Stopping early has a catch:
httpx reads through a chain of async generators, and closing the outer one
leaves the inner ones suspended for the garbage collector (trio warns about
each). :func:`unwind` gives them one more read under a cancelled scope, which
unwinds them all; :func:`chunks` and :func:`read_up_to` do that for a reader.

It opens no connection and knows no protocol: ``bridge.client`` (MCP and
OAuth) and ``bridge.providers`` call it with their responses and limits.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

import httpx
import trio

__all__ = ["chunks", "read_up_to", "unwind"]


async def unwind(pieces: AsyncIterator[bytes]) -> None:
    """Let ``pieces``, an httpx byte iterator read no further, unwind now.

    One read under a cancelled scope runs every generator in the chain to
    its end; what the transport says then (the connection is being closed
    under it) is of no interest.
    """
    with trio.CancelScope() as scope:
        scope.cancel()
        with contextlib.suppress(httpx.TransportError):
            async for _ in pieces:
                pass


@contextlib.asynccontextmanager
async def chunks(response: httpx.Response) -> AsyncGenerator[AsyncIterator[bytes]]:
    """The body's (decoded) chunks, for a reader that may stop early."""
    pieces = response.aiter_bytes()
    try:
        yield pieces
    finally:
        await unwind(pieces)


async def read_up_to(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The body, read until its end or past ``limit`` bytes, and whether it
    fit: ``(body, True)``, or ``(the first limit bytes, False)``."""
    body = bytearray()
    async with chunks(response) as pieces:
        async for piece in pieces:
            body += piece
            if len(body) > limit:
                return bytes(body[:limit]), False
    return bytes(body), True
