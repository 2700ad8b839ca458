"""A tool that blocks the event loop is reported in the server's log.

A plain tool's body (and a tool's code between yields) runs on the event
loop: blocking I/O there holds every other call. The server's run scope
watches the loop with one timer and logs a warning, at most one a minute,
when it did not run for ``ServerLimits.loop_stall_warning`` seconds.
"""

from __future__ import annotations

import logging
import time

import pytest
import trio

from bridge.server import Server
from bridge.server.limits import ServerLimits
from runtime import tool
from tests.bridge.client.test_client import in_memory

STALL = "the event loop did not run for"


@tool
def blocking() -> str:
    """Sleeps in its body, outside a step (the mistake)."""
    time.sleep(1.2)
    return "done"


@tool
def quick() -> str:
    """Answers at once."""
    return "done"


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_tool_that_blocks_the_loop_is_reported_once(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server([blocking], limits=ServerLimits(loop_stall_warning=0.5))
    with caplog.at_level(logging.WARNING, logger="yieldmcp"), trio.fail_after(30):
        async with in_memory(server, era) as client:
            await trio.sleep(0.6)  # the watch has started
            assert (await client.call_tool("blocking")).text == "done"
            assert (await client.call_tool("blocking")).text == "done"
            await trio.sleep(0.6)  # it wakes, late, and says so
    stalls = [r.getMessage() for r in caplog.records if STALL in r.getMessage()]
    assert len(stalls) == 1, stalls  # one a minute at most
    assert "ctx.step(...)" in stalls[0]


async def test_a_server_whose_tools_do_not_block_says_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # At the default bound (2 s), as users run it: 0.5 s is also the time a
    # loaded CI machine may leave a process unscheduled, tools or not.
    server = Server([quick])
    assert server.limits.loop_stall_warning == 2.0
    with caplog.at_level(logging.WARNING, logger="yieldmcp"), trio.fail_after(30):
        async with in_memory(server, "2026-07-28") as client:
            for _ in range(20):
                await client.call_tool("quick")
            await trio.sleep(2.2)
    assert not [r for r in caplog.records if STALL in r.getMessage()]
