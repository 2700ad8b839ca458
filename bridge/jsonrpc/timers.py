"""Timers for code that never waits: callbacks at deadlines, one task for all.

A session's synchronous parts (task-less calls, requests sent without waiting)
still need time limits: a request's timeout, a branch's time limit. A task per
timer would bring back what they do without; instead :class:`Timers` keeps a
heap of deadlines and one task that sleeps until the earliest, fires what is
due and sleeps again. Adding an earlier deadline moves the sleeping task's
deadline; a cancelled timer is dropped lazily (and the heap compacted when
most of it is cancelled), so cancelling costs nothing.

Deadlines are on trio's clock (``trio.current_time``), so tests can jump it.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any, final

import trio

__all__ = ["Timer", "Timers"]

Fire = Callable[[Callable[[Any], None], Any], None]


@final
class Timer:
    """One pending callback; :meth:`cancel` it to drop it."""

    __slots__ = ("arg", "callback", "deadline", "owner")

    def __init__(
        self,
        deadline: float,
        callback: Callable[[Any], None],
        arg: Any,
        owner: Timers,
    ) -> None:
        self.deadline = deadline
        self.callback = callback
        self.arg = arg
        self.owner: Timers | None = owner

    def cancel(self) -> None:
        owner, self.owner = self.owner, None
        if owner is not None:
            owner.live -= 1


@final
class Timers:
    """The timers of one session.

    Args:
        fire: runs a due timer's ``callback(arg)`` (the session runs it as it
            runs a frame's handling: never inside another).
    """

    def __init__(self, fire: Fire) -> None:
        self._fire = fire
        self._heap: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._sleep: trio.CancelScope | None = None
        self.live = 0

    def call_later(
        self, seconds: float, callback: Callable[[Any], None], arg: Any
    ) -> Timer:
        """Call ``callback(arg)`` in ``seconds`` unless cancelled first."""
        timer = Timer(trio.current_time() + seconds, callback, arg, self)
        heapq.heappush(self._heap, (timer.deadline, next(self._order), timer))
        self.live += 1
        if len(self._heap) > 64 and self.live < len(self._heap) // 2:
            self._compact()
        if self._sleep is not None and timer.deadline < self._sleep.deadline:
            self._sleep.deadline = timer.deadline
        return timer

    def _compact(self) -> None:
        self._heap = [entry for entry in self._heap if entry[2].owner is not None]
        heapq.heapify(self._heap)

    async def run(self) -> None:
        """Fire timers as they fall due, until cancelled."""
        while True:
            with trio.CancelScope(deadline=self._next()) as self._sleep:
                await trio.sleep_forever()
            self._sleep = None
            self._fire_due(trio.current_time())

    def _next(self) -> float:
        heap = self._heap
        while heap and heap[0][2].owner is None:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def _fire_due(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            timer = heapq.heappop(heap)[2]
            if timer.owner is not None:
                timer.cancel()
                self._fire(timer.callback, timer.arg)
