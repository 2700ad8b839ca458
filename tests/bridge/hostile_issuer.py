"""An issuer that misbehaves on purpose, over raw loopback sockets.

``async with hostile() as bad`` serves, on 127.0.0.1 (a free port), what a
resource server asks an issuer for (RFC 8414 metadata, the JWKS, RFC 7662
introspection), each answered the way :attr:`Hostile.modes` says for its
path: properly, or as an HTML page with status 200, bad JSON, JSON with no
``keys``, a byte every half second, after a long pause, or a body of
hundreds of MiB (declared, or not). Written on plain sockets rather than an
HTTP framework, so that it can do what no framework would: trickle its
head, lie about a length, never finish. It counts what it was asked and
what it sent, for the tests to check what our verifiers did.

The keys and tokens are an :class:`~tests.bridge.auth_issuer.Issuer`'s.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Final
from urllib.parse import parse_qs

import trio

from tests.bridge.auth_issuer import Issuer

__all__ = ["Hostile", "hostile"]

_CHUNK: Final = 64 * 1024


class Hostile:
    """The hostile issuer's settings and counters (see the module doc).

    Attributes:
        issuer: the keys and tokens (its ``url`` is this server's).
        modes: path → how to answer it: ``ok``, ``html``, ``bad-json``,
            ``no-keys``, ``trickle``, ``slow`` (``pause`` seconds, then ok),
            ``huge`` (``huge_bytes`` without a length), ``huge-declared``
            (a ``Content-Length`` of ``huge_bytes``, then the body).
        asked: path → requests received.
        connections: TCP connections accepted.
        open: connections open now.
        sent: path → body bytes written.
        inactive: opaque tokens introspection calls inactive, besides any
            starting with ``garbage-`` (any other token is active, as
            :meth:`active_answer` says).
    """

    def __init__(self) -> None:
        self.issuer = Issuer()
        self.url = ""
        self.resource = ""  # the audience an active token's answer names
        self.modes: dict[str, str] = {}
        self.pause = 8.0
        self.huge_bytes = 400 * 1024 * 1024
        self.asked: dict[str, int] = {}
        self.connections = 0
        self.open = 0
        self.sent: dict[str, int] = {}
        self.inactive: set[str] = set()

    def active_answer(self, token: str) -> dict[str, Any]:
        if token in self.inactive or token.startswith("garbage-"):
            return {"active": False}
        return {
            "active": True, "sub": "carol", "client_id": "cli", "aud": self.resource,
            "iss": self.url, "scope": "mcp:use",
        }  # fmt: skip

    def _document(self, path: str, body: bytes) -> dict[str, Any]:
        if path == "/jwks":
            return {"keys": [self.issuer.key.as_dict(private=False)]}
        if path == "/introspect":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            return self.active_answer(form.get("token", ""))
        return {"issuer": self.url, "jwks_uri": f"{self.url}/jwks"}

    async def serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        self.open += 1
        try:
            await self._requests(stream)
        finally:
            self.open -= 1

    async def _requests(self, stream: trio.SocketStream) -> None:
        buffered = b""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async with stream:
                while True:
                    head, _, buffered = buffered.partition(b"\r\n\r\n")
                    while not _:
                        data = await stream.receive_some(_CHUNK)
                        if not data:
                            return
                        buffered = head + data
                        head, _, buffered = buffered.partition(b"\r\n\r\n")
                    lines = head.decode("latin-1").split("\r\n")
                    path = lines[0].split(" ")[1].split("?")[0]
                    length = 0
                    for line in lines[1:]:
                        name, _, value = line.partition(":")
                        if name.strip().lower() == "content-length":
                            length = int(value)
                    while len(buffered) < length:
                        buffered += await stream.receive_some(_CHUNK)
                    body, buffered = buffered[:length], buffered[length:]
                    self.asked[path] = self.asked.get(path, 0) + 1
                    if not await self._answer(stream, path, body):
                        return

    async def _answer(self, stream: trio.SocketStream, path: str, body: bytes) -> bool:
        """Answer one request; whether the connection may serve another."""
        mode = self.modes.get(path, "ok")
        count: Callable[[int], None] = lambda n: self._count(path, n)  # noqa: E731
        if mode == "slow":
            await trio.sleep(self.pause)
            mode = "ok"
        if mode == "huge":
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"connection: close\r\n\r\n"
            )
            await _zeros(stream, self.huge_bytes, count)
            return False
        if mode == "huge-declared":
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {self.huge_bytes}\r\n\r\n".encode()
            )
            await _zeros(stream, self.huge_bytes, count)
            return False
        payload, kind = self._payload(mode, path, body)
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\n"
            f"content-length: {len(payload)}\r\n\r\n"
        ).encode()
        if mode == "trickle":
            for byte in head + payload:
                await stream.send_all(bytes([byte]))
                await trio.sleep(0.5)
        else:
            await stream.send_all(head + payload)
        count(len(payload))
        return True

    def _payload(self, mode: str, path: str, body: bytes) -> tuple[bytes, str]:
        if mode == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1>nginx</body></html>"
            return page, "text/html"
        if mode == "bad-json":
            return b'{"keys": [', "application/json"
        if mode == "no-keys":
            return b'{"error": "maintenance"}', "application/json"
        return json.dumps(self._document(path, body)).encode(), "application/json"

    def _count(self, path: str, sent: int) -> None:
        self.sent[path] = self.sent.get(path, 0) + sent


async def _zeros(
    stream: trio.SocketStream, total: int, count: Callable[[int], None]
) -> None:
    block = b"0" * _CHUNK
    left = total
    while left > 0:
        piece = block[: min(left, _CHUNK)]
        await stream.send_all(piece)
        count(len(piece))
        left -= len(piece)


@contextlib.asynccontextmanager
async def hostile() -> AsyncIterator[Hostile]:
    """A :class:`Hostile` issuer served on loopback for the block."""
    bad = Hostile()
    async with trio.open_nursery() as nursery:
        serving = functools.partial(trio.serve_tcp, bad.serve, 0, host="127.0.0.1")
        listeners: Any = await nursery.start(serving)
        port = listeners[0].socket.getsockname()[1]
        bad.url = bad.issuer.url = f"http://127.0.0.1:{port}"
        yield bad
        nursery.cancel_scope.cancel()
