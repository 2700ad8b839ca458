"""Our client reads compressed HTTP bodies within ``max_message``.

httpx decodes a ``Content-Encoding`` a whole network chunk at a time, so a
body of a few hundred bytes in ``gzip, gzip`` was a GiB in memory before the
client could count it (``bridge.http_body`` now decodes the raw bytes a piece
at a time). The server here is a raw HTTP/1.1 endpoint on loopback that
answers every POST with the body and codings a test gives it, in one write.
"""

from __future__ import annotations

import functools
import gzip
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any

import pytest
import trio

from bridge.client import connect
from runtime.errors import RemoteProtocolError
from tests.bridge.client.raw_requests import requests

LEGACY = "2025-11-25"
INIT: dict[str, Any] = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "1"},
}
MESSAGE_LIMIT = 1024 * 1024

Answer = Callable[[dict[str, Any]], tuple[bytes, str, str]]
"""A request's JSON to the body, ``Content-Type`` and ``Content-Encoding``."""


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=1)


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def _reply(request: dict[str, Any], value: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": value}).encode()


def _handshake(request: dict[str, Any]) -> bytes:
    value = INIT if request["method"] == "initialize" else {"tools": []}
    return _reply(request, value)


class Endpoint:
    """Answers each POST with ``answer``; records the requests' headers."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.headers: list[dict[str, str]] = []

    async def serve(self, stream: trio.SocketStream) -> None:
        async with stream, aclosing(requests(stream)) as asked:
            async for verb, fields, content in asked:
                self.headers.append(fields)
                request = json.loads(content) if verb == "POST" else {}
                if verb != "POST" or "id" not in request:
                    status = 405 if verb == "GET" else 202 if verb == "POST" else 200
                    await stream.send_all(_head(status, "text/plain", "", 0))
                    continue
                body, kind, coding = self.answer(request)
                await stream.send_all(_head(200, kind, coding, len(body)) + body)


def _head(status: int, kind: str, coding: str, size: int) -> bytes:
    lines = [
        f"HTTP/1.1 {status} X",
        f"Content-Type: {kind}",
        f"Content-Length: {size}",
        "Mcp-Session-Id: s1",
    ]
    if coding:
        lines.append(f"Content-Encoding: {coding}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@asynccontextmanager
async def serving(answer: Answer) -> AsyncIterator[tuple[str, Endpoint]]:
    endpoint = Endpoint(answer)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, endpoint.serve, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp", endpoint
        nursery.cancel_scope.cancel()


# 64 MiB of spaces in a message, or an event, in gzip twice: a few hundred
# bytes on the wire.
SPACES = b" " * (64 << 20)
BOMBS = {
    "application/json": _gzip(_gzip(b'{"jsonrpc":"2.0","result":{"x":"' + SPACES)),
    "text/event-stream": _gzip(_gzip(b"data: " + SPACES)),
}
del SPACES


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
async def test_a_compressed_bomb_is_refused_having_held_little_more_than_the_limit(
    kind: str,
) -> None:
    def answer(request: dict[str, Any]) -> tuple[bytes, str, str]:
        if request["method"] == "tools/call":
            return BOMBS[kind], kind, "gzip, gzip"
        return _handshake(request), "application/json", ""

    async with serving(answer) as (url, _endpoint):
        with trio.fail_after(30):
            async with connect(url, era="legacy", max_message=MESSAGE_LIMIT) as client:
                tracemalloc.start()
                try:
                    with pytest.raises(RemoteProtocolError) as caught:
                        await client.call_tool("t")
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
    # The old client held the 64 MiB whole (twice) before it refused it.
    assert peak < 8 * MESSAGE_LIMIT
    message = str(caught.value)  # "a message over" or "an SSE event over"
    assert "over 1,048,576 " in message
    assert message.endswith("(the client's max_message)")


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", _gzip),
        ("x-gzip", _gzip),
        ("deflate", zlib.compress),  # deflate as the RFC has it: zlib
        ("deflate", _raw_deflate),  # and as some servers send it: raw
        ("gzip, deflate", lambda data: zlib.compress(_gzip(data))),
        ("identity", lambda data: data),
    ],
    ids=["gzip", "x-gzip", "zlib", "raw-deflate", "two", "identity"],
)
@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
async def test_compressed_answers_are_read(
    coding: str, encode: Callable[[bytes], bytes], kind: str
) -> None:
    text = "spaces" + " " * 200_000  # many pieces once decoded

    def answer(request: dict[str, Any]) -> tuple[bytes, str, str]:
        if request["method"] != "tools/call":
            return _handshake(request), "application/json", ""
        body = _reply(request, {"content": [{"type": "text", "text": text}]})
        if kind == "text/event-stream":
            body = b"event: message\ndata: " + body + b"\n\n"
        return encode(body), kind, coding

    async with serving(answer) as (url, endpoint):
        with trio.fail_after(30):
            async with connect(url, era="legacy") as client:
                result = await client.call_tool("t")
    assert result.text == text
    assert {fields["accept-encoding"] for fields in endpoint.headers} == {
        "gzip, deflate"
    }


@pytest.mark.parametrize(
    ("coding", "why"),
    [
        ("br", "in content coding 'br', which the client did not ask for"),
        ("gzip, gzip, gzip", "in 3 content codings; the client decodes at most 2"),
        ("deflate", "is not the deflate it claims to be"),
    ],
)
async def test_a_body_in_a_coding_the_client_cannot_read_is_one_clear_error(
    coding: str, why: str
) -> None:
    def answer(request: dict[str, Any]) -> tuple[bytes, str, str]:
        if request["method"] != "tools/call":
            return _handshake(request), "application/json", ""
        return b"\xff" * 64, "application/json", coding

    async with serving(answer) as (url, _endpoint):
        with trio.fail_after(30):
            async with connect(url, era="legacy") as client:
                with pytest.raises(RemoteProtocolError) as caught:
                    await client.call_tool("t")
    message = str(caught.value)
    assert message.startswith(f"POST {url}: the answer ")
    assert why in message
    assert "\n" not in message
