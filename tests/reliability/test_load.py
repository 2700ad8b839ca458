"""Load: 64 concurrent clients over loopback HTTP, each running multi-round calls.

The server is a real ``yieldmcp serve --http`` process; 64 logical clients (one
shared connection pool, like a load generator) call a tool that samples three
times, for a bounded time: in the 2026-07-28 era as ``input_required`` rounds
answered over plain POSTs, in the 2025-11-25 era as live sampling requests on
each call's SSE stream answered with separate POSTs, each client in its own
session. Every result must be exactly right, every call started must finish
(nothing lost), and the server's peak memory is reported.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import trio

from tests.fixtures import load_tools
from tests.helpers import ROOT

CLIENTS = 64
# New calls start until then; calls in flight always finish. scripts/soak
# raises it with SOAK_SECONDS.
SECONDS = float(os.environ.get("SOAK_SECONDS", "4"))
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _server() -> Iterator[tuple[str, int]]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "bridge.cli",
        "serve",
        str(ROOT / "tests/fixtures/load_tools.py"),
    ]
    process = subprocess.Popen(
        [*command, "--http", f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


def _peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(row for row in status.splitlines() if row.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


async def _wait_ready(http: httpx.AsyncClient, url: str) -> None:
    with trio.fail_after(30):
        while True:
            try:
                await http.get(url)
            except httpx.TransportError:
                await trio.sleep(0.05)
            else:
                return


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    prompt = request["messages"][0]["content"]["text"]
    text = load_tools.answer(prompt)
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": "load",
    }


# --- 2026-07-28: rounds over plain POSTs ---------------------------------------------


async def _modern_call(
    http: httpx.AsyncClient, url: str, seed: int, ids: Iterator[int], rounds: int = 3
) -> str:
    params: dict[str, Any] = {
        "name": "chain",
        "arguments": {"seed": seed, "rounds": rounds},
        "_meta": META,
    }
    headers = {
        **HEADERS,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "chain",
    }
    while True:
        body = {
            "jsonrpc": "2.0",
            "id": next(ids),
            "method": "tools/call",
            "params": params,
        }
        result = (
            await http.post(url, content=json.dumps(body), headers=headers)
        ).json()["result"]
        if result["resultType"] == "complete":
            return str(result["content"][0]["text"])
        ((key, request),) = result["inputRequests"].items()
        responses = {key: _answer(request["params"])}
        params = {
            **params,
            "inputResponses": responses,
            "requestState": result["requestState"],
        }


# --- 2025-11-25: a session, live sampling on each call's stream ---------------------


class LegacyClient:
    """A minimal 2025-11-25 client: a session, and answers to sampling requests."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = itertools.count(1)
        self.headers = {**HEADERS, "mcp-protocol-version": "2025-11-25"}

    async def open(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "load", "version": "1"},
        }
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "initialize",
            "params": params,
        }
        async with self.http.stream(
            "POST", self.url, content=json.dumps(body), headers=self.headers
        ) as response:
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
            await response.aread()
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, content=json.dumps(note), headers=self.headers)

    async def call(self, seed: int, rounds: int = 3) -> str:
        call_id = next(self.ids)
        arguments = {"seed": seed, "rounds": rounds}
        body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                "params": {"name": "chain", "arguments": arguments}}  # fmt: skip
        result: str | None = None
        async with self.http.stream(
            "POST", self.url, content=json.dumps(body), headers=self.headers
        ) as response:
            # Read to the end: the server closes the stream after the result.
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: ":
                    continue
                message = json.loads(line[len("data: ") :])
                if message.get("id") == call_id and "method" not in message:
                    result = str(message["result"]["content"][0]["text"])
                elif message.get("method") == "sampling/createMessage":
                    await self._answer(message)
        assert result is not None, "the call's stream ended without its result"
        return result

    async def _answer(self, request: dict[str, Any]) -> None:
        reply = {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": _answer(request["params"]),
        }
        accepted = await self.http.post(
            self.url, content=json.dumps(reply), headers=self.headers
        )
        assert accepted.status_code == 202


async def _load(era: str) -> tuple[int, int, float]:
    counts = {"started": 0, "completed": 0}
    with _server() as (url, pid):
        limits = httpx.Limits(
            max_connections=2 * CLIENTS, max_keepalive_connections=2 * CLIENTS
        )
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            await _wait_ready(http, url)
            deadline = trio.current_time() + SECONDS

            async def client(n: int) -> None:
                seed = n * 10_000
                ids = itertools.count(1)
                legacy = LegacyClient(http, url)
                if era == "2025-11-25":
                    await legacy.open()
                # Every client makes at least one call, however long its
                # session took to open on a loaded machine; then new calls
                # start until the deadline.
                first = True
                while first or trio.current_time() < deadline:
                    first = False
                    seed += 1
                    counts["started"] += 1
                    if era == "2025-11-25":
                        got = await legacy.call(seed)
                    else:
                        got = await _modern_call(http, url, seed, ids)
                    assert got == load_tools.expected(seed, 3)
                    counts["completed"] += 1

            with trio.fail_after(SECONDS + 120):
                async with trio.open_nursery() as nursery:
                    for n in range(CLIENTS):
                        nursery.start_soon(client, n)
        peak = _peak_rss_mib(pid)
    done = counts["completed"]
    print(f"\n{era}: {done} calls by {CLIENTS} clients; server peak RSS {peak:.0f} MiB")
    return counts["started"], counts["completed"], peak


async def test_64_clients_2026_era_every_result_right_nothing_lost() -> None:
    started, completed, peak = await _load("2026-07-28")
    assert completed == started >= CLIENTS
    assert peak < 512


async def test_64_clients_2025_era_live_sampling_every_result_right_nothing_lost() -> (
    None
):
    started, completed, peak = await _load("2025-11-25")
    assert completed == started >= CLIENTS
    assert peak < 512
