"""List changes and resource updates reach clients (issue 26, items 12 and 13).

The server advertises ``tools.listChanged``, ``prompts.listChanged`` and
``resources.subscribe``; over stdio and HTTP, in both eras, what it announces
reaches the official ``mcp`` client: in 2025-11-25 as plain notifications
(resource updates only for a subscribed URI), in 2026-07-28 through
``subscriptions/listen`` and only for what the listen opted in to.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from bridge.cli.loader import load_server
from bridge.transports.http import serve_http
from tests.helpers import ROOT

FIXTURE = str(ROOT / "tests/fixtures/announce_server.py")
STDIO = StdioServerParameters(
    command=sys.executable, args=["-m", "bridge.cli", "serve", FIXTURE], cwd=str(ROOT)
)

# The SDK's HTTP reader leaves generators to the GC (see test_http_interop).
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@contextlib.asynccontextmanager
async def _target(transport: str) -> AsyncIterator[Any]:
    if transport == "stdio":
        yield STDIO
        return
    server = load_server(FIXTURE)
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(partial(serve_http, server, "127.0.0.1", 0))
        yield url
        nursery.cancel_scope.cancel()


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


class _Heard:
    """What the client was sent, as it arrives."""

    def __init__(self) -> None:
        self.notes: list[types.ServerNotification] = []
        self._new = trio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification | types.Notification):
            self.notes.append(message)  # type: ignore[arg-type]
            self._new.set()
            self._new = trio.Event()

    async def first(self, kind: type[Any]) -> Any:
        while not (found := [n for n in self.notes if isinstance(n, kind)]):
            await self._new.wait()
        return found[0]


async def test_legacy_clients_hear_list_changes(transport: str) -> None:
    heard = _Heard()
    with trio.fail_after(30):
        async with (
            _target(transport) as target,
            Client(target, mode="legacy", message_handler=heard) as client,
        ):
            assert (await client.call_tool("grow", {})).content
            await heard.first(types.ToolListChangedNotification)
            listed = await client.list_tools()
    assert "grown" in {t.name for t in listed.tools}


async def test_legacy_subscribers_hear_resource_updates(transport: str) -> None:
    heard = _Heard()
    with trio.fail_after(30):
        async with (
            _target(transport) as target,
            Client(target, mode="legacy", message_handler=heard) as client,
        ):
            with warnings.catch_warnings():  # removed in 2026-07-28, not in 2025
                warnings.simplefilter("ignore")
                await client.subscribe_resource("memo://a")
            await client.call_tool("touch", {"uri": "memo://elsewhere"})
            await client.call_tool("touch", {"uri": "memo://a"})
            note = await heard.first(types.ResourceUpdatedNotification)
    assert str(note.params.uri) == "memo://a"  # not the unsubscribed one, sent first
    updates = [
        n for n in heard.notes if isinstance(n, types.ResourceUpdatedNotification)
    ]
    assert len(updates) == 1


async def test_modern_listen_hears_what_it_opted_in_to(transport: str) -> None:
    with trio.fail_after(30):
        async with (
            _target(transport) as target,
            Client(target, mode="2026-07-28") as client,
            client.listen(
                tools_list_changed=True, resource_subscriptions=["memo://a"]
            ) as sub,
        ):
            assert sub.honored.tools_list_changed is True
            assert sub.honored.resource_subscriptions == ["memo://a"]
            events = aiter(sub)
            await client.call_tool("grow", {})
            first = await anext(events)
            await client.call_tool("touch", {"uri": "memo://a"})
            second = await anext(events)
    assert first == ToolsListChanged()
    assert second == ResourceUpdated("memo://a")


async def test_modern_listen_without_resources_hears_no_update(transport: str) -> None:
    with trio.fail_after(30):
        async with (
            _target(transport) as target,
            Client(target, mode="2026-07-28") as client,
            client.listen(tools_list_changed=True) as sub,
        ):
            events = aiter(sub)
            await client.call_tool("touch", {"uri": "memo://a"})  # not opted in to
            await client.call_tool("grow", {})
            first = await anext(events)
    assert first == ToolsListChanged()


async def test_a_cancelled_stdio_listen_hears_no_more() -> None:
    from tests.bridge.wire import modern_meta

    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bridge.cli", "serve", FIXTURE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    lines = _Lines(process.stdout)

    async def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        await process.stdin.send_all(
            json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"
        )

    meta = {"_meta": modern_meta({})}
    listen = {"notifications": {"toolsListChanged": True}, **meta}
    grow = {"name": "grow", "arguments": {}, **meta}
    try:
        with trio.fail_after(30):
            await send({"id": 1, "method": "subscriptions/listen", "params": listen})
            ack = await lines.next()
            await send(
                {"method": "notifications/cancelled", "params": {"requestId": 1}}
            )
            await send({"id": 2, "method": "tools/call", "params": grow})
            reply = await lines.next()
            await send({"id": 3, "method": "tools/list", "params": meta})
            listed = await lines.next()
    finally:
        await process.stdin.aclose()
        with trio.fail_after(30):
            await process.wait()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert reply["id"] == 2  # and no list_changed before it: the listen is over
    assert reply["result"]["content"][0]["text"] == "grew"
    assert listed["id"] == 3


class _Lines:
    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some()
            assert chunk, "the server closed stdout"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)


async def test_stdio_listens_end_when_their_client_leaves_with_no_timer(
    mock_clock: trio.testing.MockClock,
) -> None:
    # The clock stands still: a listen that looked for its departed client
    # on a timer (four times a second, each listen: a thousand of them kept
    # a quarter of a core busy on an idle server) would never end here.
    from bridge.jsonrpc.session import Session
    from bridge.transports.memory import memory_pair
    from tests.bridge.wire import modern_meta

    server = load_server(FIXTURE)
    server_end, client_end = memory_pair()
    session = Session(server_end, server.connection())
    acknowledged: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        listen = {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}
        for n in range(100):
            request = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "subscriptions/listen",
                "params": listen,
            }
            await client_end.send_raw(json.dumps(request).encode())
        while len(acknowledged) < 100:
            acknowledged.append(json.loads(await client_end.receive()))
        await client_end.aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert session.closed
    assert trio.current_time() == 0
    assert {a["method"] for a in acknowledged} == {
        "notifications/subscriptions/acknowledged"
    }
