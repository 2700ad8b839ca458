"""List changes and resource updates reach clients (issue 26, items 12 and 13).

The server advertises ``tools.listChanged``, ``prompts.listChanged`` and
``resources.subscribe``; over stdio and HTTP, in both eras, what it announces
reaches the official ``mcp`` client: in 2025-11-25 as plain notifications
(resource updates only for a subscribed URI), in 2026-07-28 through
``subscriptions/listen`` and only for what the listen opted in to.
"""

from __future__ import annotations

import contextlib
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
