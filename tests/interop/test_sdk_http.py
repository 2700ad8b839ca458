"""Interop: the official ``mcp`` SDK client drives our server over Streamable HTTP.

The server runs in-process (hypercorn on trio, loopback, a free port) for most
tests and once as a real ``yieldmcp serve … --http`` subprocess. The SDK's
sampling and elicitation callbacks (shared with the stdio interop tests)
answer the tools' mid-call requests, which must travel on each call's POST
stream.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import httpx
import mcp.types as types
import pytest
import trio
from mcp import Client

from bridge.cli.loader import load_server
from bridge.transports.http import serve_http
from tests.helpers import ROOT
from tests.interop.test_sdk_stdio import elicitation, sampling, text_of

FIXTURE = str(ROOT / "tests/fixtures/interop_server.py")

# The SDK's SSE reader (httpx2) stops iterating a stream once it has the
# response and leaves its async generators to the garbage collector, which
# trio reports as ResourceWarnings. That is the client's business, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@contextlib.asynccontextmanager
async def served(target: str = FIXTURE) -> AsyncIterator[str]:
    """The URL of ``target`` served in-process on 127.0.0.1, for the block."""
    server = load_server(target)
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(partial(serve_http, server, "127.0.0.1", 0))
        yield url
        nursery.cancel_scope.cancel()


def client(url: str, **extra: Any) -> Client:
    options: dict[str, Any] = {
        "mode": "legacy",
        "sampling_callback": sampling,
        "sampling_capabilities": types.SamplingCapability(
            tools=types.SamplingToolsCapability()
        ),
        "elicitation_callback": elicitation,
    }
    options.update(extra)
    return Client(url, **options)


async def test_the_sdk_lists_tools_over_http() -> None:
    with trio.fail_after(30):
        async with served() as url, client(url) as session:
            listed = await session.list_tools()
    assert {t.name for t in listed.tools} >= {"ask", "weather", "agent", "confirm"}


async def test_sampling_travels_on_the_call_stream() -> None:
    with trio.fail_after(30):
        async with served() as url, client(url) as session:
            result = await session.call_tool("ask", {"prompt": "hi"})
    assert text_of(result) == "sdk-model:echo hi (Be brief., 50)"


async def test_sampling_with_a_schema_arrives_parsed() -> None:
    with trio.fail_after(30):
        async with served() as url, client(url) as session:
            result = await session.call_tool("weather", {"prompt": "weather?"})
    assert result.structured_content == {"city": "Oslo", "celsius": 4}


async def test_tool_use_then_tool_result_then_final_turn() -> None:
    with trio.fail_after(30):
        async with served() as url, client(url) as session:
            result = await session.call_tool("agent", {"prompt": "tell me"})
    assert text_of(result) == "trio|final after facts about trio"


async def test_elicitation_arrives_validated() -> None:
    with trio.fail_after(30):
        async with served() as url, client(url) as session:
            result = await session.call_tool("confirm", {"prompt": "Proceed?"})
    assert text_of(result) == "accept:True:sure"


async def test_logs_and_progress_reach_the_sdk() -> None:
    logs: list[Any] = []
    progress: list[float] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_progress(
        value: float, total: float | None, message: str | None
    ) -> None:
        progress.append(value)

    with trio.fail_after(30):
        async with served() as url, client(url, logging_callback=on_log) as session:
            result = await session.call_tool(
                "chatty", {}, progress_callback=on_progress
            )
    assert text_of(result) == "done"
    assert logs == ["step 1", "step 2", "step 3"]
    assert progress == [1, 2, 3]


async def test_calls_run_concurrently_on_one_session() -> None:
    results: list[str] = []
    with trio.fail_after(30):
        async with served() as url, client(url) as session:

            async def ask(prompt: str) -> None:
                results.append(
                    text_of(await session.call_tool("ask", {"prompt": prompt}))
                )

            async with trio.open_nursery() as nursery:
                for prompt in ("a", "b", "c"):
                    nursery.start_soon(ask, prompt)
    assert sorted(results) == [f"sdk-model:echo {p} (Be brief., 50)" for p in "abc"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _wait_until_listening(url: str, process: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient() as http:
        while True:
            assert process.poll() is None, "the server exited early"
            try:
                await http.get(url)
            except httpx.TransportError:
                await trio.sleep(0.1)  # polling a starting process: timing is the point
            else:
                return


async def test_the_cli_serves_http_for_the_sdk() -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "bridge.cli", "serve", FIXTURE, "--http"]
    process = subprocess.Popen(
        [*command, f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(30):
            await _wait_until_listening(url, process)
            async with client(url) as session:
                result = await session.call_tool("confirm", {"prompt": "Proceed?"})
                asked = await session.call_tool("ask", {"prompt": "cli"})
        assert text_of(result) == "accept:True:sure"
        assert text_of(asked) == "sdk-model:echo cli (Be brief., 50)"
    finally:
        process.terminate()
        process.wait(timeout=10)
