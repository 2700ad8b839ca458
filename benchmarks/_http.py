"""One raw Streamable HTTP client (2025-11-25), used against both servers.

It speaks just enough MCP over HTTP/1.1 to run the benchmark's tools: it
initialises a session (declaring ``sampling``), calls a tool, reads the
response as JSON or as an SSE stream, and answers every
``sampling/createMessage`` the server sends on that stream with a POST.
Driving both servers with the same client makes the HTTP rows compare servers.

It is h11 over trio's TCP streams, not httpx: a load generator must cost less
than the servers it drives, or the rows measure the generator. On two cores
httpx, used here before, spent more CPU per call than either server (80% to
100% of the wall time per call); this client spends a third to three quarters
of what a server does, so the server's core sets the pace.

It reads every response to its end (a JSON body, or an SSE stream that the
server ends after the call's response) and then reuses the connection for the
session's next call, when the server keeps it alive: both servers do (HTTP/1.1
keep-alive; the SDK under uvicorn, ours on its own server), so each call costs
a request, not a TCP connection, on both. Its answers to sampling requests
(and ``notifications/initialized``) go over a second kept-alive connection
per session.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

from bridge.transports.sse import SseParser

from ._stats import cpu, now

__all__ = ["measure"]

_ACCEPT = b"application/json, text/event-stream"
_VERSION = "2025-11-25"
_SAMPLE_RESULT = {
    "role": "assistant",
    "content": {"type": "text", "text": "ok"},
    "model": "bench",
}


class _Connection:
    """One HTTP/1.1 connection: h11's state machine over a TCP stream."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)

    async def post(
        self, path: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> h11.Response:
        """Send a POST; return the response's head (its body is still to read)."""
        length = (b"content-length", str(len(body)).encode())
        request = h11.Request(method="POST", target=path, headers=[*headers, length])
        events = (request, h11.Data(data=body), h11.EndOfMessage())
        await self.stream.send_all(b"".join(self.h11.send(e) or b"" for e in events))
        event = await self.next_event()
        if not isinstance(event, h11.Response):
            raise h11.RemoteProtocolError(f"expected a response, got {event!r}")
        return event

    async def next_event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.stream.receive_some(65536))

    async def body(self) -> AsyncIterator[bytes]:
        """The rest of the current response's body, chunk by chunk."""
        while True:
            event = await self.next_event()
            if isinstance(event, h11.EndOfMessage):
                return
            if not isinstance(event, h11.Data):
                raise h11.RemoteProtocolError(f"expected body data, got {event!r}")
            yield bytes(event.data)

    def reusable(self) -> bool:
        """Ready for the next request, after a complete exchange."""
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
            return True
        return False


class _Client:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/"
        self.ids = itertools.count(1)
        self.headers = [
            (b"host", f"{self.host}:{self.port}".encode()),
            (b"accept", _ACCEPT),
            (b"content-type", b"application/json"),
        ]
        self._kept: _Connection | None = None  # for the 202-answered POSTs
        self._calls: _Connection | None = None  # for the calls, kept alive

    async def _open(self) -> _Connection:
        return _Connection(await trio.open_tcp_stream(self.host, self.port))

    async def start(self) -> None:
        params: dict[str, Any] = {
            "protocolVersion": _VERSION,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        body = self._body("initialize", params, next(self.ids))
        connection = await self._open()
        try:
            response = await connection.post(self.path, self.headers, body)
            session = dict(response.headers).get(b"mcp-session-id")
            if response.status_code != 200 or session is None:
                raise RuntimeError(f"initialize answered {response.status_code}")
            async for _message in _messages(connection, response):
                pass
        finally:
            await connection.stream.aclose()
        self.headers.append((b"mcp-session-id", session))
        self.headers.append((b"mcp-protocol-version", _VERSION.encode()))
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, name: str) -> Any:
        request_id = next(self.ids)
        params = {"name": name, "arguments": {"text": "hi"}}
        body = self._body("tools/call", params, request_id)
        connection, self._calls = self._calls, None
        if connection is None:
            connection = await self._open()
        result: Any = None
        try:
            response = await connection.post(self.path, self.headers, body)
            if response.status_code != 200:
                raise RuntimeError(f"{name}: answered {response.status_code}")
            # Read to the end of the response (JSON, or an SSE stream the
            # server ends after the call's response), so that the connection
            # can carry the next call when the server keeps it alive.
            async for message in _messages(connection, response):
                if message.get("method") == "sampling/createMessage":
                    answer = {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": _SAMPLE_RESULT,
                    }
                    await self._post(answer)
                elif message.get("id") == request_id:
                    if "result" not in message:
                        raise RuntimeError(f"{name} failed: {message}")
                    result = message["result"]
        finally:
            if result is not None and connection.reusable():
                self._calls = connection
            else:
                await connection.stream.aclose()
        if result is None:
            raise RuntimeError(f"{name}: the stream ended without a response")
        return result

    async def _post(self, message: dict[str, Any]) -> None:
        connection = self._kept
        self._kept = None
        if connection is None:
            connection = await self._open()
        body = json.dumps(message).encode()
        response = await connection.post(self.path, self.headers, body)
        async for _chunk in connection.body():
            pass
        if connection.reusable():
            self._kept = connection
        else:
            await connection.stream.aclose()
        if response.status_code != 202:
            raise RuntimeError(f"POST answered {response.status_code}")

    @staticmethod
    def _body(method: str, params: dict[str, Any], request_id: int) -> bytes:
        return json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        ).encode()


async def _messages(
    connection: _Connection, response: h11.Response
) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE response body."""
    content_type = dict(response.headers).get(b"content-type", b"")
    if content_type.startswith(b"application/json"):
        yield json.loads(b"".join([chunk async for chunk in connection.body()]))
        return
    parser = SseParser()
    async for chunk in connection.body():
        for event in parser.feed(chunk):
            if event.data:  # a priming event carries no data
                yield json.loads(event.data)


async def measure(
    url: str, tools: list[str], clients: int, seconds: float, pid: int
) -> dict[str, tuple[float, float, float]]:
    """Per tool: (wall, server CPU, client CPU) seconds per call, with
    ``clients`` concurrent clients; ``pid`` is the server process, and the
    client is this process, which does nothing else meanwhile."""
    out: dict[str, tuple[float, float, float]] = {}
    sessions = [_Client(url) for _ in range(clients)]
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(session.start)
    for name in tools:
        out[name] = await _run(sessions, name, seconds, pid)
    return out


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _run(
    sessions: list[_Client], name: str, seconds: float, pid: int
) -> tuple[float, float, float]:
    for session in sessions:
        await session.call(name)  # warm
    calls = 0
    cpu_start = process_cpu(pid)
    client_start = cpu()
    start = now()
    deadline = start + seconds

    async def loop(session: _Client) -> None:
        nonlocal calls
        while now() < deadline:
            await session.call(name)
            calls += 1

    with trio.fail_after(seconds + 60):  # a server that stops answering
        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(loop, session)
    wall = now() - start
    client = cpu() - client_start
    server = process_cpu(pid) - cpu_start
    return wall / max(calls, 1), server / max(calls, 1), client / max(calls, 1)
