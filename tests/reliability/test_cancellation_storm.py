"""A cancellation storm: 1,000 concurrent calls, each cancelled at a random point.

Each call samples, elicits and branches (four questions). The client picks,
per call, the question during which it cancels the call — the first sample, the
elicitation, or either sample inside the branch — or lets it finish; answers
come after small random delays, so calls interleave. Afterwards: no task
is left running, every generator that started was closed, every server→client
request that was not answered was withdrawn with ``notifications/cancelled``,
and memory is back near its baseline.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections.abc import Mapping
from typing import Any

import attrs
import trio
import trio.testing

from bridge.server import Server
from bridge.session import Session
from bridge.transports.memory import memory_pair
from tests.bridge.wire import _ClientSide
from tests.fixtures import storm_tools

CALLS = 1000
SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"}


def _call_of(method: str, params: Mapping[str, Any] | None) -> int:
    if method == "elicitation/create":
        text = params["message"]  # type: ignore[index]
    else:
        content = params["messages"][-1]["content"]  # type: ignore[index]
        text = content["text"] if isinstance(content, dict) else content[0]["text"]
    return int(text.split()[1])


@attrs.frozen
class Outcome:
    """Counts only, so the measurement sees the server's memory, not ours."""

    asked: int
    withdrawn: int
    unsettled: int
    completed: int


async def _storm(seed: int, calls: int = CALLS) -> Outcome:
    rng = random.Random(seed)
    server_end, client_end = memory_pair()
    server_end.record = True
    client_end.record = True
    server = Server([storm_tools.storm])
    cancel_at = {n: rng.randint(1, 5) for n in range(calls)}  # 5: never cancelled
    asked: dict[int, int] = {}
    scopes: dict[int, trio.CancelScope] = {}

    async def answer(method: str, params: Mapping[str, Any] | None) -> Any:
        n = _call_of(method, params)
        asked[n] = asked.get(n, 0) + 1
        if asked[n] == cancel_at[n]:
            scopes[n].cancel()  # cancel the call while this question is open
        await trio.sleep(rng.random() * 0.005)
        if method == "elicitation/create":
            return {"action": "accept", "content": {"ok": True}}
        return SAMPLE

    client = Session(client_end, _ClientSide(answer))
    completed = 0
    async with trio.open_nursery() as nursery:
        await nursery.start(Session(server_end, server.connection()).run)
        await nursery.start(client.run)
        capabilities = {"sampling": {}, "elicitation": {}}
        await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "storm", "version": "1"},
            },
        )

        async def one(n: int) -> None:
            nonlocal completed
            with scopes.setdefault(n, trio.CancelScope()):
                await client.request(
                    "tools/call", {"name": "storm", "arguments": {"n": n}}
                )
                completed += 1

        async with trio.open_nursery() as calls_nursery:
            for n in range(len(cancel_at)):
                calls_nursery.start_soon(one, n)
        with trio.fail_after(10):
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert client.outstanding == []
        nursery.cancel_scope.cancel()
    return _outcome(server_end.sent, client_end.sent, completed)


def _outcome(
    server_frames: list[bytes], client_frames: list[bytes], completed: int
) -> Outcome:
    sent = [json.loads(f) for f in server_frames]
    received = [json.loads(f) for f in client_frames]
    asked = {f["id"] for f in sent if "method" in f and "id" in f}
    withdrawn = {
        f["params"]["requestId"]
        for f in sent
        if f.get("method") == "notifications/cancelled"
    }
    answered = {f["id"] for f in received if "method" not in f}
    return Outcome(
        asked=len(asked),
        withdrawn=len(withdrawn),
        unsettled=len(asked - answered - withdrawn),
        completed=completed,
    )


# Bounded by design, not per call: pydantic_core's JSON key cache (a fixed
# number of strings) and the capacity of trio's task set (the high-water mark
# of concurrent tasks). Their growth is excluded from the comparison.
BOUNDED = (
    tracemalloc.Filter(False, "*/bridge/jsonrpc.py"),
    tracemalloc.Filter(False, "*/trio/_core/_run.py"),
    tracemalloc.Filter(False, tracemalloc.__file__),  # the snapshots themselves
)


def _held(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> int:
    after = after.filter_traces(BOUNDED)
    before = before.filter_traces(BOUNDED)
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


async def test_a_thousand_cancelled_calls_leave_nothing_behind() -> None:
    await _storm(seed=0)  # warm the validators and caches
    storm_tools.OPENED[0] = storm_tools.CLOSED[0] = 0
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        outcome = await _storm(seed=1)
        gc.collect()
        held = _held(before, tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    assert 0 < outcome.completed < CALLS, "some calls finish, the others are cancelled"
    assert storm_tools.OPENED[0] == storm_tools.CLOSED[0] > 0, "a finally did not run"
    assert outcome.withdrawn > 0, "some questions should have been withdrawn"
    assert outcome.unsettled == 0, "questions neither answered nor withdrawn"
    assert _live_call_objects() == {}, "objects of finished calls are still alive"
    # What remains is bounded residue (jsonschema's type-check cache, frames of
    # the last exceptions): under 128 bytes a call, and not growing run to run.
    assert held < 128 * 1024, f"{held} bytes still held after 1,000 calls"


def _live_call_objects() -> dict[str, int]:
    """Per-call objects that outlived their call, by type (should be none)."""
    per_call = {
        "Stepper", "_Frame", "_Branch", "_Driver", "LiveExecutor", "CallScope",
        "LiveCall", "_Callback", "Timer",
    }  # fmt: skip
    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name == "generator" and obj.gi_code.co_name in {"storm", "_child"}:
            name = "tool generator"
        elif name not in per_call:
            continue
        counts[name] = counts.get(name, 0) + 1
    return counts
