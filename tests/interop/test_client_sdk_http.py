"""Our MCP client against the official ``mcp`` SDK's server over Streamable HTTP.

``tests/fixtures/sdk_server.py --http 0`` runs the SDK's own HTTP app (uvicorn,
127.0.0.1, a free port it logs). In 2025-11-25 the SDK asks mid-call on the
call's SSE stream and keeps a session; in 2026-07-28 its MRTR tools answer
``input_required`` and every POST stands alone, with the headers its ladder
checks.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import AsyncGenerator

import pytest
import trio

from bridge.client import connect
from tests.bridge.client.test_client import Accepting, ScriptedModel
from tests.helpers import ROOT

SDK_SERVER = [sys.executable, str(ROOT / "tests/fixtures/sdk_server.py"), "--http", "0"]
RUNNING = re.compile(rb"running on (http://127\.0\.0\.1:\d+)")


@pytest.fixture(params=["legacy", "2026-07-28"])
def era(request: pytest.FixtureRequest) -> str:
    return request.param


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some():
        pass  # uvicorn logs every request; a full pipe would stall it


@contextlib.asynccontextmanager
async def sdk_server() -> AsyncGenerator[str]:
    """The MCP endpoint of the SDK fixture, running for the block."""
    process = await trio.lowlevel.open_process(SDK_SERVER, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        log = b""
        while (found := RUNNING.search(log)) is None:
            chunk = await process.stderr.receive_some()
            assert chunk, f"the SDK server exited: {log.decode(errors='replace')}"
            log += chunk
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, process.stderr)
            yield f"{found[1].decode()}/mcp"
            nursery.cancel_scope.cancel()
    finally:
        process.terminate()
        with trio.CancelScope(shield=True):
            await process.wait()


async def test_the_sdk_server_samples_with_tools_over_http(era: str) -> None:
    model = ScriptedModel()
    tool = "legacy_sample" if era == "legacy" else "mrtr_sample"
    with trio.fail_after(30):
        async with sdk_server() as url, connect(url, era=era, sampler=model) as client:  # type: ignore[arg-type]
            result = await client.call_tool(tool, {"prompt": "find trio"})
            assert client.era == ("2025-11-25" if era == "legacy" else era)
    assert not result.is_error, result.text
    assert result.text == "tool_use:lookup"
    (request,) = model.requests
    assert request.tool_choice == "required"
    assert [t.name for t in request.tools] == ["lookup"]


async def test_the_sdk_server_elicits_over_http(era: str) -> None:
    handler = Accepting({"ok": True})
    tool = "legacy_elicit" if era == "legacy" else "mrtr_elicit"
    with trio.fail_after(30):
        async with (
            sdk_server() as url,
            connect(url, era=era, elicitation=handler) as client,  # type: ignore[arg-type]
        ):
            result = await client.call_tool(tool, {"message": "Proceed?"})
    assert not result.is_error, result.text
    assert result.text.startswith("accept:")
    assert handler.requests[0].requested_schema["properties"]["ok"]["type"] == "boolean"


async def test_the_sdk_server_lists_our_calls_tools_in_both_eras_on_one_endpoint() -> (
    None
):
    with trio.fail_after(30):
        async with sdk_server() as url:
            names: list[set[str]] = []
            for era in ("legacy", "2026-07-28", "auto"):
                async with connect(url, era=era) as client:  # type: ignore[arg-type]
                    names.append({tool["name"] for tool in await client.list_tools()})
    expected = {"legacy_sample", "legacy_elicit", "mrtr_sample", "mrtr_elicit"}
    expected.add("annotated")  # content annotations and result _meta (issue 26)
    assert names == [expected] * 3
