"""Interop: the official TypeScript SDK's ``Client`` drives our server.

``ts_client.mjs`` is a plain SDK client (stdio and Streamable HTTP
transports) that answers sampling and elicitation with
``setRequestHandler``; our server is a real ``yieldmcp serve`` subprocess.
TypeScript SDK 1.32.2 speaks up to 2025-11-25 (its ``LATEST_PROTOCOL_VERSION``)
and has no 2026-07-28 ``server/discover``, so only the handshake era is
covered; the test pins that, so a newer SDK that speaks 2026-07-28 shows up
here as a failure to extend the test.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.helpers import ROOT
from tests.interop.peers import (
    INTEROP_SERVER,
    TS_CLIENT,
    YIELDMCP,
    node,
    serving_http,
    ts_sdk_modules,
)

TOOLS = {"add", "agent", "ask", "chatty", "confirm", "fails", "weather"}


def _run_ts_client(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [node(), str(TS_CLIENT), ts_sdk_modules(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(out: dict[str, Any]) -> None:
    assert out["sdkLatest"] == "2025-11-25"
    assert out["negotiated"] == "2025-11-25"
    assert set(out["tools"]) >= TOOLS
    # Sampling: the SDK's handler answered, with what the tool asked for.
    assert out["ask"] == {
        "text": "ts-model:ts says hello (Be brief., 50)",
        "isError": False,
    }
    # Elicitation: the SDK's accepted form arrived validated and typed.
    assert out["confirm"] == {"text": "accept:True:from ts", "isError": False}
    assert out["add"]["text"] == "5 (ts-model)"
    asked = out["seen"]["elicitation"][0]
    assert asked["message"] == "Go?"
    assert asked["requestedSchema"]["properties"]["ok"]["type"] == "boolean"


def test_the_ts_sdk_client_over_stdio() -> None:
    out = _run_ts_client("stdio", *YIELDMCP, "serve", INTEROP_SERVER)
    _check(out)


def test_the_ts_sdk_client_over_streamable_http() -> None:
    with serving_http(INTEROP_SERVER) as url:
        out = _run_ts_client("http", url)
    _check(out)
