"""Interop: the official TypeScript SDK's ``Client`` drives our server.

``ts_client.mjs`` (SDK v1, ``@modelcontextprotocol/sdk``) and
``ts_client_v2.mjs`` (SDK v2, ``@modelcontextprotocol/client``) are plain SDK
clients over stdio and Streamable HTTP that answer sampling and elicitation
with ``setRequestHandler``; our server is a real ``yieldmcp serve``
subprocess. SDK v1 1.32.2 speaks up to 2025-11-25 (its
``LATEST_PROTOCOL_VERSION``; the test pins that, so a v1 that learns
2026-07-28 shows up here). SDK v2 2.4.0 also speaks 2026-07-28 when pinned
(``server/discover``, and ``input_required`` rounds it answers through the
same handlers), so it runs in both eras.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.interop.peers import (
    INTEROP_SERVER,
    TS_CLIENT,
    TS_CLIENT_V2,
    YIELDMCP,
    run_node,
    serving_http,
    ts_client_modules,
    ts_sdk_modules,
)

TOOLS = {"add", "agent", "ask", "chatty", "confirm", "fails", "weather"}


def _run_ts_client(*args: str) -> dict[str, Any]:
    return run_node(str(TS_CLIENT), ts_sdk_modules(), *args)


def _check(out: dict[str, Any], era: str = "2025-11-25") -> None:
    assert out["negotiated"] == era
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
    assert out["sdkLatest"] == "2025-11-25"
    _check(out)


def test_the_ts_sdk_client_over_streamable_http() -> None:
    with serving_http(INTEROP_SERVER) as url:
        out = _run_ts_client("http", url)
    _check(out)


# --- SDK v2: both eras ------------------------------------------------------------

ERAS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


def _run_v2(era: str, *args: str) -> dict[str, Any]:
    return run_node(str(TS_CLIENT_V2), ts_client_modules(), era, *args)


@pytest.mark.parametrize("era", ERAS)
def test_the_ts_sdk_v2_client_over_stdio(era: str) -> None:
    out = _run_v2(era, "stdio", *YIELDMCP, "serve", INTEROP_SERVER)
    _check(out, ERAS[era])


@pytest.mark.parametrize("era", ERAS)
def test_the_ts_sdk_v2_client_over_streamable_http(era: str) -> None:
    with serving_http(INTEROP_SERVER) as url:
        out = _run_v2(era, "http", url)
    _check(out, ERAS[era])


@pytest.mark.parametrize("era", ERAS)
def test_the_ts_sdk_v2_client_against_a_server_with_a_store(
    era: str, tmp_path: Path
) -> None:
    # With a store, 2026-07-28 states are one-time sealed references and
    # 2025-11-25 sessions are written ahead: the SDK must not notice.
    store = f"sqlite:{tmp_path / 'calls.db'}"
    with serving_http(INTEROP_SERVER, "--store", store) as url:
        out = _run_v2(era, "http", url)
    _check(out, ERAS[era])
