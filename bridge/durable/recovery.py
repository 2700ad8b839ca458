"""Taking work on whose owner is gone: one rule, one service.

Three kinds of work outlive the process that began them, and each is taken on
by another process (or the same one restarted) once its owner is gone:

* a 2026-07-28 **round** holds its ``requestState`` with a claim in the
  call's document (:mod:`.rounds`); a retry with the same state takes the
  round over once the claim lapsed;
* a **task** is held by its runner's lease in the task's document
  (:mod:`.tasks`); the recovery service takes it over once the lease lapsed;
* a live 2025-11-25 **call** is held by the process named in its document,
  whose own lease (``("worker", id)``, :mod:`.presence`) is renewed while it
  lives; the process the client reaches next takes the call on once that
  lease is gone (:mod:`.sessions`).

Each holds a :class:`Lease` (an owner and the time it runs out), and one rule
says when it may be taken: :func:`lapsed`. Taking it is a compare-and-swap
against the version read, so of two processes racing for it exactly one wins;
and whoever takes it replays it from its journal (:mod:`.log`), so what was
recorded is never asked, run or sent again.

:class:`Recovery` is the one service that looks for abandoned work: in the
server's run scope, it sweeps what expired from the store and resumes the
tasks whose lease lapsed, at start and then every half lease. Rounds and
live calls need no looking for: their clients come back for them.

It does not run what it takes on (the drivers of :mod:`bridge.server.calls`
and :mod:`bridge.server.tasks` do).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, final

import attrs
import trio

from bridge.stores import AsyncStore, StoreError

__all__ = ["Lease", "Recovery", "lapsed"]

log = logging.getLogger("yieldmcp.durable")

RESUME_LOOK: Final = 0.05  # the shortest time between two looks, seconds


@final
@attrs.frozen
class Lease:
    """Who holds a piece of work, until when (seconds since the epoch)."""

    owner: str
    until: float

    def lapsed(self, now: float) -> bool:
        return lapsed(self.until, now)

    def held_by_other(self, owner: str, now: float) -> bool:
        """Whether someone else holds it, and still may."""
        return self.owner != owner and not self.lapsed(now)


def lapsed(until: float | None, now: float) -> bool:
    """The one rule: a hold may be taken over once ``until`` has passed (a
    hold with no end, ``None``, is not held). Processes sharing a store must
    have clocks that agree within the shortest lease (NTP does)."""
    return until is None or until <= now


Resume = Callable[[float], Awaitable[int]]
"""Resumes the abandoned work of one kind at ``now``: how many taken on."""


@final
class Recovery:
    """The recovery service of one server (module doc).

    Args:
        store: the store the server shares with others.
        every: seconds between two looks (half the shortest lease).
        resume: what to resume at each look, after the sweep (the tasks').
    """

    def __init__(self, store: AsyncStore, every: float, resume: Resume) -> None:
        self.store = store
        self.every = max(every, RESUME_LOOK)
        self.resume = resume

    async def look(self) -> int:
        """Sweep what expired, then resume what was abandoned; how many."""
        now = time.time()
        await self.store.sweep(now)
        return await self.resume(now)

    async def run(self) -> None:
        """Look at start and then every ``every`` seconds, until cancelled
        (the server's run scope runs one)."""
        while True:
            try:
                taken = await self.look()
            except StoreError as exc:
                log.warning("recovery: the store failed (%s); trying again", exc)
            else:
                if taken:
                    log.info("recovery: took %d abandoned tasks on", taken)
            await trio.sleep(self.every)
