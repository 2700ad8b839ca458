"""Interop: our client against a TypeScript SDK v2 server.

``ts_server_v2.mjs`` is an ``@modelcontextprotocol/server`` 2.4.0 server
written the way its README writes one: a factory serving both eras, over
stdio (``serveStdio``) and Streamable HTTP (``createMcpHandler`` on
``node:http``, bound to 127.0.0.1). In 2026-07-28 it asks for forms and
samples as v2 servers do, by returning ``input_required`` rounds; over
stdio a 2025-11-25 ``initialize`` is pinned to its 2025-era instance, which
asks the same through live requests. Our library client answers: a scripted
form, and a model that records what it was asked (``ScriptedModel``).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from bridge.client import connect
from bridge.elicit import ScriptedAnswers
from tests.bridge.client.test_client import ScriptedModel
from tests.helpers import STARTUP
from tests.interop.peers import TS_SERVER_V2, node, ts_server_modules

LISTENING = re.compile(rb"listening on (http://127\.0\.0\.1:\d+/mcp)")


def stdio_server() -> list[str]:
    return [node(), str(TS_SERVER_V2), ts_server_modules(), "stdio"]


@asynccontextmanager
async def http_server() -> AsyncGenerator[str]:
    """The server's MCP endpoint on loopback, for the block."""
    command = [node(), str(TS_SERVER_V2), ts_server_modules(), "http"]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        seen = b""
        with trio.fail_after(STARTUP):
            while (found := LISTENING.search(seen)) is None:
                chunk = await process.stderr.receive_some()
                assert chunk, f"the server exited: {seen.decode(errors='replace')}"
                seen += chunk
        yield found[1].decode()
    finally:
        process.terminate()
        with trio.CancelScope(shield=True):
            await process.wait()


async def check_everything(client: Any, model: ScriptedModel) -> None:
    """What a host does with this server, and what each answer must be."""
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert sorted(tools) == ["add", "confirm", "haiku"]
    assert tools["add"]["outputSchema"]["properties"]["sum"]["type"] == "number"

    added = await client.call_tool("add", {"a": 2, "b": 3})
    assert not added.is_error, added.text
    assert added.structured_content == {"sum": 5}

    confirmed = await client.call_tool("confirm", {"what": "the deploy"})
    assert not confirmed.is_error, confirmed.text
    assert confirmed.text == "did the deploy"

    sampled = await client.call_tool("haiku", {"topic": "rain"})
    assert not sampled.is_error, sampled.text
    assert sampled.text == "model scripted: answer to haiku about rain"
    [asked] = model.requests
    assert [message.text for message in asked.messages] == ["haiku about rain"]
    assert asked.max_tokens == 50

    read = await client.request("resources/read", {"uri": "note://one"})
    assert read["contents"][0]["text"] == "hello"
    prompt = await client.request(
        "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}
    )
    assert prompt["messages"][0]["content"]["text"] == "hi Ada"


@pytest.mark.parametrize(
    ("era", "negotiated"),
    [("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")],
)
async def test_our_client_over_stdio(era: str, negotiated: str) -> None:
    model = ScriptedModel()
    answers = ScriptedAnswers({"*": {"ok": True}})
    with trio.fail_after(60):
        async with connect(
            stdio_server(),
            era=era,  # type: ignore[arg-type]
            sampler=model,
            elicitation=answers,
            connect_timeout=STARTUP,
        ) as client:
            assert client.era == negotiated
            await check_everything(client, model)


async def test_our_client_over_streamable_http() -> None:
    model = ScriptedModel()
    answers = ScriptedAnswers({"*": {"ok": True}})
    with trio.fail_after(60):
        async with (
            http_server() as url,
            connect(url, sampler=model, elicitation=answers) as client,
        ):
            assert client.era == "2026-07-28"
            await check_everything(client, model)
