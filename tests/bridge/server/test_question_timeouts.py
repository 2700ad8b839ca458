"""A client that never answers does not hold a tool forever (issue 26, item 10).

By default a tool waits 60 s for a sampling answer and 10 minutes for an
elicitation answer; then the request is withdrawn (``notifications/cancelled``)
and the tool's ``yield`` raises ``RequestTimeout``. Both are ``Server(...)``
arguments and ``yieldmcp serve`` flags.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import mcp.types as types
import trio
import trio.testing
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bridge.server import Server
from tests.bridge.wire import wire_peer
from tests.fixtures import interop_server as fx
from tests.helpers import ROOT


def _withdrawn(
    frames: list[dict[str, Any]], method: str
) -> tuple[list[Any], list[Any]]:
    asked = [f["id"] for f in frames if f.get("method") == method]
    cancelled = [
        f["params"]["requestId"]
        for f in frames
        if f.get("method") == "notifications/cancelled"
    ]
    return asked, cancelled


async def _never(method: str, params: Mapping[str, Any] | None) -> Any:
    await trio.sleep_forever()


async def test_sampling_gives_up_after_60_seconds_by_default(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with wire_peer(Server([fx.ask]), answer=_never) as peer:
        await peer.initialize({"sampling": {}})
        start = trio.current_time()
        with trio.fail_after(3600):  # fails, not hangs, when nothing gives up
            result = await peer.request(
                "tools/call", {"name": "ask", "arguments": {"prompt": "hi"}}
            )
        waited = trio.current_time() - start
        frames = peer.server_frames()
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "got no reply within" in text
    assert "sampling/createMessage" in text
    assert 60 <= waited < 61
    asked, cancelled = _withdrawn(frames, "sampling/createMessage")
    assert asked
    assert cancelled == asked


async def test_elicitation_gives_up_after_10_minutes_by_default(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with wire_peer(Server([fx.confirm]), answer=_never) as peer:
        await peer.initialize({"elicitation": {}})
        start = trio.current_time()
        with trio.fail_after(3600):
            result = await peer.request(
                "tools/call", {"name": "confirm", "arguments": {"prompt": "ok?"}}
            )
        waited = trio.current_time() - start
        frames = peer.server_frames()
    assert result["isError"] is True
    assert "got no reply within" in result["content"][0]["text"]
    assert 600 <= waited < 601
    asked, cancelled = _withdrawn(frames, "elicitation/create")
    assert asked
    assert cancelled == asked


async def test_none_still_waits_until_the_call_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server([fx.ask], sampling_timeout=None)
    async with wire_peer(server, answer=_never) as peer:
        await peer.initialize({"sampling": {}})
        with trio.move_on_after(24 * 3600) as waited:
            await peer.request(
                "tools/call", {"name": "ask", "arguments": {"prompt": "hi"}}
            )
    assert waited.cancelled_caught


async def test_the_serve_flag_sets_the_timeout_for_a_real_sdk_client() -> None:
    withdrawn = trio.Event()

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            withdrawn.set()  # the SDK cancels the handler on notifications/cancelled

    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "bridge.cli",
            "serve",
            str(ROOT / "tests/fixtures/interop_server.py"),
            "--sampling-timeout",
            "0.5",
        ],
        cwd=str(ROOT),
    )
    with trio.fail_after(30):
        async with Client(server, mode="legacy", sampling_callback=sampling) as session:
            result = await session.call_tool("ask", {"prompt": "hi"})
            await withdrawn.wait()
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "got no reply within" in text
    assert "0.5 s" in text


def test_a_timeout_that_is_not_positive_is_a_one_line_error() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "serve",
            "tests/fixtures/interop_server.py",
            "--elicitation-timeout",
            "0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "yieldmcp: error: --elicitation-timeout must be positive, got 0"
    ]
