"""bridge.transports.stdio: frames over pipes keep whole, in order, either way."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
import trio

from bridge.jsonrpc import Notification, parse
from bridge.server import Server
from bridge.session import Session
from bridge.transports.stdio import StreamTransport
from tests.bridge.wire import _ClientSide
from tests.fixtures import slow_tools


@pytest.fixture
async def pipes() -> AsyncIterator[tuple[StreamTransport, StreamTransport]]:
    a_read, a_write = os.pipe()
    b_read, b_write = os.pipe()
    left = StreamTransport(
        trio.lowlevel.FdStream(a_read), trio.lowlevel.FdStream(b_write)
    )
    right = StreamTransport(
        trio.lowlevel.FdStream(b_read), trio.lowlevel.FdStream(a_write)
    )
    yield left, right
    for end in (left, right):
        await end.aclose()


def _note(n: int, size: int) -> Notification:
    return Notification("n", {"n": n, "pad": "x" * size})


async def test_frames_larger_than_the_pipe_stay_whole_and_in_order(
    pipes: tuple[StreamTransport, StreamTransport],
) -> None:
    left, right = pipes
    sizes = [10, 300_000, 10, 70_000, 10]  # a pipe holds 64 KiB
    received: list[int] = []
    done = trio.Event()

    async def read_all() -> None:
        while len(received) < len(sizes):
            message = parse(await right.receive())
            assert isinstance(message, Notification)
            assert message.params is not None
            assert len(message.params["pad"]) == sizes[message.params["n"]]
            received.append(message.params["n"])
        done.set()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(left.pump)
            for n, size in enumerate(sizes[:3]):
                left.send_nowait(_note(n, size))  # queued behind the big one
            nursery.start_soon(read_all)
            await left.send(_note(3, sizes[3]))  # waits until it is out
            left.send_nowait(_note(4, sizes[4]))
            await done.wait()
            nursery.cancel_scope.cancel()
    assert received == [0, 1, 2, 3, 4]


async def test_sending_on_a_closed_stream_says_so(
    pipes: tuple[StreamTransport, StreamTransport],
) -> None:
    left, _right = pipes
    await left.aclose()
    with pytest.raises(trio.ClosedResourceError):
        left.send_nowait(_note(0, 1))
    with pytest.raises(trio.ClosedResourceError):
        await left.send(_note(0, 1))


async def test_a_live_call_over_pipes_is_answered_with_no_task(
    pipes: tuple[StreamTransport, StreamTransport],
) -> None:
    server_end, client_end = pipes
    server = Session(server_end, Server([slow_tools.quick]).connection())
    client = Session(client_end, _ClientSide(None))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        await nursery.start(client.run)
        with trio.fail_after(5):
            await client.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
            )
            result = await client.request(
                "tools/call", {"name": "quick", "arguments": {}}
            )
        assert result == {"content": [{"type": "text", "text": "quick"}]}
        assert server.immediate
        assert server._nursery is not None
        # Only the writer task: the call needed none of its own.
        assert [t.name for t in server._nursery.child_tasks] == [
            "bridge.transports.stdio.StreamTransport.pump"
        ]
        nursery.cancel_scope.cancel()
