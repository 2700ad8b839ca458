"""The official ``mcp`` client (2026-07-28) against tools that sleep
(``ctx.sleep``): a sleep under ``--max-request-sleep`` runs in the request,
the round that answers a question replays it without sleeping again, and a
longer one is refused with -32021 saying to run the tool as a task."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client
from mcp.shared.exceptions import MCPError

from bridge.server import Server
from bridge.server.limits import ServerLimits
from tests.bridge.http_kit import served
from tests.fixtures import sleep_tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


async def test_the_official_client_sleeps_in_requests_within_the_bound(
    tmp_path: Path,
) -> None:
    answered_at: list[float] = []

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        answered_at.append(time.monotonic())
        return types.ElicitResult(action="accept", content={"ok": True})

    server = Server(sleep_tools.ALL, limits=ServerLimits(max_request_sleep=1.0))
    async with (
        served(server) as url,
        Client(url, mode="2026-07-28", elicitation_callback=elicitation) as client,
    ):
        with trio.fail_after(30):
            began = time.monotonic()
            asked = await client.call_tool("nap_then_ask", {"seconds": 0.6})
            ended = time.monotonic()
            with pytest.raises(MCPError) as refused:
                await client.call_tool(
                    "nap", {"seconds": 5, "path": str(tmp_path / "m")}
                )
    assert asked.content[0].text == "answer: accept"  # type: ignore[union-attr]
    [answered] = answered_at
    assert answered - began >= 0.6  # the first round slept
    assert ended - answered < 0.5  # the round that answered did not sleep again
    assert refused.value.error.code == -32021
    assert "call the tool as a task" in refused.value.error.message
