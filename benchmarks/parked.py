"""Memory per parked call: N ``tools/call`` requests that each wait on a sampling
answer that never comes.

Each stack's server runs in this process behind its own in-memory transport; a
raw JSON-RPC client sends ``initialize``, then N calls of ``sample1``, and reads
(and drops) the N ``sampling/createMessage`` requests the server sends, so every
call is parked in the server. What is measured is the server's cost only: the
growth of the Python heap (tracemalloc) or of the process's resident set (RSS)
between "initialised" and "N calls parked", divided by N.

A benchmark, not a server configuration: our server's caps on calls in flight
(``ServerLimits.max_calls``, 2048, and ``max_calls_per_session``, 128) are
lifted to N for the measurement, since the point is the cost of each parked
call, and a refused call costs nothing. Every answer read must be the call's
sampling request: a refusal (or anything else) fails the run, so the figure
is always N parked calls.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import trio

from bridge.server.limits import ServerLimits

__all__ = ["Refused", "park_ours", "park_sdk", "parked_request", "rss"]

_PAGE = os.sysconf("SC_PAGE_SIZE")
_INIT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"sampling": {}},
    "clientInfo": {"name": "bench", "version": "0"},
}


def rss() -> int:
    """This process's resident set size, in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


class _Meter:
    def __init__(self, how: str) -> None:
        self.how = how
        self.start = 0

    def __enter__(self) -> _Meter:
        gc.collect()
        if self.how == "tracemalloc":
            tracemalloc.start()
            self.start = tracemalloc.get_traced_memory()[0]
        else:
            self.start = rss()
        return self

    def stop(self) -> int:
        gc.collect()
        if self.how == "tracemalloc":
            return tracemalloc.get_traced_memory()[0] - self.start
        return rss() - self.start

    def __exit__(self, *exc: object) -> None:
        if self.how == "tracemalloc":
            tracemalloc.stop()


def _call(i: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "sample1", "arguments": {"text": "hi"}},
    }


class Refused(RuntimeError):
    """A call the benchmark sent was not parked (refused or answered)."""


def parked_request(message: dict[str, Any]) -> None:
    """Check that ``message`` is a parked call's sampling request."""
    if message.get("method") != "sampling/createMessage":
        raise Refused(f"a call was not parked; the server sent {message!r:.300}")


async def park_ours(n: int, how: str, limits: ServerLimits | None = None) -> float:
    """Bytes per parked call on our server (run under trio), with the caps on
    calls in flight lifted to ``n`` unless ``limits`` are given."""
    from bridge.transports.memory import memory_pair

    from .ours import make_server

    if limits is None:  # lifted for the measurement (module doc)
        limits = ServerLimits(max_calls=n + 1, max_calls_per_session=n + 1)

    server_end, client_end = memory_pair()

    async def send(message: dict[str, Any]) -> None:
        await client_end.send_raw(json.dumps(message).encode())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(make_server(limits).serve, server_end)
        await send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT})
        await client_end.receive()
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        async def receive() -> dict[str, Any]:
            return json.loads(await client_end.receive())

        # Our server builds an era's mcp-types models when it first checks a
        # payload of that era (megabytes): done here, not inside the metered
        # window, as in a server that has answered before.
        importlib.import_module("mcp_types._v2025_11_25")
        importlib.import_module("mcp_types._v2026_07_28")
        per_call = await _measure(n, how, send, receive, _call)
        nursery.cancel_scope.cancel()
    return per_call


async def park_sdk(n: int, how: str) -> float:
    """Bytes per parked call on the SDK's server (run under anyio)."""
    from mcp.client._memory import InMemoryTransport
    from mcp.shared.message import SessionMessage
    from mcp_types.jsonrpc import JSONRPCNotification, JSONRPCRequest

    from .sdk import server

    async with InMemoryTransport(server) as (read, write):

        async def send(message: dict[str, Any]) -> None:
            kind = JSONRPCRequest if "id" in message else JSONRPCNotification
            await write.send(SessionMessage(kind.model_validate(message)))

        async def receive() -> dict[str, Any]:
            message = await read.receive()
            if isinstance(message, Exception):
                raise message
            return message.message.model_dump(by_alias=True, exclude_none=True)

        await send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT})
        await receive()
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        per_call = await _measure(n, how, send, receive, _call)
        await write.aclose()
    return per_call


async def _measure(
    n: int,
    how: str,
    send: Callable[[dict[str, Any]], Awaitable[None]],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    call: Callable[[int], dict[str, Any]],
) -> float:
    # anyio imports its backend for the running loop on first use (over a
    # megabyte under trio): done here, not inside the metered window.
    await anyio.sleep(0)
    with _Meter(how) as meter:
        for i in range(1, n + 1):
            await send(call(i))
        for _ in range(n):
            # The sampling request; dropped, never answered.
            parked_request(await receive())
        await anyio.sleep(0.05)  # let every handler settle into its wait
        grown = meter.stop()
    return grown / n
