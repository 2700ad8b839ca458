"""``yieldmcp serve -v``: a line per request on stderr, in both eras."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bridge.cli.request_log import outcome, request_line
from bridge.client import connect
from bridge.jsonrpc.messages import ErrorData, ErrorResponse, Response
from runtime.errors import PeerError
from tests.processes import serving

TOOLS = """
from runtime import Context, ToolError, tool


@tool
def add(ctx: Context, a: int, b: int = 1) -> int:
    return a + b


@tool
def refuse(ctx: Context) -> str:
    raise ToolError("no")
"""

LINE = r"INFO yieldmcp\.requests: {} \d+\.\d ms {}$"


async def test_serve_v_logs_each_request_with_its_tool_time_and_outcome(
    tmp_path: Path,
) -> None:
    served = tmp_path / "tools.py"
    served.write_text(TOOLS)
    async with serving(str(served), tmp_path, "-v") as (server,):
        for era in ("legacy", "2026-07-28"):
            async with connect(server.url, era=era) as client:  # type: ignore[arg-type]
                assert (await client.call_tool("add", {"a": 2})).structured_content
                assert (await client.call_tool("refuse", {})).is_error
                with pytest.raises(PeerError):
                    await client.call_tool("ad", {})
    logged = server.errors.read_text()
    for method, ended in [
        ("initialize", "ok"),  # 2025-11-25's handshake
        ("server/discover", "ok"),  # 2026-07-28's
        ("tools/call add", "ok"),
        ("tools/call refuse", "tool error"),
        ("tools/call ad", r"error -32602 Unknown tool: ad; did you mean add\?"),
    ]:
        found = re.findall(LINE.format(re.escape(method), ended), logged, re.M)
        expected = 1 if method in ("initialize", "server/discover") else 2
        assert len(found) == expected, (method, logged)


async def test_without_v_no_request_is_logged(tmp_path: Path) -> None:
    served = tmp_path / "tools.py"
    served.write_text(TOOLS)
    async with (
        serving(str(served), tmp_path) as (server,),
        connect(server.url) as client,
    ):
        await client.call_tool("add", {"a": 2})
    assert "yieldmcp.requests" not in server.errors.read_text()


def test_an_outcome_is_a_word_or_an_errors_one_line() -> None:
    assert outcome(Response(1, {"content": []})) == "ok"
    assert outcome(Response(1, {"isError": True})) == "tool error"
    assert outcome(Response(1, {"resultType": "input_required"})) == "input_required"
    assert outcome(Response(1, {"resultType": "complete"})) == "ok"
    assert outcome(None) == "cancelled"
    long = ErrorResponse(1, ErrorData(-32000, "busy\n\x1b[31m" + "x" * 300))
    shown = outcome(long)
    assert shown.startswith("error -32000 busy x")
    assert "\n" not in shown
    assert "\x1b" not in shown
    assert len(shown) < 140


def test_a_line_names_the_tool_of_a_call_only() -> None:
    assert request_line("tools/call", {"name": "add"}, 0.0123, "ok") == (
        "tools/call add 12.3 ms ok"
    )
    assert request_line("prompts/get", {"name": "p"}, 0.001, "ok") == (
        "prompts/get 1.0 ms ok"
    )
