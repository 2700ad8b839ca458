"""A prompt that gets a bad answer fails as precisely as a tool (issue 26, item 14).

During a 2025-11-25 ``prompts/get``, an elicitation answer that breaks the
form gets the client the same words a tool's ``isError`` carries, as a
``-32602`` error, and the server logs no traceback.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.helpers import ROOT

FIXTURE = str(ROOT / "tests/fixtures/prompt_server.py")


def _server(log: Path) -> StdioServerParameters:
    command = shlex.join([sys.executable, "-m", "bridge.cli", "serve", FIXTURE])
    return StdioServerParameters(
        command="/bin/sh", args=["-c", f"exec {command} 2>>{shlex.quote(str(log))}"]
    )


async def _wrong_type(context: Any, params: types.ElicitRequestParams) -> Any:
    return types.ElicitResult(action="accept", content={"age": "old"})


async def test_an_invalid_answer_to_a_prompt_is_the_tools_error(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with trio.fail_after(30):
        async with Client(
            _server(log), mode="legacy", elicitation_callback=_wrong_type
        ) as client:
            tool = await client.call_tool("greet", {})
            with pytest.raises(MCPError) as failed:
                await client.get_prompt("birthday", {})
    assert tool.is_error
    said = tool.content[0].text  # type: ignore[union-attr]
    assert "field 'age' breaks type" in said
    assert failed.value.error.code == -32602
    assert failed.value.error.message == said
    assert "Traceback" not in log.read_text()
