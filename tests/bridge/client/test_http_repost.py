"""Our client posts a 2025-11-25 request again when the server went away
before answering anything.

Behind a balancer, the process that took a request may die before it wrote
the call down (``tests/system/test_random_kills.py`` lost calls this way):
the client then holds no event id to resume from, and the balancer closes
its connection with no response. The endpoint here is a raw HTTP/1.1 server
on loopback that does just that to the first ``tools/call``.
"""

from __future__ import annotations

import functools
import json
from contextlib import aclosing
from typing import Any

import pytest
import trio

from bridge.client import connect
from runtime.errors import BrokenSessionError, PeerUnreachable
from tests.bridge.client.raw_requests import requests

SESSION = "session-1"
INIT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "1"},
}
DONE = {"content": [{"type": "text", "text": "done"}]}


class Endpoint:
    """Answers the handshake; hangs up on the first ``cut`` tools/calls."""

    def __init__(self, cut: int) -> None:
        self.cut = cut
        self.calls: list[dict[str, Any]] = []

    async def serve(self, stream: trio.SocketStream) -> None:
        async with stream, aclosing(requests(stream)) as asked:
            async for verb, _fields, body in asked:
                if verb != "POST":
                    await self._send(stream, 405 if verb == "GET" else 200, b"")
                    continue
                message = json.loads(body)
                method = message.get("method")
                if "id" not in message:
                    await self._send(stream, 202, b"")
                    continue
                if method == "tools/call":
                    self.calls.append(message)
                    if len(self.calls) <= self.cut:
                        return  # gone: the connection closes, nothing answered
                value: Any = (
                    INIT if method == "initialize"
                    else {"tools": []} if method == "tools/list"
                    else DONE
                )  # fmt: skip
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": value}
                await self._send(stream, 200, json.dumps(reply).encode())

    async def _send(self, stream: trio.SocketStream, status: int, body: bytes) -> None:
        head = (
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
            f"mcp-session-id: {SESSION}\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        await stream.send_all(head.encode() + body)


async def _call(endpoint: Endpoint) -> str | None:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, endpoint.serve, 0, host="127.0.0.1")
        )
        url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        try:
            with trio.fail_after(20):
                async with connect(url, era="legacy") as client:
                    return (await client.call_tool("work")).text
        finally:
            nursery.cancel_scope.cancel()


async def test_a_request_the_server_dropped_unanswered_is_posted_again() -> None:
    endpoint = Endpoint(cut=2)
    assert await _call(endpoint) == "done"
    first, *again = endpoint.calls
    assert len(again) == 2  # the same request, under the same id
    assert all(call == first for call in again)


async def test_a_server_that_keeps_dropping_it_fails_the_call() -> None:
    endpoint = Endpoint(cut=100)
    with pytest.raises(ExceptionGroup) as raised:  # from the endpoint's nursery
        await _call(endpoint)
    # Reached, then cut: the session broke; the server was not unreachable.
    assert raised.group_contains(BrokenSessionError, match="cut the connection")
    assert not raised.group_contains(PeerUnreachable)
    assert 1 < len(endpoint.calls) < 100  # tried again, then gave up


async def _connect_to(url: str) -> None:
    with trio.fail_after(20):
        async with connect(url, era="legacy"):
            pass


async def test_nothing_listening_is_unreachable_not_broken() -> None:
    with trio.socket.socket() as probe:  # a port that was free a moment ago
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    with pytest.raises(PeerUnreachable, match=f"cannot reach the MCP server at {url}"):
        await _connect_to(url)
