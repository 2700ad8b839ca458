"""What a 2026-07-28 round needs besides the stepper: steps run, a bounded journal.

A round (:mod:`bridge.server.rounds`) is sans-IO: it yields what it cannot do
itself. Owns what it yields (:data:`Yielded`: a :data:`Notification` to send,
:class:`RunSteps`, steps to run, or :class:`Wait`, a store's reads and writes),
:func:`run_steps`, which runs such a batch for a caller that can wait
(:func:`wait_on`, either kind), and
:func:`capped_journal`, the check of the journal's size before it is sealed
into ``requestState``.

It does not decide when steps run or what their replies mean (the stepper
does), nor seal state (:mod:`bridge.server.state_token`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, final

import attrs
import pydantic_core
import trio

from runtime.errors import JournalTooLarge
from runtime.lowlevel import Step, perform_step

__all__ = [
    "Notification",
    "RunSteps",
    "Wait",
    "Yielded",
    "capped_journal",
    "run_steps",
    "wait_on",
]

log = logging.getLogger("yieldmcp")

Notification: TypeAlias = tuple[str, dict[str, Any]]
"""A notification to send: its method and params."""


@final
@attrs.frozen
class RunSteps:
    """Steps a round waits on: ``(effect key, step, idempotency key, seconds
    left)`` each, the seconds being those of the time limit of the branches
    around it (None: no limit). Send back one reply, exception, or None (out
    of time) per step, in order (:func:`run_steps`)."""

    steps: tuple[tuple[str, Step, str, float | None], ...]


@final
@attrs.frozen
class Wait:
    """I/O a round waits on that is not a step: a durable call's reads and
    writes of its store (:mod:`bridge.server.durable_rounds`). The caller
    awaits ``run()`` and sends back its value, or throws its exception into
    the round (:func:`bridge.server.modern.respond_rest`)."""

    run: Callable[[], Awaitable[Any]]


Yielded: TypeAlias = Notification | RunSteps | Wait
"""What a round yields: a notification to send, steps to run, or I/O to await."""


async def run_steps(batch: RunSteps, limiter: trio.CapacityLimiter | None) -> list[Any]:
    """Run ``batch``'s steps concurrently: a reply or an exception for each."""
    results: list[Any] = [None] * len(batch.steps)

    async def one(index: int, step: Step, key: str, seconds: float | None) -> None:
        # A branch's time limit cancels its steps (None stays: out of time).
        with trio.move_on_after(math.inf if seconds is None else max(seconds, 0)):
            try:
                results[index] = await perform_step(step, key, limiter=limiter)
            except Exception as exc:
                results[index] = exc

    if len(batch.steps) == 1:
        await one(0, *batch.steps[0][1:])
        return results
    async with trio.open_nursery() as nursery:
        for index, (_key, step, key, seconds) in enumerate(batch.steps):
            nursery.start_soon(one, index, step, key, seconds)
    return results


async def wait_on(
    item: RunSteps | Wait, limiter: trio.CapacityLimiter | None
) -> tuple[Any, Exception | None]:
    """What ``item`` gives back to the round that yielded it: its value, or
    the exception to throw into it (a store's, which the round may handle
    where it waited)."""
    if isinstance(item, RunSteps):
        return await run_steps(item, limiter), None
    try:
        return await item.run(), None
    except Exception as exc:
        return None, exc


def capped_journal(journal: dict[str, Any], cap: int) -> dict[str, Any]:
    """``journal``, if its JSON is within ``cap`` bytes (a warning from 80%).

    Raises:
        JournalTooLarge: it is larger.
    """
    size = len(pydantic_core.to_json(journal))
    if size > cap:
        raise JournalTooLarge(
            f"the call's journal is {size} bytes, over the server's limit of "
            f"{cap} (ServerLimits.max_journal_bytes); record less in steps, or "
            f"raise the limit"
        )
    if size * 5 >= cap * 4:
        percent = size * 100 // cap
        log.warning("a call's journal is %d bytes, %d%% of its limit", size, percent)
    return journal
