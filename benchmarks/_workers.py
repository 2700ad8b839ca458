"""Throughput with several workers: calls/s, 2026-07-28 era, 64 concurrent clients.

``yieldmcp serve --http --workers N`` (N = 1, 2) runs the benchmark's tools;
64 clients, each on its own kept-alive connection (h11 on trio, as in
:mod:`benchmarks._http`), call a tool as fast as the server answers. The
2026-07-28 era needs no session: a ``plain`` call is one POST, a ``sample1``
call two (the first answers ``input_required`` with a sealed
``requestState``; the client answers the sampling request in the retry).
With 2 workers the kernel spreads the 64 connections between them
(``SO_REUSEPORT``), so the row shows what a second process buys.

On a 2-core machine the load client shares the cores with the workers, so
two workers cannot double the rate; there is no target, the rows are reported.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
import time
from typing import Any

import trio

from ._http import _ACCEPT, _SAMPLE_RESULT, _Connection, _messages, process_cpu
from ._stats import now

__all__ = ["MODERN", "measure_workers"]

MODERN = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
}


class _Caller:
    """One client: a kept-alive connection making 2026-07-28 calls."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.ids = itertools.count(1)
        self.connection: _Connection | None = None

    async def call(self, name: str) -> None:
        params: dict[str, Any] = {
            "name": name,
            "arguments": {"text": "hi"},
            "_meta": _META,
        }
        for _round in range(16):
            result = await self._post(name, params)
            if result.get("resultType") != "input_required":
                return
            answers = dict.fromkeys(result["inputRequests"], _SAMPLE_RESULT)
            params = {
                **params,
                "inputResponses": answers,
                "requestState": result["requestState"],
            }
        raise RuntimeError(f"{name}: still input_required after 16 rounds")

    async def _post(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        body = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
             "params": params}
        ).encode()  # fmt: skip
        headers = [
            (b"host", f"{self.host}:{self.port}".encode()),
            (b"accept", _ACCEPT),
            (b"content-type", b"application/json"),
            (b"mcp-protocol-version", MODERN.encode()),
            (b"mcp-method", b"tools/call"),
            (b"mcp-name", name.encode()),
        ]
        connection, self.connection = self.connection, None
        if connection is None:
            stream = await trio.open_tcp_stream(self.host, self.port)
            connection = _Connection(stream)
        result: dict[str, Any] | None = None
        response = await connection.post("/mcp", headers, body)
        async for message in _messages(connection, response):
            if message.get("id") == request_id:
                if "result" not in message:
                    raise RuntimeError(f"{name} failed: {message}")
                result = message["result"]
        if connection.reusable():
            self.connection = connection
        else:
            await connection.stream.aclose()
        if result is None:
            raise RuntimeError(f"{name}: answered {response.status_code}, no result")
        return result


async def _rate(
    port: int, name: str, clients: int, seconds: float, pids: list[int]
) -> tuple[float, float]:
    """Calls/s, and the serving processes' CPU seconds per call."""
    callers = [_Caller("127.0.0.1", port) for _ in range(clients)]
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for caller in callers:
                nursery.start_soon(caller.call, name)  # warm, connections open
    calls = 0
    cpu_start = sum(process_cpu(pid) for pid in pids)
    start = now()
    deadline = start + seconds

    async def loop(caller: _Caller) -> None:
        nonlocal calls
        while now() < deadline:
            await caller.call(name)
            calls += 1

    with trio.fail_after(seconds + 60):
        async with trio.open_nursery() as nursery:
            for caller in callers:
                nursery.start_soon(loop, caller)
    wall = now() - start
    cpu = sum(process_cpu(pid) for pid in pids) - cpu_start
    return calls / wall, cpu / max(calls, 1)


def _start(
    command: list[str], workers: int
) -> tuple[subprocess.Popen[bytes], int, list[int]]:
    """The server, once every worker listens (its ``-v`` log says so); its
    port, and the pids of the processes that serve."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 (the server's, until it ends)
    process = subprocess.Popen([*command, "--workers", str(workers)], stderr=log)
    ready = b"workers (pids" if workers > 1 else b"serving MCP at"
    deadline = now() + 60
    while now() < deadline and process.poll() is None:
        log.seek(0)
        for line in log.read().splitlines():
            if ready in line:
                url = line.split(b"serving MCP at ", 1)[1].split()[0].decode()
                port = int(url.rsplit(":", 1)[1].split("/")[0])
                listed = line.partition(b"(pids ")[2].rstrip(b")").decode()
                pids = [int(p) for p in listed.split(", ")] if listed else []
                return process, port, pids or [process.pid]
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


def measure_workers(
    workers: int, tools: list[str], clients: int, seconds: float, repeats: int
) -> dict[str, list[tuple[float, float]]]:
    """Per tool, ``repeats`` of (calls/s, server CPU seconds per call) against
    ``workers`` workers."""
    from benchmarks import ours

    command = [sys.executable, "-m", "bridge.cli", "-v", "serve", ours.__file__]
    process, port, pids = _start([*command, "--http", "127.0.0.1:0"], workers)
    try:
        rates: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
        for _ in range(repeats):
            for name in tools:
                rate = trio.run(_rate, port, name, clients, seconds, pids)
                rates[name].append(rate)
        return rates
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
