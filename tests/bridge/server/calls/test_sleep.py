"""``ctx.sleep`` in a request: a 2026-07-28 round sleeps in the request up to
``--max-request-sleep`` and refuses longer (run the tool as a task), a replay
does not sleep again, and a live 2025-11-25 call sleeps until its deadline.

Real HTTP on loopback, our client and a raw one; sleeps under a second.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import trio

from bridge.client import connect
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import MemoryStore
from runtime import Context, Limits, Op, tool
from runtime.lowlevel import BranchTimeout
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TASKS, RpcError, TaskWire
from tests.fixtures import sleep_tools

BOUND = ServerLimits(max_request_sleep=1.0)


async def test_a_sleep_under_the_bound_runs_in_the_request(tmp_path: Path) -> None:
    server = Server(sleep_tools.ALL, name="napper", limits=BOUND)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url, tasks=False)
        began = time.monotonic()
        with trio.fail_after(30):
            result = await wire.call("nap", seconds=0.5, path=str(tmp_path / "m"))
        took = time.monotonic() - began
    assert result["content"][0]["text"].startswith("slept 0.5")
    assert 0.5 <= took < 5
    assert (tmp_path / "m").read_text().split() == ["before", "after"]


async def test_a_sleep_over_the_bound_is_refused_saying_to_run_a_task(
    tmp_path: Path,
) -> None:
    server = Server(sleep_tools.ALL, name="napper", limits=BOUND)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url, tasks=False)
        with trio.fail_after(30), pytest.raises(RpcError) as refused:
            await wire.call("nap", seconds=5, path=str(tmp_path / "m"))
        # A tool that cannot be a task: its failure says how to make it one.
        with trio.fail_after(30):
            plain = await wire.call("nap_here", seconds=5)
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert "--max-request-sleep" in str(refused.value)
    assert "call the tool as a task" in str(refused.value)
    assert plain["isError"] is True
    [block] = plain["content"]
    assert "\n" not in block["text"]
    assert "over this server's bound of 1 s" in block["text"]
    assert 'make the tool a task (@tool(task="optional"))' in block["text"]


@pytest.mark.parametrize("stored", [False, True])
async def test_a_later_round_replays_the_sleep_without_sleeping_again(
    stored: bool,
) -> None:
    """The first round sleeps, then asks; the round that answers replays the
    sleep from the call's journal (in its state, or in the store: its
    deadline and its end) at once."""
    store = MemoryStore() if stored else None
    server = Server(sleep_tools.ALL, name="napper", limits=BOUND, store=store)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url, tasks=False)
        with trio.fail_after(30):
            began = time.monotonic()
            first = await wire.call("nap_then_ask", seconds=0.6)
            slept = time.monotonic() - began
            assert first["resultType"] == "input_required"
            began = time.monotonic()
            params = {
                "name": "nap_then_ask",
                "arguments": {"seconds": 0.6},
                "requestState": first["requestState"],
                "inputResponses": {"ok": {"action": "accept", "content": {}}},
            }
            done = await wire.request("tools/call", params)
            answered = time.monotonic() - began
    assert slept >= 0.6
    assert answered < 0.5
    assert done["content"][0]["text"] == "answer: accept"


async def test_a_live_2025_call_sleeps_until_its_deadline(tmp_path: Path) -> None:
    server = Server(sleep_tools.ALL, name="napper", limits=BOUND)
    async with served(server) as url, connect(url, era="legacy") as client:
        began = time.monotonic()
        with trio.fail_after(30):
            # Over the request bound: a live call holds its session anyway.
            result = await client.call_tool(
                "nap", {"seconds": 1.2, "path": str(tmp_path / "m")}
            )
        took = time.monotonic() - began
    assert not result.is_error
    assert 1.2 <= took < 6
    assert (tmp_path / "m").read_text().split() == ["before", "after"]


def _sleeper(seconds: float) -> Callable[[Context], Op[float]]:
    def body(ctx: Context) -> Op[float]:
        yield from ctx.sleep(seconds)
        return seconds

    return body


@tool
def raced(limit: float, ctx: Context) -> Op[str]:
    """A branch whose child sleeps an hour, under a time limit of ``limit``."""
    try:
        yield from ctx.branch(_sleeper(3600), limits=Limits(timeout=limit))
    except BranchTimeout:
        return "timed out"
    return "slept"


async def test_a_sleep_cut_short_by_its_branchs_limit_holds_only_that_long() -> None:
    # The hour's sleep can hold the request only until the branch's limit:
    # under the bound, it runs in the request (it was refused as an hour).
    server = Server([raced], name="napper", limits=BOUND)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url, tasks=False)
        began = time.monotonic()
        with trio.fail_after(30):
            within = await wire.call("raced", limit=0.3)
        took = time.monotonic() - began
        with trio.fail_after(30):
            over = await wire.call("raced", limit=5)
    assert within["content"][0]["text"] == "timed out", within
    assert 0.3 <= took < 5
    assert over["isError"] is True, over
    assert "over this server's bound of 1 s" in over["content"][0]["text"]
