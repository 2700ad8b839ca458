"""One raw Streamable HTTP client (2025-11-25), used against both servers.

It speaks just enough MCP over httpx to run the benchmark's tools: it
initialises a session (declaring ``sampling``), calls a tool, reads the
response as JSON or as an SSE stream, and answers every
``sampling/createMessage`` the server sends on that stream with a POST.
Driving both servers with the same client makes the HTTP rows compare servers.

Like the SDK's client, it stops reading a call's SSE stream once it has the
response. The stream's last chunk is then still unread, so httpx does not
reuse the connection: every call opens a new one (a trio instrument on the
server counts one accepted connection per call), and both servers pay for
that in every row.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import trio

from ._stats import cpu, now

logging.getLogger("httpx").setLevel(logging.WARNING)

__all__ = ["measure"]

_ACCEPT = "application/json, text/event-stream"
_VERSION = "2025-11-25"
_SAMPLE_RESULT = {
    "role": "assistant",
    "content": {"type": "text", "text": "ok"},
    "model": "bench",
}


class _Client:
    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = itertools.count(1)
        self.headers = {"accept": _ACCEPT, "content-type": "application/json"}

    async def start(self) -> None:
        params: dict[str, Any] = {
            "protocolVersion": _VERSION,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        async with self.http.stream(
            "POST", self.url, headers=self.headers,
            content=self._body("initialize", params, next(self.ids)),
        ) as response:  # fmt: skip
            response.raise_for_status()
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
            self.headers["mcp-protocol-version"] = _VERSION
            async for _message in _messages(response):
                pass
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, name: str) -> Any:
        request_id = next(self.ids)
        params = {"name": name, "arguments": {"text": "hi"}}
        async with self.http.stream(
            "POST", self.url, headers=self.headers,
            content=self._body("tools/call", params, request_id),
        ) as response:  # fmt: skip
            response.raise_for_status()
            async for message in _messages(response):
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
                    return message["result"]
        raise RuntimeError(f"{name}: the stream ended without a response")

    async def _post(self, message: dict[str, Any]) -> None:
        response = await self.http.post(
            self.url, headers=self.headers, content=json.dumps(message)
        )
        if response.status_code != 202:
            raise RuntimeError(f"POST answered {response.status_code}")

    @staticmethod
    def _body(method: str, params: dict[str, Any], request_id: int) -> bytes:
        return json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        ).encode()


async def _messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE response body."""
    if response.headers.get("content-type", "").startswith("application/json"):
        yield json.loads(await response.aread())
        return
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            text = "\n".join(data)
            data.clear()
            if text:
                yield json.loads(text)


async def measure(
    url: str, tools: list[str], clients: int, seconds: float, pid: int
) -> dict[str, tuple[float, float, float]]:
    """Per tool: (wall, server CPU, client CPU) seconds per call, with
    ``clients`` concurrent clients; ``pid`` is the server process, and the
    client is this process, which does nothing else meanwhile."""
    out: dict[str, tuple[float, float, float]] = {}
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        sessions = [_Client(http, url) for _ in range(clients)]
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

    async with trio.open_nursery() as nursery:
        for session in sessions:
            nursery.start_soon(loop, session)
    wall = now() - start
    client = cpu() - client_start
    server = process_cpu(pid) - cpu_start
    return wall / max(calls, 1), server / max(calls, 1), client / max(calls, 1)
