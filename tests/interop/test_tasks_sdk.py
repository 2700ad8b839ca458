"""The official ``mcp`` client (2026-07-28, without the tasks extension)
against task-supporting tools: an ``optional`` one answers as an ordinary
call, a ``required`` one is refused with -32021, and ``tools/list`` carries
``execution.taskSupport``."""

from __future__ import annotations

import pytest
import trio
from mcp import Client
from mcp.shared.exceptions import MCPError

from bridge.server import Server
from tests.bridge.http_kit import served
from tests.fixtures import task_tools as tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


async def test_the_official_client_calls_task_tools_without_the_extension() -> None:
    async with (
        served(Server(tools.ALL)) as url,
        Client(url, mode="2026-07-28") as client,
    ):
        with trio.fail_after(30):
            listed = await client.list_tools()
            result = await client.call_tool("sleepy", {"seconds": 0})
            with pytest.raises(MCPError) as refused:
                await client.call_tool("broken_tool", {})
    support = {t.name: t.execution for t in listed.tools}
    assert support["sleepy"] is not None
    assert support["sleepy"].task_support == "optional"
    assert result.content[0].text == "slept 0"  # type: ignore[union-attr]
    assert refused.value.error.code == -32021
