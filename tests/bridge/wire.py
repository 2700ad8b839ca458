"""A raw JSON-RPC peer for our server, in-process over memory transports.

``async with wire_peer(server) as peer:`` starts the server's session and a
client-side session on a memory pipe. The test sends requests with
``peer.request`` and answers the server's requests with ``on_request``.
Every frame the server sends is recorded, and :meth:`WirePeer.check_schema`
validates each against the official schema of its era.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pydantic_core
import trio

from bridge.jsonrpc import Notification, Request
from bridge.jsonrpc.session import Session
from bridge.server import Server
from bridge.transports.memory import memory_pair
from tests.mcp_schema import validate_message

Answer = Callable[[str, Mapping[str, Any] | None], Awaitable[Any]]

MODERN_META = "io.modelcontextprotocol/protocolVersion"


class _ClientSide:
    def __init__(self, answer: Answer | None) -> None:
        self.answer = answer
        self.notifications: list[Notification] = []

    async def handle_request(self, request: Request, session: Session) -> Any:
        if self.answer is None:
            raise AssertionError(f"unexpected server request {request.method}")
        return await self.answer(request.method, request.params)

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None:
        self.notifications.append(notification)

    def closed(self, session: Session) -> None:
        pass


class WirePeer:
    """The client end of an in-process connection to a server."""

    def __init__(
        self, session: Session, side: _ClientSide, frames: list[bytes]
    ) -> None:
        self.session = session
        self._side = side
        self._frames = frames
        self._methods: dict[Any, str] = {}

    @property
    def notifications(self) -> list[Notification]:
        return self._side.notifications

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None
    ) -> Any:
        return await self.session.request(method, params)

    async def initialize(self, capabilities: Mapping[str, Any] | None = None) -> Any:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": dict(capabilities or {}),
                "clientInfo": {"name": "wire-peer", "version": "1"},
            },
        )
        await self.session.notify("notifications/initialized")
        return result

    def server_frames(self) -> list[dict[str, Any]]:
        return [pydantic_core.from_json(f) for f in self._frames]

    def check_schema(self, era: str, *, sent: list[tuple[Any, str]]) -> int:
        """Validate every server frame; ``sent`` maps our request ids to methods."""
        methods = dict(sent)
        count = 0
        for frame in self.server_frames():
            if "method" in frame:
                validate_message(era, frame)  # type: ignore[arg-type]
            elif frame.get("id") in methods and "result" in frame:
                validate_message(era, frame, answering=methods[frame["id"]])  # type: ignore[arg-type]
            count += 1
        return count


@contextlib.asynccontextmanager
async def wire_peer(
    server: Server, *, answer: Answer | None = None
) -> AsyncIterator[WirePeer]:
    server_end, client_end = memory_pair()
    server_end.record = True
    side = _ClientSide(answer)
    client = Session(client_end, side)
    async with trio.open_nursery() as nursery:
        await nursery.start(Session(server_end, server.connection()).run)
        await nursery.start(client.run)
        try:
            yield WirePeer(client, side, server_end.sent)
        finally:
            await client_end.aclose()
            await server_end.aclose()


def modern_meta(
    capabilities: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        MODERN_META: "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": dict(
            capabilities
            if capabilities is not None
            else {"sampling": {"tools": {}}, "elicitation": {}, "roots": {}}
        ),
        "io.modelcontextprotocol/clientInfo": {"name": "wire-peer", "version": "1"},
    }
    meta.update(extra)
    return meta
