"""A page on an origin the operator allowed (``--allow-origin``) uses the
server from a real browser (headless Chromium), in both eras.

Before, the server sent no CORS headers and answered a preflight 405: a
browser refuses to send a JSON POST with ``Mcp-*`` headers without a
preflight answered for its origin, so an allowed origin could send nothing,
and a 2025-11-25 page could not read its ``Mcp-Session-Id``. A page on an
origin not allowed still gets nothing.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser

from tests.helpers import ROOT
from tests.threaded_http import QuietHandler, serving

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


# What the page runs: initialize (2025-11-25, reading Mcp-Session-Id back) and
# tools/list; or one 2026-07-28 tools/list. Its result, or the error, is its
# title.
_SCRIPT = """
async (args) => {
  const [url, era] = args;
  const headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"};
  try {
    if (era === "legacy") {
      const init = await fetch(url, {method: "POST", headers: {
          ...headers, "MCP-Protocol-Version": "2025-11-25"},
        body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "initialize",
          params: {protocolVersion: "2025-11-25", capabilities: {},
                   clientInfo: {name: "page", version: "1"}}})});
      const session = init.headers.get("Mcp-Session-Id");
      if (!session) return "no session id readable";
      const listed = await fetch(url, {method: "POST", headers: {...headers,
          "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session},
        body: JSON.stringify({jsonrpc: "2.0", id: 2, method: "tools/list"})});
      const text = await listed.text();
      return text.includes("book_flight") ? "listed" : "no tools: " + text;
    }
    const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}};
    const listed = await fetch(url, {method: "POST", headers: {...headers,
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
      body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/list",
                            params: {_meta: meta}})});
    const text = await listed.text();
    return text.includes("book_flight") ? "listed" : "no tools: " + text;
  } catch (error) {
    return "refused: " + error;
  }
}
"""


class _Page(QuietHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>page</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _server(*flags: str) -> Iterator[str]:
    port = _free_port()
    command = [
        sys.executable, "-m", "bridge.cli", "serve",
        str(ROOT / "examples/book_flight.py"), "--http", f"127.0.0.1:{port}", *flags,
    ]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_an_allowed_origins_page_uses_the_server(browser: Browser, era: str) -> None:
    with contextlib.ExitStack() as stack:
        origin = stack.enter_context(serving(_Page))
        stranger = stack.enter_context(serving(_Page))
        url = stack.enter_context(_server("--allow-origin", origin))
        page = browser.new_page()
        page.goto(origin)
        allowed = page.evaluate(_SCRIPT, [url, era])
        page.goto(stranger)
        refused = page.evaluate(_SCRIPT, [url, era])
        page.close()
    assert allowed == "listed", allowed
    assert refused.startswith("refused: TypeError: Failed to fetch"), refused


def test_a_preflight_says_what_the_page_may_send() -> None:
    origin = "http://app.example"
    with _server("--allow-origin", origin) as url:
        asked = {
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,mcp-session-id",
        }
        preflight = httpx.options(url, headers=asked, timeout=10)
        stranger = httpx.options(url, headers={**asked, "Origin": "http://evil"})
        plain = httpx.post(
            url, headers={"Origin": origin, "Content-Type": "application/json"},
            content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )  # fmt: skip
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == origin
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "Mcp-Session-Id" in preflight.headers["access-control-allow-headers"]
    assert stranger.status_code == 403
    assert "access-control-allow-origin" not in stranger.headers
    assert plain.headers["access-control-allow-origin"] == origin
    assert "Mcp-Session-Id" in plain.headers["access-control-expose-headers"]
    assert plain.headers["vary"] == "Origin"
