"""Cancelling a running call: generators closed, client requests withdrawn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import trio
import trio.testing

from bridge.server import Server
from bridge.transports.memory import memory_pair
from tests.bridge.wire import wire_peer
from tests.fixtures import slow_tools

SERVER = Server([slow_tools.waits, slow_tools.fans, slow_tools.quick])
CAPS = {"sampling": {}}


@pytest.fixture(autouse=True)
def _reset() -> None:
    slow_tools.FINALLY.clear()


class Held:
    """Client-side answers that never come, until released."""

    def __init__(self) -> None:
        self.asked: list[Mapping[str, Any] | None] = []
        self.cancelled = 0
        self.release = trio.Event()

    async def __call__(self, method: str, params: Mapping[str, Any] | None) -> Any:
        self.asked.append(params)
        try:
            await self.release.wait()
        except trio.Cancelled:
            self.cancelled += 1
            raise
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "late"},
            "model": "m",
        }


def cancellations(frames: list[dict[str, Any]]) -> list[Any]:
    return [
        f["params"]["requestId"]
        for f in frames
        if f.get("method") == "notifications/cancelled"
    ]


def server_requests(frames: list[dict[str, Any]]) -> list[Any]:
    return [f["id"] for f in frames if "method" in f and "id" in f]


@pytest.mark.parametrize("tool", ["waits", "fans"])
async def test_cancelling_a_call_closes_the_tool_and_withdraws_its_requests(
    tool: str,
) -> None:
    held = Held()
    async with wire_peer(SERVER, answer=held) as peer:
        await peer.initialize(CAPS)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                peer.request, "tools/call", {"name": tool, "arguments": {}}
            )
            expected = 1 if tool == "waits" else 2
            with trio.fail_after(5):
                while len(held.asked) < expected:
                    await trio.sleep(0)
            call_id = 2  # initialize was 1
            await peer.session.notify("notifications/cancelled", {"requestId": call_id})
            with trio.fail_after(5):
                await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        frames = peer.server_frames()
    outstanding = server_requests(frames)
    assert len(outstanding) == expected
    assert sorted(cancellations(frames)) == sorted(outstanding)
    assert held.cancelled == expected
    assert not any(f.get("id") == call_id and "method" not in f for f in frames)
    names = {"waits": ["single", "waits"], "fans": ["right", "left", "fans"]}[tool]
    assert names == slow_tools.FINALLY


async def test_a_late_reply_to_a_cancelled_request_is_ignored() -> None:
    held = Held()
    async with wire_peer(SERVER, answer=held) as peer:
        await peer.initialize(CAPS)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                peer.request, "tools/call", {"name": "waits", "arguments": {}}
            )
            with trio.fail_after(5):
                while not held.asked:
                    await trio.sleep(0)
            sampling_id = server_requests(peer.server_frames())[0]
            await peer.session.notify("notifications/cancelled", {"requestId": 2})
            with trio.fail_after(5):
                await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        # The client answers anyway, late: the server must shrug it off.
        from bridge.jsonrpc import Response

        await peer.session.transport.send(
            Response(
                sampling_id,
                {
                    "role": "assistant",
                    "content": {"type": "text", "text": "x"},
                    "model": "m",
                },
            )
        )
        with trio.fail_after(5):
            assert await peer.request(
                "tools/call", {"name": "quick", "arguments": {}}
            ) == {
                "content": [{"type": "text", "text": "quick"}],
                "structuredContent": {"result": "quick"},  # -> str, as the SDK
            }


async def test_a_client_that_disconnects_mid_call_cancels_it() -> None:
    server_end, client_end = memory_pair()
    server_end.record = True
    from bridge.jsonrpc.session import Session

    async with trio.open_nursery() as nursery:
        nursery.start_soon(Session(server_end, SERVER.connection()).run)
        await client_end.send_raw(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            b'"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"x","version":"1"}}}'
        )
        await client_end.send_raw(
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fans","arguments":{}}}'
        )
        with trio.fail_after(5):
            while (
                len([f for f in server_end.sent if b"sampling/createMessage" in f]) < 2
            ):
                await client_end.receive()
        await client_end.aclose()  # the client goes away
    assert slow_tools.FINALLY == ["right", "left", "fans"]
