"""Stateless resume: a 2026-07-28 call's rounds may go to different processes.

Two separate ``yieldmcp serve --http`` processes share only a key
(``YIELDMCP_STATE_KEY``): no memory, no sticky sessions. Round one of a call
goes to one, the retry to the other, and the call completes. A process with
another key refuses the state. The official ``mcp`` client in 2026-07-28 mode
gets the same results as in the live era, over HTTP.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import mcp.types as types
import pytest
import trio
from mcp import Client

from bridge.server.state_token import new_key
from tests.helpers import ROOT
from tests.mcp_schema import validate

# The SDK's HTTP client leaves abandoned SSE readers to the garbage collector,
# which trio reports as ResourceWarnings: the client's business, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/interop_server.py")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {},
        "sampling": {"tools": {}},
    },
    "io.modelcontextprotocol/clientInfo": {"name": "resume-test", "version": "1"},
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _process(key: str) -> Iterator[str]:
    """A separate ``yieldmcp serve --http`` process; its URL."""
    port = _free_port()
    env = {**os.environ, "YIELDMCP_STATE_KEY": key}
    command = [sys.executable, "-m", "bridge.cli", "serve", SERVED]
    process = subprocess.Popen(
        [*command, "--http", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _ready(url: str) -> None:
    async with httpx.AsyncClient() as http:
        with trio.fail_after(30):
            while True:
                try:
                    await http.get(url)
                except httpx.TransportError:
                    await trio.sleep(0.05)
                else:
                    return


async def _call(url: str, request_id: int, params: dict[str, Any]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": params,
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": params["name"],
    }
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, content=json.dumps(body), headers=headers)


@contextlib.asynccontextmanager
async def _pair(key_a: str, key_b: str) -> AsyncIterator[tuple[str, str]]:
    with _process(key_a) as a, _process(key_b) as b:
        await _ready(a)
        await _ready(b)
        yield a, b


ARGS = {"name": "confirm", "arguments": {"prompt": "Proceed?"}, "_meta": META}
ANSWER = {"confirm": {"action": "accept", "content": {"ok": True, "note": "across"}}}


async def test_the_retry_completes_on_another_process_with_the_same_key() -> None:
    key = new_key()
    async with _pair(key, key) as (first, second):
        round_one = (await _call(first, 1, ARGS)).json()["result"]
        validate("2026-07-28", "InputRequiredResult", round_one)
        retry = {
            **ARGS,
            "inputResponses": ANSWER,
            "requestState": round_one["requestState"],
        }
        response = await _call(second, 2, retry)
    result = response.json()["result"]
    validate("2026-07-28", "CallToolResult", result)
    assert result["content"][0]["text"] == "accept:True:across"


async def test_a_process_with_another_key_refuses_the_state() -> None:
    async with _pair(new_key(), new_key()) as (first, second):
        round_one = (await _call(first, 1, ARGS)).json()["result"]
        retry = {
            **ARGS,
            "inputResponses": ANSWER,
            "requestState": round_one["requestState"],
        }
        response = await _call(second, 2, retry)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Invalid or expired requestState"


async def _sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
    names = [t.name for t in params.tools or []]
    if "__schema__" in names:
        use = types.ToolUseContent(
            type="tool_use",
            id="s1",
            name="__schema__",
            input={"city": "Oslo", "celsius": 4},
        )
        return types.CreateMessageResultWithTools(
            role="assistant", content=[use], model="sdk", stop_reason="toolUse"
        )
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi"), model="sdk"
    )


async def _elicitation(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"ok": True, "note": "sdk"})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_gets_the_same_results_in_both_eras(
    mode: str,
) -> None:
    with _process(new_key()) as url:
        await _ready(url)
        with trio.fail_after(30):
            async with Client(
                url, mode=mode, sampling_callback=_sampling,
                sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
                elicitation_callback=_elicitation,
            ) as client:  # fmt: skip
                weather = await client.call_tool("weather", {"prompt": "w"})
                confirmed = await client.call_tool("confirm", {"prompt": "?"})
    assert weather.structured_content == {"city": "Oslo", "celsius": 4}
    assert confirmed.content[0].text == "accept:True:sdk"  # type: ignore[union-attr]
