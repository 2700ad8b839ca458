"""Interop with fastmcp (4.x), both ways, over stdio and Streamable HTTP.

A fastmcp ``Client`` drives our server (``yieldmcp serve`` subprocess) in
both eras: its sampling and elicitation handlers answer our tools' questions
(live requests in 2025-11-25, ``input_required`` rounds in 2026-07-28).
Our client (``yieldmcp call``, run in the test's process) drives a fastmcp server
(``tests/fixtures/fastmcp_server.py``): a plain typed tool in both eras, and
its sampling and ``ctx.elicit`` tools in the handshake era, the only one in
which fastmcp can ask (it refuses server-initiated requests on 2026-07-28).

fastmcp runs on asyncio, so its client runs in ``anyio.run`` from plain
tests rather than under the suite's trio loop.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT, STARTUP
from tests.interop.peers import INTEROP_SERVER, YIELDMCP, serving_http

FASTMCP_SERVER = str(ROOT / "tests/fixtures/fastmcp_server.py")
ERAS = ["legacy", "2026-07-28"]
LEGACY = ("--era", "legacy")  # fastmcp asks questions only in this era


async def _sample(messages: Any, params: Any, context: Any) -> str:
    text = messages[-1].content.text
    return f"fastmcp says {text} ({params.system_prompt}, {params.max_tokens})"


async def _elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
    return {"ok": True, "note": f"re {message}"}


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def _drive_our_server(transport: Any, era: str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        with anyio.fail_after(60):
            client = Client(
                transport,
                sampling_handler=_sample,
                elicitation_handler=_elicit,
                mode=era,
            )
            async with client:
                tools = {tool.name for tool in await client.list_tools()}
                asked = await client.call_tool("ask", {"prompt": "hi"})
                confirmed = await client.call_tool("confirm", {"prompt": "Go?"})
                added = await client.call_tool("add", {"a": 2, "b": 3})
                return {
                    "version": client.protocol_version,
                    "tools": tools,
                    "ask": _text(asked),
                    "confirm": _text(confirmed),
                    "add": _text(added),
                }

    return anyio.run(main, backend="asyncio")


def _check_our_server(out: dict[str, Any], era: str) -> None:
    assert out["version"] == ("2025-11-25" if era == "legacy" else era)
    assert {"ask", "confirm", "add", "weather"} <= out["tools"]
    assert out["ask"].endswith(":fastmcp says hi (Be brief., 50)")
    assert out["confirm"] == "accept:True:re Go?"
    assert out["add"].startswith("5 (")


@pytest.mark.parametrize("era", ERAS)
def test_a_fastmcp_client_drives_our_server_over_stdio(era: str) -> None:
    command = [*YIELDMCP, "serve", INTEROP_SERVER]
    transport = StdioTransport(command[0], command[1:], cwd=str(ROOT))
    _check_our_server(_drive_our_server(transport, era), era)


@pytest.mark.parametrize("era", ERAS)
def test_a_fastmcp_client_drives_our_server_over_http(era: str) -> None:
    with serving_http(INTEROP_SERVER) as url:
        out = _drive_our_server(StreamableHttpTransport(url), era)
    _check_our_server(out, era)


# --- our client against a fastmcp server ----------------------------------------


def _call(server: str, *args: str) -> dict[str, Any]:
    # ``yieldmcp call`` in this process (tests/bridge/cli/inprocess.py): the
    # fastmcp server it talks to is still a real process or HTTP server.
    done = yieldmcp("call", server, *args, "--json", "--connect-timeout", f"{STARTUP}")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def fastmcp_http() -> Any:
    """The fastmcp server on Streamable HTTP at 127.0.0.1 (fastmcp prints no
    parseable start line, so the test picks the port and polls it)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, FASTMCP_SERVER, str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the fastmcp server exited early"
            assert time.monotonic() < deadline, "the fastmcp server never listened"
            try:
                httpx.get(url, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)  # polling a starting process: timing is the point
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["stdio", "http"])
def fastmcp_server(request: pytest.FixtureRequest) -> str:
    if request.param == "stdio":
        return shlex.join([sys.executable, FASTMCP_SERVER])
    return request.getfixturevalue("fastmcp_http")


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_our_client_calls_a_typed_fastmcp_tool(fastmcp_server: str, era: str) -> None:
    result = _call(fastmcp_server, "add", "--args", '{"a": 2, "b": 40}', "--era", era)
    assert result["isError"] is False
    assert result["structuredContent"] == {"result": 42}


def test_our_model_answers_a_fastmcp_tool_that_samples(fastmcp_server: str) -> None:
    result = _call(
        fastmcp_server, "summarize", "--arg", "text=hello", "--era", "legacy"
    )
    assert result["isError"] is False
    summary = result["structuredContent"]["result"]
    assert summary.startswith("offline:")
    assert '"hello"' in summary


def test_our_form_answers_reach_fastmcp_ctx_elicit(fastmcp_server: str) -> None:
    answer = '*={"seat": "12A", "window": true}'
    result = _call(
        fastmcp_server,
        "book",
        "--arg",
        "flight=LH1",
        "--answer",
        answer,
        "--era",
        "legacy",
    )
    assert result["structuredContent"] == {"result": "LH1:12A:True"}
    declined = _call(
        fastmcp_server,
        "book",
        "--arg",
        "flight=LH1",
        "--answer",
        '*="decline"',
        "--era",
        "legacy",
    )
    assert declined["structuredContent"] == {"result": "decline"}


def test_our_client_answers_a_fastmcp_input_required_round(fastmcp_server: str) -> None:
    # 2026-07-28: fastmcp asks for a sample and a form in one input_required
    # result; our client answers both and retries with its requestState.
    answer = '*={"date": "May"}'
    result = _call(
        fastmcp_server, "plan", "--arg", "city=Rome", "--answer", answer,
        "--era", "2026-07-28",
    )  # fmt: skip
    assert result["isError"] is False
    assert result["structuredContent"] == {"result": "Rome@May:offline"}
