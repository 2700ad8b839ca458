"""A real load balancer in front of two workers: HAProxy, round-robin, no stickiness.

HAProxy (the Debian package; ``.ci/run`` installs it) listens on loopback
and sends each request to the next of two ``yieldmcp serve --http``
processes that share only ``YIELDMCP_STATE_KEY``. Our client, in the
2026-07-28 era, makes a sampling call and an elicitation call through it;
each call's two rounds land on different workers (the tools record each
round's pid in a step, carried in the sealed journal) and complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from bridge.client import connect
from bridge.elicit import ScriptedAnswers
from bridge.providers import OfflineModel
from bridge.server.state_token import new_key
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/worker_tools.py")
HAPROXY = shutil.which(
    "haproxy", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])
)
CONFIG = """\
global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend mcp
    bind 127.0.0.1:{port}
    default_backend workers
backend workers
    balance roundrobin
    server one 127.0.0.1:{one}
    server two 127.0.0.1:{two}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _ready(url: str) -> None:
    async with httpx.AsyncClient() as http:
        with trio.fail_after(60):
            while True:
                try:
                    await http.get(url)
                except httpx.TransportError:
                    await trio.sleep(0.05)
                else:
                    return


@contextlib.asynccontextmanager
async def _balanced(tmp: Path) -> AsyncIterator[str]:
    """Two workers behind HAProxy; the URL of HAProxy's endpoint."""
    if HAPROXY is None:
        print("haproxy is not installed (apt-get install -y haproxy): skipping")
        pytest.skip("haproxy is not installed (apt-get install -y haproxy)")
    key = new_key()
    ports = [_free_port() for _ in range(3)]
    config = tmp / "haproxy.cfg"
    config.write_text(CONFIG.format(port=ports[0], one=ports[1], two=ports[2]))
    env = {**os.environ, "YIELDMCP_STATE_KEY": key}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bridge.cli",
                "serve",
                SERVED,
                "--http",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports[1:]
    ]
    processes.append(
        subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=subprocess.DEVNULL)
    )
    try:
        for port in ports[1:]:
            await _ready(f"http://127.0.0.1:{port}/mcp")
        await _ready(f"http://127.0.0.1:{ports[0]}/mcp")
        yield f"http://127.0.0.1:{ports[0]}/mcp"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)


def _pids(text: str) -> tuple[int, int]:
    before, after = text.partition(";")[0].split(",")
    return int(before), int(after)


async def test_sampling_and_elicitation_complete_across_balanced_workers(
    tmp_path: Path,
) -> None:
    async with (
        _balanced(tmp_path) as url,
        connect(
            url,
            era="2026-07-28",
            sampler=OfflineModel(),
            elicitation=ScriptedAnswers({"confirm": {"ok": True}}),
        ) as client,
    ):
        sampled = await client.call_tool("sampled")
        elicited = await client.call_tool("elicited")
    assert not sampled.is_error, sampled
    assert not elicited.is_error, elicited
    sampled_text = sampled.content[0].text
    elicited_text = elicited.content[0].text
    assert elicited_text.endswith(";accept")
    # Round-robin with no stickiness: each call's second round went to the
    # worker that did not seal its state.
    before, after = _pids(sampled_text)
    assert before != after, sampled_text
    before, after = _pids(elicited_text)
    assert before != after, elicited_text
