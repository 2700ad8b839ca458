"""Without the OpenTelemetry API, or without an SDK, telemetry costs nothing:
no tap on any session, no observer on any call, and OpenTelemetry's SDK is
never imported; nor is its API, unless something else imported it (only such
code, or the API's own ``OTEL_PYTHON_*_PROVIDER`` variables, can configure a
provider). Each case runs in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SCRIPT = """
import sys
{block}
import trio
from bridge.server import Server
from bridge.client import Client
from bridge.transports.memory import memory_pair
from runtime.lowlevel import OBSERVING
from tests.bridge.client.test_client import ScriptedModel
from tests.fixtures import interop_server as fx

async def main():
    server = Server([fx.ask])
    server_end, client_end = memory_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, server_end)
        model = ScriptedModel()
        async with Client.connect(client_end, era="legacy", sampler=model) as c:
            assert c.session.tap is None
            assert (await c.call_tool("ask", {{"prompt": "hi"}})).text
            assert OBSERVING.get() is None
        nursery.cancel_scope.cancel()

trio.run(main)
print("sdk" if "opentelemetry.sdk" in sys.modules else "no sdk",
      "api" if "opentelemetry.trace" in sys.modules else "no api")
"""


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("sys.modules['opentelemetry'] = None  # not installed", "no sdk no api"),
        ("", "no sdk no api"),  # installed, nothing configured: not even imported
        ("import opentelemetry.trace  # the user's", "no sdk api"),  # no SDK set
    ],
    ids=["no-api", "no-sdk", "api-imported-no-sdk"],
)
def test_nothing_is_traced_or_loaded(block: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(block=block)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected
