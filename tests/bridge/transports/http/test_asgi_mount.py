"""The public ASGI app, mounted in another ASGI server (hypercorn).

``serve --http`` runs the endpoint on its own HTTP server; users who mount
:class:`McpHttpApp` in their own stack get the same endpoint. A real
hypercorn on loopback serves it here, in both eras.
"""

from __future__ import annotations

import functools
from typing import Any

import httpx
import hypercorn.trio
import pytest
import trio

from bridge.server import Server
from bridge.transports.http import McpHttpApp, hypercorn_config
from bridge.transports.http.guard import Guard
from tests.bridge.http_kit import MODERN, Raw
from tests.fixtures import http_tools

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


async def test_the_asgi_app_serves_both_eras_under_hypercorn() -> None:
    server = Server([http_tools.echo], name="mounted")
    serve: Any = getattr(hypercorn.trio, "serve")  # noqa: B009
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            app = McpHttpApp(server, nursery, guard=Guard())
            config = hypercorn_config("127.0.0.1", 0)
            binds: Any = await nursery.start(functools.partial(serve, app, config))
            url = f"{binds[0]}/mcp"
            async with httpx.AsyncClient() as http:
                legacy = Raw(http, url)
                await legacy.initialize()
                call = legacy.request(2, "tools/call", {
                    "name": "echo", "arguments": {"text": "mounted"}})  # fmt: skip
                old = await legacy.post(call)
                modern = Raw(http, url, era=MODERN)
                new = await modern.post(
                    modern.request(3, "tools/list", {"_meta": {
                        "io.modelcontextprotocol/protocolVersion": MODERN,
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }}),
                    mcp_method="tools/list",
                )  # fmt: skip
            nursery.cancel_scope.cancel()
    assert "mounted" in old.text
    assert new.status_code == 200
    assert [tool["name"] for tool in new.json()["result"]["tools"]] == ["echo"]
