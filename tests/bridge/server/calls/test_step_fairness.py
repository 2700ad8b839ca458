"""Step threads are shared fairly between callers.

``yieldmcp serve tests/fixtures/attack_tools.py --http ... --step-threads 4``
runs as a real process. A caller is a principal (an access token, ``--auth``)
or, without authorization, a 2025-11-25 session; each test runs with both.
``--step-threads-per-caller`` (default: half of ``--step-threads``, at least
one) is what one caller's blocking steps may hold.

* alice starts four blocking steps that hang and cancels their calls: her
  hung threads do not keep bob's blocking step waiting (it runs within a
  second).
* alice keeps eight slow steps in flight: bob's step does not wait longer
  than one of hers.

Issue 37: blocking steps, cancelled ones that hang included, held every
``--step-threads`` slot, and other callers' steps queued behind them.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.client import Client
from bridge.client.http import http_transport
from tests.bridge.auth_issuer import issuing
from tests.bridge.server.tasks.kit import TaskWire, auth_flags, callers
from tests.helpers import ROOT
from tests.processes import Serving, started

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/attack_tools.py")
THREADS = 4
PROMPTLY = 1.5  # seconds: "within about a second", on a busy 2-core machine
SLOW_STEP = 2.0  # seconds each of alice's slow steps takes

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def _modern_call(wire: TaskWire, tool: str, arguments: dict[str, Any]) -> Any:
    return await wire.request("tools/call", {"name": tool, "arguments": arguments})


@contextlib.asynccontextmanager
async def _alice_and_bob(kind: str, tmp: Path) -> AsyncIterator[tuple[Call, Call]]:
    """How alice and bob call a tool on one server with ``--step-threads 4``:
    as two principals (2026-07-28 requests with their own access tokens), or
    as two 2025-11-25 sessions on a server without authorization."""
    flags = ["--step-threads", str(THREADS)]
    if kind == "principals":
        async with issuing() as issuer:
            server = Serving(SERVED, tmp, *auth_flags(issuer), *flags)
            async with (
                started(server),
                callers(issuer, server.url, "alice", "bob", tasks=False) as wires,
            ):
                alice, bob = wires
                yield (
                    functools.partial(_modern_call, alice),
                    functools.partial(_modern_call, bob),
                )
        return
    server = Serving(SERVED, tmp, *flags)
    async with (
        started(server),
        http_transport(server.url) as alice_wire,
        Client.connect(alice_wire, era="legacy") as alice,
        http_transport(server.url) as bob_wire,
        Client.connect(bob_wire, era="legacy") as bob,
    ):
        yield alice.call_tool, bob.call_tool


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


async def _bobs_wait(bob: Call) -> float | None:
    """Seconds bob's call of one instant blocking step took; None: it was
    still waiting after five seconds."""
    began = trio.current_time()
    with trio.move_on_after(5):
        await bob("slow_step", {})
        return trio.current_time() - began
    return None


@pytest.mark.parametrize("kind", ["sessions", "principals"])
async def test_one_callers_hung_cancelled_steps_leave_threads_for_another(
    tmp_path: Path, kind: str
) -> None:
    release, hanging = tmp_path / "release", tmp_path / "hanging"
    hanging.touch()
    arguments = {"release": str(release), "started": str(hanging)}
    with trio.fail_after(60):
        async with _alice_and_bob(kind, tmp_path) as (alice, bob):
            try:
                async with trio.open_nursery() as nursery:
                    for _ in range(THREADS):
                        nursery.start_soon(alice, "hang", arguments)
                    while _lines(hanging) < 1:  # her share at least has begun
                        await trio.sleep(0.02)
                    await trio.sleep(0.5)  # as many as may start, start
                    nursery.cancel_scope.cancel()  # alice gives up on them
                await trio.sleep(0.3)  # her cancellations reach the server
                waited = await _bobs_wait(bob)
            finally:
                release.touch()  # the hung threads end, so the server can
    assert waited is not None, "bob's blocking step never got a thread"
    assert waited < PROMPTLY, f"bob's blocking step waited {waited:.1f} s"


@pytest.mark.parametrize("kind", ["sessions", "principals"])
async def test_one_callers_slow_steps_do_not_keep_anothers_waiting(
    tmp_path: Path, kind: str
) -> None:
    began = tmp_path / "began"
    began.touch()
    arguments = {"seconds": SLOW_STEP, "started": str(began)}
    with trio.fail_after(60):
        async with (
            _alice_and_bob(kind, tmp_path) as (alice, bob),
            trio.open_nursery() as nursery,
        ):
            for _ in range(2 * THREADS):
                nursery.start_soon(alice, "slow_step", arguments)
            while _lines(began) < 1:
                await trio.sleep(0.02)
            await trio.sleep(0.3)  # her steps hold what they may
            waited = await _bobs_wait(bob)
            nursery.cancel_scope.cancel()
    assert waited is not None, "bob's blocking step never got a thread"
    assert waited < SLOW_STEP, (
        f"bob's step waited {waited:.1f} s, longer than one of alice's ({SLOW_STEP} s)"
    )
