"""The connections' deadlines, kept by one task per listener.

A connection waits for a request head, or writes a response, under a deadline
(:class:`~.connection.ConnectionSettings`). A trio cancel scope per wait or
write costs several microseconds to enter and leave, and a sampling round
over HTTP needs three of them (the wait for the POSTed answer, its ``202``,
the SSE event), about a twentieth of the server's CPU for the round. Here a
deadline is a float the connection sets and clears; :class:`Clock` looks at
every connection's each ``tick`` seconds and expires the ones past due (their
:meth:`Timed.expire` cancels the connection's one long-lived scope).

So a deadline fires up to one ``tick`` late: :func:`tick_for` makes it a
quarter of the shortest timeout, and at most a second.
"""

from __future__ import annotations

import math
from typing import Final, Protocol

import trio

__all__ = ["Clock", "Timed", "tick_for"]

_LONGEST_TICK: Final = 1.0


class Timed(Protocol):
    """What the clock needs of a connection."""

    deadline: float  # trio.current_time() past which it expires; inf: none

    def expire(self) -> None: ...


def tick_for(*timeouts: float) -> float:
    """How often to look: a quarter of the shortest timeout, at most 1 s."""
    return min(_LONGEST_TICK, *(t / 4 for t in timeouts if t > 0))


class Clock:
    """The live connections of a listener, and the task that expires them."""

    def __init__(self, tick: float) -> None:
        self.tick = tick
        self.timed: set[Timed] = set()

    async def run(self) -> None:
        """Expire connections past their deadline, until cancelled."""
        while True:
            await trio.sleep(self.tick)
            self.expire_due(trio.current_time())

    def expire_due(self, now: float) -> None:
        for timed in [t for t in self.timed if t.deadline <= now]:
            timed.deadline = math.inf
            timed.expire()
