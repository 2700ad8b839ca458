"""HAProxy on loopback in front of yieldmcp processes: round robin, no stickiness.

HAProxy is the Debian package (``.ci/run`` installs it); :data:`HAPROXY` is
its binary, None when it is missing. :data:`CONFIG` sends each request to the
next of two backends, and retries a connection a dead backend refused on the
other one (``option redispatch``). :func:`balancing` runs it in front of two
ports (the processes behind them are the caller's: they may die and come back).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from tests.processes import free_port, url_of

HAPROXY = shutil.which(
    "haproxy", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])
)
CONFIG = """\
global
    maxconn 256
defaults
    mode http
    retries 3
    option redispatch 1
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


@contextlib.asynccontextmanager
async def balancing(tmp: Path, one: int, two: int) -> AsyncIterator[str]:
    """HAProxy on a free loopback port in front of ports ``one`` and ``two``,
    answering, logging each request to ``tmp/haproxy.log``; its MCP
    endpoint's URL. Skips the test without HAProxy."""
    if HAPROXY is None:
        print("haproxy is not installed (apt-get install -y haproxy): skipping")
        pytest.skip("haproxy is not installed (apt-get install -y haproxy)")
    port = free_port()
    config = tmp / "haproxy.cfg"
    logged = CONFIG.replace("global\n", "global\n    log stderr format raw local0\n")
    logged = logged.replace(
        "defaults\n", "defaults\n    log global\n    option httplog\n"
    )
    config.write_text(logged.format(port=port, one=one, two=two))
    with (tmp / "haproxy.log").open("ab") as log:  # a request per line
        process = subprocess.Popen(
            [HAPROXY, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=log
        )
    try:
        async with httpx.AsyncClient() as http:
            with trio.fail_after(60):
                while True:
                    assert process.poll() is None, "haproxy exited"
                    try:
                        await http.get(url_of(port))
                    except httpx.TransportError:
                        await trio.sleep(0.05)
                    else:
                        break
        yield url_of(port)
    finally:
        process.terminate()
        process.wait(timeout=20)
