"""Reading an httpx response's body with a bound, and stopping early cleanly.

Every body yieldmcp reads over HTTP as a client (an MCP server's answers, a
model provider's, an authorization server's) comes from a peer that may send
without end, so each reader stops at a limit. Two things stand in the way:

* **Compression.** httpx decodes a ``Content-Encoding`` a whole network
  chunk at a time, before any reader can count: 1,880 bytes of
  ``gzip, gzip`` are a GiB of spaces, and were held whole (2 GB of memory)
  before a 16 MiB limit could refuse them. :func:`chunks` reads the raw
  bytes and decodes them itself, at most :data:`PIECE` bytes at a time, so
  a reader that stops at its limit has decoded at most one piece more. It
  decodes what :data:`ACCEPT_ENCODING` asks for (``gzip`` and ``deflate``,
  what httpx, the Python MCP SDK's client and Node's ``fetch`` ask for), in
  at most :data:`MAX_CODINGS` layers; any other coding is refused
  (:class:`UnreadableEncoding`). A compressed stream ends the body where it
  ends: what follows it is not read.
* **Stopping early.** httpx reads through a chain of async generators, and
  closing the outer one leaves the inner ones suspended for the garbage
  collector (trio warns about each). :func:`unwind` gives them one more read
  under a cancelled scope, which unwinds them all; :func:`chunks` and
  :func:`read_up_to` do that for a reader.

It opens no connection and knows no protocol: ``bridge.client`` (MCP and
OAuth) and ``bridge.providers`` call it with their responses and limits.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from typing import Final, final

import httpx
import trio

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_CODINGS",
    "PIECE",
    "UnreadableEncoding",
    "chunks",
    "read_up_to",
    "unwind",
]

ACCEPT_ENCODING: Final = "gzip, deflate"
"""The content codings :func:`chunks` decodes, as an ``Accept-Encoding``."""

PIECE: Final = 64 * 1024
"""The most bytes one step of decoding makes: what a reader holds past its
limit, at most, when it stops."""

MAX_CODINGS: Final = 2
"""Content codings of one body decoded at most (``gzip, gzip`` is two): a
decoder each, and no server needs more than one."""

_DECODED: Final = frozenset({"gzip", "x-gzip", "deflate"})
_WBITS: Final = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16}


class UnreadableEncoding(httpx.DecodingError):
    """A body in a content coding :func:`chunks` does not decode, in too
    many of them, or not in the coding it claims."""


async def unwind(pieces: AsyncIterator[object]) -> None:
    """Let ``pieces``, an httpx byte iterator (or lines, or events, read from
    one) read no further, unwind now.

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
    """The body's decoded chunks, none over :data:`PIECE` bytes, for a
    reader that may stop early.

    Raises:
        UnreadableEncoding: the body is in a coding not decoded here, or
            breaks the one it claims (raised while reading).
    """
    layers = _layers(response)
    raw = response.aiter_raw()
    pieces = _decoded(raw, layers)
    try:
        yield pieces
    finally:
        # Closing our generator decodes nothing more; then httpx's chain.
        await pieces.aclose()
        await unwind(raw)


async def read_up_to(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The body, read until its end or past ``limit`` bytes, and whether it
    fit: ``(body, True)``, or ``(the first limit bytes, False)``.

    Raises:
        UnreadableEncoding: as :func:`chunks`.
    """
    body = bytearray()
    async with chunks(response) as pieces:
        async for piece in pieces:
            body += piece
            if len(body) > limit:
                return bytes(body[:limit]), False
    return bytes(body), True


def _layers(response: httpx.Response) -> list[_Inflater]:
    """The decoders of ``response``'s ``Content-Encoding``, in the order they
    undo it (the last coding applied first)."""
    codings = [
        coding.strip().lower()
        for value in response.headers.get_list("content-encoding")
        for coding in value.split(",")
    ]
    codings = [coding for coding in codings if coding not in ("", "identity")]
    if len(codings) > MAX_CODINGS:
        raise UnreadableEncoding(
            f"the answer is in {len(codings)} content codings; the client "
            f"decodes at most {MAX_CODINGS}",
            request=response.request,
        )
    unknown = [coding for coding in codings if coding not in _DECODED]
    if unknown:
        raise UnreadableEncoding(
            f"the answer is in content coding {unknown[0][:40]!r}, which the "
            f"client did not ask for (it asks for {ACCEPT_ENCODING})",
            request=response.request,
        )
    return [_Inflater(coding, response.request) for coding in reversed(codings)]


async def _decoded(
    raw: AsyncIterator[bytes], layers: Sequence[_Inflater]
) -> AsyncGenerator[bytes]:
    async for data in raw:
        for piece in _through(layers, data):
            yield piece
        if any(layer.ended for layer in layers):
            return  # the compressed stream ended: so does the body


def _through(layers: Sequence[_Inflater], data: bytes) -> Iterator[bytes]:
    """``data`` through every layer, a piece at a time."""
    if not layers:
        for start in range(0, len(data), PIECE):
            yield data[start : start + PIECE]
        return
    for piece in layers[0].feed(data):
        yield from _through(layers[1:], piece)


@final
class _Inflater:
    """One ``gzip`` or ``deflate`` layer, decoded at most :data:`PIECE`
    bytes at a time. ``deflate`` is a zlib stream, or (as some servers send
    it) a raw one: the first bytes tell."""

    def __init__(self, coding: str, request: httpx.Request) -> None:
        self._coding = coding
        self._request = request
        self._inflate = zlib.decompressobj(_WBITS.get(coding, zlib.MAX_WBITS))
        self._sniffing = coding == "deflate"  # until its first two bytes came
        self._head = b""
        self.ended = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.ended:
            return
        if self._sniffing:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head, self._sniffing = self._head, b"", False
            if not (data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0):
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
        inflate = self._inflate
        try:
            while True:
                piece = inflate.decompress(data, PIECE)
                if piece:
                    yield piece
                if inflate.eof:
                    self.ended = True
                    return
                data = inflate.unconsumed_tail
                # A full piece may leave more output inside with no input left.
                if not data and len(piece) < PIECE:
                    return
        except zlib.error as exc:
            raise UnreadableEncoding(
                f"the answer is not the {self._coding} it claims to be: {exc}",
                request=self._request,
            ) from None
