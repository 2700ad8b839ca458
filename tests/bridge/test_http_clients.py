"""A proxy the environment names that httpx cannot use: one line, not an
``ImportError`` traceback (90 lines, from the MCP client and the model
providers alike, before)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT


def _without_socksio() -> None:
    if importlib.util.find_spec("socksio") is not None:
        print("skipped: socksio is installed, so httpx can use a SOCKS proxy")
        pytest.skip("socksio is installed")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["call", "http://127.0.0.1:1/mcp", "t"],
            "cannot use the proxy the environment names (ALL_PROXY",
        ),
        (
            ["call", f"{sys.executable} -m bridge.cli serve "
             "tests/fixtures/interop_server.py", "ask", "--arg", "prompt=hi",
             "--model", "openai:m"],
            "openai: cannot use the proxy the environment names (ALL_PROXY",
        ),
    ],
    ids=["mcp-client", "provider"],
)  # fmt: skip
def test_a_socks_proxy_without_socksio_is_one_line(argv: list[str], said: str) -> None:
    _without_socksio()
    env = {
        **os.environ,
        "ALL_PROXY": "socks5://puser:PSECRET@127.0.0.1:1",
        "OPENAI_API_KEY": "sk-test",
    }
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", *argv],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(lines) == 1, done.stderr
    assert said in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert "PSECRET" not in done.stderr
