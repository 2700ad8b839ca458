"""A raw HTTP client for the transport tests: sessions, SSE, schema checks.

``async with served(server) as url`` runs :func:`serve_http` in-process on a
free loopback port. :class:`Raw` speaks Streamable HTTP by hand with httpx, and
checks every JSON-RPC message our server sends against the official schema of
its era (responses by the method they answer).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Any

import httpx
import trio

from bridge.server import Server
from bridge.transports.http import serve_http
from bridge.transports.sse import SseEvent, SseParser
from tests.mcp_schema import validate_message

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
JSON_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


@contextlib.asynccontextmanager
async def served(server: Server, **options: Any) -> AsyncIterator[str]:
    """The URL of ``server`` served on 127.0.0.1 for the duration of the block."""
    async with trio.open_nursery() as nursery:
        start = partial(serve_http, server, "127.0.0.1", 0, **options)
        url: str = await nursery.start(start)
        yield url
        nursery.cancel_scope.cancel()


class SseReader:
    """Reads SSE events from a streaming httpx response, one at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = response.aiter_bytes()
        self._parser = SseParser()
        self._ready: list[SseEvent] = []

    async def next(self) -> SseEvent | None:
        """The next event, or None at the end of the stream."""
        while not self._ready:
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                return None
            self._ready.extend(self._parser.feed(chunk))
        return self._ready.pop(0)

    async def rest(self) -> list[SseEvent]:
        out: list[SseEvent] = []
        while (event := await self.next()) is not None:
            out.append(event)
        return out

    async def aclose(self) -> None:
        await self._chunks.aclose()


class Raw:
    """One client of the endpoint, checking what it receives against the schema."""

    def __init__(self, http: httpx.AsyncClient, url: str, era: str = LEGACY) -> None:
        self.http = http
        self.url = url
        self.era = era
        self.version: str | None = era  # the MCP-Protocol-Version header (None: none)
        self.session_id: str | None = None
        self.methods: dict[Any, str] = {}  # our request ids -> method

    def headers(self, **extra: str) -> dict[str, str]:
        out = dict(JSON_HEADERS)
        if self.session_id is not None:
            out["mcp-session-id"] = self.session_id
        if self.version is not None:
            out["mcp-protocol-version"] = self.version
        out.update({k.replace("_", "-"): v for k, v in extra.items()})
        return out

    def check(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        """Validate a message from the server; return it."""
        answering = (
            self.methods.get(message.get("id")) if "method" not in message else None
        )
        if "result" in message:
            validate_message(self.era, message, answering=answering)
        else:
            validate_message(self.era, message)
        return message

    def checked_body(self, response: httpx.Response) -> Mapping[str, Any]:
        assert response.headers["content-type"] == "application/json"
        assert b"\n" not in response.content.strip()  # single-line JSON
        return self.check(response.json())

    def request(
        self, request_id: Any, method: str, params: Any = None
    ) -> dict[str, Any]:
        self.methods[request_id] = method
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        return body

    async def post(self, body: Mapping[str, Any], **headers: str) -> httpx.Response:
        return await self.http.post(
            self.url, content=json.dumps(body), headers=self.headers(**headers)
        )

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, body: Mapping[str, Any] | None = None, **headers: str
    ) -> AsyncIterator[tuple[httpx.Response, SseReader]]:
        content = None if body is None else json.dumps(body)
        request_headers = self.headers(**headers)
        if method == "GET":
            request_headers["accept"] = "text/event-stream"
            del request_headers["content-type"]
        async with self.http.stream(
            method, self.url, content=content, headers=request_headers
        ) as response:
            reader = SseReader(response)
            try:
                yield response, reader
            finally:
                await reader.aclose()

    async def initialize(
        self, capabilities: Mapping[str, Any] | None = None, version: str = LEGACY
    ) -> None:
        """Open a session negotiating ``version``; later requests carry it."""
        self.version = version
        params = {
            "protocolVersion": version,
            "capabilities": dict(capabilities or {"elicitation": {}, "sampling": {}}),
            "clientInfo": {"name": "raw", "version": "1"},
        }
        response = await self.post(self.request("init", "initialize", params))
        assert response.status_code == 200
        self.checked_body(response)
        self.session_id = response.headers["mcp-session-id"]
        assert response.json()["result"]["protocolVersion"] == version
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.post(initialized)).status_code == 202


def message_of(event: SseEvent) -> dict[str, Any]:
    assert event.event == "message"
    assert event.id
    assert "\n" not in event.data
    return json.loads(event.data)
