"""The server side of the soak test (``test_soak``), run as its own process.

``python -m tests.reliability.soak_server`` serves on loopback, warms up,
takes the heap's baseline (tracemalloc), runs the load
(:mod:`tests.reliability.soak_clients`, a process of its own), checks that a
normal call still works, waits for the heap to settle and prints what happened
as one JSON line.

It runs in a fresh process so that its baseline is the same whatever ran
before it: in the test process, earlier tests leave trio's and pydantic's
caches warm, the baseline is then a fraction of a megabyte, and the caches'
own bounded growth under the load passes 20 % of it.
"""

from __future__ import annotations

import gc
import itertools
import json
import sys
import tracemalloc
from typing import Any

import httpx
import trio

from bridge.server import Server
from bridge.transports.http import HttpLimits
from tests.bridge.http_kit import served
from tests.fixtures import http_tools, load_tools
from tests.helpers import ROOT
from tests.reliability import soak_clients
from tests.reliability.test_load import _modern_call


async def _warm_up(url: str) -> None:
    """A small load of each kind of client, at once, before the baseline.

    The baseline must hold what any server holds once it has served: trio's
    and pydantic's caches, interned strings, the first session's structures.
    One call of each kind in sequence is not enough when the tests before this
    one have already warmed the process: the baseline is then a fraction of a
    megabyte, and the caches' first growth under concurrency alone passes 20 %
    of it. A leak is still caught: it grows with the 2,000 connections and 275
    clients of the load, not with this warm-up.
    """
    async with httpx.AsyncClient(timeout=30) as http, trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(soak_clients._modern_client, http, url, 0)
        for _ in range(4):
            nursery.start_soon(soak_clients._legacy_client, http, url, 0)
        for _ in range(2):
            nursery.start_soon(soak_clients._storm_client, http, url, 0)


async def soak() -> dict[str, Any]:
    fd_limit = soak_clients._raise_fd_limit()
    assert fd_limit >= soak_clients.IDLE + 1000, f"RLIMIT_NOFILE is {fd_limit}"
    server = Server(
        [load_tools.chain, http_tools.wait_forever, http_tools.echo], name="soak"
    )
    # Eviction and expiry are not under test here: under the connection burst a
    # request can wait seconds for its connection to be accepted, longer than a
    # session may sit unused by default.
    limits = HttpLimits(
        max_sessions=1000, unused_session_timeout=120, orphan_timeout=120
    )
    gc.collect()
    tracemalloc.start()
    try:
        async with served(server, limits=limits) as url:
            with trio.fail_after(58):
                await _warm_up(url)
                gc.collect()
                baseline = tracemalloc.get_traced_memory()[0]
                started = trio.current_time()
                load = await trio.run_process(
                    [sys.executable, "-m", "tests.reliability.soak_clients", url],
                    cwd=ROOT,
                    capture_stdout=True,
                )
                counts = json.loads(load.stdout.decode().strip().splitlines()[-1])
                counts["load_seconds"] = round(trio.current_time() - started, 1)
                # Afterwards: a normal call still works, and the heap is back.
                async with httpx.AsyncClient(timeout=30) as http:
                    after = await _modern_call(http, url, 5, itertools.count(1))
                # The load's connections all closed when its process ended;
                # the server notices each (its task and h11 state go), give it
                # the time that takes under load.
                for _ in range(40):
                    await trio.sleep(0.25)
                    gc.collect()
                    current = tracemalloc.get_traced_memory()[0]
                    if current <= baseline * 1.2:
                        break
                counts["total_seconds"] = round(trio.current_time() - started, 1)
    finally:
        tracemalloc.stop()
    counts["after"] = after
    counts["baseline"] = baseline
    counts["current"] = current
    return counts


if __name__ == "__main__":
    print(json.dumps(trio.run(soak)))
