"""bridge.server.calls.live: a 2025-11-25 call parks as a record, not as a task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import trio
import trio.testing

from bridge.jsonrpc.session import Session
from bridge.server import Server
from bridge.transports.memory import memory_pair
from runtime import Context, Limits, Op, tool
from runtime.errors import BranchTimeout
from tests.bridge.wire import _ClientSide, wire_peer
from tests.fixtures import slow_tools

CAPS = {"sampling": {}}
SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"}


def _ask(ctx: Context, text: str) -> Op[str]:
    reply = yield from ctx.sample(text)
    return reply.text


@tool
def limited(ctx: Context) -> Op[str]:
    """A branch whose one child samples, under a 30 s limit."""
    try:
        yield from ctx.branch(lambda c: _ask(c, "slow"), limits=Limits(timeout=30))
    except BranchTimeout as timeout:
        return f"timed out: {timeout.branch_key}"
    return "finished"


@tool
def both(ctx: Context) -> Op[str]:
    """Two concurrent samples, then one more."""
    a, b = yield from ctx.branch(lambda c: _ask(c, "a"), lambda c: _ask(c, "b"))
    c = yield from _ask(ctx, "c")
    return a + b + c


async def _never(method: str, params: Mapping[str, Any] | None) -> Any:
    await trio.sleep_forever()


async def test_a_parked_call_holds_no_task_of_the_server() -> None:
    server_end, client_end = memory_pair()
    server = Session(server_end, Server([slow_tools.waits]).connection())
    client = Session(client_end, _ClientSide(_never))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        await nursery.start(client.run)
        await client.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": CAPS, "clientInfo": {}},
        )
        for _ in range(3):
            nursery.start_soon(
                client.request, "tools/call", {"name": "waits", "arguments": {}}
            )
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
        assert server.in_flight == 3
        assert len(server.outstanding) == 3  # each call waits on its sample
        assert server._nursery is not None
        # No task does the waiting: the only one is the session's timer
        # service, one for all the calls' sampling timeouts.
        tasks = [t.name for t in server._nursery.child_tasks]
        assert tasks == ["bridge.jsonrpc.timers.Timers.run"]
        nursery.cancel_scope.cancel()


async def test_a_branch_time_limit_holds_in_a_live_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with wire_peer(Server([limited]), answer=_never) as peer:
        await peer.initialize(CAPS)
        start = trio.current_time()
        result = await peer.request("tools/call", {"name": "limited", "arguments": {}})
        assert trio.current_time() - start == pytest.approx(30)
        frames = peer.server_frames()
    assert result == {
        "content": [{"type": "text", "text": "timed out: 0"}],
        "structuredContent": {"result": "timed out: 0"},  # -> str, as the SDK
    }
    asked = [f["id"] for f in frames if f.get("method") == "sampling/createMessage"]
    withdrawn = [
        f["params"]["requestId"]
        for f in frames
        if f.get("method") == "notifications/cancelled"
    ]
    assert withdrawn == asked


async def test_branch_siblings_ask_at_once_and_answers_arrive_in_any_order() -> None:
    release: dict[str, trio.Event] = {"a": trio.Event(), "b": trio.Event()}
    asked: list[str] = []

    async def answer(method: str, params: Mapping[str, Any] | None) -> Any:
        text = params["messages"][0]["content"]["text"]  # type: ignore[index]
        asked.append(text)
        if text in release:
            await release[text].wait()
        return {**SAMPLE, "content": {"type": "text", "text": text.upper()}}

    async with wire_peer(Server([both]), answer=answer) as peer:
        await peer.initialize(CAPS)
        async with trio.open_nursery() as nursery:
            results: list[Any] = []

            async def call() -> None:
                results.append(
                    await peer.request("tools/call", {"name": "both", "arguments": {}})
                )

            nursery.start_soon(call)
            with trio.fail_after(5):
                await trio.testing.wait_all_tasks_blocked()
            assert sorted(asked) == ["a", "b"]  # both questions are out at once
            release["b"].set()
            await trio.testing.wait_all_tasks_blocked()
            release["a"].set()
        peer.check_schema("2025-11-25", sent=[(2, "tools/call")])
    assert asked[-1] == "c"
    assert results == [
        {
            "content": [{"type": "text", "text": "ABC"}],
            "structuredContent": {"result": "ABC"},  # -> str, as the SDK
        }
    ]
