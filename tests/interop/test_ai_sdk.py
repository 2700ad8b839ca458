"""Interop: the Vercel AI SDK's MCP client (``@ai-sdk/mcp``) drives our server.

``ai_sdk_client.mjs`` connects as a host built on the AI SDK does
(``createMCPClient``), lists the tools, calls one that logs and reports
progress and one that asks a form, which it answers through
``onElicitationRequest``. Over Streamable HTTP and over stdio it negotiates
2026-07-28 (``server/discover``). Over stdio it gives the probe 1 s and then
falls back to ``initialize`` on the same connection: a server slow to start
(a loaded machine) must then serve the 2025-11-25 era instead, not fail.
"""

from __future__ import annotations

import sys
from typing import Any

from tests.interop.peers import (
    AI_SDK_CLIENT,
    INTEROP_SERVER,
    YIELDMCP,
    ai_sdk_modules,
    run_node,
    serving_http,
)

SERVE = [*YIELDMCP, "serve", INTEROP_SERVER]
# Our server behind a pipe that holds server/discover back 2 s, past the AI
# SDK's 1 s probe (tests/fixtures/slow_to_discover.py).
SLOW = [sys.executable, "-m", "tests.fixtures.slow_to_discover", "2", *SERVE]


def run_client(*args: str) -> dict[str, Any]:
    return run_node(str(AI_SDK_CLIENT), ai_sdk_modules(), *args)


def check(out: dict[str, Any], *versions: str) -> None:
    assert out["version"] in versions
    # Both listings: the AI SDK's tool set (for generateText) and the raw one.
    assert {"chatty", "confirm"} <= set(out["tools"])
    assert out["tools"] == out["listed"]
    assert out["chatty"] == {"text": "done", "isError": False}
    assert out["confirm"] == {"text": "accept:True:from ai-sdk", "isError": False}
    [asked] = out["asked"]
    assert asked["message"] == "Go?"
    assert asked["schema"]["properties"]["ok"]["type"] == "boolean"


def test_over_stdio() -> None:
    # 2026-07-28 when our server answers server/discover within the AI
    # SDK's 1 s of its spawn; on a machine loaded past that (this suite's
    # four workers on two cores), it falls back to initialize, and must
    # still work: the test below makes that happen on purpose.
    check(run_client("stdio", *SERVE), "2026-07-28", "2025-11-25")


def test_over_streamable_http() -> None:
    with serving_http(INTEROP_SERVER) as url:
        check(run_client("http", url), "2026-07-28")


def test_a_server_slow_to_start_is_served_in_the_older_era() -> None:
    check(run_client("stdio", *SLOW), "2025-11-25")
