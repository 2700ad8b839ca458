"""What a step costs: a call with 10 steps, thread and async, per step.

Usage::

    python benchmarks/steps.py [--quick]

A tool makes 10 ``ctx.step`` calls of a function that does nothing, so the
time is the step machinery's own: the ``Step`` effect and its program, the
stepper, the journal record, and running the function (a worker thread via
``trio.to_thread.run_sync`` for a sync function; the caller's task for an
``async def``). The cost per step is ``(call with 10 steps - call with none)
/ 10``, in process (``runtime.lowlevel.run`` with a scripted peer), and for a
2026-07-28 server round that replays 10 recorded steps (no function runs).
Aims: an async step at most 50 µs, a thread step at most 150 µs. Medians over
batches, wall time (a thread step's cost is mostly waiting for the thread);
the last line of output is one JSON object (µs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from benchmarks._stats import median  # noqa: E402
from runtime import Context, Op, tool  # noqa: E402
from runtime.lowlevel import Journal, run  # noqa: E402
from runtime.testing import ScriptedPeer  # noqa: E402

STEPS = 10


def nothing() -> int:
    return 1


async def nothing_async() -> int:
    return 1


@tool
def no_steps(ctx: Context) -> Op[int]:
    return 0
    yield


@tool
def thread_steps(ctx: Context) -> Op[int]:
    total = 0
    for _ in range(STEPS):
        total += yield from ctx.step(nothing)
    return total


@tool
def async_steps(ctx: Context) -> Op[int]:
    total = 0
    for _ in range(STEPS):
        total += yield from ctx.step(nothing_async)
    return total


async def _batch(call: Callable[[], Awaitable[Any]], count: int) -> float:
    """Seconds per call, over ``count`` calls back to back."""
    started = time.perf_counter()
    for _ in range(count):
        await call()
    return (time.perf_counter() - started) / count


async def measure(batches: int, per_batch: int) -> dict[str, float]:
    peer = ScriptedPeer()
    limiter = trio.CapacityLimiter(4)
    replayed = Journal()
    await run(async_steps, {}, peer, journal=replayed)
    recorded = replayed.to_json()

    async def base() -> Any:
        return await run(no_steps, {}, peer)

    async def threads() -> Any:
        return await run(thread_steps, {}, peer, limiter=limiter)

    async def tasks() -> Any:
        return await run(async_steps, {}, peer)

    async def replay() -> Any:
        return await run(async_steps, {}, peer, journal=Journal.from_json(recorded))

    rows: dict[str, list[float]] = {"base": [], "thread": [], "async": [], "replay": []}
    calls = {"base": base, "thread": threads, "async": tasks, "replay": replay}
    for _ in range(batches):  # interleaved, so the machine's changes hit all alike
        for name, call in calls.items():
            rows[name].append(await _batch(call, per_batch))
    floor = median(rows["base"])
    return {
        "call, no steps": floor * 1e6,
        "thread step": (median(rows["thread"]) - floor) / STEPS * 1e6,
        "async step": (median(rows["async"]) - floor) / STEPS * 1e6,
        "replayed step": (median(rows["replay"]) - floor) / STEPS * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer batches")
    quick = parser.parse_args().quick
    result = trio.run(measure, 5 if quick else 21, 20 if quick else 100)
    for name, value in result.items():
        print(f"{name:>16}: {value:8.1f} µs")
    print(json.dumps({k: round(v, 1) for k, v in result.items()}))


if __name__ == "__main__":
    main()
